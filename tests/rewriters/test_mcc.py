"""MCC labels and side-effect normalisation, rule by rule (C in -> labels and code out)."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions

MCC = LabelOptions(mcc=True)


def predicates(annotation) -> list[str]:
    return [label.predicate for label in annotation.labels]


def test_one_label_per_combination(tmp_path):
    ann = annotate_code(tmp_path, "int f(int x, int y, int a, int b) {\n"
                                  "  if (x == y && a < b) return 1;\n  return 0;\n}\n", MCC)
    assert predicates(ann) == ["(x == y) && (a < b)", "(x == y) && !(a < b)",
                               "!(x == y) && (a < b)", "!(x == y) && !(a < b)"]
    assert [l.index for l in ann.labels] == [0, 1, 2, 3]
    assert {(l.criterion, l.operator, l.line, l.column, l.function) for l in ann.labels} == {
        ("mcc", "mcc", 2, 7, "f")}
    assert ann.labels[0].original == "x == y && a < b"
    assert ann.left_out == 0
    for i in range(4):
        assert f"__FFCC_LABEL({i});" in ann.text


def test_nothing_to_instrument_leaves_text_untouched(tmp_path):
    code = "int f(int x) {\n  if (x > 2) return 1;\n  return x;\n}\n"
    ann = annotate_code(tmp_path, code, MCC)
    assert ann.text == code and ann.labels == [] and ann.left_out == 0


def test_lines_are_kept(tmp_path):
    code = ("int f(int x, int y) {\n  if (x > 0 &&\n      y > 0 ||\n      x < -5)\n"
            "    return 1;\n  return 0;\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=True, wm_ops=frozenset({"COR", "ROR"})))
    assert len(ann.labels) == 8 + 6 + 3 * 4
    assert ann.text.count("\n") == code.count("\n")
    assert ann.text.splitlines()[4:] == code.splitlines()[4:]


def test_fig8a_side_effect_in_single_condition_is_not_labelled(tmp_path):
    code = "int g(void);\nint f(void) {\n  if (g()) return 1;\n  return 0;\n}\n"
    assert annotate_code(tmp_path, code, MCC).text == code


def test_fig8b_lazy_and_with_side_effects(tmp_path):
    ann = annotate_code(tmp_path, "int p(const char *);\nint f(void) {\n"
                                  '  if (p("a") && p("b")) return 1;\n  return 0;\n}\n', MCC)
    # p("b") is skipped when p("a") is false and cannot be re-evaluated: those two are left out
    assert predicates(ann) == ['(p("a")) && (p("b"))', '(p("a")) && !(p("b"))']
    assert ann.left_out == 2
    assert ann.text.count('p("a")') == 1 and ann.text.count('p("b")') == 1


def test_fig8c_lazy_or_with_side_effects(tmp_path):
    ann = annotate_code(tmp_path, "int p(const char *);\nint f(void) {\n"
                                  '  if (p("a") || p("b")) return 1;\n  return 0;\n}\n', MCC)
    assert predicates(ann) == ['!(p("a")) && (p("b"))', '!(p("a")) && !(p("b"))']
    assert ann.left_out == 2
    assert ann.text.count('p("a")') == 1 and ann.text.count('p("b")') == 1


def test_pure_atom_after_side_effect_is_speculated(tmp_path):
    ann = annotate_code(tmp_path, "int g(void);\nint f(int x) {\n"
                                  "  if (g() || x > 3) return 1;\n  return 0;\n}\n", MCC)
    assert len(ann.labels) == 4 and ann.left_out == 0
    assert "? (" in ann.text  # evaluated where || skipped it, from an opaque copy of x
    assert ('= ({ __FFCC_TEMP __auto_type __ffcc_v0 = (x); __asm__ volatile("" : "+r"(__ffcc_v0)); '
            '!!(__ffcc_v0 > 3); })') in ann.text


def test_pointer_dereference_is_never_speculated(tmp_path):
    code = "struct s { int v; };\nint f(struct s *p) {\n  if (p && p->v > 2) return 1;\n  return 0;\n}\n"
    ann = annotate_code(tmp_path, code, MCC)
    # a null check cannot make p->v safe where the program did not read it: left out
    assert predicates(ann) == ["(p) && (p->v > 2)", "(p) && !(p->v > 2)"]
    assert ann.left_out == 2
    assert ann.text.count("->") == 1


def test_division_guard_on_speculated_atom(tmp_path):
    ann = annotate_code(tmp_path, "int f(int n, int d) {\n"
                                  "  if (d == 0 || n / d > 3) return 1;\n  return 0;\n}\n", MCC)
    assert len(ann.labels) == 4
    assert "(__ffcc_v1) != 0 && (__ffcc_v1) != -1) ? !!(__ffcc_v0/__ffcc_v1 > 3) : 2" in ann.text


def test_unbounded_subscript_is_not_speculated(tmp_path):
    ann = annotate_code(tmp_path, "int f(const char *s, int n) {\n  int i = 0;\n"
                                  "  while (i < n && s[i] != 0) i++;\n  return i;\n}\n", MCC)
    assert predicates(ann) == ["(i < n) && (s[i] != 0)", "(i < n) && !(s[i] != 0)"]
    assert ann.left_out == 2


def test_constant_subscript_within_bound_is_speculated(tmp_path):
    ann = annotate_code(tmp_path, "enum { N = 4 };\nint a[4];\nint f(int i) {\n"
                                  "  return (i && a[N - 1] > 0) + (i && a[4] > 0) + (i && a[i] > 0);\n}\n",
                        MCC)
    assert [l.predicate for l in ann.labels if l.predicate.startswith("!(i)")] == [
        "!(i) && (a[N-1] > 0)", "!(i) && !(a[N-1] > 0)"]
    assert ann.left_out == 4  # a[4] is out of bounds, a[i] has no constant index
    assert "? !!(a[N-1] > 0) : 2)" in ann.text  # read directly: no subscript guard


def test_nested_ternaries_are_separate_decisions(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c, int d) {\n"
                                  "  return (a && b) ? ((c || d) ? 1 : 2) : 3;\n}\n", MCC)
    assert {l.original for l in ann.labels} == {"(a && b)", "(c || d)"}
    assert len(ann.labels) == 8


def test_negations_and_parentheses(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c) {\n"
                                  "  return !(a || !b) && c;\n}\n", MCC)
    assert len(ann.labels) == 8
    assert ann.labels[0].predicate == "(a) && (b) && (c)"


@pytest.mark.parametrize("bound, expected", [(None, 16), (4, 16), (3, 16), (2, 12), (1, 8)])
def test_bounded_mcc_windows(tmp_path, bound, expected):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c, int d) {\n"
                                  "  return a && b && c && d;\n}\n",
                        LabelOptions(mcc=True, mcc_max=bound))
    assert len(ann.labels) == expected


def test_macro_bodies_are_left_alone(tmp_path):
    code = ("#define BOTH(a, b) ((a) && (b))\n#define POS(c) ((c) > 0 && (c) < 9)\n"
            "int f(int x, int y) {\n  if (BOTH(x, y)) return 1;\n"
            "  return POS(x) || y;\n}\n")
    ann = annotate_code(tmp_path, code, MCC)
    assert [l.original for l in ann.labels] == ["POS(x) || y"] * 4
    assert ann.text.splitlines()[:4] == code.splitlines()[:4]


def test_constant_and_unevaluated_contexts_are_skipped(tmp_path):
    code = ("enum { A = 1, B = 2 };\nint f(int x, int y) {\n"
            "  static int s = A && B;\n  int n = sizeof(x && y);\n"
            "  switch (x) { case A && B: return s; }\n"
            "  _Static_assert(A || B, \"c\");\n  return n + __builtin_constant_p(x && y);\n}\n")
    assert annotate_code(tmp_path, code, MCC).text == code


def test_only_funcs(tmp_path):
    code = "int f(int a, int b) { return a && b; }\nint g(int a, int b) { return a || b; }\n"
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=True, only_funcs=frozenset({"g"})))
    assert {l.function for l in ann.labels} == {"g"}


RUN_CASES = {
    # program, {argv: expected label indices}
    "and": ("if (x > 0 && y > 0) puts(\"both\");",
            {("1", "1"): {0}, ("1", "-1"): {1}, ("-1", "1"): {2}, ("-1", "-1"): {3}}),
    "or_effects": ("if (show(x) || show(y)) puts(\"one\");",
                   {("1", "0"): set(), ("0", "1"): {0}, ("0", "0"): {1}}),
    "loop": ("while (x > 0 && y > x) x--;",
             {("3", "5"): {0, 2}, ("0", "5"): {2}, ("3", "1"): {1}, ("-1", "-2"): {3}}),
}
RUN_PROGRAM = """#include <stdio.h>
#include <stdlib.h>
static int show(int v) { printf("show %d\\n", v); return v; }
int main(int argc, char **argv) {
  int x = atoi(argv[1]), y = atoi(argv[2]);
  BODY
  printf("%d %d\\n", x, y);
  return 0;
}
"""


@pytest.mark.parametrize("case", sorted(RUN_CASES))
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_inputs_light_exactly_the_expected_labels(tmp_path, cc, opt, case):
    body, expectations = RUN_CASES[case]
    code = RUN_PROGRAM.replace("BODY", body)
    ann = annotate_code(tmp_path, code, MCC)
    binary = build(tmp_path, ann.text, cc, opt, case)
    original = build(tmp_path, code, cc, opt, case + "-orig")
    for argv, expected in expectations.items():
        got = run(binary, list(argv))
        assert got.hits == expected, (argv, [l.predicate for l in ann.labels])
        assert got.stdout == run(original, list(argv)).stdout
