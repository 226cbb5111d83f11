"""The focus cache: masks kept per (entry, target) within a byte budget."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ffcc.fuzzer.engine.focus import CarriedFocuses, Focus, FocusCache, edges_by_entry, renumbering


def focus(target: int, data: bytes) -> Focus:
    return Focus(target, data, np.zeros(len(data) + 1, np.uint8))


def test_the_least_recently_used_focus_goes_first_beyond_the_budget() -> None:
    data = b"x" * 9  # masks of 10 bytes
    cache = FocusCache(budget=30)
    for target in (1, 2, 3):
        cache.put(0, focus(target, data), data)
    assert cache.get(0, 1) is not None  # 1 is now the most recently used
    cache.put(0, focus(4, data), data)
    assert (0, 2) not in cache and all((0, t) in cache for t in (1, 3, 4))


def test_a_trimmed_copy_counts_besides_its_mask() -> None:
    data = b"x" * 9
    cache = FocusCache(budget=25)
    cache.put(0, focus(1, data), data)
    cache.put(0, focus(2, data[:4]), data)  # 5 + 4 bytes: 19 in all
    assert (0, 1) in cache and (0, 2) in cache
    cache.put(1, focus(1, data[:5]), data)  # 6 + 5 more: over
    assert (0, 1) not in cache and cache.get(1, 1) is not None


def test_putting_a_focus_again_replaces_it() -> None:
    data = b"x" * 9
    cache = FocusCache(budget=20)
    cache.put(0, focus(1, data), data)
    cache.put(0, focus(1, data), data)
    cache.put(0, focus(2, data), data)
    assert (0, 1) in cache and (0, 2) in cache


def edges(*indices: int) -> np.ndarray:
    return np.array(indices, np.uint32)


def test_branches_are_renumbered_by_the_entries_that_hit_them_in_map_order() -> None:
    """Old build: edges 1-5, labels 20-21; the new one lost edge 3 (label code compiled out)
    and numbers the rest from 10, its labels from 30.  Edges 1 and 2 are hit by the same
    entries, as the blocks of one path are: map order tells them apart."""
    before = {0: edges(1, 2, 3, 4, 20), 1: edges(1, 2, 5, 21), 2: edges(4, 5)}
    after = {0: edges(10, 11, 12, 30), 1: edges(10, 11, 13, 31), 2: edges(12, 13)}
    assert renumbering(before, after) == {1: 10, 2: 11, 4: 12, 5: 13, 20: 30, 21: 31}
    assert renumbering({**before, 9: edges(3, 20)}, after) == renumbering(before, after), \
        "an entry the new queue does not have does not count"


def test_focuses_go_on_renumbered_and_those_without_a_counterpart_are_dropped() -> None:
    data = b"x" * 9
    cache = FocusCache()
    for target in (1, 3, 20):
        cache.put(0, focus(target, data), data)
    cache.put(5, focus(1, data), data)  # an entry the new run does not have
    carried = CarriedFocuses(cache, {0: edges(1, 2, 3, 4, 20), 1: edges(1, 2, 5, 21),
                                     2: edges(4, 5), 5: edges(1)})
    queue = [SimpleNamespace(id=0, edges=edges(10, 11, 12, 30)),
             SimpleNamespace(id=1, edges=edges(10, 11, 13, 31)),
             SimpleNamespace(id=2, edges=edges(12, 13))]
    moved = carried.cache.renumbered(renumbering(carried.edges, edges_by_entry(queue)),  # type: ignore[arg-type]
                                     {0, 1, 2})
    kept = moved.get(0, 10)
    assert kept is not None and kept.target == 10 and kept.mask is not None
    assert (0, 30) in moved and (5, 10) not in moved
    assert not any((0, t) in moved for t in (1, 3, 11, 12, 20)), "edge 3 is gone"
