"""The focus cache: masks kept per (entry, target) within a byte budget."""
from __future__ import annotations

import numpy as np

from ffcc.fuzzer.engine.focus import Focus, FocusCache


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
