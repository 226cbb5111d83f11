"""What fuzz_one mutates when it aims at a target branch, kept per (entry, target).

FairFuzz aims an entry at each of its rare branches in turn (scheduler.next_target), and
each mask costs three probes per input byte, every one a full execution of a mostly valid
input: on cJSON's harness the probes of a few 3 KB seeds took 24 of a campaign's 60 s, made
again at each turn.  So one set of probes makes masks for the entry's other rare branches
too, its rarest ones whether rare now or not (rarity moves: an entry picked again is mostly
aimed at a branch that was not among its rare ones the time before); the C core checks each
probe's trace for each of them, and the focuses are kept here, within a byte budget, for the
turns to come.

A lean rebuild (lean.py) numbers the program's edges anew, and the campaign goes on with it
as a new run over the same queue: kept by map index, every mask would be made again (on
cJSON's harness 7 of a 60 s campaign's seconds).  So the focuses go on to the next run,
renumbered: a branch is known in the new numbering by the queue entries that hit it, matched
in map order where several are hit by the same entries (``renumbering``); the focuses of
branches without a match are dropped.  The next run renumbers FairFuzz's state the same way
(corpus.py).
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher

import numpy as np

from ffcc.fuzzer.engine.queue import QueueEntry

# Bytes of masks and trimmed copies kept; the least recently used focuses go beyond it.
FOCUS_BUDGET = 32 << 20
# Branches besides the target that one set of mask probes makes masks for.
MASKS_PER_PROBE = 32


@dataclass(frozen=True)
class Focus:
    """What fuzz_one mutates when it aims at a target branch: the entry's bytes, or with
    FairFuzz -r a copy trimmed to what keeps the target hit (the entry itself keeps its
    bytes and coverage), and FairFuzz's mask for those bytes (None without mask)."""

    target: int
    data: bytes
    mask: np.ndarray | None = field(default=None, repr=False)


class FocusCache:
    """Focuses by (entry id, target) within `budget` bytes, least recently used out first.
    Map indices name the branches: ``renumbered`` carries a cache to another build's map."""

    def __init__(self, budget: int = FOCUS_BUDGET) -> None:
        self.budget = budget
        self._focuses: OrderedDict[tuple[int, int], tuple[Focus, int]] = OrderedDict()
        self._bytes = 0

    def get(self, entry_id: int, target: int) -> Focus | None:
        kept = self._focuses.get((entry_id, target))
        if kept is None:
            return None
        self._focuses.move_to_end((entry_id, target))
        return kept[0]

    def __contains__(self, key: tuple[int, int]) -> bool:
        return key in self._focuses

    def put(self, entry_id: int, focus: Focus, entry_data: bytes) -> None:
        """Keep `focus` of the entry whose bytes are `entry_data` (a focus on those very
        bytes costs only its mask)."""
        size = (focus.mask.nbytes if focus.mask is not None else 0) \
            + (len(focus.data) if focus.data is not entry_data else 0)
        key = (entry_id, focus.target)
        old = self._focuses.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._focuses[key] = (focus, size)
        self._bytes += size
        while self._bytes > self.budget and len(self._focuses) > 1:
            _, (_, dropped) = self._focuses.popitem(last=False)
            self._bytes -= dropped

    def renumbered(self, moved: Mapping[int, int], entries: Collection[int]) -> FocusCache:
        """This cache for a build whose map numbers the branches otherwise: ``moved`` maps
        old index to new (``renumbering``), ``entries`` are the ids still in the queue.  A
        focus whose target has no counterpart, or whose entry is gone, is left out."""
        kept = FocusCache(self.budget)
        for (entry_id, target), (focus, size) in self._focuses.items():  # oldest first
            if entry_id in entries and target in moved:
                kept._focuses[(entry_id, moved[target])] = (replace(focus, target=moved[target]),
                                                            size)
                kept._bytes += size
        return kept


@dataclass(frozen=True)
class CarriedFocuses:
    """What one run of a campaign hands the next, on another build of the target (a lean
    rebuild, phase 2): its focuses, and each queue entry's branches in its build's numbering,
    from which the next run renumbers them (``renumbering``), and FairFuzz's state with them."""

    cache: FocusCache
    edges: dict[int, np.ndarray]  # entry id -> map indices it hit

    @classmethod
    def of(cls, cache: FocusCache, queue: Iterable[QueueEntry]) -> CarriedFocuses:
        """``cache`` with the branches ``queue``'s entries hit in this build."""
        return cls(cache, edges_by_entry(queue))


def edges_by_entry(queue: Iterable[QueueEntry]) -> dict[int, np.ndarray]:
    return {entry.id: entry.edges for entry in queue}


def renumbering(before: Mapping[int, np.ndarray], after: Mapping[int, np.ndarray]) -> dict[int, int]:
    """Old map index -> new, for the branches the two numberings share, known by the queue
    entries that hit them (``before`` and ``after``: each entry's map indices in the old and
    the new numbering; entries in only one of them do not count).  Many branches are hit by
    the same entries (the blocks of one path, a label and the edge it sits on), so the
    branches are matched in map order, which both builds keep (guards are numbered in code
    order, labels by slot, after the edges): the longest common subsequence of the two
    numberings' sequences of hitting entries.  Branches of one build only (the edges of label
    code compiled out, a function inlined otherwise) stay unmatched."""
    shared = sorted(before.keys() & after.keys())

    def hitters(edges_of: Mapping[int, np.ndarray]) -> tuple[list[int], list[tuple[int, ...]]]:
        hit_by: defaultdict[int, list[int]] = defaultdict(list)
        for entry in shared:
            for branch in edges_of[entry].tolist():
                hit_by[branch].append(entry)
        branches = sorted(hit_by)
        return branches, [tuple(hit_by[branch]) for branch in branches]

    (old, old_keys), (new, new_keys) = hitters(before), hitters(after)
    matcher = SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    return {old[i + k]: new[j + k] for i, j, size in matcher.get_matching_blocks()
            for k in range(size)}
