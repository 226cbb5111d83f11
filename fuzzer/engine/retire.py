"""Label retirement: a covered label stops costing the campaign.

The fuzzer offers the target a shared-memory segment laid out as the label region
(ffcc_protocol.h, Label retirement; its id in FFCC_ENV_RETIRE_SHM_ID). A label reads its
byte before it counts: once the campaign sets that byte, the label never writes its slot
again, in the running forkserver, its batches and every later child, with no Python per
execution. Between queue entries the campaign retires the labels its queue has covered and
that are done as FairFuzz targets (``--retire rare``, the default: a covered label was a rare
branch when covered, the target FairFuzz exists for, so it keeps counting until a selection
aimed at it, which the scheduler gives it before any other target of an entry that hits it
(scheduler.turn_due), or for a minute at most (ten seconds if it is common, hit by more
inputs than the median edge); after that turn it stays a target while it is not common, up
to LABEL_TURNS selections within the minute; ``first`` retires on cover).  The minute is the
run's: a run on a lean build counts the turns aimed at each label before it (scheduler.py
renumbers them) but begins the minute again for the labels still counting, which gives the
labels still waiting at a rebuild more time for their turns (carried over, the minute cost
libpng's labels a quarter of their targets for no executions gained, docs/LABELS.md).
Retired labels leave
FairFuzz's rarity computation (a label that no longer counts would look rarer and rarer),
and their coverage stays recorded in the virgin map, the queue entries and every report.
Rarity alone cannot say when: FairFuzz's cutoff follows the least hit branch, which a new
edge brings back to 1, so nearly every covered label is above it at some moment long before
it was ever aimed at; nor can how common a label is, at once (most labels of expat's harness
are common within seconds: retiring them then took 96% of them out before their turn). A
target without ffcc's runtime (AFL++'s) never maps the segment, and every label of a target
that does not find it counts.

Once every label of a site is retired, the campaign also sets the retirement byte of the
site's gate (labels.py), and a build whose gates are compiled in (clang on x86-64,
docs/LABELS.md) skips the site's label code altogether: its predicates stop costing too.
The label code's own edges (the guard of the skipped block, those of the predicates'
short-circuits) then stop counting in every trace that ran the site.

A hot site, one where some label counted 32 or more times in one run (seen by a label that
still counts, or by the census of the queue on the full build before a lean rebuild:
census.py), costs its labels' predicates that many times over in every run that gets there: a
loop over the input's bytes (libpng's row filters run theirs for every byte of every row). Its
labels retire whatever their turn: the covered ones at once; the next lean rebuild compiles
the whole site out, back to the program's own code, its uncovered labels too (given up: they
stay uncovered in every report; they had until then, and the lean build keeps nothing of the
site, so no later run needs to know it was hot). In a build with gates the uncovered ones also
retire once the site has been hot for HOT_GRACE seconds, which closes its gate; without gates,
retiring a label that never fires would save nothing. On libpng's harness a labelled run took
2.8 times a plain one's CPU; without the 1,241 labels of its 243 hot sites (of 22,361 labels),
1.2 times (docs/LABELS.md, Hot sites).

Most sites keep a label no input can cover there (a kill condition a dominating test rules
out, docs/LABELS.md), so their gates never close.  ``--retire stall`` gives up on those: as
``rare``, and once STALL_SECONDS pass without a newly covered label, every label that is
left is retired and every gate closes.  The labels given up stay uncovered in every report;
no later input can cover them.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from enum import Enum

import numpy as np

from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.scheduler import turns_at
from ffcc.fuzzer.engine.shm import SharedSegment
from ffcc.runtime.abi import NAMES

ENV_NAME = NAMES["FFCC_ENV_RETIRE_SHM_ID"]
STALL_SECONDS = 600.0  # as long as a two-phase campaign waits for edges (phases.py)
# How long a covered label may wait for its turn as a target: on a target where each
# selection is slow (libpng's harness: 2 a second, 2,810 labels covered in 150 s) the turns
# never all come, and a label waiting costs every execution that runs it.
TURN_WINDOW = 60.0
# How many selections may aim at a covered label that stays uncommon (hit by no more inputs
# than the median covered edge) before it retires, within TURN_WINDOW: FairFuzz aims at a rare
# edge again and again (cJSON's harness: 20,000 selections at about 100 edges in 120 s), and
# one turn each left its labels 2% of the targets.  In paired 120 s campaigns 4 gave cJSON's
# labels 5% of the targets, 16 gave 8-11% (expat's 9-14%), 32 gave 12-20% (docs/LABELS.md).
LABEL_TURNS = 32
# How long a common label (hit by more inputs than the median covered edge) waits for its turn:
# it costs in most runs, and where labels are covered faster than selections come (libpng's
# harness) most would wait the whole TURN_WINDOW compiled in.  10 s gave libpng's harness 25%
# more executions in 120 s and cJSON's 30%, with as many labels found, and left most labels
# of expat's and cJSON's their turn (docs/LABELS.md, Retirement).
COMMON_GRACE = 10.0
# The hit-count classes (AFL's buckets, as the virgin map keeps them) of a label that counted
# 32 or more times in one run (32-127, 128 and more): its site is hot.  With 128 and more only,
# the sites that run 32-127 times a run held 90% of what cJSON's lean builds still evaluated
# and 40% of expat's (docs/LABELS.md, Hot sites).
HOT_CLASSES = 0x40 | 0x80
# How long the uncovered labels of a hot site keep counting where a gate can then skip the site
# (elsewhere they go with the next lean rebuild): the site has run them at least 32 times in
# some of the runs that got there.
HOT_GRACE = 20.0
# Seconds between two retirement passes while covered labels wait for their turns (``rare``,
# ``stall``), whose clocks count seconds where a fast target's selections come hundreds a
# second (cJSON's harness: 180; a pass before each took 4% of a labelled campaign in a
# profile).  ``first`` passes before every selection: a covered label must never get a turn.
PASS_INTERVAL = 0.25


def common_level(edge_hits: np.ndarray) -> float:
    """The hit count of a common branch: the median over the covered edges."""
    covered = edge_hits[edge_hits > 0]
    return float(np.median(covered)) if len(covered) else 0.0


class RetirePolicy(Enum):
    """--retire: when a covered label stops counting; the values are the option's spellings."""

    RARE = "rare"    # once covered and it had its turn as a FairFuzz target (or waited)
    FIRST = "first"  # once the queue covers it
    STALL = "stall"  # as RARE, and every label left once none was covered for STALL_SECONDS
    NEVER = "never"


class Retirement:
    """The retirement segment of one labelled target, and which labels it retired."""

    def __init__(self, labels: LabelMap, stall_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic, while_rare: bool = False) -> None:
        self.labels = labels
        self._while_rare = while_rare  # a covered label stays while it is a rare branch
        self._stall_seconds = stall_seconds  # give up after this long without a cover (stall)
        self._clock = clock
        self._last_cover = clock()
        self._last_pass = -np.inf  # clock() at the last retire_covered
        self.given_up = False  # the labels left were retired uncovered
        self._slots = np.flatnonzero([site is not None for site in labels.sites])
        self._ids = np.array([site.label for site in labels.sites if site is not None],
                             dtype=np.int64)  # each slot's label id
        self.retired = np.zeros(len(self._slots), dtype=bool)
        self._seen = np.zeros(len(self._slots), dtype=bool)  # covered, retired or not
        self._covered_at = np.zeros(len(self._slots))  # clock() when first covered
        self._label_indices = self._slots  # map indices, once the map's size is known
        self._site = np.asarray(labels.site_of, dtype=np.int64)[self._slots] \
            if labels.site_of else np.arange(len(self._slots))  # each label's site (dense)
        self._hot_since = np.full(int(self._site.max(initial=-1)) + 1, np.inf)  # clock()
        gate_of_label = np.asarray(labels.gates, dtype=np.int64)[self._slots] \
            if labels.gates else np.full(len(self._slots), -1, dtype=np.int64)
        self._gated = gate_of_label >= 0
        # gate slots, and for each gated label the position of its gate among them
        self.gate_slots, self._gate_of = np.unique(gate_of_label[self._gated], return_inverse=True)
        self._open_labels = np.bincount(self._gate_of, minlength=len(self.gate_slots))
        self.closed = np.zeros(len(self.gate_slots), dtype=bool)  # gates whose byte is set
        self.closed_now = 0  # gates the last retire_covered closed
        self._segment = SharedSegment(max(labels.region_size, 1), "label retirement segment")
        self.shm_id = self._segment.shm_id
        self.region = np.frombuffer(self._segment.view, dtype=np.uint8)

    @classmethod
    def for_target(cls, policy: RetirePolicy, labels: LabelMap | None) -> Retirement | None:
        """The segment for a labelled target under ``policy``; None when nothing retires."""
        if policy is RetirePolicy.NEVER or labels is None or not labels.count:
            return None
        return cls(labels, STALL_SECONDS if policy is RetirePolicy.STALL else None,
                   while_rare=policy is not RetirePolicy.FIRST)

    @property
    def indices(self) -> np.ndarray:
        """Map indices of the retired labels."""
        return self._label_indices[self.retired]

    def retired_ids(self) -> set[int]:
        """Ids of the retired labels."""
        return set(self._ids[self.retired].tolist())

    def covered_ids(self) -> set[int]:
        """Ids of the labels the queue covered, retired or not."""
        return set(self._ids[self._seen].tolist())

    def pass_due(self) -> bool:
        """Whether the campaign's next retire_covered is due (PASS_INTERVAL)."""
        return not self._while_rare or self._clock() >= self._last_pass + PASS_INTERVAL

    def retire_covered(self, virgin: np.ndarray, hits: np.ndarray | None = None,
                       turns: np.ndarray | None = None) -> np.ndarray:
        """Retire the labels some queue entry covers (their virgin byte is no longer 0xff)
        and, under ``rare`` and ``stall``, that are done as FairFuzz targets (``turns``: the
        scheduler's selections per map index; None when it aims at none, and then covering
        is enough): before its first turn a label waits TURN_WINDOW seconds at most,
        COMMON_GRACE if ``hits`` (FairFuzz's rarity input, the retired labels left out)
        counts more inputs hitting it than the median covered edge; after it, it stays while
        it is not common, for LABEL_TURNS selections and TURN_WINDOW seconds since it was
        covered at most.  Whatever the policy, the covered labels
        of a hot site, and where gates can skip the site, its uncovered ones once it has been
        hot for HOT_GRACE seconds (elsewhere retiring them would save nothing).  Under
        ``stall``, every label left once none was covered for long.  The map indices of those
        retired now."""
        start = self.labels.region_start(len(virgin))
        self._label_indices = self._slots + start
        classes = virgin[self._label_indices]
        covered = (classes != 0xFF) & ~self.retired
        now = self._last_pass = self._clock()
        first = covered & ~self._seen
        hot = self._hot(classes, now)
        newly = covered
        if self._while_rare and hits is not None and turns is not None and covered.any():
            self._covered_at[first] = now
            had = turns_at(turns, self._label_indices)
            common = hits[self._label_indices] > common_level(hits[:start])
            waited = now - self._covered_at
            before_turn = waited >= np.where(common, COMMON_GRACE, TURN_WINDOW)
            after_turn = common | (had >= LABEL_TURNS) | (waited >= TURN_WINDOW)
            newly = covered & (np.where(had > 0, after_turn, before_turn) | hot)
        given_up_hot = hot & self._gated & (classes == 0xFF) & ~self.retired \
            & (now - self._hot_since[self._site] >= HOT_GRACE)
        newly = newly | given_up_hot
        if first.any():
            self._seen |= first
            self._last_cover = now
        elif self._stalled(now):
            newly = ~self.retired
            self.given_up = True
        self._retire(newly)
        return self._label_indices[newly]

    def _hot(self, classes: np.ndarray, now: float) -> np.ndarray:
        """Which labels sit at a hot site, given the labels' hit-count classes: a site is hot
        from the first time one of its labels that still counts shows a class of HOT_CLASSES
        (a label compiled out after it was covered reads as every class, and shows nothing)."""
        self._mark_hot(((classes & HOT_CLASSES) != HOT_CLASSES) & ~self.retired, now)
        return np.isfinite(self._hot_since)[self._site]

    def note_census(self, classes: np.ndarray) -> int:
        """Mark hot the sites where a census saw a label in HOT_CLASSES (census.py):
        ``classes`` holds, per index of the full build's map, the hit-count classes its runs
        showed, a bit each.  How many sites are hot now that were not."""
        start = self.labels.region_start(len(classes))
        return self._mark_hot((classes[self._slots + start] & HOT_CLASSES) != 0,
                              self._clock())

    def _mark_hot(self, shown: np.ndarray, now: float) -> int:
        """The sites of the labels ``shown`` are hot from ``now`` on, unless already; how
        many were not."""
        hot_now = np.zeros(len(self._hot_since), dtype=bool)
        hot_now[self._site[shown]] = True
        newly = hot_now & np.isinf(self._hot_since)
        self._hot_since[newly] = now
        return int(np.count_nonzero(newly))

    def hot_ids(self) -> set[int]:
        """Ids of the labels at the sites found hot so far, retired or not: a lean rebuild
        compiles all of them out (the site's own code is all that is left of it)."""
        return set(self._ids[np.isfinite(self._hot_since)[self._site]].tolist())

    def retired_uncovered(self, virgin: np.ndarray) -> int:
        """Labels retired uncovered: at a hot site, by a stall, or compiled out so."""
        return int(np.count_nonzero(virgin[self.indices] == 0xFF))

    def retire_ids(self, ids: Collection[int]) -> None:
        """Retire the labels with these ids whatever their coverage: the ones the running
        lean build compiled out, which no run can hit and the next rebuild must leave out
        again."""
        self._retire(np.isin(self._ids, np.fromiter(ids, np.int64)) & ~self.retired)

    def _retire(self, newly: np.ndarray) -> None:
        self.region[self._slots[newly]] = 1
        self.retired |= newly
        self.closed_now = self._close_gates(newly)

    def _stalled(self, now: float) -> bool:
        return (self._stall_seconds is not None and not self.given_up
                and now - self._last_cover >= self._stall_seconds)

    def _close_gates(self, newly: np.ndarray) -> int:
        """Set the byte of each gate whose last label ``newly`` retired; how many."""
        if not newly.any() or not len(self.gate_slots):
            return 0
        self._open_labels -= np.bincount(self._gate_of[newly[self._gated]],
                                         minlength=len(self.gate_slots))
        closing = (self._open_labels == 0) & ~self.closed
        self.region[self.gate_slots[closing]] = 1
        self.closed |= closing
        return int(np.count_nonzero(closing))

    def exclude(self, hits: np.ndarray) -> np.ndarray:
        """FairFuzz's rarity input without the retired labels (a zero count is no branch)."""
        if not self.retired.any():
            return hits
        hits = hits.copy()
        hits[self.indices] = 0
        return hits

    @contextmanager
    def exported(self) -> Iterator[None]:
        """The segment's id in the environment a target started now inherits."""
        previous = os.environ.get(ENV_NAME)
        os.environ[ENV_NAME] = str(self.shm_id)
        try:
            yield
        finally:
            if previous is None:
                del os.environ[ENV_NAME]
            else:
                os.environ[ENV_NAME] = previous

    def close(self) -> None:
        if hasattr(self, "region"):
            del self.region
            self._segment.close()
