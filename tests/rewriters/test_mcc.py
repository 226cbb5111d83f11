"""MCC labels and side-effect normalisation, rule by rule (C in -> labels and code out)."""

from __future__ import annotations

import itertools
import random

import pytest
from rewriter_harness import annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.evaluation import combination_count, count_paths, flow_of, paths, windows
from ffcc.rewriters.model import MCC_MAX_DEFAULT, BoundedDecision

MCC = LabelOptions(mcc=True)


def predicates(annotation) -> list[str]:
    """The labels' predicates, without the marks display.py puts around side effects."""
    return [label.predicate.replace("`", "") for label in annotation.labels]


def test_one_label_per_reachable_combination(tmp_path):
    ann = annotate_code(tmp_path, "int f(int x, int y, int a, int b) {\n"
                                  "  if (x == y && a < b) return 1;\n  return 0;\n}\n", MCC)
    # a < b is not evaluated when x != y: one combination, not two
    assert predicates(ann) == ["(x == y) && (a < b)", "(x == y) && !(a < b)", "!(x == y)"]
    assert [l.index for l in ann.labels] == [0, 1, 2]
    assert {(l.criterion, l.operator, l.line, l.column, l.function) for l in ann.labels} == {
        ("mcc", "mcc", 2, 7, "f")}
    assert ann.labels[0].original == "x == y && a < b"
    assert ann.left_out == 0 and ann.bounded == []
    for i in range(3):
        assert f"__FFCC_LABEL({i}, (" in ann.text
    assert "__FFCC_LABEL(2, ((__ffcc_t0[0] == 0)));" in ann.text


def test_a_chain_of_n_atoms_gets_n_plus_one_labels(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c) {\n"
                                  "  return a || b || c;\n}\n", MCC)
    assert predicates(ann) == ["(a)", "!(a) && (b)", "!(a) && !(b) && (c)",
                               "!(a) && !(b) && !(c)"]
    chain = " || ".join(f"c == {n}" for n in range(16))
    ann = annotate_code(tmp_path, f"int f(int c) {{\n  return {chain};\n}}\n", MCC)
    assert len(ann.labels) == 17 and ann.bounded == []


def test_nothing_to_instrument_leaves_text_untouched(tmp_path):
    code = "int f(int x) {\n  if (x > 2) return 1;\n  return x;\n}\n"
    ann = annotate_code(tmp_path, code, MCC)
    assert ann.text == code and ann.labels == [] and ann.left_out == 0


def test_lines_are_kept(tmp_path):
    code = ("int f(int x, int y) {\n  if (x > 0 &&\n      y > 0 ||\n      x < -5)\n"
            "    return 1;\n  return 0;\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=True, wm_ops=frozenset({"COR", "ROR"})))
    assert [l.criterion for l in ann.labels].count("mcc") == 5
    assert len(ann.labels) > 5
    assert ann.text.count("\n") == code.count("\n")
    assert ann.text.splitlines()[4:] == code.splitlines()[4:]


def test_fig8a_side_effect_in_single_condition_is_not_labelled(tmp_path):
    code = "int g(void);\nint f(void) {\n  if (g()) return 1;\n  return 0;\n}\n"
    assert annotate_code(tmp_path, code, MCC).text == code


def test_fig8b_lazy_and_with_side_effects(tmp_path):
    ann = annotate_code(tmp_path, "int p(const char *);\nint f(void) {\n"
                                  '  if (p("a") && p("b")) return 1;\n  return 0;\n}\n', MCC)
    assert predicates(ann) == ['(p("a")) && (p("b"))', '(p("a")) && !(p("b"))', '!(p("a"))']
    assert ann.left_out == 0
    assert ann.text.count('p("a")') == 1 and ann.text.count('p("b")') == 1


def test_fig8c_lazy_or_with_side_effects(tmp_path):
    ann = annotate_code(tmp_path, "int p(const char *);\nint f(void) {\n"
                                  '  if (p("a") || p("b")) return 1;\n  return 0;\n}\n', MCC)
    assert predicates(ann) == ['(p("a"))', '!(p("a")) && (p("b"))', '!(p("a")) && !(p("b"))']
    assert ann.left_out == 0
    assert ann.text.count('p("a")') == 1 and ann.text.count('p("b")') == 1


@pytest.mark.parametrize("declarations, condition, skipped", [
    ("int g(void);\nint f(int x) {\n", "g() || x > 3", "x > 3"),
    ("struct s { int v; };\nint f(struct s *p) {\n", "p && p->v > 2", "p->v > 2"),
    ("int f(int n, int d) {\n", "d == 0 || n / d > 3", "n / d > 3"),
    ("int f(const char *s, int i, int n) {\n", "i < n && s[i] != 0", "s[i] != 0"),
    ("int a[4];\nint f(int i) {\n", "i && a[3] > 0", "a[3] > 0"),
])
def test_atoms_the_original_skips_are_never_evaluated(tmp_path, declarations, condition,
                                                      skipped):
    code = f"{declarations}  if ({condition}) return 1;\n  return 0;\n}}\n"
    ann = annotate_code(tmp_path, code, MCC)
    assert len(ann.labels) == 3 and ann.left_out == 0
    assert ann.text.count(skipped) == 1  # no speculative copy, no guard
    assert ann.text.count("? (") == 1  # the decision's value, stored in an arm (rewrite.py)
    assert "__ffcc_v" not in ann.text


def test_nested_ternaries_are_separate_decisions(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c, int d) {\n"
                                  "  return (a && b) ? ((c || d) ? 1 : 2) : 3;\n}\n", MCC)
    assert {l.original for l in ann.labels} == {"(a && b)", "(c || d)"}
    assert len(ann.labels) == 6


def test_negations_and_parentheses(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, int c) {\n"
                                  "  return !(a || !b) && c;\n}\n", MCC)
    # a true decides !(a || !b) false: neither b nor c is evaluated; b false decides it too
    assert predicates(ann) == ["(a)", "!(a) && (b) && (c)", "!(a) && (b) && !(c)", "!(a) && !(b)"]


def test_a_chain_is_never_bounded(tmp_path):
    # windows would give more labels than the n + 1 combinations of a chain
    for bound in (0, 1, 2, 3, 8):
        ann = annotate_code(tmp_path, "int f(int a, int b, int c, int d) {\n"
                                      "  return a && b && c && d;\n}\n",
                            LabelOptions(mcc=True, mcc_max=bound))
        assert len(ann.labels) == 5 and ann.bounded == []


PAIRS = "(a && b) || (c && d) || (e && f) || (g && h)"  # each pair doubles the combinations


def test_bounded_decisions_get_windows_that_start_at_each_atom(tmp_path):
    code = (f"int f(int a, int b, int c, int d, int e, int f, int g, int h) {{\n"
            f"  return {PAIRS};\n}}\n")
    whole = annotate_code(tmp_path, code, LabelOptions(mcc=True, mcc_max=0))
    assert len(whole.labels) == 31 and whole.bounded == []
    assert annotate_code(tmp_path, code, LabelOptions(mcc=True, mcc_max=5)).bounded == []
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=True, mcc_max=2))
    assert ann.bounded == [BoundedDecision(line=2, atoms=8, window=2)]
    # from each atom but the last, evaluation until it leaves the window of two atoms
    expected = []
    for first, second in ("ab", "cd", "ef", "gh"):
        expected += [f"({first}) && ({second})", f"({first}) && !({second})", f"!({first})"]
        if second != "h":
            after = chr(ord(second) + 1)
            expected += [f"({second})", f"!({second}) && ({after})", f"!({second}) && !({after})"]
    assert predicates(ann) == expected


def test_the_default_bound_cuts_only_huge_decisions(tmp_path):
    assert LabelOptions().mcc_max == MCC_MAX_DEFAULT == 6
    terms = " || ".join(f"(x >= {i * 10} && x < {i * 10 + 5})" for i in range(20))
    code = f"int f(int x) {{\n  if ({terms})\n    return 1;\n  return 0;\n}}\n"
    ann = annotate_code(tmp_path, code, MCC)  # 2^21 - 1 combinations unbounded
    assert ann.bounded == [BoundedDecision(line=2, atoms=40, window=6)]
    tree = pairs_tree(20)
    assert len(ann.labels) == combination_count(flow_of(tree, tuple_shape), 6) < 500
    assert all(len(l.predicate.split(" && ")) <= 6 for l in ann.labels)
    assert combination_count(flow_of(tree, tuple_shape), 0) == 2 ** 21 - 1


def test_forty_atoms_are_counted_not_enumerated():
    # 2^20 - 1 combinations unbounded: counting them and choosing windows must not make them
    flow = flow_of(pairs_tree(20), tuple_shape)
    assert count_paths(flow, range(40)) == 2 ** 21 - 1
    assert windows(flow, 8) == [range(start, start + 8) for start in range(33)]
    first = next(paths(flow, range(40)))
    assert first == ((0, True), (1, True))


# Decision trees as tuples: atoms are their numbers, ("!", x), ("&&" | "||", x, y).
def tuple_shape(node):
    return ("atom", ()) if isinstance(node, int) else (node[0], node[1:])


def pairs_tree(count: int):
    """(a && b) || (c && d) || ... with ``count`` pairs."""
    tree = ("&&", 0, 1)
    for pair in range(1, count):
        tree = ("||", tree, ("&&", 2 * pair, 2 * pair + 1))
    return tree


def random_tree(rng: random.Random, first: int, atoms: int):
    if atoms == 1:
        tree = first
    else:
        left = rng.randint(1, atoms - 1)
        tree = (rng.choice(("&&", "||")), random_tree(rng, first, left),
                random_tree(rng, first + left, atoms - left))
    return ("!", tree) if rng.random() < 0.2 else tree


def evaluate(node, values: tuple[bool, ...], path: list[tuple[int, bool]]) -> bool:
    """C's short-circuit evaluation, recording each atom it evaluates."""
    if isinstance(node, int):
        path.append((node, values[node]))
        return values[node]
    if node[0] == "!":
        return not evaluate(node[1], values, path)
    left = evaluate(node[1], values, path)
    if left == (node[0] == "||"):
        return left
    return evaluate(node[2], values, path)


@pytest.mark.parametrize("seed", range(40))
def test_combinations_are_exactly_what_evaluation_reaches(seed):
    rng = random.Random(seed)
    atoms = rng.randint(1, 9)
    tree = random_tree(rng, 0, atoms)
    flow = flow_of(tree, tuple_shape)
    assert flow.atoms == atoms
    reached = set()
    for values in itertools.product((True, False), repeat=atoms):
        path: list[tuple[int, bool]] = []
        evaluate(tree, values, path)
        reached.add(tuple(path))
    whole = list(paths(flow, range(atoms)))
    assert len(whole) == len(set(whole)) == count_paths(flow, range(atoms))
    assert set(whole) == reached
    for bound in range(1, atoms):
        for start in range(atoms - bound + 1):
            window = range(start, start + bound)
            expected = {tuple((a, v) for a, v in path[i:] if a in window)
                        for path in reached for i, (a, _) in enumerate(path) if a == start}
            got = list(paths(flow, window))
            assert len(got) == count_paths(flow, window) and set(got) == expected


def test_macro_bodies_are_left_alone(tmp_path):
    code = ("#define BOTH(a, b) ((a) && (b))\n#define POS(c) ((c) > 0 && (c) < 9)\n"
            "int f(int x, int y) {\n  if (BOTH(x, y)) return 1;\n"
            "  return POS(x) || y;\n}\n")
    ann = annotate_code(tmp_path, code, MCC)
    assert [l.original for l in ann.labels] == ["POS(x) || y"] * 3
    lines = ann.text.splitlines()
    assert lines[2].startswith(f"{code.splitlines()[2]} __FFCC_TEMP ")  # the frame (frame.py)
    assert lines[:2] + lines[3:4] == code.splitlines()[:2] + code.splitlines()[3:4]


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
            {("1", "1"): {0}, ("1", "-1"): {1}, ("-1", "1"): {2}, ("-1", "-2"): {2}}),
    "or_effects": ("if (show(x) || show(y)) puts(\"one\");",
                   {("1", "0"): {0}, ("0", "1"): {1}, ("0", "0"): {2}}),
    "loop": ("while (x > 0 && y > x) x--;",
             {("3", "5"): {0, 2}, ("0", "5"): {2}, ("3", "1"): {1}, ("-1", "-2"): {2}}),
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


WINDOWS_PROGRAM = """#include <stdlib.h>
int main(int argc, char **argv) {
  int a = argv[1][0] == '1', b = argv[1][1] == '1', c = argv[1][2] == '1', d = argv[1][3] == '1';
  int e = argv[1][4] == '1', f = argv[1][5] == '1', g = argv[1][6] == '1', h = argv[1][7] == '1';
  return (PAIRS) ? 3 : 4;
}
""".replace("PAIRS", PAIRS)


def test_window_labels_fire_exactly_where_evaluation_enters_their_window(tmp_path, cc):
    """A window's label needs its first atom evaluated: no speculation may set a capture the
    original skipped (every input of the 8 atoms, compared with the evaluation model)."""
    ann = annotate_code(tmp_path, WINDOWS_PROGRAM, LabelOptions(mcc=True, mcc_max=3))
    assert ann.bounded
    tree = pairs_tree(4)
    flow = flow_of(tree, tuple_shape)
    labels = [path for window in windows(flow, 3) for path in paths(flow, window)]
    assert len(labels) == len(ann.labels)
    binary = build(tmp_path, ann.text, cc, "-O2", "windows")
    for values in itertools.product((True, False), repeat=8):
        evaluated: list[tuple[int, bool]] = []
        outcome = evaluate(tree, values, evaluated)
        expected = {index for index, label in enumerate(labels)
                    if any(tuple(evaluated[i:i + len(label)]) == label
                           for i in range(len(evaluated)))}
        got = run(binary, ["".join("1" if v else "0" for v in values)])
        assert got.status == (3 if outcome else 4)
        assert got.hits == expected, values
