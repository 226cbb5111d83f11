"""Weak mutation operators: mutant sets, simplified kill conditions, guards, no duplicates."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code, build, cc, labels_where, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.labelling import predicate_key


def wm(*ops: str) -> LabelOptions:
    return LabelOptions(mcc=False, wm_ops=frozenset(ops))


def kills(tmp_path, expr: str, ops: tuple[str, ...], decl: str = "int a, int b") -> dict[str, str]:
    ann = annotate_code(tmp_path, f"int f({decl}) {{\n  return {expr};\n}}\n", wm(*ops))
    return {label.operator: label.predicate for label in ann.labels}


def test_ror_simplified_kill_conditions(tmp_path):
    assert kills(tmp_path, "a < b", ("ROR",)) == {
        "wm.ror.lt_le": "(a) == (b)",
        "wm.ror.lt_gt": "(a) != (b)",
        "wm.ror.lt_eq": "(a) <= (b)",
        "wm.ror.lt_ne": "(a) > (b)",
    }  # lt_ge is the negation: killed by every input, not a label


def test_ror_on_floats_keeps_the_full_comparison(tmp_path):
    found = kills(tmp_path, "a < b", ("ROR",), "double a, double b")
    assert found["wm.ror.lt_le"] == "((a) < (b)) != ((a) <= (b))"
    assert len(found) == 5


def test_ror_on_pointer_equality_adds_no_ordering(tmp_path):
    assert kills(tmp_path, "a == b", ("ROR",), "int *a, int *b") == {}


def test_aor_kill_conditions(tmp_path):
    found = kills(tmp_path, "a + b", ("AOR",))
    assert found["wm.aor.add_sub"] == "(b) != 0"
    assert found["wm.aor.add_mul"] == (
        "((unsigned int)(a) + (unsigned int)(b)) != ((unsigned int)(a) * (unsigned int)(b))")
    assert found["wm.aor.add_div"].startswith("((b) == 0 || ((b) != -1 && ")
    assert set(found) == {"wm.aor.add_sub", "wm.aor.add_mul", "wm.aor.add_div", "wm.aor.add_mod"}


def test_aor_original_division_is_guarded(tmp_path):
    found = kills(tmp_path, "a / b", ("AOR",))
    assert all(p.startswith("(b) != 0 && (b) != -1 && ") for p in found.values())


def test_aor_unsigned_needs_no_minus_one_guard(tmp_path):
    found = kills(tmp_path, "a % b", ("AOR",), "unsigned a, unsigned b")
    assert found["wm.aor.mod_add"].startswith("(b) != 0 && ")
    assert "-1" not in found["wm.aor.mod_add"]


def test_aor_equivalent_and_trivial_literal_mutants_dropped(tmp_path):
    assert set(kills(tmp_path, "a + 1", ("AOR",))) == {
        "wm.aor.add_mul", "wm.aor.add_div", "wm.aor.add_mod"}
    assert "wm.aor.mul_div" not in kills(tmp_path, "a * 1", ("AOR",))


def test_aor_skips_pointer_arithmetic_and_float_modulo(tmp_path):
    assert kills(tmp_path, "*(a + b)", ("AOR",), "int *a, int b") == {}
    assert set(kills(tmp_path, "a * b", ("AOR",), "double a, double b")) == {
        "wm.aor.mul_add", "wm.aor.mul_sub", "wm.aor.mul_div"}


def test_abs_kill_conditions(tmp_path):
    assert kills(tmp_path, "a * 2", ("ABS",)) == {
        "wm.abs.abs": "(a) < 0", "wm.abs.neg": "(a) > 0", "wm.abs.zero": "(a) == 0"}
    assert set(kills(tmp_path, "a * 2", ("ABS",), "unsigned a")) == {"wm.abs.neg", "wm.abs.zero"}


def test_cor_mutants(tmp_path):
    found = kills(tmp_path, "a > 0 && b > 0", ("COR",))
    assert found == {
        "wm.cor.and_or": "((a > 0) && !(b > 0)) || (!(a > 0) && (b > 0))",
        "wm.cor.and_lhs": "((a > 0) && !(b > 0))",
        "wm.cor.and_rhs": "(!(a > 0) && (b > 0))",
    }


def test_cor_needing_a_skipped_call_is_left_out(tmp_path):
    ann = annotate_code(tmp_path, "int g(int);\nint f(int a) {\n  return a || g(a);\n}\n",
                        wm("COR"))
    assert [l.operator for l in ann.labels] == ["wm.cor.or_lhs"]
    assert ann.left_out == 2


def test_duplicate_predicates_at_one_site_are_emitted_once(tmp_path):
    # ABS's kill conditions a > 0 and a == 0 are ROR's (spelled with other parentheses).
    ann = annotate_code(tmp_path, "int f(int a) {\n  return a < 0;\n}\n", wm("ROR", "ABS"))
    assert [(l.operator, l.predicate) for l in ann.labels] == [
        ("wm.ror.lt_le", "(a) == (0)"), ("wm.ror.lt_gt", "(a) != (0)"),
        ("wm.ror.lt_eq", "(a) <= (0)"), ("wm.ror.lt_ne", "(a) > (0)"), ("wm.abs.abs", "(a) < 0")]


def test_cor_mutants_that_are_mcc_combinations_are_emitted_once(tmp_path):
    options = LabelOptions(mcc=True, wm_ops=("COR",))
    ann = annotate_code(tmp_path, "int f(int a, int b) {\n  return a && b;\n}\n", options)
    assert [l.criterion for l in ann.labels].count("mcc") == 3
    # and_lhs kills where a && !b: an MCC combination; and_rhs kills where !a && b, where the
    # program skips b: no MCC combination has b there
    assert [l.operator for l in ann.labels if l.criterion == "wm"] == [
        "wm.cor.and_or", "wm.cor.and_rhs"]


@pytest.mark.parametrize("spelled, same", [
    ("(a) < (0)", "a < 0"), ("((a) && !(b))", "a && !b"), ("(a + b) * (c)", "(a + b) * c"),
    ("f(x) > (y)", "f(x) > y"), ("(int)x > 0", "(int)x > 0"), ("(a) - (b)", "a - b"),
    ("(a) + (b)) * ((c)", "a + b) * (c"),
])
def test_predicate_key_drops_only_parentheses_that_mean_nothing(spelled, same):
    assert predicate_key(spelled) == same


def test_side_effect_operands_go_through_temporaries(tmp_path):
    """In order: only where the order cannot matter (test_label_reads.py)."""
    ann = annotate_code(tmp_path, "int g(void);\nint f(int n) {\n  return g() < n;\n}\n",
                        wm("ROR"))
    assert ann.text.count("g()") == 1
    assert ("__auto_type __ffcc_0_x0 = (g()); __FFCC_TEMP __auto_type __ffcc_0_x1 = (n);"
            in ann.text)


def test_bitfield_operand_in_temporary_is_promoted(tmp_path):
    ann = annotate_code(tmp_path, "struct s { int bf : 3; };\nint g(void);\n"
                                  "int f(struct s v) {\n  return v.bf < g();\n}\n", wm("ROR"))
    assert "__auto_type __ffcc_0_x0 = (+v.bf)" in ann.text
    build(tmp_path, ann.text + "int g(void) { return 1; }\nint main(void) { return 0; }\n",
          "gcc", "-O0", "bitfield")


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_kills_light_on_the_right_inputs(tmp_path, cc, opt):
    code = ("#include <stdlib.h>\nint main(int argc, char **argv) {\n"
            "  int a = atoi(argv[1]), b = atoi(argv[2]);\n"
            "  int r = a < b;\n  int s = a - b;\n  return (r + s) & 1;\n}\n")
    ann = annotate_code(tmp_path, code, wm("ROR", "AOR"))
    binary = build(tmp_path, ann.text, cc, opt, "kills")
    le, gt = labels_where(ann, operator="wm.ror.lt_le"), labels_where(ann, operator="wm.ror.lt_gt")
    sub_add = labels_where(ann, operator="wm.aor.sub_add")
    assert le <= run(binary, ["2", "2"]).hits and not (gt & run(binary, ["2", "2"]).hits)
    assert gt <= run(binary, ["1", "2"]).hits and not (le & run(binary, ["1", "2"]).hits)
    assert sub_add <= run(binary, ["1", "2"]).hits and not (sub_add & run(binary, ["1", "0"]).hits)
