"""Label records show each weak-mutation mutant as source text (``mutants``): the original
expression as the operator mutates it, spaced as the source spaces it, with parentheses where
the new operator would group the operands otherwise. Reports show that text as it is."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code

from ffcc.rewriters import LabelOptions


def mutants(tmp_path, body: str, group: str) -> dict[tuple[str, str], list[str]]:
    """(original, operator) -> the mutants' texts (one per node or operand mutated) of
    ``group``'s labels in a function of ``body``."""
    code = ("#define LIMIT 50\nint f(int a, int b, int c, double d, _Bool q) {\n"
            f"  int r = 0;\n  {body}\n  return r;\n}}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=False, wm_ops=frozenset({group})))
    found: dict[tuple[str, str], list[str]] = {}
    for label in ann.labels:
        for operator, text in getattr(label, "mutants", {}).items():
            found.setdefault((label.original, operator), []).append(text)
    return found


@pytest.mark.parametrize("group, body, original, operator, text", [
    ("ROR", "r = a < b;", "a < b", "wm.ror.lt_le", "a <= b"),
    ("ROR", "r = a>=LIMIT;", "a>=LIMIT", "wm.ror.ge_gt", "a>LIMIT"),  # spaced as written
    ("ROR", "r = a == b < c;", "a == b < c", "wm.ror.eq_lt", "a < (b < c)"),
    ("AOR", "r = a + b * c;", "a + b * c", "wm.aor.add_div", "a / (b * c)"),
    ("AOR", "r = a * b - c;", "a * b - c", "wm.aor.sub_div", "a * b / c"),
    ("AOR", "r = a - b - c;", "a - b - c", "wm.aor.sub_mul", "(a - b) * c"),
    ("COR", "if (a && b && c) r = 1;", "a && b && c", "wm.cor.and_or", "a && b || c"),
    ("COR", "if (a && b && c) r = 1;", "a && b && c", "wm.cor.and_or", "(a || b) && c"),
    ("COR", "if (a || b && c) r = 1;", "a || b && c", "wm.cor.or_and", "a && (b && c)"),
    ("COR", "if ((a && b) || c) r = 1;", "(a && b) || c", "wm.cor.and_rhs", "(b) || c"),
    ("COR", "if (a || b) r = 1;", "a || b", "wm.cor.or_lhs", "a"),
    ("ABS", "r = a - b;", "a - b", "wm.abs.neg", "a - -abs(b)"),
    ("ABS", "r = a-b;", "a-b", "wm.abs.neg", "a- -abs(b)"),  # not a-- (a decrement)
    ("ABS", "r = a * (b + 1);", "a * (b + 1)", "wm.abs.zero", "failOnZero(a) * (b + 1)"),
    ("UOD", "r = -a;", "-a", "wm.uod.neg_noop", "a"),
    ("IDR", "d++;", "d++", "wm.idr.postinc_postdec", "d--"),
    ("IDR", "--q;", "--q", "wm.idr.predec_preinc", "++q"),
    ("BOR", "r = a & b;", "a & b", "wm.bor.band_bor", "a | b"),
    ("BOR", "r = a | b & c;", "a | b & c", "wm.bor.bor_band", "a & (b & c)"),
    ("ASR", "r += a - b;", "r += a - b", "wm.asr.addeq_subeq", "r -= a - b"),
])
def test_each_group_shows_its_mutant(tmp_path, group, body, original, operator, text):
    assert text in mutants(tmp_path, body, group)[original, operator]


def test_a_label_shared_by_operators_shows_each_mutant(tmp_path):
    """ROR's ``<`` -> ``<=`` and ABS's fail-on-zero of ``a`` are one label at ``a < 0``;
    MCC's ``a && !b`` is also COR's ``a && b`` -> ``a``: the record shows each operator's
    mutant, its own first, and none for MCC."""
    code = "int f(int a, int b) {\n  int r = a < 0;\n  if (a && b) r++;\n  return r;\n}\n"
    ann = annotate_code(tmp_path, code,
                        LabelOptions(mcc=True, wm_ops=frozenset({"ROR", "ABS", "COR"})))
    shared = {(label.operator, label.also): label.mutants for label in ann.labels
              if hasattr(label, "also")}
    assert shared[("wm.ror.lt_le", ("wm.abs.zero",))] == {
        "wm.ror.lt_le": "a <= 0", "wm.abs.zero": "failOnZero(a) < 0"}
    assert shared[("mcc", ("wm.cor.and_lhs",))] == {"wm.cor.and_lhs": "a"}
    alone = [label for label in ann.labels if label.operator == "mcc" and not hasattr(label, "also")]
    assert alone and all("mutants" not in vars(label) for label in alone)
