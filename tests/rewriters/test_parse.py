"""The rewriters parse every file its backend compiles: what clang 16 and later reject by default
and gcc up to 13 accepts with a warning (rewriters/unit.py LENIENT_ARGS) is labelled, not left
to a build without labels."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code

from ffcc.rewriters import LabelOptions

DECISION = "int decide(int a, int b) { return a > 0 && b > 0; }\n"
ACCEPTED = {
    # MPFR's tests.c: feenableexcept undeclared, as _GNU_SOURCE comes after <locale.h>.
    "implicit-function-declaration": "int f(void) { return undeclared(1); }\n",
    "implicit-int": "static counter = 3;\n",
    "int-conversion": "int *p(void) { return 5; }\n",
    "incompatible-function-pointer-types":
        "void g(int (*h)(int)); long w(long x) { return x; }\nvoid k(void) { g(w); }\n",
}


@pytest.mark.parametrize("construct", sorted(ACCEPTED))
def test_files_with_constructs_gcc_accepts_are_labelled(tmp_path, construct):
    annotation = annotate_code(tmp_path, ACCEPTED[construct] + DECISION,
                               LabelOptions(mcc=True, wm_ops=frozenset({"ROR"})))
    assert {label.original for label in annotation.labels} >= {"a > 0 && b > 0", "a > 0"}
