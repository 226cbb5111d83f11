"""Pruning infeasible and trivial labels before a campaign (``ffcc --prune[=fast|gccdiff]``).

The LabelBuilder (labelled_compile.py) hands every annotated unit to ``Pruner.mark`` before writing
it; the pruner decides labels on analysis variants of the annotated text (variants.py),
with the fast method (fast.py: one compile per unit) or the paper's gccdiff
(gccdiff.py: two compiles per label), and gives the unit's records (labels.UnitLabel) the
verdict ``pruned``: "infeasible" or "trivial".  The unit's preamble then defines those labels'
bodies away, so the built program has no code for them, and the label database (read back
from the program) says which labels were dropped and why; the fuzzer skips them.

A unit whose analysis fails (a compile error, labels not in the expected shape) keeps all
its labels: pruning only ever removes what it has decided.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field, replace

from ..errors import FfccError
from ..labels import UnitLabel
from .compile import AnalysisCompiler
from .fast import fast_verdicts
from .gccdiff import gccdiff_verdicts
from .report import PruneReport, UnitPruning
from .variants import check_label_uses, neutralise_laundering

FAST, GCCDIFF = "fast", "gccdiff"


def default_jobs() -> int:
    """Analysis compiles at once: FFCC_PRUNE_JOBS, else one per core."""
    value = os.environ.get("FFCC_PRUNE_JOBS", "")
    return int(value) if value.isdigit() and int(value) > 0 else (os.cpu_count() or 1)


def analyse(method: str, text: str, count: int, compiler: AnalysisCompiler, jobs: int = 1,
            indices: list[int] | None = None, keep_laundering: bool = False) -> dict[int, str]:
    """Label index -> verdict for one annotated unit (``indices``: gccdiff only these).

    Raises FfccError when the unit cannot be analysed.
    """
    check_label_uses(text, count)
    if not keep_laundering:
        text, _ = neutralise_laundering(text)
    if method == FAST:
        return fast_verdicts(text, count, compiler)
    return gccdiff_verdicts(text, range(count) if indices is None else indices, compiler, jobs)


@dataclass
class Pruner:
    """Decides the labels of each unit a build annotates, and keeps the report."""

    method: str
    compiler: str
    jobs: int = field(default_factory=default_jobs)
    verbose: bool = False
    report: PruneReport = field(init=False)
    _slots: threading.Semaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in (FAST, GCCDIFF):
            raise ValueError(f"unknown pruning method {self.method!r}")
        self.report = PruneReport(self.method)
        self._slots = threading.Semaphore(self.jobs)

    def mark(self, source: str, text: str, records: list[UnitLabel],
             flags: list[str]) -> list[UnitLabel]:
        """``records`` with the verdict ``pruned`` on those of the labels the analysis
        removes."""
        start = time.monotonic()
        compiler = AnalysisCompiler(self.compiler, flags, source, self._slots)
        error = None
        try:
            verdicts = analyse(self.method, text, len(records), compiler, self.jobs)
        except FfccError as err:
            verdicts, error = {}, str(err)
            print(f"ffcc: warning: {source}: labels not pruned: {err}", file=sys.stderr)
        records = [replace(record, pruned=verdict)
                   if (verdict := verdicts.get(record.label.index)) else record
                   for record in records]
        unit = UnitPruning.of(source, records, time.monotonic() - start, compiler.compiles,
                              laundering_neutralised=neutralise_laundering(text)[1],
                              error=error)
        self.report.add(unit)
        if self.verbose:
            print(f"ffcc: {source}: pruned {unit.total('infeasible')} infeasible, "
                  f"{unit.total('trivial')} trivial of {len(records)} labels "
                  f"({self.method}, {unit.seconds:.2f}s)", file=sys.stderr)
        return records
