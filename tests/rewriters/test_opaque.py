"""Labels read opaque copies (docs/DESIGN.md, rule 3): the optimiser must not relate a label's
guarded computation to the original's own one. Regression: a label computing ``3000 / excess``
under ``excess != 0`` let clang -O2 fold the original's unguarded ``3000 / excess`` (its SIGFPE became
"1000 rpm") and gcc -O2 turn it into a SIGILL trap. The original's trap must stay exactly the
plain build's."""

from __future__ import annotations

import pytest
from rewriter_harness import ALL_WM, annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions

MAIN = """
int main(int argc, char **argv) {
  int r = probe(argc > 1 ? atoi(argv[1]) : 0, argc > 2 ? atoi(argv[2]) : 0);
  printf("r=%d\\n", r);
  return r & 1;
}
"""
CASES = {
    # WM (AOR/ABS) labels on the original's own division: temperature.c's fan speed
    "division": ("""
static int probe(int t, int unused) {
  if (t >= 50) {
    int excess = t - 50;
    return 3000 / excess + 1000;
  }
  return 0;
}""", [["50"]], [["70"], ["10"]]),
    # an atom the original may skip, then the original divides
    "speculated_division": ("""
__attribute__((noinline)) int probe(int a, int d) {
  if (a && 3000 / d > 3) return 1;
  return 3000 / d;
}""", [["0", "0"]], [["0", "7"], ["1", "7"], ["1", "-1"]]),
    # labels never read the skipped p->v (test_speculation); the original then dereferences p
    # regardless, and its trap on a null p must stay exactly the plain build's
    "null_dereference": ("""
struct node { int v; };
struct node *volatile shared;
static struct node cell;
__attribute__((noinline)) int probe(int a, int which) {
  shared = which ? &cell : 0;
  struct node *p = shared;  /* unknown to the optimiser, as in the plain build */
  cell.v = which;
  int r = 0;
  if (a && p->v > 0) r = 1;
  return r + p->v;
}""", [["0", "0"], ["1", "0"]], [["0", "3"], ["1", "3"], ["1", "-2"]]),
}


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_original_trap_survives_labels(tmp_path, cc, opt, case):
    body, trapping, normal = CASES[case]
    source = "#include <stdio.h>\n#include <stdlib.h>\n" + body + MAIN
    annotation = annotate_code(tmp_path, source, LabelOptions(mcc=True, wm_ops=ALL_WM))
    assert annotation.labels
    plain = build(tmp_path, source, cc, opt, "plain")
    labelled = build(tmp_path, annotation.text, cc, opt, "labelled")
    for args in trapping:
        expected, got = run(plain, args), run(labelled, args)
        assert expected.status < 0, f"the plain build should trap on {args}"
        assert (got.stdout, got.status) == (expected.stdout, expected.status), args
    hits = set()
    for args in normal:
        expected, got = run(plain, args), run(labelled, args)
        assert (got.stdout, got.status) == (expected.stdout, expected.status), args
        hits |= got.hits
    assert hits  # laundering does not stop labels from firing


def test_labels_read_copies_not_the_original_operands(tmp_path):
    annotation = annotate_code(tmp_path, "int f(int t, int n, int a) {\n"
                                         "  return 3000 / t + (a && 7 % n > 1);\n}\n",
                               LabelOptions(mcc=True, wm_ops=frozenset({"AOR"})))
    text = annotation.text
    assert "(3000) / (t)" not in text and '"+r"(__ffcc_' in text
    assert "(n) != 0" not in text
    assert "__ffcc_v" not in text  # MCC never evaluates the atom a skips (mcc.py)
    assert text.count("3000 / t") == 1  # the original still divides its own operands
    assert text.count("\n") == 3


def test_integers_launder_through_registers_other_scalars_through_memory(tmp_path, cc):
    """``"+r"`` cannot hold a long double in clang; such values keep ``"+m"``."""
    source = ("int probe(long double a, double b, int n) {\n"
              "  return (a < 2.5L) + (b * 3.0 > 1.0) + (n - 2 > 0);\n}\n"
              "int main(int argc, char **argv) { (void)argv; return probe(argc, 2.0, argc) != 2; }\n")
    annotation = annotate_code(tmp_path, source, LabelOptions(mcc=True, wm_ops=ALL_WM))
    text = annotation.text
    assert '"+m"(' in text and '"+r"(' in text
    for opt in ("-O0", "-O2"):
        assert run(build(tmp_path, text, cc, opt, "mixed"), []).status == 0
