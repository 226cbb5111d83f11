"""What only the campaign knows of the numbers it reports (Progress), and the Snapshot of all
of them that the status screen and the stats files show (output/stats.py), built from the
engine's objects at one instant.
"""
from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.cmplog import CmplogStats
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.energy import havoc_block_level
from ffcc.fuzzer.engine.executor import Counters, Executor
from ffcc.fuzzer.engine.labels import LabelMap, LabelSite
from ffcc.fuzzer.engine.phases import PhaseProgress
from ffcc.fuzzer.engine.queue import Queue
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.engine.scheduler import Scheduler, Selection, queue_hits, rarity_cutoff
from ffcc.fuzzer.output.state import Totals
from ffcc.fuzzer.output.stats import Snapshot


@dataclass
class MinuteRate:
    """execs_ps_last_min: executions per second over the last whole minute, renewed once
    a minute as AFL++ does; over the session so far until a minute has passed."""

    mark_time: float        # where the current minute began, unix seconds
    mark_execs: int = 0     # this session's executions then
    rate: float | None = None

    def per_second(self, now: float, execs: int) -> float:
        if now - self.mark_time >= 60:
            self.rate = (execs - self.mark_execs) / (now - self.mark_time)
            self.mark_time, self.mark_execs = now, execs
        if self.rate is not None:
            return self.rate
        return execs / max(now - self.mark_time, 1e-6)


@dataclass
class StageYield:
    """What one op found (queue entries and crashes saved) and what it ran, this session."""

    finds: int = 0
    execs: int = 0


@dataclass
class Progress:
    """What only the campaign knows of the numbers it reports: what it is doing, what it
    saved and when, and (resumed) what earlier sessions did."""

    started: float = field(default_factory=time.time)  # this session's start, unix seconds
    stage: str = "init"                  # the op running, or calibration, trim, resume
    stage_done: int = 0                  # executions of the op's running request so far
    stage_of: int = 0                    # what it will make; 0 when the C core decides
    current: Selection | None = None     # the entry being fuzzed
    current_site: LabelSite | None = None  # its target's label, when it is one
    targets_selected: int = 0            # this session's selections with a target
    targets_labels: int = 0              # those whose target was a label
    imported: int = 0                    # this session's entries taken from peers
    earlier: Totals = field(default_factory=Totals)  # earlier sessions' totals
    saved_crashes: int = 0               # = the next crash id
    saved_hangs: int = 0
    last_find: int = 0                   # unix seconds; 0: none yet
    last_crash: int = 0
    last_hang: int = 0
    last_crash_execs: int = 0            # total executions when the last crash was saved
    yields: dict[str, StageYield] = field(default_factory=dict)  # by op, this session
    minute: MinuteRate = field(init=False)

    def __post_init__(self) -> None:
        self.minute = MinuteRate(self.started)

    def carry_on(self, earlier: Totals, next_crash_id: int, next_hang_id: int) -> None:
        """Continue the numbers of the campaign this one resumes."""
        self.earlier = earlier
        self.saved_crashes, self.saved_hangs = next_crash_id, next_hang_id
        self.last_find, self.last_crash = earlier.last_find, earlier.last_crash
        self.last_hang, self.last_crash_execs = earlier.last_hang, earlier.last_crash_execs

    def step(self, op: str, done: int, of: int) -> None:
        """The campaign runs ``op``, ``done`` of its ``of`` executions made (of 0: unknown)."""
        self.stage, self.stage_done, self.stage_of = op, done, of

    def count(self, op: str, finds: int = 0, execs: int = 0) -> None:
        """Add to what ``op`` found and ran."""
        found = self.yields.setdefault(op, StageYield())
        found.finds += finds
        found.execs += execs

    def select(self, selection: Selection, site: LabelSite | None) -> None:
        """The campaign fuzzes `selection` now; site: its target's label, if it is one."""
        self.current, self.current_site = selection, site
        if selection.target is not None:
            self.targets_selected += 1
            self.targets_labels += site is not None

    def totals(self, counters: Counters, exec_timeout: int) -> Totals:
        """The totals of every session so far, for the next one to carry on."""
        earlier = self.earlier
        return Totals(run_time=earlier.run_time + int(time.time() - self.started),
                      execs=self.total_execs(counters),
                      crashes=earlier.crashes + counters.crashes,
                      hangs=earlier.hangs + counters.hangs,
                      last_find=self.last_find, last_crash=self.last_crash,
                      last_hang=self.last_hang, last_crash_execs=self.last_crash_execs,
                      exec_timeout=exec_timeout,
                      targets_selected=earlier.targets_selected + self.targets_selected,
                      targets_labels=earlier.targets_labels + self.targets_labels,
                      imported=earlier.imported + self.imported)

    def phase_progress(self, stalled_cycles: int, execs: int) -> PhaseProgress:
        """What a two-phase campaign's switch is judged on (phases.py), as of now."""
        now = time.time()
        return PhaseProgress(stalled_cycles, now - self.started,
                             now - max(self.last_find, self.started), execs)

    def total_execs(self, counters: Counters) -> int:
        """Executions of every session so far, as queue file names give them (execs:...)."""
        return self.earlier.execs + counters.execs

    def elapsed_ms(self) -> int:
        """Fuzzing time of all sessions, as queue file names give it (time:...)."""
        return int((time.time() - self.started) * 1000) + self.earlier.run_time * 1000


def snapshot(progress: Progress, executor: Executor, queue: Queue, scheduler: Scheduler,
             labels: LabelMap | None, edge_end: int, config: Config,
             cmplog: CmplogStats | None = None, retirement: Retirement | None = None) -> Snapshot:
    """The campaign's numbers now; edge_end: where the label region starts in the map;
    cmplog: the input-to-state stage's counts (-c); retirement: the labels' (None: none
    retire)."""
    now = time.time()
    counters = executor.counters()
    session = max(now - progress.started, 1e-6)
    virgin = executor.virgin()
    edges = int(np.count_nonzero(virgin[:edge_end] != 0xFF))
    variable = int(np.count_nonzero(executor.variable_bytes()[:edge_end]))
    tokens, auto_tokens = executor.token_counts()
    selection = progress.current
    totals = progress.totals(counters, executor.timeout_ms)
    stalled = scheduler.cursor.stalled_cycles
    turns = scheduler.turns()
    aimed = np.flatnonzero(turns) if turns is not None else np.zeros(0, np.int64)
    return Snapshot(
        start_time=int(progress.started) - progress.earlier.run_time, now=int(now),
        run_time=totals.run_time, cycles_done=scheduler.cursor.cycle, cycles_wo_finds=stalled,
        cur_item=selection.entry.id if selection else 0,
        execs_done=totals.execs, execs_per_sec=counters.execs / session,
        execs_ps_last_min=progress.minute.per_second(now, counters.execs),
        corpus_count=len(queue), corpus_favored=queue.favoured_count,
        corpus_found=sum(e.parent is not None for e in queue),
        corpus_imported=totals.imported,
        corpus_variable=sum(e.variable for e in queue),
        max_depth=queue.max_depth, pending_total=queue.pending_total,
        pending_favs=queue.pending_favoured,
        stability=100.0 * (1 - variable / edges) if edges else 100.0,
        edges_found=edges, total_edges=edge_end, var_byte_count=variable,
        saved_crashes=progress.saved_crashes, saved_hangs=progress.saved_hangs,
        total_crashes=totals.crashes, total_hangs=totals.hangs,
        last_find=progress.last_find, last_crash=progress.last_crash,
        last_hang=progress.last_hang, execs_since_crash=totals.execs - progress.last_crash_execs,
        exec_timeout=executor.timeout_ms, slowest_exec_ms=counters.slowest_exec_ms,
        cpu_affinity=bound_cpu(),
        havoc_expansion=havoc_block_level(session, stalled) - 1,
        target_mode=" ".join(executor.modes()) or "default",
        schedule=str(scheduler.name), stage=progress.stage,
        stage_done=progress.stage_done, stage_of=progress.stage_of,
        yields=tuple((op, y.finds, y.execs) for op, y in progress.yields.items()),
        target=selection.target if selection else None, target_site=progress.current_site,
        targets_selected=totals.targets_selected, targets_labels=totals.targets_labels,
        targets_distinct=len(aimed), targets_distinct_labels=int(np.count_nonzero(
            np.isin(aimed, labels.map_indices(len(virgin))))) if labels else 0,
        rarity_cutoff=rarity_cutoff(queue_hits(virgin, executor.branch_hits())),
        labels_found=labels.covered(virgin, executor.virgin_crash()) if labels else 0,
        labels_total=labels.count if labels else 0,
        labels_given_up=retirement.retired_uncovered(virgin) if retirement else 0,
        tokens=tokens, auto_tokens=auto_tokens,
        banner=Path(config.target_argv[0]).name,
        command_line=shlex.join(config.argv),
        cmplog=replace(cmplog) if cmplog is not None else None)


def bound_cpu() -> int:
    """The CPU this process is bound to, -1 when it may run on several (cpu_affinity)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    return next(iter(allowed)) if len(allowed) == 1 else -1
