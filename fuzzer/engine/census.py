"""A census of label sites before a lean rebuild: which run 128 times or more in a run.

retire.py finds a hot site through a label of it that still counts and shows the top
hit-count class.  But the labels that hold each time their site runs are covered by the
first inputs and retire soon after (hit by more inputs than a common edge, or after their
turn), mostly before any input runs the site that often: libpng's seeds are 32-row images,
the labels of its per-row and per-pixel code retired on them, and the campaign never saw
those sites hot, whose uncovered labels were then most of what its lean builds still ran.
So before each lean rebuild the queue entries not yet counted run once on the full build, in
a forkserver of its own started without the retirement segment, where every label counts: a
site with a label in the top class in some entry's run is hot (Retirement.note_census), and
the rebuild compiles it out.  Each entry costs one run at the full build's speed, once a
campaign run (the count starts again with the run on a new lean build).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ffcc.fuzzer.engine.executor import NativeExecutor
from ffcc.fuzzer.engine.queue import Queue
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.status import Status

CHUNK = 256  # entries per native call: bounds the traces held at once (CHUNK x map size)


class Census:
    """The site census of one campaign run: how many queue entries it has counted."""

    def __init__(self, start: Callable[[], NativeExecutor]) -> None:
        self._start = start  # a forkserver of the full build, without the retirement segment
        self.counted = 0     # queue entries run so far, in queue order
        self.failed = False  # the full build would not run: no census from then on

    def take(self, queue: Queue, retirement: Retirement, status: Status) -> None:
        """Run the queue entries not counted yet on the full build and mark the sites hot
        whose labels reached the top class; a line saying what it found."""
        fresh = [queue[index].data for index in range(self.counted, len(queue))]
        if self.failed or not fresh:
            return
        began = time.monotonic()
        try:
            classes = self._classes(fresh)
        except FuzzerError as exc:
            self.failed = True
            status.message(f"site census not taken: {exc}; lean builds keep the sites "
                           "found hot as they ran")
            return
        self.counted += len(fresh)
        hot = retirement.note_census(classes)
        status.message(f"site census: {len(fresh)} queue entries run on the full build in "
                       f"{time.monotonic() - began:.1f} s, {hot} more sites hot")

    def _classes(self, entries: list[bytes]) -> np.ndarray:
        """The hit-count classes each map index of the full build showed in the entries'
        runs, a bit each."""
        executor = self._start()
        try:
            seen = np.zeros(executor.map_size, dtype=np.uint8)
            for at in range(0, len(entries), CHUNK):
                _, traces = executor.run_inputs(entries[at:at + CHUNK])
                seen |= np.bitwise_or.reduce(traces, axis=0)
            return seen
        finally:
            executor.close()
