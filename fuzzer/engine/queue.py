"""The corpus: queue entries and AFL's favoured-entry culling.

Each entry keeps the map indices its calibration run hit; FairFuzz needs them
to find an entry's rarest branch, AFL's culling to pick a small set of
favoured entries that together cover every edge seen so far.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(eq=False)
class QueueEntry:
    id: int
    path: Path
    data: bytes
    edges: np.ndarray          # map indices hit, uint32
    exec_us: int
    bitmap_size: int
    checksum: int
    depth: int = 1
    parent: int | None = None
    variable: bool = False
    favoured: bool = False
    was_fuzzed: bool = False
    passed_det: bool = False
    trimmed: bool = False
    handicap: int = 0

    @property
    def fav_factor(self) -> int:
        """AFL prefers fast, small entries as an edge's representative."""
        return max(self.exec_us, 1) * max(len(self.data), 1)


class Queue:
    """Entries in id order, plus the per-edge best entry (AFL's top_rated)."""

    def __init__(self, map_size: int) -> None:
        self.entries: list[QueueEntry] = []
        self._top_rated = np.full(map_size, -1, dtype=np.int64)
        self._top_factor = np.full(map_size, np.iinfo(np.int64).max, dtype=np.int64)
        self._dirty = False
        self._exec_us_total = 0  # sums over the entries: the means cost O(1) per fuzzed entry
        self._bitmap_total = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[QueueEntry]:
        return iter(self.entries)

    def __getitem__(self, index: int) -> QueueEntry:
        return self.entries[index]

    @property
    def next_id(self) -> int:
        return len(self.entries)

    def add(self, entry: QueueEntry) -> None:
        if entry.id != len(self.entries):
            raise ValueError(f"queue ids are dense: expected {len(self.entries)}, got {entry.id}")
        self.entries.append(entry)
        self._exec_us_total += entry.exec_us
        self._bitmap_total += entry.bitmap_size
        self.update_rating(entry)

    def remeasure(self, entry: QueueEntry, exec_us: int, bitmap_size: int) -> None:
        """New calibration figures for an entry of the queue (its bytes were trimmed)."""
        self._exec_us_total += exec_us - entry.exec_us
        self._bitmap_total += bitmap_size - entry.bitmap_size
        entry.exec_us, entry.bitmap_size = exec_us, bitmap_size
        self.update_rating(entry)

    def update_rating(self, entry: QueueEntry) -> None:
        """Make entry the representative of the edges it covers more cheaply."""
        if not len(entry.edges):
            return
        better = entry.edges[entry.fav_factor < self._top_factor[entry.edges]]
        if len(better):
            self._top_rated[better] = entry.id
            self._top_factor[better] = entry.fav_factor
            self._dirty = True

    def cull(self) -> None:
        """Mark a greedy cover of all seen edges as favoured (AFL cull_queue)."""
        if not self._dirty:
            return
        self._dirty = False
        covered = np.zeros(len(self._top_rated), dtype=bool)
        for entry in self.entries:
            entry.favoured = False
        for edge in np.flatnonzero(self._top_rated >= 0):
            if covered[edge]:
                continue
            entry = self.entries[int(self._top_rated[edge])]
            entry.favoured = True
            covered[entry.edges] = True

    @property
    def favoured_count(self) -> int:
        return sum(e.favoured for e in self.entries)

    @property
    def pending_total(self) -> int:
        return sum(not e.was_fuzzed for e in self.entries)

    @property
    def pending_favoured(self) -> int:
        return sum(e.favoured and not e.was_fuzzed for e in self.entries)

    @property
    def max_depth(self) -> int:
        return max((e.depth for e in self.entries), default=0)

    def mean_exec_us(self) -> float:
        return self._exec_us_total / len(self.entries) if self.entries else 0.0

    def mean_bitmap_size(self) -> float:
        return self._bitmap_total / len(self.entries) if self.entries else 0.0
