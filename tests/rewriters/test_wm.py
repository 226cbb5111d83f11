"""Weak mutation operators: mutant sets, simplified kill conditions, guards, no duplicates."""

from __future__ import annotations

import re
import subprocess

import pytest
from helpers import ffcc, have
from rewriter_harness import (  # noqa: F401 (cc is a fixture)
    ALL_WM,
    HARNESS,
    annotate_code,
    build,
    cc,
    labels_where,
    run,
)
from test_adversarial import observed  # UBSan's reports without their columns

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.labelling import predicate_key


def wm(*ops: str) -> LabelOptions:
    return LabelOptions(mcc=False, wm_ops=frozenset(ops))


def kills(tmp_path, expr: str, ops: tuple[str, ...], decl: str = "int a, int b") -> dict[str, str]:
    ann = annotate_code(tmp_path, f"int f({decl}) {{\n  return {expr};\n}}\n", wm(*ops))
    return {label.operator: label.predicate for label in ann.labels}


def test_ror_simplified_kill_conditions(tmp_path):
    assert kills(tmp_path, "a < b", ("ROR",)) == {
        "wm.ror.lt_le": "a == b",
        "wm.ror.lt_gt": "a != b",
        "wm.ror.lt_eq": "a <= b",
        "wm.ror.lt_ne": "a > b",
    }  # lt_ge is the negation: killed by every input, not a label


def test_ror_on_floats_counts_nan_and_compares_quietly(tmp_path):
    """With a NaN both < and >= are false: lt_ge is a mutant there. Tests are quiet (no
    FE_INVALID on a NaN, which gcc's < raises)."""
    assert kills(tmp_path, "a < b", ("ROR",), "double a, double b") == {
        "wm.ror.lt_le": "a == b",
        "wm.ror.lt_gt": "islessgreater(a, b)",
        "wm.ror.lt_ge": "!isunordered(a, b)",
        "wm.ror.lt_eq": "islessequal(a, b)",
        "wm.ror.lt_ne": "!islessequal(a, b)",
    }
    text = annotate_code(tmp_path, "int f(double a, double b) {\n  return a < b;\n}\n",
                         wm("ROR", "ABS")).text
    assert "__builtin_islessgreater(" in text
    assert not re.search(r"\) (<|<=|>|>=) ", text)  # no signalling comparison in any label


def test_ror_on_pointer_equality_adds_no_ordering(tmp_path):
    assert kills(tmp_path, "a == b", ("ROR",), "int *a, int *b") == {}


def test_aor_kill_conditions(tmp_path):
    found = kills(tmp_path, "a + b", ("AOR",))
    assert found["wm.aor.add_sub"] == "b != 0"
    assert found["wm.aor.add_mul"] == (
        "((unsigned int)a + (unsigned int)b) != ((unsigned int)a * (unsigned int)b)")
    assert found["wm.aor.add_div"] == (
        "(b == 0 || ((unsigned int)a + (unsigned int)b) != "
        "(b == -1 ? -(unsigned int)a : (unsigned int)(a / b)))")
    assert set(found) == {"wm.aor.add_sub", "wm.aor.add_mul", "wm.aor.add_div", "wm.aor.add_mod"}


def test_aor_original_division_is_guarded_against_zero_only(tmp_path):
    """A divisor of -1 is an ordinary divisor (x / -1 == -x); the label writes the quotient by
    -1 as a negation, so it never divides MIN by -1 (issue 17 point 10)."""
    found = kills(tmp_path, "a / b", ("AOR",))
    assert all(p.startswith("b != 0 && (b == -1 ? -(unsigned int)a : ") for p in found.values())


def test_aor_unsigned_needs_no_minus_one_case(tmp_path):
    found = kills(tmp_path, "a % b", ("AOR",), "unsigned a, unsigned b")
    assert found["wm.aor.mod_add"] == "b != 0 && (unsigned int)(a % b) != ((unsigned int)a + (unsigned int)b)"


@pytest.mark.parametrize("decl, kill", [
    ("unsigned a, unsigned b", "b != 0 && b != ((unsigned int)1 << 31)"),
    ("unsigned long a, long b", "b != 0 && b != ((unsigned long)1 << 63)"),
    ("unsigned a, unsigned char b", "b != 0"),  # never 2^31
    ("int a, int b", "b != 0"),  # no wrapping where both are defined
])
def test_aor_add_sub_wraps_at_half_for_unsigned(tmp_path, decl, kill):
    """a + b == a - b modulo 2^N also for b == 2^(N-1) (issue 17 point 11)."""
    assert kills(tmp_path, "a + b", ("AOR",), decl)["wm.aor.add_sub"] == kill


@pytest.mark.parametrize("expr, decl, gone", [
    ("a + 1", "int a", {"add_sub", "add_mul", "add_div"}),
    ("a - 1", "int a", {"sub_add", "sub_mul", "sub_div"}),
    ("a * 0", "int a", {"mul_div", "mul_mod"}),
    ("a * -1", "int a", {"mul_add", "mul_sub", "mul_div"}),
    ("a * 1", "int a", {"mul_add", "mul_sub", "mul_div"}),
    ("a / 1", "int a", {"div_add", "div_sub", "div_mul"}),
    ("a / -1", "int a", {"div_add", "div_sub", "div_mul"}),
    ("a / 0", "int a", {"div_add", "div_sub", "div_mul", "div_mod"}),
    ("a * -1", "unsigned a", {"mul_add", "mul_sub"}),  # -1 is UINT_MAX: u / UINT_MAX differs
    ("a + 0x80000000u", "unsigned a", {"add_sub"}),  # a + 2^31 == a - 2^31
    ("a + 10u", "unsigned a", {"add_sub", "add_div", "add_mod"}),  # a + 10 > a / 10, a % 10
    ("a + (b > 0)", "int a, int b", {"add_div"}),  # a + 1 never equals a / 1
    ("a + b", "unsigned char a, unsigned char b", {"add_div", "add_mod"}),  # a / b <= a < a + b
])
def test_aor_constant_kill_conditions_are_not_emitted(tmp_path, expr, decl, gone):
    """Issue 17 point 13: mutants equivalent or killed by every input, decided statically
    (kill_rules.literal_kill, checked by brute force in test_kill_rules.py)."""
    found = {op.removeprefix("wm.aor.") for op in kills(tmp_path, expr, ("AOR",), decl)}
    op = expr.split()[1]
    assert found == {f"{_SHORT[op]}_{_SHORT[m]}" for m in _SHORT if m != op} - gone


_SHORT = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_a_divisor_of_minus_one_kills_and_min_is_never_divided_by_it(tmp_path, cc, opt):
    """Issue 17 point 10: kills involving / and % fire for b == -1 (3 - -1 != 3 / -1), and at
    a == INT_MIN, b == -1 the labels do not compute INT_MIN / -1 (UBSan, SIGFPE)."""
    code = ("#include <stdlib.h>\nint main(int argc, char **argv) {\n"
            "  int a = atoi(argv[1]), b = atoi(argv[2]);\n  return (a - b) & 1;\n}\n")
    ann = annotate_code(tmp_path, code, wm("AOR"))
    binary = build(tmp_path, ann.text, cc, opt, "minus_one",
                   ("-fsanitize=undefined", "-fno-sanitize-recover=all"))
    dividing = labels_where(ann, operator="wm.aor.sub_div") | labels_where(
        ann, operator="wm.aor.sub_mod")
    assert len(dividing) == 2 and dividing <= run(binary, ["3", "-1"]).hits
    extreme = run(binary, ["-2147483648", "-1"])
    assert extreme.status == 1 and not extreme.stderr and dividing <= extreme.hits


def test_aor_by_minus_one_keeps_its_one_live_mutant(tmp_path):
    assert kills(tmp_path, "a / -1", ("AOR",)) == {
        "wm.aor.div_mod": "(-(unsigned int)a) != (unsigned int)0"}


def test_aor_on_pointers_compares_offsets_only_and_skips_float_modulo(tmp_path):
    """Issue 17 point 14: p + n <-> p - n killed where n != 0, no mutant pointer formed."""
    assert kills(tmp_path, "*(a + b)", ("AOR",), "int *a, int b") == {"wm.aor.add_sub": "b != 0"}
    assert kills(tmp_path, "*(a - b)", ("AOR",), "int *a, int b") == {"wm.aor.sub_add": "b != 0"}
    assert kills(tmp_path, "*(b + a)", ("AOR",), "int *a, int b") == {}  # b - a is no C
    assert kills(tmp_path, "(int)(a - c)", ("AOR",), "int *a, int b, int *c") == {}
    assert kills(tmp_path, "*(a + 1)", ("AOR",), "int *a, int b") == {}  # a constant offset
    text = annotate_code(tmp_path, "int f(int *a, int b) {\n  return *(a + b);\n}\n",
                         wm("AOR")).text
    assert "a - b" not in text.replace("__ffcc", "")
    assert set(kills(tmp_path, "a * b", ("AOR",), "double a, double b")) == {
        "wm.aor.mul_add", "wm.aor.mul_sub", "wm.aor.mul_div"}


def test_aor_on_floats_counts_nan_as_equal_and_holds_the_environment(tmp_path):
    """Issue 17 points 3 and 12."""
    assert kills(tmp_path, "a + b", ("AOR",), "double a, double b")["wm.aor.add_mul"] == (
        "(a + b) != (a * b) && !(isnan(a + b) && isnan(a * b))")
    text = annotate_code(tmp_path, "long double f(long double a, double b) {\n  return a * b;\n}\n"
                         "float g(float a, float b) {\n  return a / b;\n}\n", wm("AOR")).text
    # Each function's three labels are one group, which writes each predicate twice: in the
    # label's statement and as the group's operand (rewrite._counts). A long double label
    # holds the x87 environment itself; a float site's labels share one SSE region.
    assert text.count("__FFCC_COUNTS(") == 2
    assert text.count("fnstenv") == 2 * 3 and text.count("fldenv") == 2 * 3  # x87: long double
    assert text.count("stmxcsr") == 1 and text.count("ldmxcsr") == 2  # SSE for float


def test_a_float_sites_labels_share_one_region_of_what_is_left(tmp_path):
    """The original's value and each mutant's are computed once, in one masked region; a lean
    build's region computes only what its labels compare."""
    from ffcc.rewriters import annotate

    source = tmp_path / "case.c"
    source.write_text("double f(double a, double b) {\n  return a - b;\n}\n")
    full = annotate(str(source), [], wm("AOR"))
    assert [label.operator for label in full.labels] == [
        "wm.aor.sub_add", "wm.aor.sub_mul", "wm.aor.sub_div"]
    # One region: a - b, and a + b, a * b, a / b and a / b for a zero divisor, restored once.
    assert full.text.count("stmxcsr") == 1 and full.text.count('ldmxcsr %5"') == 1
    lean = annotate(str(source), [], wm("AOR"), compiled_out=frozenset({0, 1}))
    assert lean.text.count("stmxcsr") == 1 and lean.text.count('ldmxcsr %3"') == 1
    assert "__builtin_inf" in lean.text  # the division's value for a zero divisor


def test_aor_on_floats_left_out_where_the_environment_cannot_be_held(tmp_path):
    ann = annotate_code(tmp_path, "double f(double a, double b) {\n  return a * b;\n}\n",
                        wm("AOR"), args=["--target=aarch64-linux-gnu"])
    assert ann.labels == [] and ann.left_out == 3


def test_aor_float_equivalent_constants(tmp_path):
    assert "wm.aor.mul_div" not in kills(tmp_path, "a * 1.0", ("AOR",), "double a")
    assert "wm.aor.add_sub" not in kills(tmp_path, "a + 0.0", ("AOR",), "double a")
    assert "wm.aor.mul_div" in kills(tmp_path, "a * 2.0", ("AOR",), "double a")


def test_abs_kill_conditions(tmp_path):
    assert kills(tmp_path, "a * 2", ("ABS",)) == {
        "wm.abs.abs": "a < 0", "wm.abs.neg": "a > 0", "wm.abs.zero": "a == 0"}
    assert kills(tmp_path, "a * 2", ("ABS",), "unsigned a") == {
        "wm.abs.neg": "a > 0 && a != ((unsigned int)1 << 31)", "wm.abs.zero": "a == 0"}
    assert set(kills(tmp_path, "a * 2", ("ABS",), "unsigned char a")) == {
        "wm.abs.neg", "wm.abs.zero"}
    assert kills(tmp_path, "a * 2", ("ABS",), "double a") == {
        "wm.abs.abs": "isless(a, 0)", "wm.abs.neg": "isgreater(a, 0)", "wm.abs.zero": "a == 0"}


def test_abs_on_a_divisor_has_no_zero_mutant(tmp_path):
    """The original never divides by zero: fail-on-zero of the divisor is never killed."""
    found = annotate_code(tmp_path, "int f(int a, int b) {\n  return a / b;\n}\n", wm("ABS"))
    assert [(l.operator, l.predicate) for l in found.labels][3:] == [
        ("wm.abs.abs", "b < 0"), ("wm.abs.neg", "b > 0")]


def test_abs_of_a_comparison_result_is_never_negative(tmp_path):
    found = annotate_code(tmp_path, "int f(int a) {\n  return a + (a > 3);\n}\n", wm("ABS"))
    on_sum = [l.predicate for l in found.labels if l.original == "a + (a > 3)"]
    assert on_sum == ["a < 0", "a > 0", "a == 0", "(a > 3) > 0", "(a > 3) == 0"]


def test_abs_of_an_enumeration_follows_its_integer_type(tmp_path):
    signed = "enum s { M = -1, P = 1 };\nint f(enum s e) {\n  return e * 2;\n}\n"
    unsigned = "enum u { A, B };\nint f(enum u e) {\n  return e * 2;\n}\n"
    assert len(annotate_code(tmp_path, signed, wm("ABS")).labels) == 3
    assert len(annotate_code(tmp_path, unsigned, wm("ABS")).labels) == 2  # no abs


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
    # ABS's kill conditions a > 0 and a == 0 are ROR's.
    ann = annotate_code(tmp_path, "int f(int a) {\n  return a < 0;\n}\n", wm("ROR", "ABS"))
    assert [(l.operator, l.predicate) for l in ann.labels] == [
        ("wm.ror.lt_le", "a == 0"), ("wm.ror.lt_gt", "a != 0"),
        ("wm.ror.lt_eq", "a <= 0"), ("wm.ror.lt_ne", "a > 0"), ("wm.abs.abs", "a < 0")]


@pytest.mark.parametrize("code, decl, expected", [
    # a constant on the left is written on the right; ABS's a < 0, a == 0 are ROR's
    ("0 < a", "int a", [("wm.ror.lt_le", "a == 0"), ("wm.ror.lt_gt", "a != 0"),
                        ("wm.ror.lt_eq", "a >= 0"), ("wm.ror.lt_ne", "a < 0"),
                        ("wm.abs.neg", "a > 0")]),
    # the same objective spelled 0.0 and 0
    ("a < 0.0", "double a", [("wm.ror.lt_le", "a == 0.0"),
                             ("wm.ror.lt_gt", "islessgreater(a, 0.0)"),
                             ("wm.ror.lt_ge", "!isunordered(a, 0.0)"),
                             ("wm.ror.lt_eq", "islessequal(a, 0.0)"),
                             ("wm.ror.lt_ne", "!islessequal(a, 0.0)"),
                             ("wm.abs.abs", "isless(a, 0)"), ("wm.abs.neg", "isgreater(a, 0)")]),
    # n > 0u: every mutant is equivalent, always killed, or a constant (n >= 0u, n < 0u)
    ("n > 0u", "unsigned n", [("wm.abs.neg", "n > 0 && n != ((unsigned int)1 << 31)"),
                              ("wm.abs.zero", "n == 0")]),
    ("c > 0", "unsigned char c", [("wm.abs.neg", "c > 0"), ("wm.abs.zero", "c == 0")]),
    # the original is the constant: its mutants are live
    ("n >= 0u", "unsigned n", [("wm.ror.ge_le", "n > 0u"), ("wm.ror.ge_gt", "n == 0u"),
                               ("wm.abs.neg", "n > 0 && n != ((unsigned int)1 << 31)")]),
    # a signed value compared as unsigned keeps all its orderings against 0u
    ("a < 0u", "int a", [("wm.ror.lt_le", "a == 0u"), ("wm.ror.lt_gt", "a > 0u"),
                         ("wm.abs.abs", "a < 0"), ("wm.abs.neg", "a > 0"),
                         ("wm.abs.zero", "a == 0")]),
])
def test_ror_against_zero_is_trivial_free_and_shares_abs_objectives(tmp_path, code, decl,
                                                                     expected):
    """Issue 17 point 13: ROR on ``0 < a`` duplicated ABS's labels; unsigned ``n > 0u`` had
    constant mutants."""
    ann = annotate_code(tmp_path, f"int f({decl}) {{\n  return {code};\n}}\n", wm("ROR", "ABS"))
    assert [(l.operator, l.predicate) for l in ann.labels] == expected


def test_cor_mutants_that_are_mcc_combinations_are_emitted_once(tmp_path):
    options = LabelOptions(mcc=True, wm_ops=("COR",))
    ann = annotate_code(tmp_path, "int f(int a, int b) {\n  return a && b;\n}\n", options)
    assert [l.criterion for l in ann.labels].count("mcc") == 3
    # and_lhs kills where a && !b: an MCC combination; and_rhs kills where !a && b, where the
    # program skips b: no MCC combination has b there
    assert [l.operator for l in ann.labels if l.criterion == "wm"] == [
        "wm.cor.and_or", "wm.cor.and_rhs"]
    # and_lhs is recorded with the MCC label it shares, so each operator counts it
    shared = [(l.operator, l.predicate, l.also) for l in ann.labels if hasattr(l, "also")]
    assert shared == [("mcc", "(a) && !(b)", ("wm.cor.and_lhs",))]


def test_labels_shared_by_operators_name_them_all(tmp_path):
    """One label per objective, every operator whose objective it is in its record."""
    ann = annotate_code(tmp_path, "int f(int a) {\n  return a < 0;\n}\n", wm("ROR", "ABS"))
    assert [(l.operator, getattr(l, "also", ())) for l in ann.labels] == [
        ("wm.ror.lt_le", ("wm.abs.zero",)), ("wm.ror.lt_gt", ()), ("wm.ror.lt_eq", ()),
        ("wm.ror.lt_ne", ("wm.abs.neg",)), ("wm.abs.abs", ())]
    assert "also" not in vars(ann.labels[1])  # only shared labels carry the field


@pytest.mark.parametrize("spelled, same", [
    ("(a) < (0)", "a < 0"), ("((a) && !(b))", "a && !b"), ("(a + b) * (c)", "(a + b) * c"),
    ("f(x) > (y)", "f(x) > y"), ("(int)x > 0", "(int)x > 0"), ("(a) - (b)", "a - b"),
    ("(a) + (b)) * ((c)", "a + b) * (c"),
])
def test_predicate_key_drops_only_parentheses_that_mean_nothing(spelled, same):
    assert predicate_key(spelled) == same


@pytest.mark.parametrize("first, second, same", [
    ("!((a)) && !((b))", "((!((a))) && !((b)))", True),   # MCC and COR around a `!` operand
    ("(A) && (B) && !(C)", "(((A) && (B)) && !(C))", True),  # && groups either way
    ("(p->n == 0)", "(p->n) == 0", True),                 # a member chain is an operand
    ("(`f(x) == 0`)", "`f(x)` == 0", True),               # backquotes mark, they do not change
    ("a || b && c", "(a || b) && c", False),
    ("(a && b) || c", "a && (b || c)", False),
    ('s == "&&" && x', 'x && s == "&&"', False),          # order is kept, literals are opaque
    ("c ? a && b : d", "c ? (a && b) : d", False),         # a conditional is left alone
])
def test_predicate_key_groups_logical_chains(first, second, same):
    assert (predicate_key(first) == predicate_key(second)) is same


def labels_of(tmp_path, code: str, options: LabelOptions) -> list[tuple[str, str, tuple]]:
    ann = annotate_code(tmp_path, code, options)
    return [(l.operator, l.predicate, getattr(l, "also", ())) for l in ann.labels]


def test_one_label_per_objective_across_operands_and_sites(tmp_path):
    """Same-site duplicates by construction: ABS on both operands of ``x != x`` (one value,
    read twice) and COR's ``a || b`` -> ``a`` where MCC spells the same combination; across
    sites, MCC's "first condition alone" and ABS zero on the comparison that condition is."""
    same = labels_of(tmp_path, "int f(int x) { return x != x; }\n", wm("ABS"))
    assert [op for op, _, _ in same] == ["wm.abs.abs", "wm.abs.neg", "wm.abs.zero"]
    other = labels_of(tmp_path, "int f(int x, int y) { return x != y; }\n", wm("ABS"))
    assert len(other) == 6, "two operands, each with its mutants"
    chain = labels_of(tmp_path, "int f(int a, int b) { return !(a & 1) && (b != 0); }\n",
                      LabelOptions(mcc=True, wm_ops=frozenset({"COR"})))
    assert ("mcc", "!((a & 1)) && !((b != 0))", ("wm.cor.and_lhs",)) in chain
    first = labels_of(tmp_path, "int f(int n, int x) { if (n == 0 || x) return 1; return 0; }\n",
                      LabelOptions(mcc=True, wm_ops=frozenset({"ABS"})))
    assert ("mcc", "(n == 0)", ("wm.abs.zero",)) in first
    assert [op for op, _, _ in first].count("wm.abs.zero") == 0
    wrapped = labels_of(tmp_path, "int f(int n, int x) { return (n < 0) || x; }\n",
                        LabelOptions(mcc=True, wm_ops=frozenset({"ABS"})))
    assert ("mcc", "((n < 0))", ("wm.abs.abs",)) in wrapped, "parentheses around the condition"


def test_side_effect_operands_go_through_temporaries(tmp_path):
    """Captured as the program evaluates it, into the function's frame (frame.py); the other
    operand is read again by the labels and by the program. Both captured, in order: only
    where the order cannot matter (test_label_reads.py)."""
    ann = annotate_code(tmp_path, "int g(void);\nint f(int n) {\n  return g() < n;\n}\n",
                        wm("ROR"))
    assert ann.text.count("g()") == 1
    assert "int f(int n) { __FFCC_TEMP int __ffcc_t0[3];" in ann.text
    assert "return (__ffcc_t0[0] = (g()), ({ {" in ann.text
    assert "__ffcc_t0[1] = (__ffcc_t0[0]); __ffcc_t0[2] = (n);" in ann.text
    assert "} }), __ffcc_t0[0]) < n;" in ann.text
    both = annotate_code(tmp_path, "int g(void);\nint f(int a, int b) {\n  return g() < a / b;\n}\n",
                         wm("ROR"))  # a / b may be undefined: never evaluated twice
    assert "return (__ffcc_t0[0] = (g()), __ffcc_t0[1] = (a / b), ({ {" in both.text
    assert "} }), __ffcc_t0[0] < __ffcc_t0[1]);" in both.text


def test_temporaries_without_a_frame_are_declared_by_the_site(tmp_path):
    """A pointer that is not only compared cannot be held in a frame element
    (frame.value_spelling): the site declares its captures in a statement expression, as
    where a function has no frame."""
    ann = annotate_code(tmp_path, "char *g(void);\nchar *f(long n) {\n  return g() + n;\n}\n",
                        wm("AOR", "ABS"))
    assert "({ __FFCC_TEMP __auto_type __ffcc_0_x0 = (g()); __FFCC_TEMP __auto_type __ffcc_0_x1 = (n);" \
        in ann.text
    assert "__ffcc_t" not in ann.text


def test_ordered_pointer_captures_keep_their_type(tmp_path, cc):
    """A captured pointer would be held in a frame element as ``const volatile void *``, which
    draws a warning when ordered against another pointer type: an ordering site declares its
    captures (frame.value_spelling), and compiles without a warning."""
    code = "char *g(void);\nint lt(char *p) {\n  return g() < p;\n}\n"
    ann = annotate_code(tmp_path, code, wm("ROR"))
    assert "__ffcc_t" not in ann.text and "__auto_type __ffcc_0_x0 = (g());" in ann.text
    source = tmp_path / "pointers.c"
    source.write_text(ann.text)
    done = subprocess.run([cc, "-O0", "-Wall", "-Wextra", "-Werror", "-include",
                           str(HARNESS / "ffcc_hits.h"), "-c", str(source), "-o",
                           str(tmp_path / "pointers.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_bitfield_operand_in_temporary_is_promoted(tmp_path):
    ann = annotate_code(tmp_path, "struct s { int bf : 3; };\nint g(void);\n"
                                  "int f(struct s v) {\n  return v.bf < g();\n}\n", wm("ROR"))
    assert "__ffcc_t0[1] = (+v.bf);" in ann.text
    build(tmp_path, ann.text + "int g(void) { return 1; }\nint main(void) { return 0; }\n",
          "gcc", "-O0", "bitfield")


WIDE_BITFIELDS = """#include <stdio.h>
struct S { unsigned long long w : 40; unsigned int n : 5; } s;
unsigned long long add(int k) { return s.w + k; }
unsigned long long neg(void) { return -s.w; }
unsigned int narrow(int k) { return s.n + k; }
"""


def test_wide_bitfield_arithmetic_is_left_out_where_the_compilers_disagree(tmp_path):
    """Issue 32, 9b: gcc computes with a bit-field wider than int modulo 2^width, clang in its
    declared type, so no one AOR, UOD or ABS (negation) label text is right for both: those are
    left out; labels on narrower bit-fields (promoted to int alike) stay."""
    ann = annotate_code(tmp_path, WIDE_BITFIELDS, LabelOptions(mcc=False, wm_ops=ALL_WM))
    by_function: dict[str, set[str]] = {}
    for label in ann.labels:
        by_function.setdefault(label.function, set()).add(label.operator)
    assert not {op for op in by_function.get("add", set()) | by_function.get("neg", set())
                if op.startswith(("wm.aor", "wm.uod"))}
    assert all(label.operator == "wm.abs.zero" for label in ann.labels
               if label.function in ("add", "neg") and "s.w" in label.predicate)
    assert {"wm.aor.add_sub", "wm.aor.add_mul"} <= by_function["narrow"]
    assert ann.left_out >= 6
    outputs = set()
    for compiler in ("gcc", "clang"):
        program = tmp_path / f"wide-{compiler}"
        build = subprocess.run([compiler, "-x", "c", "-", "-o", str(program)], capture_output=True,
                               text=True, input=WIDE_BITFIELDS + "int main(void) { s.w = 1; "
                               "printf(\"%llx\\n\", neg()); return 0; }\n")
        assert build.returncode == 0, build.stderr
        outputs.add(subprocess.run([str(program)], capture_output=True, text=True).stdout)
    assert outputs == {"ffffffffff\n", "ffffffffffffffff\n"}, "the compilers disagree"


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


def test_records_show_source_text_and_side_effects_as_values(tmp_path):
    """Issue 17 point 15: ``original`` and operands are the source's tokens with each run of
    spaces, comments or line breaks as one space; an operand or atom with side effects is
    written in backquotes (the value the program computed; labels never evaluate it again)."""
    code = ("int g(int, int);\nint f(int x, int a, int b) {\n  int r = (x++) != 3;\n"
            "  r += a+b*2 < g( a ,b );\n  if (g(a, b) && a /* comment */ <\n        b) r++;\n"
            "  return r + (a  /  -1);\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=True, wm_ops=ALL_WM))
    first = {}
    for label in ann.labels:
        first.setdefault((label.original, label.operator), label.predicate)
    assert first["(x++) != 3", "wm.ror.ne_lt"] == "`x++` > 3"
    assert first["a+b*2 < g( a ,b )", "wm.ror.lt_le"] == "(a+b*2) == `g( a ,b )`"
    assert first["g(a, b) && a < b", "mcc"] == "(`g(a, b)`) && (a < b)"
    assert first["a / -1", "wm.aor.div_mod"] == "(-(unsigned int)a) != (unsigned int)0"
    assert first["r + (a / -1)", "wm.aor.add_sub"] == "(a / -1) != 0"


def test_cor_speculates_a_division_by_minus_one_but_not_min_by_it(tmp_path, cc):
    """Issue 17 point 10: the guard of a skipped ``n / d`` excluded every d == -1."""
    code = ("#include <stdlib.h>\nint main(int argc, char **argv) {\n"
            "  int flag = atoi(argv[1]), n = atoi(argv[2]), d = atoi(argv[3]);\n"
            "  if (flag && n / d > 3)\n    return 1;\n  return 0;\n}\n")
    ann = annotate_code(tmp_path, code, wm("COR"))
    and_rhs = labels_where(ann, operator="wm.cor.and_rhs")
    binary = build(tmp_path, ann.text, cc, "-O2", "speculated",
                   ("-fsanitize=undefined", "-fno-sanitize-recover=all"))
    assert len(and_rhs) == 1 and and_rhs <= run(binary, ["0", "-8", "-1"]).hits
    extreme = run(binary, ["0", "-2147483648", "-1"])
    assert extreme.status == 0 and not extreme.stderr and not and_rhs & extreme.hits


@pytest.mark.parametrize("code, decl, operators", [
    ("b == 1", "_Bool b", []),  # b < 1 is b != 1, b <= 1 always true, ...: all trivial
    ("b != 0", "_Bool b", []),
    ("c <= 255", "unsigned char c", ["wm.ror.le_lt", "wm.ror.le_ge"]),  # c <= 255 always
    ("a - b", "int a, _Bool b", ["wm.aor.sub_add", "wm.aor.sub_mul", "wm.aor.sub_mod"]),
])
def test_operands_with_few_values_have_no_constant_mutants(tmp_path, code, decl, operators):
    found = annotate_code(tmp_path, f"int f({decl}) {{\n  return {code};\n}}\n",
                          wm("ROR", "AOR"))
    assert [label.operator for label in found.labels] == operators


def test_a_value_only_comparison_groups_read_is_laundered_by_the_drivers_macro(tmp_path):
    """``a < b`` under ROR and ABS: every label that reads the copies of ``a`` and ``b`` is in a
    comparison group, whose asm form takes them as operands, so their laundering is the
    driver's ``__FFCC_LAUNDER_COMPARED`` (nothing there, an empty asm where groups are C).
    ``a + b`` under AOR: the copies feed C predicates, and are always laundered."""
    compared = annotate_code(tmp_path, "int f(int a, int b) {\n  return a < b;\n}\n",
                             wm("ROR", "ABS")).text
    assert compared.count("__FFCC_LAUNDER_COMPARED(") == 2 and '"+r"' not in compared
    computed = annotate_code(tmp_path, "int f(int a, int b) {\n  return a + b;\n}\n",
                             wm("AOR", "ABS")).text
    assert "__FFCC_LAUNDER_COMPARED(" not in computed and computed.count('"+r"') == 2


FLOAT_DIVISIONS = r"""
#include <stdio.h>
double mul(double d, double e) { return d * e; }
double quotient(double d, double e) { return d / e; }
double by_integer(double d, int n) { return d * n; }
float sum(float d, float e) { return d + e; }
long double product(long double d, long double e) { return d * e; }
double scaled(double d, double e) { d *= e; return d; }
int main(int argc, char **argv) {
  (void)argv;
  double zero = argc - 1;
  printf("%a %a %a %La %a\n", mul(3, zero), quotient(zero, 2), sum(1, (float)zero),
         product(2, zero), scaled(-5, -zero));
  printf("%a %a\n", by_integer(4, argc - 1), by_integer(-0.0, 1 - argc));
  printf("%a %a\n", quotient(1, zero), quotient(zero, zero));  /* the program's own */
  return 0;
}
"""


@pytest.mark.parametrize("compiler", [name for name in ("gcc", "clang") if have(name)])
def test_float_division_mutants_divide_by_no_zero_a_sanitizer_sees(tmp_path, compiler):
    """Issue 32.4: under -fsanitize=float-divide-by-zero the labelled program reports the
    program's own divisions by zero, and none of its labels'."""
    source = tmp_path / "divisions.c"
    source.write_text(FLOAT_DIVISIONS)
    outcomes = []
    for name, labels in (("plain", []), ("labelled", ["--mcc", "--wm=all", "--labels-required"])):
        ffcc(*labels, f"--cc={compiler}", "-O1", "-fsanitize=undefined,float-divide-by-zero",
             "-o", str(tmp_path / name), str(source))
        outcomes.append(observed(tmp_path / name))
    plain, labelled = outcomes
    assert plain.stderr.count(b"division by zero") == 1  # UBSan reports a place once
    assert labelled == plain


def test_an_unsigned_divisor_is_minus_one_only_in_the_type_the_division_computes_in(tmp_path, cc):
    """Issue 32.9a: with a long dividend, an unsigned int divisor of UINT_MAX is 4294967295 in
    the division, not -1: at a = 2^32 the quotient and the remainder are both 1, so the mutants
    swapping / and % are not killed there, and at a = 5 they are."""
    code = ("#include <stdlib.h>\nint main(int argc, char **argv) {\n"
            "  long a = atol(argv[1]); unsigned b = (unsigned)strtoul(argv[2], 0, 10);\n"
            "  long q = a / b, r = a % b;\n  return (int)(q + r) & 1;\n}\n")
    ann = annotate_code(tmp_path, code, wm("AOR"))
    binary = build(tmp_path, ann.text, cc, "-O1", "unsigned_divisor",
                   ("-fsanitize=undefined", "-fno-sanitize-recover=all"))
    swapped = labels_where(ann, operator="wm.aor.div_mod") | labels_where(
        ann, operator="wm.aor.mod_div")
    assert len(swapped) == 2
    assert not swapped & run(binary, ["4294967296", "4294967295"]).hits
    assert swapped <= run(binary, ["5", "4294967295"]).hits
