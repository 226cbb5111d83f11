"""A campaign's numbers at one instant, and the files that show them: fuzzer_stats,
plot_data, fuzzer_setup and cmdline, in AFL++ 4.x formats.

Key names and order follow AFL++ 4.04c (tools such as afl-whatsup and
afl-plot parse them); ffuzz adds a few keys of its own at the end.
"""
from __future__ import annotations

import os
import resource
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
from ffcc.fuzzer.engine.queue import Queue
from ffcc.fuzzer.engine.scheduler import Scheduler, Selection, queue_hits, rarity_cutoff
from ffcc.fuzzer.output.outdir import append_line
from ffcc.fuzzer.output.state import Totals
from ffcc.runtime.files import write_atomic

PLOT_HEADER = ("# relative_time, cycles_done, cur_item, corpus_count, pending_total, "
               "pending_favs, map_size, saved_crashes, saved_hangs, max_depth, "
               "execs_per_sec, total_execs, edges_found\n")
VERSION = "ffuzz-0.1.0"


@dataclass(frozen=True)
class Snapshot:
    """Everything the status screen and the stats files show, at one instant."""

    start_time: int          # unix seconds, shifted back by earlier sessions' run time
    now: int
    run_time: int            # seconds, all sessions
    cycles_done: int         # queue cycles completed
    cycles_wo_finds: int     # cycles in a row, up to the last completed, without a new entry
    cur_item: int
    execs_done: int
    execs_per_sec: float     # this session's
    execs_ps_last_min: float
    corpus_count: int
    corpus_favored: int
    corpus_found: int
    corpus_imported: int     # entries taken from peers in a sync directory
    corpus_variable: int
    max_depth: int
    pending_total: int
    pending_favs: int
    stability: float
    edges_found: int
    total_edges: int
    var_byte_count: int      # edge-map bytes seen varying between runs of one input
    saved_crashes: int
    saved_hangs: int
    total_crashes: int
    total_hangs: int
    last_find: int
    last_crash: int
    last_hang: int
    execs_since_crash: int   # executions since the last saved crash (all, if none)
    exec_timeout: int
    slowest_exec_ms: int
    cpu_affinity: int        # the CPU ffuzz and its target are bound to, -1 for none
    havoc_expansion: int     # 0: small havoc blocks; each more allows larger ones
    target_mode: str         # AFL++'s words (persistent, shmem_testcase, deferred) or
                             # default, and batch when the target runs batches
    schedule: str
    stage: str
    target: int | None
    target_site: LabelSite | None  # the target's label, when it is one
    targets_selected: int    # FairFuzz selections with a target, all sessions
    targets_labels: int      # those whose target was a label
    rarity_cutoff: int
    labels_found: int
    labels_total: int
    tokens: int
    auto_tokens: int
    banner: str
    command_line: str
    cmplog: CmplogStats | None = None  # -c: what the input-to-state stage did, this session

    @property
    def bitmap_cvg(self) -> float:
        return 100.0 * self.edges_found / self.total_edges if self.total_edges else 0.0


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
class Progress:
    """What only the campaign knows of the numbers it reports: what it is doing, what it
    saved and when, and (resumed) what earlier sessions did."""

    started: float = field(default_factory=time.time)  # this session's start, unix seconds
    stage: str = "init"                  # the op running, or calibration, trim, resume
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
    minute: MinuteRate = field(init=False)

    def __post_init__(self) -> None:
        self.minute = MinuteRate(self.started)

    def carry_on(self, earlier: Totals, next_crash_id: int, next_hang_id: int) -> None:
        """Continue the numbers of the campaign this one resumes."""
        self.earlier = earlier
        self.saved_crashes, self.saved_hangs = next_crash_id, next_hang_id
        self.last_find, self.last_crash = earlier.last_find, earlier.last_crash
        self.last_hang, self.last_crash_execs = earlier.last_hang, earlier.last_crash_execs

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
                      execs=earlier.execs + counters.execs,
                      crashes=earlier.crashes + counters.crashes,
                      hangs=earlier.hangs + counters.hangs,
                      last_find=self.last_find, last_crash=self.last_crash,
                      last_hang=self.last_hang, last_crash_execs=self.last_crash_execs,
                      exec_timeout=exec_timeout,
                      targets_selected=earlier.targets_selected + self.targets_selected,
                      targets_labels=earlier.targets_labels + self.targets_labels,
                      imported=earlier.imported + self.imported)

    def elapsed_ms(self) -> int:
        """Fuzzing time of all sessions, as queue file names give it (time:...)."""
        return int((time.time() - self.started) * 1000) + self.earlier.run_time * 1000


def snapshot(progress: Progress, executor: Executor, queue: Queue, scheduler: Scheduler,
             labels: LabelMap | None, edge_end: int, config: Config,
             cmplog: CmplogStats | None = None) -> Snapshot:
    """The campaign's numbers now; edge_end: where the label region starts in the map;
    cmplog: the input-to-state stage's counts (-c)."""
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
        schedule=scheduler.name, stage=progress.stage,
        target=selection.target if selection else None, target_site=progress.current_site,
        targets_selected=totals.targets_selected, targets_labels=totals.targets_labels,
        rarity_cutoff=rarity_cutoff(queue_hits(virgin, executor.branch_hits())),
        labels_found=labels.covered(virgin, executor.virgin_crash()) if labels else 0,
        labels_total=labels.count if labels else 0,
        tokens=tokens, auto_tokens=auto_tokens,
        banner=Path(config.target_argv[0]).name,
        command_line=shlex.join(config.argv),
        cmplog=replace(cmplog) if cmplog is not None else None)


def bound_cpu() -> int:
    """The CPU this process is bound to, -1 when it may run on several (cpu_affinity)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    return next(iter(allowed)) if len(allowed) == 1 else -1


def peak_rss_mb() -> int:
    kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return kib >> 10


def fuzzer_stats_text(s: Snapshot) -> str:
    rows = [
        ("start_time", s.start_time), ("last_update", s.now), ("run_time", s.run_time),
        ("fuzzer_pid", os.getpid()), ("cycles_done", s.cycles_done),
        ("cycles_wo_finds", s.cycles_wo_finds), ("execs_done", s.execs_done),
        ("execs_per_sec", f"{s.execs_per_sec:.2f}"),
        ("execs_ps_last_min", f"{s.execs_ps_last_min:.2f}"),
        ("corpus_count", s.corpus_count), ("corpus_favored", s.corpus_favored),
        ("corpus_found", s.corpus_found), ("corpus_imported", s.corpus_imported),
        ("corpus_variable", s.corpus_variable), ("max_depth", s.max_depth),
        ("cur_item", s.cur_item), ("pending_favs", s.pending_favs),
        ("pending_total", s.pending_total), ("stability", f"{s.stability:.2f}%"),
        ("bitmap_cvg", f"{s.bitmap_cvg:.2f}%"), ("saved_crashes", s.saved_crashes),
        ("saved_hangs", s.saved_hangs), ("last_find", s.last_find),
        ("last_crash", s.last_crash), ("last_hang", s.last_hang),
        ("execs_since_crash", s.execs_since_crash),
        ("exec_timeout", s.exec_timeout), ("slowest_exec_ms", s.slowest_exec_ms),
        ("peak_rss_mb", peak_rss_mb()), ("cpu_affinity", s.cpu_affinity),
        ("edges_found", s.edges_found), ("total_edges", s.total_edges),
        ("var_byte_count", s.var_byte_count), ("havoc_expansion", s.havoc_expansion),
        ("auto_dict_entries", s.auto_tokens), ("afl_banner", s.banner),
        ("afl_version", VERSION), ("target_mode", s.target_mode),
        ("command_line", s.command_line),
        ("schedule", s.schedule), ("labels_found", s.labels_found),
        ("labels_total", s.labels_total), ("targets_selected", s.targets_selected),
        ("targets_labels", s.targets_labels),
    ]
    if s.cmplog:
        rows += [("cmplog_entries", s.cmplog.entries), ("cmplog_execs", s.cmplog.execs),
                 ("cmplog_finds", s.cmplog.finds), ("cmplog_tokens", s.cmplog.tokens)]
    return "".join(f"{key:<18}: {value}\n" for key, value in rows)


def write_fuzzer_stats(path: Path, s: Snapshot) -> None:
    write_atomic(path, fuzzer_stats_text(s).encode())


def append_plot(path: Path, s: Snapshot) -> None:
    if not path.exists():
        append_line(path, PLOT_HEADER)
    append_line(path, f"{s.run_time}, {s.cycles_done}, {s.cur_item}, {s.corpus_count}, "
                      f"{s.pending_total}, {s.pending_favs}, {s.bitmap_cvg:.2f}%, "
                      f"{s.saved_crashes}, {s.saved_hangs}, {s.max_depth}, "
                      f"{s.execs_per_sec:.2f}, {s.execs_done}, {s.edges_found}\n")


def write_setup_files(root: Path, argv: list[str], target_argv: list[str],
                      variables: tuple[tuple[str, str], ...]) -> None:
    """fuzzer_setup (the AFL_* variables, as name and value in name order, and our command
    line) and cmdline."""
    env = "".join(f"{k}={v}\n" for k, v in variables)
    setup = f"# environment variables:\n{env}# command line:\n{shlex.join(argv)}\n"
    write_atomic(root / "fuzzer_setup", setup.encode())
    write_atomic(root / "cmdline", "".join(f"{a}\n" for a in target_argv).encode())
