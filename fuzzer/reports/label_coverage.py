"""What a campaign covered, label by label, from the replay of its saved inputs.

A label is covered when some saved input (queue entry, crash or hang) lit its slot; its hit
count is the number of inputs that did, and the first of them (in the order they were saved)
is the input that killed the mutant or reached the combination.  Pruned labels (``ffcc
--prune``: infeasible or trivial) compile to nothing; they are counted apart and never as
uncovered.  Counts group labels by criterion and operator, by file and function, and MCC
labels by decision (one decision: one file, line, column and original text).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ffcc.fuzzer.output.outdir import CRASHES, HANGS
from ffcc.fuzzer.reports.replay import Replay, SavedInput
from ffcc.runtime.abi import INFEASIBLE, TRIVIAL, LabelDatabase, LabelRecord, label_region_start

FAULT_KINDS = (CRASHES, HANGS)


@dataclass(frozen=True)
class LabelResult:
    record: LabelRecord         # the label's record; a shared objective's names its operator
    hits: int                   # saved inputs that lit the label
    first: SavedInput | None    # the first of them
    by_queue: bool              # some queue entry lit it (else only crashes or hangs, or none)
    shared: bool = False        # an objective the label serves for an operator of its ``also``

    @property
    def name(self) -> str:
        """The label's id; ``LABEL:OPERATOR`` for a shared objective (``objectives``)."""
        return f"{self.record.id}:{self.record.operator}" if self.shared else str(self.record.id)

    @property
    def pruned(self) -> str | None:
        """Why the label compiled to nothing (INFEASIBLE or TRIVIAL: ffcc --prune removed it)."""
        return self.record.pruned

    @property
    def covered(self) -> bool:
        return self.hits > 0

    @property
    def state(self) -> str:
        """covered, uncovered, or the reason it was pruned."""
        return self.pruned or ("covered" if self.covered else "uncovered")


@dataclass(frozen=True)
class Counts:
    total: int = 0
    covered: int = 0
    infeasible: int = 0
    trivial: int = 0
    uncovered: int = 0

    @property
    def goals(self) -> int:
        """Labels that can be covered: all but the pruned."""
        return self.total - self.infeasible - self.trivial

    @property
    def score(self) -> float | None:
        """covered / goals, in percent (the WM mutation score); None without goals."""
        return 100.0 * self.covered / self.goals if self.goals else None


def objectives(labels: Iterable[LabelResult]) -> list[LabelResult]:
    """Every objective the labels stand for: each label as its record names it, and again
    for each operator its record lists in ``also`` (one label serves several operators when
    they ask for the same predicate at a site: an MCC combination and a COR mutant), so that
    per-criterion and per-operator counts and the mutant list miss none of them.  An extra
    objective is ``shared``, its name ``LABEL:OPERATOR``."""
    result = []
    for label in labels:
        result.append(label)
        for operator in label.record.also:
            record = replace(label.record, criterion=operator.split(".")[0], operator=operator,
                             also=())
            result.append(replace(label, record=record, shared=True))
    return result


def count(labels: Iterable[LabelResult]) -> Counts:
    states = [label.state for label in labels]
    return Counts(len(states), states.count("covered"), states.count(INFEASIBLE),
                  states.count(TRIVIAL), states.count("uncovered"))


def grouped(labels: Iterable[LabelResult],
            key: Callable[[LabelResult], Hashable]) -> dict[Any, list[LabelResult]]:
    """Labels by ``key``, groups in order of first appearance."""
    groups: dict[Any, list[LabelResult]] = {}
    for label in labels:
        groups.setdefault(key(label), []).append(label)
    return groups


def decision_of(label: LabelResult) -> tuple[str, int, int, str]:
    record = label.record
    return record.file, record.line, record.column, record.original


def lit_slots(replay: Replay, saved: SavedInput, region: int) -> np.ndarray:
    """The label slots ``saved`` lit (map indices in the label region, minus its start)."""
    start = label_region_start(replay.map_size, region)
    indices = replay.traces[saved.test_id].indices
    return indices[indices >= start].astype(np.int64) - start


def label_results(database: LabelDatabase, replay: Replay,
                  inputs: list[SavedInput]) -> list[LabelResult]:
    """Each label of the database with what the replayed ``inputs`` did to it."""
    region = database.label_region
    hits = np.zeros(region, np.int64)
    first = np.full(region, -1, np.int64)
    by_queue = np.zeros(region, bool)
    for position, saved in enumerate(inputs):
        slots = lit_slots(replay, saved, region)
        hits[slots] += 1
        new = slots[first[slots] < 0]
        first[new] = position
        if saved.kind not in FAULT_KINDS:
            by_queue[slots] = True
    return [LabelResult(record, int(hits[record.slot]),
                        inputs[first[record.slot]] if first[record.slot] >= 0 else None,
                        bool(by_queue[record.slot]))
            for record in database.labels]


def line_hits(database: LabelDatabase, replay: Replay,
              inputs: list[SavedInput]) -> dict[tuple[str, int], int]:
    """(file, line) -> saved inputs that lit at least one of the line's labels, for every
    line with a label that was not pruned."""
    lines: dict[tuple[str, int], int] = {}
    line_of_slot = np.full(database.label_region, -1, np.int64)
    for record in database.labels:
        if not record.pruned:
            key = (record.file, record.line)
            line_of_slot[record.slot] = lines.setdefault(key, len(lines))
    counts = np.zeros(len(lines) + 1, np.int64)  # the last one counts the -1s, unused
    for saved in inputs:
        counts[np.unique(line_of_slot[lit_slots(replay, saved, database.label_region)])] += 1
    return {key: int(counts[number]) for key, number in lines.items()}


@dataclass(frozen=True)
class EdgeCoverage:
    found: int     # map bytes lit by some input
    total: int     # map bytes that are edges
    measured: str  # which build: what the summary says the edges are of


def edge_coverage(replay: Replay, edge_end: int, measured: str) -> EdgeCoverage:
    """Edges (map indices below ``edge_end``) lit by any replayed input."""
    lit = np.zeros(max(replay.map_size, 1), bool)
    for trace in replay.traces.values():
        lit[trace.indices] = True
    return EdgeCoverage(int(np.count_nonzero(lit[:edge_end])), edge_end, measured)
