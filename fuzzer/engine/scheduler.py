"""Which queue entries get fuzzed, and towards which branch.

A scheduler walks the queue as AFL does, cycle after cycle: `next()` moves its
cursor on until it selects an entry, starting a new cycle at the queue's end.
Two schedulers share that walk and differ in `select`, so a plain-AFL baseline
is always one flag away (`--schedule afl`):
- AflScheduler: AFL's walk over the queue, favouring the culled entries.
- FairFuzzScheduler: FairFuzz Algorithm 2 — fuzz an entry only if it hits a
  rare branch, and make one of its rare branches the target of the mutation
  mask; with -q, fall back to AFL's walk after a queue cycle without new
  branches.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

import numpy as np

from ffcc.fuzzer.engine.focus import MASKS_PER_PROBE
from ffcc.fuzzer.engine.queue import Queue, QueueEntry


@dataclass(frozen=True)
class Selection:
    """An entry to fuzz now; with a target branch when FairFuzz chose it, and the entry's
    rarest branches, rarest first (at most MASKS_PER_PROBE besides the target): those its
    next selections likely aim at, so that one set of mask probes can serve them all."""

    entry: QueueEntry
    target: int | None = None
    use_mask: bool = False
    deterministic_allowed: bool = True
    rarest: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


# One walk's select: (entry, queue, cycle, rng) -> the selection or None.
Chooser = Callable[[QueueEntry, Queue, int, random.Random], Selection | None]


def rarity_cutoff(hits: np.ndarray) -> int:
    """Smallest power of two >= the least hit count among hit branches (Def. 5)."""
    seen = hits[hits > 0]
    if not len(seen):
        return 0
    least = int(seen.min())
    return 1 << (least - 1).bit_length()


def within_cutoff(counts: np.ndarray, cutoff: int | np.ndarray) -> np.ndarray:
    """Whether each hit count is rare by `cutoff` (Def. 6): hit, and at most `cutoff` times."""
    return (counts > 0) & (counts <= cutoff)


@dataclass(frozen=True)
class RarityCutoffs:
    """FairFuzz's cutoff over every branch, labels included (Def. 5), and a second one over
    the labels alone, those from map index `labels_from` on: a label is rare when either
    says so.  A label's predicate fires on values, an edge on control flow, so their hit
    counts are two populations: many inputs reach a site and few make a mutant differ.
    Under the one cutoff, which each new edge brings back to 1, hardly a label is ever rare
    on a program that keeps finding edges (expat's harness: 3% of the targets were labels,
    13% with the labels' own cutoff; docs/LABELS.md)."""

    branches: int
    labels: int
    labels_from: int

    @classmethod
    def of(cls, hits: np.ndarray, labels_from: int | None, shift: int = 0) -> RarityCutoffs:
        """The cutoffs over `hits` (FairFuzz's numHits), each doubled `shift` times."""
        start = len(hits) if labels_from is None else labels_from
        return cls(rarity_cutoff(hits) << shift, rarity_cutoff(hits[start:]) << shift, start)

    def rare_map(self, hits: np.ndarray) -> np.ndarray:
        """Per map index, whether it is rare: within FairFuzz's cutoff, or a label within
        the labels' (never below FairFuzz's: the least hit branch may be a label).  A walk
        over the queue computes it once, and each entry it considers then costs one lookup
        of its edges (computed per entry, an entry's rare branches took a tenth of a cJSON
        campaign's time in a profile)."""
        return within_cutoff(hits, self._cutoff(np.arange(len(hits))))

    def relative(self, branches: np.ndarray, hits: np.ndarray) -> np.ndarray:
        """How rare each of `branches` is by the cutoff that made it rare: its hit count
        over that cutoff, so that the least hit label ranks with the least hit branch."""
        return hits[branches] / np.maximum(self._cutoff(branches), 1)

    def _cutoff(self, branches: np.ndarray) -> np.ndarray:
        """The cutoff each of `branches` is rare by: the labels' or FairFuzz's."""
        return np.where(branches >= self.labels_from, self.labels, self.branches)


def least_hit(branches: np.ndarray, rarity: np.ndarray, rng: random.Random) -> int:
    """The rarest of `branches` (not empty) by `rarity`, their hit counts or any measure
    aligned with them; among equally rare ones, one at random, so neither map order (edges
    before labels) nor position decides."""
    tied = branches[rarity == rarity.min()]
    return int(tied[rng.randrange(len(tied))] if len(tied) > 1 else tied[0])


def next_target(rare: np.ndarray, rarity: np.ndarray, aimed: set[int],
                rng: random.Random) -> int:
    """The target for an entry whose rare branches are `rare` (not empty; `rarity` aligned
    with them), as afl-rb picks it: the rarest one not yet aimed at from this entry, so
    successive selections go through all of them; once every one was, the rarest again."""
    fresh = np.array([int(branch) not in aimed for branch in rare], dtype=bool)
    if fresh.any():
        return least_hit(rare[fresh], rarity[fresh], rng)
    return least_hit(rare, rarity, rng)


def turns_at(turns: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The selections aimed at each of the map `indices`, by `turns` (a scheduler's
    `turns()`, as long as the furthest index aimed at): none past its end."""
    counts = np.zeros(len(indices), np.int64)
    inside = indices < len(turns)
    counts[inside] = turns[indices[inside]]
    return counts


def turn_due(hits: np.ndarray, labels_from: int, turns: np.ndarray) -> np.ndarray:
    """Per map index, whether it is a label waiting for its turn as a target: covered, still
    counting (`hits`, the rarity input, holds no retired label) and never aimed at (`turns`).
    Such a label is the target of the first entry walked that hits it, before any of its rare
    branches: it was rare when covered (one input hit it), and the sooner it has its turns the
    sooner it retires (retire.py) and stops costing.  Left to rarity, most labels of a
    label-dense harness never get one: many inputs reach a site, so a label's hit count soon
    passes the labels' cutoff, set by the one covered last (expat's harness, 120 s: 4% of the
    targets were labels; first in line, 11%, at the same execution rate)."""
    due = np.zeros(len(hits), dtype=bool)
    due[labels_from:] = hits[labels_from:] > 0
    aimed_within = min(len(due), len(turns))
    due[:aimed_within] &= turns[:aimed_within] == 0
    return due


def rarest(edges: np.ndarray, hits: np.ndarray, cutoffs: RarityCutoffs, count: int) -> np.ndarray:
    """The `count` rarest of `edges` by `cutoffs.relative`, rarest first, as int64; branches
    without hits (blacklisted or reached only by crashes) are never targets and left out."""
    seen = edges[hits[edges] > 0]
    order = np.argsort(cutoffs.relative(seen, hits), kind="stable")[:count]
    return seen[order].astype(np.int64)


def queue_hits(virgin: np.ndarray, branch_hits: np.ndarray) -> np.ndarray:
    """numHits restricted to branches some queue-worthy run covered (a branch only crashes
    reach can be no entry's target)."""
    return np.where(virgin != 0xFF, branch_hits, 0)


@dataclass
class QueueCursor:
    """Where the walk over the queue is, and what the current cycle has added to it."""

    cycle: int = 0            # cycles begun; the first pass (over the seeds) is cycle 0
    position: int = 0         # index of the next entry to consider
    stalled_cycles: int = 0   # cycles in a row, since cycle 1, that added no entry
    splicing: bool = False    # set for good by the first such cycle (AFL's use_splicing)
    new_entries: int = 0      # entries added during this cycle
    new_branch: bool = False  # one of them covered a map index nobody had hit before


class Schedule(str, Enum):
    """-p: which scheduler picks the entries.  The value is the spelling of -p, of
    fuzzer_stats' schedule line and of the launcher's instance command lines."""

    FAIRFUZZ = "fairfuzz"
    AFL = "afl"

    def __str__(self) -> str:
        return self.value


class Scheduler:
    """AFL's walk over the queue; subclasses decide, entry by entry, what to fuzz (`select`)
    and hear about the campaign's progress through the on_* hooks."""

    name: Schedule
    uses_hits = False  # select() reads the hit counts: the campaign computes them only then

    def __init__(self) -> None:
        self.cursor = QueueCursor()

    def next(self, queue: Queue, hits: np.ndarray, rng: random.Random,
             labels_from: int | None = None) -> Selection | None:
        """The next selected entry, walking on from the cursor.  None after as many entries
        as the queue holds were all skipped: the caller may stop, or ask again.

        hits: FairFuzz numHits per map index, zero outside the queue's coverage
        (queue_hits); labels_from: the first map index of the label region, if any."""
        queue.cull()
        choose = self.chooser(hits, labels_from)
        cursor = self.cursor
        for _ in range(len(queue)):
            if cursor.position >= len(queue):
                self._start_cycle()
            entry = queue[cursor.position]
            cursor.position += 1
            selection = choose(entry, queue, cursor.cycle, rng)
            if selection is not None:
                return selection
        return None

    def chooser(self, hits: np.ndarray, labels_from: int | None) -> Chooser:
        """`select` for one walk over the queue, the hit counts fixed: a scheduler computes
        what they say once per walk, not once per entry it considers."""
        return lambda entry, queue, cycle, rng: self.select(entry, queue, hits, cycle, rng,
                                                            labels_from)

    def state(self) -> dict[str, Any]:
        """What a resumed campaign needs to walk on where this one was (JSON types)."""
        return {"cursor": asdict(self.cursor)}

    def restore(self, state: dict[str, Any], moved: Mapping[int, int] | None = None) -> None:
        """Continue from `state()` of an earlier campaign; unknown or missing keys are
        ignored (it may have used the other scheduler).  moved: None when the map numbers
        the branches as the state's did; else, when another build took over (a lean rebuild,
        phase 2), old map index -> new for the branches the two share (focus.renumbering),
        and what names other branches is left behind."""
        saved = state.get("cursor", {})
        self.cursor = QueueCursor(**{f.name: type(getattr(self.cursor, f.name))(saved[f.name])
                                     for f in fields(QueueCursor) if f.name in saved})

    def _start_cycle(self) -> None:
        cursor = self.cursor
        if cursor.cycle:
            self.on_cycle_end(cursor.new_branch)
            if not cursor.new_entries:
                cursor.splicing = True
            cursor.stalled_cycles = 0 if cursor.new_entries else cursor.stalled_cycles + 1
        cursor.cycle += 1
        cursor.position = 0
        cursor.new_entries = 0
        cursor.new_branch = False

    def on_new_entry(self, new_branch: bool) -> None:
        """The campaign added an entry; new_branch: it covered a map index nobody had hit."""
        self.cursor.new_entries += 1
        if new_branch:
            self.cursor.new_branch = True
            self.on_new_branch()

    def select(self, entry: QueueEntry, queue: Queue, hits: np.ndarray, cycle: int,
               rng: random.Random, labels_from: int | None = None) -> Selection | None:
        """The selection for this entry, or None to skip it this cycle."""
        raise NotImplementedError

    def on_new_branch(self) -> None:
        """An execution covered a map index nobody had hit before."""

    def on_cycle_end(self, found_new_branch: bool) -> None:
        """A pass over the whole queue finished."""

    def on_frozen_target(self, branch: int) -> None:
        """No single-byte change of the entry kept `branch` hit (empty mask)."""

    def turns(self) -> np.ndarray | None:
        """Per map index, how many selections aimed at it (as long as the furthest index
        aimed at: scheduler.turns_at reads it); None for a scheduler that aims at none (label
        retirement waits for a label's turns as a target only where there are turns)."""
        return None


def afl_wants(entry: QueueEntry, queue: Queue, cycle: int, rng: random.Random) -> bool:
    """AFL's fuzz_one skip rule: mostly favoured entries, rarely the rest."""
    if queue.pending_favoured and (entry.was_fuzzed or not entry.favoured):
        return rng.random() >= 0.99
    if not entry.favoured and len(queue) > 10:
        skip = 0.75 if cycle > 1 and not entry.was_fuzzed else 0.95
        return rng.random() >= skip
    return True


class AflScheduler(Scheduler):
    """AFL's queue walk (afl-fuzz fuzz_one)."""

    name = Schedule.AFL

    def select(self, entry: QueueEntry, queue: Queue, hits: np.ndarray, cycle: int,
               rng: random.Random, labels_from: int | None = None) -> Selection | None:
        return Selection(entry) if afl_wants(entry, queue, cycle, rng) else None


class Bootstrap(Enum):
    """FairFuzz -q: how to fall back to AFL after a cycle without new branches."""

    OFF = 0
    UNTIL_NEW_BRANCH = 1          # -q 1: AFL walk, no mask, until a new branch
    UNTIL_NEW_BRANCH_NO_DET = 2   # -q 2: same, and no deterministic stages
    ONE_CYCLE = 3                 # -q 3: AFL walk, no mask, for one cycle


class FairFuzzScheduler(Scheduler):
    """Rare-branch selection with an optional AFL bootstrap (-q).

    Each entry remembers the branches it was aimed at (afl-rb's per-entry
    fuzzed_branches), so its rare branches take turns as targets: a label and
    the edge around it, equally rare, are both aimed at.  Two safety nets, as
    afl-rb has: after a whole cycle in which no entry hit a rare branch, the
    cutoff doubles until a new branch shows up; and a branch whose mask came
    out empty (every probe lost it, so masked mutation cannot move) is
    blacklisted as a target.
    """

    name = Schedule.FAIRFUZZ
    uses_hits = True

    def __init__(self, use_mask: bool = True, bootstrap: Bootstrap = Bootstrap.OFF) -> None:
        super().__init__()
        self.use_mask = use_mask
        self.bootstrap = bootstrap
        self.bootstrapping = False
        self.cutoff_shift = 0
        self.blacklist: set[int] = set()
        self.aimed: dict[int, set[int]] = {}  # entry id -> the targets it was fuzzed towards
        self._turns = np.zeros(0, np.int64)  # per map index, the selections aimed at it
        self._selected_in_cycle = False

    def state(self) -> dict[str, Any]:
        return {**super().state(), "cutoff_shift": self.cutoff_shift,
                "blacklist": sorted(self.blacklist), "bootstrapping": self.bootstrapping,
                "selected_in_cycle": self._selected_in_cycle,
                "aimed": {str(entry): sorted(branches)
                          for entry, branches in self.aimed.items()},
                "turns": {str(branch): int(self._turns[branch])
                          for branch in np.flatnonzero(self._turns)}}

    def restore(self, state: dict[str, Any], moved: Mapping[int, int] | None = None) -> None:
        super().restore(state, moved)
        self.cutoff_shift = int(state.get("cutoff_shift", 0))
        self.bootstrapping = bool(state.get("bootstrapping", False)) \
            and self.bootstrap is not Bootstrap.OFF
        self._selected_in_cycle = bool(state.get("selected_in_cycle", False))

        def index(branch: int | str) -> int | None:
            return int(branch) if moved is None else moved.get(int(branch))

        def renumbered(branches: Iterable[int | str]) -> set[int]:
            return {i for i in map(index, branches) if i is not None}

        self.blacklist = renumbered(state.get("blacklist", ()))
        self.aimed = {int(entry): aimed for entry, branches in state.get("aimed", {}).items()
                      if (aimed := renumbered(branches))}
        self._turns = np.zeros(0, np.int64)
        for branch, count in state.get("turns", {}).items():
            if (now := index(branch)) is not None:
                self._count_turns(now, int(count))

    def cutoffs(self, hits: np.ndarray, labels_from: int | None = None) -> RarityCutoffs:
        return RarityCutoffs.of(hits, labels_from, self.cutoff_shift)

    def select(self, entry: QueueEntry, queue: Queue, hits: np.ndarray, cycle: int,
               rng: random.Random, labels_from: int | None = None) -> Selection | None:
        return self.chooser(hits, labels_from)(entry, queue, cycle, rng)

    def chooser(self, hits: np.ndarray, labels_from: int | None) -> Chooser:
        if self.blacklist:  # blacklisted branches are neither targets nor the rarity yardstick
            hits = hits.copy()
            hits[np.fromiter(self.blacklist, np.int64)] = 0
        cutoffs = self.cutoffs(hits, labels_from)
        due = turn_due(hits, cutoffs.labels_from, self._turns)
        rare = cutoffs.rare_map(hits)
        return lambda entry, queue, cycle, rng: self._choose(entry, queue, hits, cutoffs, due,
                                                             rare, cycle, rng)

    def _choose(self, entry: QueueEntry, queue: Queue, hits: np.ndarray,
                cutoffs: RarityCutoffs, due: np.ndarray, rare_map: np.ndarray, cycle: int,
                rng: random.Random) -> Selection | None:
        if self.bootstrapping:
            if not afl_wants(entry, queue, cycle, rng):
                return None
            no_det = self.bootstrap is Bootstrap.UNTIL_NEW_BRANCH_NO_DET
            return Selection(entry, deterministic_allowed=not no_det)
        waiting = entry.edges[due[entry.edges]]
        if len(waiting):
            target = least_hit(waiting, hits[waiting], rng)
        else:
            rare = entry.edges[rare_map[entry.edges]]
            if not len(rare):
                return None
            target = next_target(rare, cutoffs.relative(rare, hits),
                                 self.aimed.get(entry.id, set()), rng)
        self.aimed.setdefault(entry.id, set()).add(target)
        self._count_turns(target, 1)
        self._selected_in_cycle = True
        return Selection(entry, target=target, use_mask=self.use_mask,
                         rarest=rarest(entry.edges, hits, cutoffs, MASKS_PER_PROBE + 1))

    def _count_turns(self, branch: int, count: int) -> None:
        if branch >= len(self._turns):
            self._turns = np.concatenate((self._turns, np.zeros(branch + 1 - len(self._turns),
                                                                np.int64)))
        self._turns[branch] += count

    def turns(self) -> np.ndarray:
        return self._turns

    def on_new_branch(self) -> None:
        self.cutoff_shift = 0
        if self.bootstrap in (Bootstrap.UNTIL_NEW_BRANCH, Bootstrap.UNTIL_NEW_BRANCH_NO_DET):
            self.bootstrapping = False

    def on_frozen_target(self, branch: int) -> None:
        self.blacklist.add(branch)

    def on_cycle_end(self, found_new_branch: bool) -> None:
        if not self._selected_in_cycle and not self.bootstrapping:
            self.cutoff_shift += 1
        self._selected_in_cycle = False
        if self.bootstrap is Bootstrap.ONE_CYCLE and self.bootstrapping:
            self.bootstrapping = False
        elif self.bootstrap is not Bootstrap.OFF and not found_new_branch:
            self.bootstrapping = True
