"""gccdiff pruning, seed 004 §5: two compiles per label, objects compared.

For label ``k``: compile the unit with only label ``k``, its body a print that cannot be
optimised away unless its branch is dead, and compare the object with the unit compiled
without labels.  Identical objects: the branch was optimised away, label ``k`` is
infeasible.  Otherwise the same with the negated predicate (the print in the else-branch):
identical means the predicate is always true, the label is trivial.  The trivial test is
skipped for infeasible labels (a dead label is dead both ways).

Compiles run in parallel; ``AnalysisCompiler.slots`` bounds them to the job count across
all units of a build.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from ffcc.runtime.abi import INFEASIBLE, TRIVIAL

from .compile import AnalysisCompiler
from .variants import EMPTY_MACRO, probe_macro, variant


def gccdiff_verdicts(text: str, indices: Iterable[int], compiler: AnalysisCompiler,
                     jobs: int) -> dict[int, str]:
    """Label index -> INFEASIBLE or TRIVIAL for the given labels of one unit."""
    def compiled(macro: str) -> bytes:
        return compiler.object_bytes(variant(text, macro, compiler.source))

    baseline = compiled(EMPTY_MACRO)

    def decide(index: int) -> tuple[int, str | None]:
        if compiled(probe_macro(index)) == baseline:
            return index, INFEASIBLE
        if compiled(probe_macro(index, negated=True)) == baseline:
            return index, TRIVIAL
        return index, None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return {index: verdict for index, verdict in pool.map(decide, indices) if verdict}
