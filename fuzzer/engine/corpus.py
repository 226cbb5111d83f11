"""The queue a campaign starts from: its seeds, calibrated, or (resumed, -i -) every entry,
crash and hang its output directory holds, with what the state file kept (output/state.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.calibration import calibrate
from ffcc.fuzzer.engine.executor import Calibration, Executor, RunStatus
from ffcc.fuzzer.engine.focus import edges_by_entry, renumbering
from ffcc.fuzzer.engine.progress import Progress
from ffcc.fuzzer.engine.queue import Queue, QueueEntry
from ffcc.fuzzer.engine.scheduler import Scheduler
from ffcc.fuzzer.engine.seeds import auto_timeout_ms
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output import state as saved_state
from ffcc.fuzzer.output.outdir import OutputDir, QueueFile, parent_id
from ffcc.fuzzer.output.state import CampaignState, EntryRecord
from ffcc.fuzzer.output.status import Status


class CorpusLoader:
    """Fills a campaign's empty queue, and sets what the loaded corpus decides: the timeout
    (unless -t gave one) and, resumed, the scheduler's walk, the hit counts and the
    counters that run on across sessions."""

    def __init__(self, executor: Executor, outdir: OutputDir, queue: Queue, scheduler: Scheduler,
                 status: Status, progress: Progress, timeout_ms: int | None) -> None:
        self.executor = executor
        self.outdir = outdir
        self.queue = queue
        self.scheduler = scheduler
        self.status = status
        self.progress = progress
        self.timeout_given = timeout_ms is not None  # -t: the seeds' speed does not set it

    def load(self, seeds: list[tuple[Path, bytes]] | None,
             before: Mapping[int, np.ndarray] | None = None) -> dict[int, int] | None:
        """The queue from these seeds, or (None) resumed from the output directory.
        ``before``: each entry's branches on the build the state was saved on, when this
        run goes on with another (a lean rebuild, phase 2), which numbers the branches
        otherwise, often in a map of the same size; the old map index -> new of the
        branches both builds share (focus.renumbering) is then returned."""
        if seeds is None:
            return self._resume(before)
        self._load_seeds(seeds)
        return None

    def _load_seeds(self, seeds: list[tuple[Path, bytes]]) -> None:
        """The seeds that run, as the first entries; a one-line error when none does."""
        self.progress.stage = "calibration"
        results = [(path, data, self._seed_calibration(data)) for path, data in seeds]
        good = [(p, d, c) for p, d, c in results if c.status == RunStatus.OK]
        if not good:
            crashing = sum(c.status == RunStatus.CRASH for _, _, c in results)
            raise FuzzerError(f"all {len(seeds)} seeds crash or time out ({crashing} crash, "
                              f"{len(seeds) - crashing} time out after {self.executor.timeout_ms} ms)")
        for path, _, cal in results:
            if cal.status != RunStatus.OK:
                why = "crashes" if cal.status == RunStatus.CRASH else "times out"
                self.status.message(f"seed {path.name} {why}; skipped")
        if not self.timeout_given:
            self.executor.timeout_ms = auto_timeout_ms([c.exec_us for _, _, c in good])
        for path, data, cal in good:
            entry_id = self.queue.next_id
            name = path.name.replace(",", "_")
            saved = self.outdir.save_queue_entry(entry_id, f"time:0,execs:0,orig:{name}", data)
            self.queue.add(QueueEntry(entry_id, saved, data, cal.edges, cal.exec_us,
                                      cal.bitmap_size, cal.checksum, variable=cal.variable))

    def _seed_calibration(self, data: bytes) -> Calibration:
        """A seed's calibration, run once more when it timed out: on a loaded machine one run
        can stall past the timeout, and a campaign whose seeds are all skipped does not start.
        A run that times out counts no branch hits, so the second run counts them once."""
        cal = calibrate(self.executor, data, count_hits=True)
        if cal.status == RunStatus.TIMEOUT:
            cal = calibrate(self.executor, data, count_hits=True)
        return cal

    def _resume(self, before: Mapping[int, np.ndarray] | None) -> dict[int, int] | None:
        """Reload every saved queue entry, crash and hang, and what the state file kept
        (without one, the counters of the last fuzzer_stats); what it kept by map index
        as it was if the map is the same.  On another build (``before``) the scheduler's
        state goes on renumbered, and FairFuzz's hit counts start again from the queue's
        calibrations, a branch counted once per entry hitting it: carried over renumbered,
        expat's harness made 4-8% fewer executions and aimed 9.0-9.7% of its selections
        at labels, against 11.0-11.2% (two paired 120 s campaigns)."""
        earlier = self.outdir.resume()
        state = saved_state.load(self.outdir.state_file) \
            or saved_state.from_fuzzer_stats(earlier.stats)
        self.progress.carry_on(state.totals, earlier.next_crash_id, earlier.next_hang_id)
        if not self.timeout_given and state.totals.exec_timeout:
            self.executor.timeout_ms = state.totals.exec_timeout
        hits_restored = before is None and self._restore_maps(state)
        self.progress.stage = "resume"
        for saved in earlier.queue:
            record = state.entries.get(saved.saved_as)
            self.queue.add(self._resumed_entry(saved, record, count_hits=record is None
                                               or not hits_restored))
        for case in earlier.crashes + earlier.hangs:
            self.executor.note_fault(case.path.read_bytes())
        if before is None:
            same_map = state.map_size in (0, self.executor.map_size)
            self.scheduler.restore(state.scheduler, None if same_map else {})
            return None
        moved = renumbering(before, edges_by_entry(self.queue))
        self.scheduler.restore(state.scheduler, moved)
        return moved

    def _restore_maps(self, state: CampaignState) -> bool:
        """Put the saved FairFuzz hit counts and variable bytes back; False when there are
        none for this map (the target's map size changed)."""
        if state.branch_hits is None:
            return False
        if state.map_size != self.executor.map_size:
            self.status.message(f"the map is now {self.executor.map_size} bytes, not "
                                f"{state.map_size}: branch hit counts start again")
            return False
        self.executor.branch_hits()[:] = state.branch_hits
        if state.var_bytes is not None:
            variable = self.executor.variable_bytes()
            variable[:] = np.maximum(variable, state.var_bytes)
        return True

    def _resumed_entry(self, saved: QueueFile, record: EntryRecord | None,
                       count_hits: bool) -> QueueEntry:
        """A queue file as an entry: calibrated again (its edges fill the virgin map), with
        the history and measurements its record kept; without one (saved after the last
        state, or no state file), a find of the parent its name gives."""
        data = saved.path.read_bytes()
        cal = calibrate(self.executor, data, count_hits, generous=True)
        entry = QueueEntry(self.queue.next_id, saved.path, data, cal.edges,
                           cal.exec_us or self.executor.timeout_ms * 1000, cal.bitmap_size,
                           cal.checksum, variable=cal.variable)
        if record is not None:
            record.apply(entry)
            entry.variable |= cal.variable
            return entry
        parent = parent_id(saved.saved_as)
        if parent is not None and parent < len(self.queue):
            entry.parent, entry.depth = parent, self.queue[parent].depth + 1
        entry.passed_det = self.outdir.has_mark("deterministic_done", saved.saved_as)
        return entry
