"""A census of label sites before a lean rebuild: which run 32 times or more in a run.

retire.py finds a hot site through a label of it that still counts and shows one of the two
top hit-count classes.  But the labels that hold each time their site runs are covered by the
first inputs and retire soon after (hit by more inputs than a common edge, or after their
turn), mostly before any input runs the site that often: libpng's seeds are 32-row images,
the labels of its per-row and per-pixel code retired on them, and the campaign never saw
those sites hot, whose uncovered labels were then most of what its lean builds still ran.
So before each lean rebuild the queue entries not yet counted run once on the full build, in
a forkserver of its own started without the retirement segment, where every label counts: a
site with a label in either top class in some entry's run is hot (Retirement.note_census), and
the rebuild compiles it out.  Each entry costs one run at the full build's speed, once a
campaign run (the count starts again with the run on a new lean build), and a census runs
for at most SECONDS, so that a slow target's long queue holds the campaign up for no longer:
what is left waits for the next rebuild.
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

CHUNK = 32       # entries per native call, between two looks at the clock
SECONDS = 2.0    # a census starts no chunk after this long (the rest waits for the next one)


class Census:
    """The site census of one campaign run: which queue entries it has counted."""

    def __init__(self, start: Callable[[], NativeExecutor], seconds: float = SECONDS) -> None:
        self._start = start      # a forkserver of the full build, without the retirement segment
        self._seconds = seconds  # a slow target's long queue is counted over several censuses
        self.counted: set[int] = set()  # positions in the queue of the entries run so far
        self.failed = False      # the full build would not run: no census from then on

    def take(self, queue: Queue, retirement: Retirement, status: Status) -> None:
        """Run the queue entries not counted yet on the full build, the newest first (the
        seeds and first entries are what the sites' own labels showed their counts on), for
        at most SECONDS, and mark the sites hot whose labels reached a top class; a line
        saying what it found."""
        fresh = [index for index in range(len(queue) - 1, -1, -1) if index not in self.counted]
        if self.failed or not fresh:
            return
        began = time.monotonic()
        try:
            classes, ran = self._classes(queue, fresh)
        except FuzzerError as exc:
            self.failed = True
            status.message(f"site census not taken: {exc}; lean builds keep the sites "
                           "found hot as they ran")
            return
        self.counted.update(ran)
        hot = retirement.note_census(classes)
        left = f" ({len(fresh) - len(ran)} left for the next)" if len(ran) < len(fresh) else ""
        status.message(f"site census: {len(ran)} queue entries run on the full build in "
                       f"{time.monotonic() - began:.1f} s{left}, {hot} more sites hot")

    def _classes(self, queue: Queue, order: list[int]) -> tuple[np.ndarray, list[int]]:
        """The hit-count classes each map index of the full build showed in the runs of the
        entries at ``order``'s positions, a bit each, and the positions run (a prefix of
        ``order``, as many as SECONDS allowed)."""
        executor = self._start()
        began = time.monotonic()
        try:
            seen = np.zeros(executor.map_size, dtype=np.uint8)
            ran: list[int] = []
            for at in range(0, len(order), CHUNK):
                if ran and time.monotonic() - began >= self._seconds:
                    break
                part = order[at:at + CHUNK]
                _, traces = executor.run_inputs([queue[index].data for index in part])
                seen |= np.bitwise_or.reduce(traces, axis=0)
                ran += part
            return seen, ran
        finally:
            executor.close()
