"""What fuzz_one mutates when it aims at a target branch, kept per (entry, target).

FairFuzz aims an entry at each of its rare branches in turn (scheduler.next_target), and
each mask costs three probes per input byte, every one a full execution of a mostly valid
input: on cJSON's harness the probes of a few 3 KB seeds took 24 of a campaign's 60 s, made
again at each turn.  So one set of probes makes masks for the entry's other rare branches
too, its rarest ones whether rare now or not (rarity moves: an entry picked again is mostly
aimed at a branch that was not among its rare ones the time before); the C core checks each
probe's trace for each of them, and the focuses are kept here, within a byte budget, for the
turns to come.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

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
    Map indices name the branches, so a cache lives as long as one build's campaign run."""

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
