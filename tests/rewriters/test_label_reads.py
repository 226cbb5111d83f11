"""What labels may evaluate (issue 17; docs/DESIGN.md, rules 1-3): C in, labels or left-out out.

A COR label of ``a && X`` needs X's value where the program skipped it; it is emitted only if X
can be evaluated without side effects, faults, reads of uninitialised memory or copies of
per-use macros; otherwise its mutants are left out (counted). A binary expression whose labels
could change the order in which the compiler evaluates unsequenced operands gets none.
The programs in adversarial/ check the same behaviour end to end (test_adversarial.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rewriter_harness import ALL_WM, annotate_code, build, run

from ffcc.rewriters import LabelOptions

COR = LabelOptions(mcc=False, wm_ops=frozenset({"COR"}))
WM = LabelOptions(mcc=False, wm_ops=ALL_WM)
ADVERSARIAL = Path(__file__).parent / "adversarial"

HEAD = """#include <stdarg.h>
#include <stdatomic.h>
struct res { int found, value; };
struct res lookup(int);
int next(void);
int global, global_table[4], shared;
const int table[4] = {1, 2, 3, 4};
atomic_int ticket;
volatile int device;
#define NEXT_ID __COUNTER__
#define HERE __LINE__
"""


def cor_left_out(tmp_path: Path, declarations: str, statements: str, skipped: str) -> int:
    """COR mutants left out for ``go && (SKIPPED)`` after ``statements``; checks that the
    labelled text never copies the skipped operand."""
    code = (f"{HEAD}int f(int go, int n, struct res param, ...) {{\n  va_list ap;\n"
            f"  va_start(ap, param);\n{declarations}\n{statements}\n"
            f"  return go && ({skipped});\n}}\n")
    annotation = annotate_code(tmp_path, code, COR)
    assert annotation.labels
    if annotation.left_out:
        assert annotation.text.count(skipped) == code.count(skipped)
    return annotation.left_out


# Point 1: unknown means unsafe (libclang shows several of these as "unexposed").
UNKNOWN_KINDS = {
    "va_arg": "va_arg(ap, int) > 100",
    "c11_atomic": "atomic_fetch_add(&ticket, 1) < 3",
    "gnu_atomic": "__atomic_fetch_add(&shared, 1, __ATOMIC_SEQ_CST) < 3",
    "atomic_load": "__atomic_load_n(&shared, __ATOMIC_RELAXED) > 0",
    "sync": "__sync_fetch_and_add(&shared, 1) < 3",
    "statement_expression": "({ n++; n; }) > 1",
    "elvis": "(n ?: 3) > 1",
    "atomic_read": "ticket > 3",
    "volatile_read": "device > 3",
    "call": "next() > 3",
}


@pytest.mark.parametrize("case", sorted(UNKNOWN_KINDS))
def test_unknown_or_effectful_operands_are_not_speculated(tmp_path, case):
    assert cor_left_out(tmp_path, "", "", UNKNOWN_KINDS[case]) > 0


def test_known_pure_operands_are_speculated(tmp_path):
    assert cor_left_out(tmp_path, "", "", "n * 2 > global") == 0


# Point 2: the size of a variable-length array evaluates its operand.
@pytest.mark.parametrize("skipped, speculated", [
    ("sizeof(char[n++]) > 10", False),
    ("sizeof(int[n]) > 64", False),
    ("sizeof(int[4]) > n", True),
    ("_Alignof(double) > n", True),
])
def test_variable_length_sizes_are_evaluated(tmp_path, skipped, speculated):
    assert (cor_left_out(tmp_path, "", "", skipped) == 0) == speculated


# Point 4: labels read only values that exist on every path to the point.
SCAN = "  for (int i = 0; i < n; i++)\n    if (i == 3) { found = 1; best = i; }\n"
INITIALISED = {
    "set_only_when_found": ("int found = 0, best;", SCAN, "best > 3", False),
    "declared_with_initializer": ("int found = 0, best = 0;", SCAN, "best > 3", True),
    "assigned_before": ("int found = 0, best;", "  best = 7;\n" + SCAN, "best > 3", True),
    "assigned_in_a_chain": ("int found = 0, best, other;", "  other = best = 7;", "best > 3",
                            True),
    "assigned_conditionally": ("int best;", "  if (n) best = 1;", "best > 3", False),
    "for_init": ("int i;", "  for (i = 0; i < n; i++) shared++;", "i > 3", True),
    "jumped_over": ("", "  if (n) goto late;\n  int best = 1;\nlate:", "best > 3", False),
    "jump_inside_region": ("int best = 1;", "  if (n) goto late;\nlate:", "best > 3", True),
    "parameter": ("", "", "n > 3", True),
    "global_scalar": ("", "", "global > 3", True),
    "static_local": ("static int seen;", "", "seen > 3", True),
    "const_table": ("", "", "table[3] > 3", True),
    "global_array": ("", "", "global_table[3] > 3", False),
    "local_structure": ("struct res r = lookup(3);", "", "r.value > 1", False),
    "structure_parameter": ("", "", "param.value > 1", False),
    "local_array": ("int counts[4] = {0};", "", "counts[2] > 1", False),
}


@pytest.mark.parametrize("case", sorted(INITIALISED))
def test_skipped_reads_need_initialised_values(tmp_path, case):
    declarations, statements, skipped, speculated = INITIALISED[case]
    left_out = cor_left_out(tmp_path, f"  {declarations}", statements, skipped)
    assert (left_out == 0) == speculated


@pytest.mark.parametrize("body, speculated", [
    # a new x each iteration: set after the condition, never before it
    ("  for (int k = 0; k < n; k++) { int x; r += go && x > 2; x = 1; }", False),
    ("  for (int k = 0; k < n; k++) { int x; x = 1; r += go && x > 2; }", True),
    # a switch jumps past the declaration's initializer
    ("  switch (n) { int z = 1; case 1: r += go && z > 2; }", False),
])
def test_initialising_point_must_dominate(tmp_path, body, speculated):
    code = f"int f(int go, int n) {{\n  int r = 0;\n{body}\n  return r;\n}}\n"
    assert (annotate_code(tmp_path, code, COR).left_out == 0) == speculated


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang's MemorySanitizer")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_no_uninitialised_read_under_memory_sanitizer(tmp_path, opt):
    source = (ADVERSARIAL / "uninitialised_skipped.c").read_text()
    annotation = annotate_code(tmp_path, source, LabelOptions(mcc=True, wm_ops=ALL_WM))
    msan = ("-fsanitize=memory", "-g")
    plain = run(build(tmp_path, source, "clang", opt, "plain", msan))
    labelled = run(build(tmp_path, annotation.text, "clang", opt, "labelled", msan))
    assert b"MemorySanitizer" not in plain.stderr, "the program itself must be clean"
    assert (labelled.stdout, labelled.stderr, labelled.status) == (
        plain.stdout, plain.stderr, plain.status)
    assert labelled.hits


# Point 5: labels never reorder operands the program leaves unsequenced.
ORDER = """int count, flag;
struct s { int n; } *shared_node;
int next(void);
int call(int);
void use(int, int);
int f(int local, struct s *p) {
  int addressed = 1, *q = &addressed;
  return %s;
}
"""


@pytest.mark.parametrize("expression, site, labelled", [
    ("count + next()", "count + next()", False),  # next() may change count
    ("addressed + next() + *q", "addressed + next()", False),  # ... or a local it can reach
    ("local + next()", "local + next()", True),  # a local nothing else can change
    ("call(1) - call(2)", "call(1) - call(2)", False),  # gcc and clang call in other orders
    ("count * 2 + next()", "count * 2", False),  # a statement expression around count * 2
    ("local * 2 + next()", "local * 2", True),
    ("count + (flag && next())", "(flag && next())", False),  # a decision's wrapping, too
    ("local + (flag && next())", "(flag && next())", True),
    ("(p->n = call(4) + 1)", "call(4) + 1", True),  # the left of = is not read
    ("(shared_node->n = call(5) + local)", "call(5) + local", False),  # shared_node is
    ("(count += call(6) * 2)", "call(6) * 2", False),  # count is read
    ("(use(count * 3, next()), 0)", "count * 3", False),  # arguments are unsequenced
    ("(use(local * 3, next()), 0)", "local * 3", True),
])
def test_unsequenced_operands_keep_their_order(tmp_path, expression, site, labelled):
    annotation = annotate_code(tmp_path, ORDER % expression,
                               LabelOptions(mcc=True, wm_ops=ALL_WM))
    originals = {label.original.replace(" ", "") for label in annotation.labels}
    assert (site.replace(" ", "") in originals) == labelled
    if not labelled:
        assert annotation.left_out


# Point 6 (rewriter half): a label never copies a per-use macro.
@pytest.mark.parametrize("skipped", ["n == __COUNTER__", "n != NEXT_ID", "n < HERE"])
def test_per_use_macros_are_not_copied(tmp_path, skipped):
    assert cor_left_out(tmp_path, "", "", skipped) > 0


@pytest.mark.parametrize("operand", ["__COUNTER__", "NEXT_ID", "HERE"])
def test_binary_operands_with_per_use_macros_are_captured(tmp_path, operand):
    code = f"{HEAD}int f(int n) {{\n  return n < {operand};\n}}\n"
    annotation = annotate_code(tmp_path, code, WM)
    assert annotation.labels
    assert annotation.text.count(operand) == code.count(operand)
