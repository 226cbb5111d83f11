"""The target's labels as a campaign uses them: the label map as it is now, their retirement
(--retire, retire.py) and the lean rebuilds without the retired ones (--rebuild-retired,
lean.py).  The command line makes one and hands it to the campaign; without labels it is
empty and each of its steps does nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.executor import Executor
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.lean import LeanBuilds
from ffcc.fuzzer.engine.queue import Queue, QueueEntry
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.output.status import Status


class Labelling:
    """The labels, their retirement and lean rebuilds, and which entries' trace checksums
    a retirement made stale."""

    def __init__(self, labels: LabelMap | None = None,
                 current: Callable[[], LabelMap | None] | None = None,
                 retirement: Retirement | None = None, lean: LeanBuilds | None = None) -> None:
        self.map = labels        # the labels now, shared objects' included
        self.current = current   # says them again: shared objects add theirs as they load
        self.retirement = retirement
        self.lean = lean
        self._stale: set[int] = set()  # ids of entries whose checksum is to be taken again

    def refresh(self) -> None:
        """The label map as it is now (a dlopen()ed object may have brought labels)."""
        if self.current is not None:
            self.map = self.current()

    def retire_covered(self, queue: Queue, virgin: np.ndarray,
                       hits: Callable[[], np.ndarray], turns: np.ndarray | None) -> None:
        """Retire the labels the queue covers and, unless --retire first, that are done as
        targets (``turns``, the scheduler's selections per map index; retire.py) or waited
        for their turn long enough, which is shorter for a common label by ``hits()``
        (FairFuzz's rarity input).  The checksum of an entry that hit one no longer
        describes its trace, nor, once a site's gate closed, that of any entry that ran the
        site (its label code's edges stop too; which entries did, no trace says):
        checksum_of takes it again when it is next needed."""
        if self.retirement is None or not self.retirement.pass_due():
            return
        retired = self.retirement.retire_covered(virgin, hits(), turns)
        if not len(retired):
            return
        if self.retirement.closed_now > 0:
            self._stale |= {entry.id for entry in queue}
            return
        now_retired = np.zeros(len(virgin), dtype=bool)  # one lookup per entry, not a search
        now_retired[retired] = True
        self._stale |= {entry.id for entry in queue
                        if entry.id not in self._stale and now_retired[entry.edges].any()}

    def checksum_of(self, entry: QueueEntry, executor: Executor) -> int:
        """The entry's trace checksum as its runs have it now (trimming and input-to-state
        compare runs with it)."""
        if entry.id in self._stale:
            entry.checksum = executor.calibrate(entry.data, 1, False).checksum
            self._stale.discard(entry.id)
        return entry.checksum

    def rarity(self, hits: np.ndarray) -> np.ndarray:
        """FairFuzz's rarity input without the retired labels."""
        return self.retirement.exclude(hits) if self.retirement is not None else hits

    def keep_compiled_out(self, virgin: np.ndarray) -> None:
        """On a lean build, the labels it compiled out after they were covered stay covered,
        and every label it compiled out stays retired (a rebuild leaves it out again)."""
        if self.lean is not None:
            self.lean.keep_covered(virgin)
            if self.retirement is not None:
                self.retirement.retire_ids(self.lean.compiled_out.keys())

    def lean_step(self, virgin: np.ndarray, status: Status, queue: Queue) -> Path | None:
        """Start a lean rebuild when one is due (after a census of the queue's sites), or
        collect the one running: the build to go on with, once there is one."""
        if self.lean is None or self.retirement is None:
            return None
        return self.lean.step(self.retirement, virgin, status, queue)
