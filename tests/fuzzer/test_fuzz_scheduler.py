"""FairFuzz selection (paper Defs. 5-6, Algorithm 2 line 6), AFL's skip rule, and the walk
over the queue that both schedulers share (cursor, cycles, stalls)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ffcc.fuzzer.engine.queue import Queue, QueueEntry
from ffcc.fuzzer.engine.scheduler import (
    AflScheduler,
    Bootstrap,
    FairFuzzScheduler,
    RarityCutoffs,
    Scheduler,
    Selection,
    least_hit,
    rarity_cutoff,
    within_cutoff,
)


def entry(i: int, edges: list[int], exec_us: int = 100, size: int = 10) -> QueueEntry:
    return QueueEntry(i, Path(f"id:{i:06d}"), b"x" * size, np.array(edges, np.uint32),
                      exec_us=exec_us, bitmap_size=len(edges), checksum=i)


@pytest.mark.parametrize("least, cutoff", [(1, 1), (2, 2), (3, 4), (17, 32), (32, 32), (33, 64)])
def test_cutoff_is_smallest_power_of_two_bounding_the_least_hit_branch(least: int, cutoff: int) -> None:
    hits = np.array([0, least, 1000, 0, least + 5], np.uint32)
    assert rarity_cutoff(hits) == cutoff


def test_cutoff_ignores_unhit_branches_and_empty_maps() -> None:
    assert rarity_cutoff(np.zeros(8, np.uint32)) == 0
    assert rarity_cutoff(np.array([0, 0, 5], np.uint32)) == 8


def test_rare_branches_are_the_hit_branches_within_the_cutoff() -> None:
    hits = np.array([0, 50, 3, 9, 1], np.uint32)
    assert within_cutoff(hits, 16).tolist() == [False, False, True, True, True]
    assert RarityCutoffs.of(hits, None).rare_map(hits).tolist() == [False] * 4 + [True]
    branches = np.array([1, 2, 3], np.uint32)
    assert least_hit(branches, hits[branches], random.Random(0)) == 2


def test_equally_rare_branches_are_each_the_least_hit_some_of_the_time() -> None:
    hits = np.array([0, 5, 5, 5, 2, 2], np.uint32)
    branches, rng = np.array([1, 2, 3], np.uint32), random.Random(0)
    picks = [least_hit(branches, hits[branches], rng) for _ in range(300)]
    assert {branch: picks.count(branch) > 60 for branch in (1, 2, 3)} == {1: True, 2: True, 3: True}
    pair = np.array([4, 5], np.uint32)
    assert {least_hit(pair, hits[pair], random.Random(seed))
            for seed in range(20)} == {4, 5}  # also when the later index is a label slot


def test_the_same_rng_seed_makes_the_same_choices() -> None:
    hits = np.array([0, 3, 3, 3, 3, 3, 3], np.uint32)

    def targets(seed: int) -> list[int | None]:
        sched, rng, e = FairFuzzScheduler(), random.Random(seed), entry(0, [1, 2, 3, 4, 5, 6])
        queue = Queue(7)
        queue.add(e)
        return [sched.select(e, queue, hits, 1, rng).target for _ in range(12)]

    assert targets(4) == targets(4)
    assert targets(4) != targets(5)


def test_successive_selections_rotate_through_the_entrys_rare_branches() -> None:
    """As afl-rb: each rare branch the entry hits once, rarest first; then the rarest again."""
    hits = np.array([0, 3, 7, 900, 5, 0], np.uint32)  # cutoff 4: rare <= 4 -> doubled to 8
    queue = Queue(6)
    e, other = entry(0, [1, 2, 3, 4, 5]), entry(1, [1, 2])
    queue.add(e)
    queue.add(other)
    sched, rng = FairFuzzScheduler(), random.Random(0)
    sched.cutoff_shift = 1
    assert [sched.select(e, queue, hits, 1, rng).target for _ in range(5)] == [1, 4, 2, 1, 1]
    assert sched.select(other, queue, hits, 1, rng).target == 1  # each entry keeps its own
    assert list(sched.turns()) == [0, 4, 1, 0, 1], "the selections aimed at each branch"
    assert AflScheduler().turns() is None, "AFL's walk aims at nothing"
    hits[2] = 1  # counts move on: the rarest is another branch now
    assert sched.select(e, queue, hits, 1, rng).target == 2


def test_a_label_and_its_twin_edge_take_turns_as_targets() -> None:
    """Equal hit counts, the edge at the lower index: the label is aimed at all the same."""
    hits = np.zeros(16, np.uint32)
    edge, label = 3, 14
    hits[[edge, label]] = 2
    hits[[1, 2]] = 40
    queue = Queue(16)
    e = entry(0, [1, 2, edge, label])
    queue.add(e)
    sched, rng = FairFuzzScheduler(), random.Random(1)
    first_two = {sched.select(e, queue, hits, 1, rng).target for _ in range(2)}
    assert first_two == {edge, label}
    later = [sched.select(e, queue, hits, 1, rng).target for _ in range(200)]
    assert 60 < later.count(label) < 140 and set(later) == {edge, label}


def test_fairfuzz_fuzzes_only_entries_whose_rarest_branch_is_rare() -> None:
    hits = np.array([0, 500, 500, 17, 900], np.uint32)  # cutoff 32
    queue = Queue(5)
    rare, common = entry(0, [1, 3]), entry(1, [1, 2, 4])
    queue.add(rare)
    queue.add(common)
    sched, rng = FairFuzzScheduler(), random.Random(0)
    chosen = sched.select(rare, queue, hits, 1, rng)
    assert chosen is not None and chosen.target == 3 and chosen.use_mask
    assert sched.select(common, queue, hits, 1, rng) is None


def test_no_mask_option_keeps_the_target_but_drops_the_mask() -> None:
    hits = np.array([0, 4], np.uint32)
    queue = Queue(2)
    e = entry(0, [1])
    queue.add(e)
    chosen = FairFuzzScheduler(use_mask=False).select(e, queue, hits, 1, random.Random(0))
    assert chosen is not None and chosen.target == 1 and not chosen.use_mask


def test_cutoff_doubles_after_a_cycle_without_rare_entries_until_a_new_branch() -> None:
    hits = np.array([0, 40, 100], np.uint32)  # cutoff 64: branch 2 is not rare
    queue = Queue(3)
    e = entry(0, [2])
    queue.add(e)
    sched, rng = FairFuzzScheduler(), random.Random(0)
    assert sched.select(e, queue, hits, 1, rng) is None
    sched.on_cycle_end(found_new_branch=False)
    chosen = sched.select(e, queue, hits, 2, rng)
    assert chosen is not None and chosen.target == 2
    sched.on_new_branch()
    assert sched.select(e, queue, hits, 3, rng) is None


@pytest.mark.parametrize("mode", [Bootstrap.UNTIL_NEW_BRANCH, Bootstrap.UNTIL_NEW_BRANCH_NO_DET])
def test_bootstrap_falls_back_to_afl_until_a_new_branch(mode: Bootstrap) -> None:
    hits = np.array([0, 1000, 1000], np.uint32)
    queue = Queue(3)
    e = entry(0, [1, 2])
    e.favoured = True
    queue.add(e)
    sched, rng = FairFuzzScheduler(bootstrap=mode), random.Random(0)
    sched.on_cycle_end(found_new_branch=True)
    assert not sched.bootstrapping
    sched.on_cycle_end(found_new_branch=False)
    chosen = sched.select(e, queue, hits, 2, rng)
    assert chosen is not None and chosen.target is None and not chosen.use_mask
    assert chosen.deterministic_allowed is (mode is Bootstrap.UNTIL_NEW_BRANCH)
    sched.on_new_branch()
    assert not sched.bootstrapping


def test_bootstrap_three_lasts_one_cycle() -> None:
    sched = FairFuzzScheduler(bootstrap=Bootstrap.ONE_CYCLE)
    sched.on_cycle_end(found_new_branch=False)
    assert sched.bootstrapping
    sched.on_new_branch()
    assert sched.bootstrapping
    sched.on_cycle_end(found_new_branch=True)
    assert not sched.bootstrapping


def test_afl_walk_prefers_favoured_pending_entries() -> None:
    queue = Queue(8)
    fav, other = entry(0, [1, 2], exec_us=10), entry(1, [1], exec_us=1000)
    queue.add(fav)
    queue.add(other)
    queue.cull()
    assert fav.favoured and not other.favoured
    sched, rng = AflScheduler(), random.Random(1)
    assert all(sched.select(fav, queue, np.zeros(8, np.uint32), 1, rng) for _ in range(50))
    picked = sum(sched.select(other, queue, np.zeros(8, np.uint32), 1, rng) is not None
                 for _ in range(1000))
    assert picked < 50  # skipped 99% of the time while a favourite is pending


def test_cull_picks_the_cheapest_entry_per_edge() -> None:
    queue = Queue(8)
    slow, fast, extra = entry(0, [1, 2], exec_us=900), entry(1, [1, 2], exec_us=10), entry(2, [3])
    for e in (slow, fast, extra):
        queue.add(e)
    queue.cull()
    assert [e.favoured for e in queue] == [False, True, True]
    assert queue.pending_favoured == 2 and queue.favoured_count == 2


def test_queue_means_follow_added_and_remeasured_entries() -> None:
    queue = Queue(8)
    assert queue.mean_exec_us() == queue.mean_bitmap_size() == 0.0
    first, second = entry(0, [1, 2], exec_us=100), entry(1, [3, 4, 5, 6], exec_us=300)
    queue.add(first)
    queue.add(second)
    assert (queue.mean_exec_us(), queue.mean_bitmap_size()) == (200.0, 3.0)
    queue.remeasure(second, exec_us=50, bitmap_size=2)
    assert (second.exec_us, second.bitmap_size) == (50, 2)
    assert (queue.mean_exec_us(), queue.mean_bitmap_size()) == (75.0, 2.0)


def test_a_frozen_target_is_blacklisted_and_the_next_rarest_taken() -> None:
    hits = np.array([0, 3, 2, 900], np.uint32)
    queue = Queue(4)
    e = entry(0, [1, 2, 3])
    queue.add(e)
    sched, rng = FairFuzzScheduler(), random.Random(0)
    assert sched.select(e, queue, hits, 1, rng).target == 2
    sched.on_frozen_target(2)
    assert sched.select(e, queue, hits, 1, rng).target == 1


class Picky(Scheduler):
    """Selects every entry except those listed; remembers the cycle ends it hears of."""

    name = "picky"

    def __init__(self, skip: set[int] | None = None) -> None:
        super().__init__()
        self.skip = skip or set()
        self.cycle_ends: list[bool] = []
        self.new_branches = 0

    def select(self, entry, queue, hits, cycle, rng, labels_from=None) -> Selection | None:
        return None if entry.id in self.skip else Selection(entry)

    def on_cycle_end(self, found_new_branch: bool) -> None:
        self.cycle_ends.append(found_new_branch)

    def on_new_branch(self) -> None:
        self.new_branches += 1


def queue_of(n: int) -> Queue:
    queue = Queue(8)
    for i in range(n):
        queue.add(entry(i, [1 + i]))
    return queue


def walk(sched: Scheduler, queue: Queue, steps: int) -> list[int | None]:
    hits, rng = np.zeros(8, np.uint32), random.Random(0)
    picks = []
    for _ in range(steps):
        chosen = sched.next(queue, hits, rng)
        picks.append(None if chosen is None else chosen.entry.id)
    return picks


def test_next_walks_the_queue_cycle_after_cycle() -> None:
    sched, queue = Picky(skip={1}), queue_of(3)
    assert walk(sched, queue, 2) == [0, 2] and sched.cursor.cycle == 0  # the seeds' pass
    assert walk(sched, queue, 2) == [0, 2] and sched.cursor.cycle == 1
    assert sched.cycle_ends == []  # the seeds' pass is no cycle of its own
    assert walk(sched, queue, 1) == [0] and sched.cycle_ends == [False]


def test_next_gives_up_after_a_queues_worth_of_skipped_entries() -> None:
    sched, queue = Picky(skip={0, 1, 2}), queue_of(3)
    assert walk(sched, queue, 2) == [None, None]
    assert sched.cursor.cycle == 1 and sched.cursor.position == 3


def test_cycles_without_new_entries_stall_and_turn_splicing_on() -> None:
    sched, queue = Picky(), queue_of(2)
    walk(sched, queue, 2)  # cycle 0
    sched.on_new_entry(new_branch=True)  # forgotten: the seeds' pass ends without a verdict
    walk(sched, queue, 2)  # cycle 1
    sched.on_new_entry(new_branch=True)
    walk(sched, queue, 2)  # cycle 2
    assert sched.cycle_ends == [True] and sched.new_branches == 2
    assert sched.cursor.stalled_cycles == 0 and not sched.cursor.splicing
    walk(sched, queue, 4)  # cycles 3 and 4 add nothing
    assert sched.cycle_ends == [True, False, False]
    assert sched.cursor.stalled_cycles == 2 and sched.cursor.splicing
    sched.on_new_entry(new_branch=False)
    walk(sched, queue, 1)
    assert sched.cursor.stalled_cycles == 0 and sched.cursor.splicing  # splicing stays on
    assert sched.new_branches == 2


def test_a_schedulers_state_survives_json_and_a_new_scheduler() -> None:
    """What resume restores: the cursor, and FairFuzz's cutoff, blacklist, bootstrap, each
    entry's targets so far and the selections aimed at each branch."""
    fair = FairFuzzScheduler(bootstrap=Bootstrap.ONE_CYCLE)
    hits = np.zeros(16, np.uint32)
    hits[[3, 7, 14]] = 1
    first, second, queue, rng = entry(0, [3, 14]), entry(1, [7]), Queue(16), random.Random(0)
    queue.add(first)
    queue.add(second)
    for chosen in (first, first, first, second):
        fair.select(chosen, queue, hits, 1, rng)
    fair.cursor.cycle, fair.cursor.position, fair.cursor.stalled_cycles = 7, 3, 2
    fair.cursor.splicing = True
    fair.cutoff_shift, fair.bootstrapping = 2, True
    fair.on_frozen_target(40)
    again = FairFuzzScheduler(bootstrap=Bootstrap.ONE_CYCLE)
    again.restore(json.loads(json.dumps(fair.state())))
    assert again.cursor == fair.cursor and again.state() == fair.state()
    assert again.aimed == {0: {3, 14}, 1: {7}}
    assert sorted(np.flatnonzero(again.turns())) == [3, 7, 14] and again.turns().sum() == 4, \
        "label retirement's turns survive too"
    plain = AflScheduler()  # the other schedule takes the walk and ignores the rest
    plain.restore(fair.state())
    assert plain.cursor == fair.cursor and plain.state() == {"cursor": fair.state()["cursor"]}
    no_bootstrap = FairFuzzScheduler()
    no_bootstrap.restore(fair.state())
    assert not no_bootstrap.bootstrapping and no_bootstrap.blacklist == {40}


def test_a_label_is_rare_among_all_branches_or_among_labels() -> None:
    """Map 0-7 edges, 8-15 labels: the least hit branch (an edge, 1) sets FairFuzz's
    cutoff, the least hit label (5) the labels' (8), so a label hit 6 times is rare where
    FairFuzz alone would have said 1; without a label region it says 1 for all."""
    hits = np.array([0, 1, 40, 3, 0, 0, 0, 0, 0, 6, 5, 900, 0, 0, 0, 0], np.uint32)
    cutoffs = RarityCutoffs.of(hits, 8)
    assert (cutoffs.branches, cutoffs.labels) == (1, 8)
    edges = np.array([1, 2, 3, 9, 10, 11], np.uint32)

    def rare(cutoffs: RarityCutoffs) -> list[int]:
        return edges[cutoffs.rare_map(hits)[edges]].tolist()

    assert rare(cutoffs) == [1, 9, 10]
    assert rare(RarityCutoffs.of(hits, None)) == [1]
    assert RarityCutoffs.of(hits, 8, shift=2).branches == 4
    hits[[1, 3]] = (7, 9)  # the least hit branch is a label now: both cutoffs are 8
    assert RarityCutoffs.of(hits, 8).branches == 8
    assert rare(RarityCutoffs.of(hits, 8)) == [1, 9, 10]
    hits[[1, 3]] = (1, 3)
    sched, queue = FairFuzzScheduler(), Queue(16)
    e = entry(0, [2, 3, 9, 11])
    queue.add(e)
    target = sched.select(e, queue, hits, 1, random.Random(0), labels_from=8)
    assert target is not None and target.target == 9, "no rare edge here: the rare label"
    assert sched.select(e, queue, hits, 1, random.Random(0)) is None
    assert cutoffs.relative(np.array([1, 10, 9]), hits).tolist() == [1.0, 0.625, 0.75], \
        "the label hit 5 times is as rare among labels as the edge hit once among all"


def test_a_covered_label_is_first_in_line_until_its_turn_however_common() -> None:
    """Map 0-7 edges, 8-15 labels: label 12 is hit by 900 inputs, far above both cutoffs,
    but no selection aimed at it yet, so the first entry walked that hits it is fuzzed
    towards it before its rare edge; then it takes its place among the branches by rarity
    (not rare: never again), from that entry as from any other."""
    hits = np.array([0, 1, 40, 0, 0, 0, 0, 0, 0, 0, 5, 0, 900, 0, 0, 0], np.uint32)
    sched, queue, rng = FairFuzzScheduler(), Queue(16), random.Random(0)
    first, second = entry(0, [1, 2, 12]), entry(1, [2, 10, 12])
    queue.add(first)
    queue.add(second)
    aimed = [sched.select(e, queue, hits, 1, rng, labels_from=8).target
             for e in (first, first, second, second)]
    assert aimed == [12, 1, 10, 10], aimed
    assert sched.select(first, queue, hits, 1, rng).target == 1, "no label region: no label"


def test_a_changed_map_leaves_the_branch_indices_of_a_saved_state_behind() -> None:
    """A lean rebuild numbers the map anew: the saved blacklist, targets and turns name other
    branches there (index 40 may be past its end), while the walk and the cutoff carry on.
    What the renumbering matches goes on under its new index; the rest is left behind."""
    fair = FairFuzzScheduler()
    hits = np.zeros(48, np.uint32)
    hits[[3, 14]] = 1
    first, queue, rng = entry(0, [3, 14]), Queue(48), random.Random(0)
    queue.add(first)
    for _ in range(3):
        fair.select(first, queue, hits, 1, rng)
    fair.cursor.cycle, fair.cutoff_shift = 4, 1
    fair.on_frozen_target(40)
    saved = json.loads(json.dumps(fair.state()))
    again = FairFuzzScheduler()
    again.restore(saved, moved={})
    assert again.cursor == fair.cursor and again.cutoff_shift == 1
    assert not again.blacklist and not again.aimed and not len(again.turns())
    again.restore(saved, moved={14: 5, 40: 20})
    assert again.blacklist == {20} and again.aimed == {0: {5}}
    assert list(np.flatnonzero(again.turns())) == [5] and again.turns()[5] == fair.turns()[14]
