"""Fast pruning: all labels of a unit decided by one optimised compile.

Each label's then-branch and else-branch get a distinct assembler comment (MARKER_MACRO in
variants.py); an ``asm volatile`` is never deleted from live code, so after -O2 a
missing marker means the optimiser proved that branch dead:

* then-marker gone: the predicate is never true where the label is reached: infeasible;
* else-marker gone (then-marker present): the predicate is always true: trivial;
* both gone: the label's code is dead (an unused static function, an unreachable
  branch): infeasible, as gccdiff finds it.

Markers duplicated by inlining, unrolling or tail duplication count once: any surviving
copy keeps the label.  The method is as strong as the optimiser, with two differences from
gccdiff: the markers of every label are present at once (``asm`` statements count in
inlining heuristics, so a function full of markers is inlined less often than the
one-label gccdiff variant, and fewer constants reach its labels), and it never mistakes an
unrelated code-generation change for a kept label.
"""

from __future__ import annotations

from ffcc.runtime.abi import INFEASIBLE, TRIVIAL

from .compile import AnalysisCompiler
from .variants import MARKER_MACRO, surviving_markers, variant


def fast_verdicts(text: str, count: int, compiler: AnalysisCompiler) -> dict[int, str]:
    """Label index -> INFEASIBLE or TRIVIAL for the labels the optimiser decides."""
    markers = surviving_markers(compiler.assembly(variant(text, MARKER_MACRO, compiler.source)))
    verdicts = {}
    for index in range(count):
        if ("T", index) not in markers:
            verdicts[index] = INFEASIBLE
        elif ("F", index) not in markers:
            verdicts[index] = TRIVIAL
    return verdicts
