"""What a campaign saves as it goes: the state file, queue/.state, fuzzer_stats and a
plot_data row, every STATS_INTERVAL and at exit, so that a SIGKILL loses at most an
interval's counts and a resumed campaign (-i -) goes on where it was (output/state.py).
"""
from __future__ import annotations

import time

from ffcc.fuzzer.engine.cmplog import CmplogStats
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.executor import Executor
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.labels import edge_region_end
from ffcc.fuzzer.engine.phases import PhaseSwitch
from ffcc.fuzzer.engine.progress import Progress, snapshot
from ffcc.fuzzer.engine.queue import Queue
from ffcc.fuzzer.engine.scheduler import Scheduler
from ffcc.fuzzer.output import state as saved_state
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.state import CampaignState
from ffcc.fuzzer.output.stats import Snapshot, append_plot, write_fuzzer_stats

STATS_INTERVAL = 5.0
CHECKPOINT_SHARE = 50  # a checkpoint may take 1/50 of the time between two


class Checkpoints:
    """The campaign's numbers (snapshot) and its saves, with when the next one is due."""

    def __init__(self, config: Config, executor: Executor, outdir: OutputDir, queue: Queue,
                 scheduler: Scheduler, progress: Progress, labels: Labelling,
                 phases: PhaseSwitch, cmplog: CmplogStats | None) -> None:
        self.config = config
        self.executor = executor
        self.outdir = outdir
        self.queue = queue
        self.scheduler = scheduler
        self.progress = progress
        self.labels = labels
        self.phases = phases
        self.cmplog = cmplog  # -c: the input-to-state stage's counts
        self._edge_end = edge_region_end(labels.map, executor.map_size)
        self._next = 0.0

    def snapshot(self) -> Snapshot:
        """The campaign's numbers now, as the status screen and fuzzer_stats show them."""
        return snapshot(self.progress, self.executor, self.queue, self.scheduler,
                        self.labels.map, self._edge_end, self.config, self.cmplog,
                        self.labels.retirement)

    def due(self, now: float) -> bool:
        """Whether the next checkpoint is due at ``now`` (time.monotonic())."""
        return now >= self._next

    def save(self) -> None:
        """The state file, queue/.state, fuzzer_stats and a plot_data row, as of now.  The
        state goes first: a campaign resumed after a kill between the writes starts from
        numbers no smaller than the last plot row's.  Checkpoints come every STATS_INTERVAL,
        or less often when a huge queue makes them cost more than 1/CHECKPOINT_SHARE."""
        started = time.monotonic()
        self.queue.cull()
        snap = self.snapshot()
        saved_state.save(self.outdir.state_file, self._state(), self.queue.entries)
        self.outdir.mark("deterministic_done", {e.path.name for e in self.queue if e.passed_det})
        self.outdir.mark("redundant_edges", {e.path.name for e in self.queue if not e.favoured})
        self.outdir.mark("variable_behavior", {e.path.name for e in self.queue if e.variable})
        write_fuzzer_stats(self.outdir.fuzzer_stats, snap)
        append_plot(self.outdir.plot_data, snap)
        now = time.monotonic()
        self._next = now + max(STATS_INTERVAL, (now - started) * CHECKPOINT_SHARE)

    def _state(self) -> CampaignState:
        executor = self.executor
        return CampaignState(self.progress.totals(executor.counters(), executor.timeout_ms),
                             self.scheduler.state(), map_size=executor.map_size,
                             branch_hits=executor.branch_hits(),
                             var_bytes=executor.variable_bytes(), phase=self.phases.number)
