"""Skipped operands (docs/DESIGN.md, rule 2): a label may evaluate an operand the original skipped
only if that cannot fault or be undefined whatever the program state. A null check never makes
a dereference safe that the program itself did not perform.

Regression (jq 1.6 ``src/compile.c:700``): in ``i->op != JUMP || i->imm.target == NULL ||
i->imm.target->op != LOADK`` the union ``imm`` holds a non-pointer whenever ``i->op != JUMP``;
labels evaluated the skipped ``i->imm.target->op`` behind ``i->imm.target != 0`` and jq's own
test suite segfaulted. Regression (jq 1.6 ``src/jv_dtoa.c``): a skipped ``decpt > se - s + 15``
over ``char *se, *s`` got a ``__builtin_sub_overflow`` guard on the pointers, which neither gcc
nor clang compiles.
"""

from __future__ import annotations

import re

import pytest
from rewriter_harness import ALL_WM, annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions

MCC = LabelOptions(mcc=True)
MCC_COR = LabelOptions(mcc=True, wm_ops=frozenset({"COR"}))
EVERYTHING = LabelOptions(mcc=True, wm_ops=ALL_WM)
MEMORY_TOKENS = ("->", "*", "[")
FRAME_ELEMENT = re.compile(r"__ffcc_t\d+\[\d+\]")
REREAD = re.compile(r"__ffcc_t\d+\[\d+\] = \(((?:(?!__ffcc)[^;])*)\);")

UNION = """enum { JUMP, LOADK };
struct inst { int op; union { struct inst *target; long bits; } imm; };
"""
# name: (declarations, condition, expected MCC predicates, expected left_out with MCC + COR:
# MCC reads only atoms the program evaluated, so only COR leaves combinations out)
CASES = {
    "union_member_through_pointer": (
        UNION + "int f(struct inst *i) {\n",
        "i->op != JUMP || i->imm.target == 0 || i->imm.target->op != LOADK",
        ["(i->op != JUMP)", "!(i->op != JUMP) && (i->imm.target == 0)",
         "!(i->op != JUMP) && !(i->imm.target == 0) && (i->imm.target->op != LOADK)",
         "!(i->op != JUMP) && !(i->imm.target == 0) && !(i->imm.target->op != LOADK)"],
        2 * 2),
    "pointer_before_end": (
        "int f(const char *p, const char *end) {\n",
        "p != end && *p",
        ["(p != end) && (*p)", "(p != end) && !(*p)", "!(p != end)"],
        2),
    "last_element": (
        "int f(const int *a, int n) {\n",
        "n > 0 && a[n-1]",
        ["(n > 0) && (a[n-1])", "(n > 0) && !(a[n-1])", "!(n > 0)"],
        2),
    "last_element_of_array_object": (
        "int a[8];\nint f(int n) {\n",
        "n > 0 && a[n-1]",
        ["(n > 0) && (a[n-1])", "(n > 0) && !(a[n-1])", "!(n > 0)"],
        2),
    "chain": (
        "struct node { int v; struct node *next; };\nint f(struct node *p) {\n",
        "p && p->next && p->next->v",
        ["(p) && (p->next) && (p->next->v)", "(p) && (p->next) && !(p->next->v)",
         "(p) && !(p->next)", "!(p)"],
        2 * 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_skipped_memory_reads_are_left_out(tmp_path, case):
    head, condition, expected, left_out = CASES[case]
    code = f"{head}  if ({condition}) return 1;\n  return 0;\n}}\n"
    mcc = annotate_code(tmp_path, code, MCC)
    assert [label.predicate for label in mcc.labels] == expected
    both = annotate_code(tmp_path, code, MCC_COR)
    assert both.left_out == left_out
    everything = annotate_code(tmp_path, code, EVERYTHING)  # AOR labels multiply: no "*" there
    for annotation, tokens in ((mcc, MEMORY_TOKENS), (both, MEMORY_TOKENS), (everything, ("->", "["))):
        text = _without_rereads(annotation.text, condition)
        for token in tokens:  # labels never copy a skipped memory access
            assert text.count(token) == code.count(token), token


def _without_rereads(text: str, condition: str) -> str:
    """The annotated text without the labels' own temporaries (frame.py) and their copies of
    operands of binary expressions (WM labels read those again where the program reads them,
    sites.py): what is left must be the original's memory accesses."""
    text = REREAD.sub(lambda found: "" if found.group(1) in condition else found.group(0), text)
    return FRAME_ELEMENT.sub("", text)


def test_skipped_scalar_reads_are_still_speculated(tmp_path):
    """Parameters, and members and elements of const objects (test_label_reads.py: which
    variables hold a value on every path)."""
    code = ("struct pair { int a, b; };\nconst int t[4] = {1, 2, 3, 4};\n"
            "static const struct pair s = {5, 6};\n"
            "int f(const char *p, const char *end, int a, int n) {\n"
            "  return p == end || (a > n && t[3] != s.b);\n}\n")
    annotation = annotate_code(tmp_path, code, MCC_COR)
    objectives = sum(1 + len(getattr(label, "also", ())) for label in annotation.labels)
    assert annotation.left_out == 0 and objectives == 4 + 6  # or_lhs shares an MCC label


RUN_PROGRAM = UNION + """#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) int needs_constant(struct inst *i) {
  return i->op != JUMP || i->imm.target == 0 || i->imm.target->op != LOADK;
}

__attribute__((noinline)) int before_end(const char *p, const char *end) {
  int n = 0;
  while (p != end && *p) { n++; p++; }
  return n;
}

int main(int argc, char **argv) {
  struct inst jump = { JUMP }, target = { LOADK }, other = { LOADK };
  jump.imm.target = &target;
  other.imm.bits = 0x10;  /* a non-pointer in the union: non-null, not an address */
  int op = atoi(argv[1]);
  other.op = LOADK + op;  /* never JUMP: the program never reads other.imm.target */
  printf("%d %d\\n", needs_constant(&jump), needs_constant(&other));
  /* a string that fills its page exactly, followed by an unmapped page */
  long page = sysconf(_SC_PAGESIZE);
  char *map = mmap(0, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(map + page, page);
  for (long k = 0; k < page; k++) map[k] = 'x';
  printf("%d\\n", before_end(map + page - 3 - op, map + page));
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_union_and_one_past_end_pointers_do_not_crash(tmp_path, cc, opt):
    """Under the old rule both labels dereferenced what the program never did and crashed."""
    annotation = annotate_code(tmp_path, RUN_PROGRAM, EVERYTHING)
    assert annotation.labels and annotation.left_out
    plain = build(tmp_path, RUN_PROGRAM, cc, opt, "plain")
    labelled = build(tmp_path, annotation.text, cc, opt, "labelled")
    hits = set()
    for op in ("0", "1"):
        expected, got = run(plain, [op]), run(labelled, [op])
        assert expected.status == 0
        assert (got.stdout, got.status) == (expected.stdout, expected.status), op
        hits |= got.hits
    assert hits


POINTER_DIFFERENCE = """#include <stdio.h>
__attribute__((noinline)) int f(const char *s, const char *se, int decpt) {
  return decpt <= -4 || decpt > se - s + 15;
}
int main(int argc, char **argv) {
  const char *text = argv[0];
  printf("%d %d\\n", f(text, text + 3, argc), f(text, text + 1, -9));
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_pointer_difference_in_skipped_operand_compiles(tmp_path, cc, opt):
    annotation = annotate_code(tmp_path, POINTER_DIFFERENCE, EVERYTHING)
    assert annotation.left_out  # the skipped pointer difference is not evaluated by labels
    assert "overflow((s" not in annotation.text and "overflow((se" not in annotation.text
    plain = build(tmp_path, POINTER_DIFFERENCE, cc, opt, "plain")
    labelled = build(tmp_path, annotation.text, cc, opt, "labelled")
    expected, got = run(plain), run(labelled)
    assert (got.stdout, got.status) == (expected.stdout, expected.status)
    assert got.hits
