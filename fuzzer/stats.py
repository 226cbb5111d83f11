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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffcc.fuzzer.config import Config
from ffcc.fuzzer.executor import Executor
from ffcc.fuzzer.labels import LabelMap
from ffcc.fuzzer.outdir import Resumed, append_line
from ffcc.fuzzer.queue import Queue
from ffcc.fuzzer.scheduler import Scheduler, Selection, queue_hits, rarity_cutoff
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
    run_time: int
    cycles_done: int
    cur_item: int
    execs_done: int
    execs_per_sec: float
    corpus_count: int
    corpus_favored: int
    corpus_found: int
    corpus_variable: int
    max_depth: int
    pending_total: int
    pending_favs: int
    stability: float
    edges_found: int
    total_edges: int
    saved_crashes: int
    saved_hangs: int
    total_crashes: int
    total_hangs: int
    last_find: int
    last_crash: int
    last_hang: int
    exec_timeout: int
    slowest_exec_ms: int
    schedule: str
    stage: str
    target: int | None
    rarity_cutoff: int
    labels_found: int
    labels_total: int
    tokens: int
    auto_tokens: int
    banner: str
    command_line: str

    @property
    def bitmap_cvg(self) -> float:
        return 100.0 * self.edges_found / self.total_edges if self.total_edges else 0.0


@dataclass
class Progress:
    """What only the campaign knows of the numbers it reports: what it is doing, what it
    saved and when, and (resumed) what earlier sessions did."""

    started: float = field(default_factory=time.time)  # this session's start, unix seconds
    stage: str = "init"                  # the op running, or calibration, trim, resume
    current: Selection | None = None     # the entry being fuzzed
    earlier_run_time: int = 0            # seconds fuzzed by earlier sessions
    earlier_execs: int = 0
    earlier_cycles: int = 0
    saved_crashes: int = 0               # = the next crash id
    saved_hangs: int = 0
    last_find: int = 0                   # unix seconds; 0: none yet
    last_crash: int = 0
    last_hang: int = 0

    def carry_on(self, earlier: Resumed) -> None:
        """Continue the numbers of the campaign this one resumes."""
        self.earlier_run_time = earlier.number("run_time")
        self.earlier_execs = earlier.number("execs_done")
        self.earlier_cycles = earlier.number("cycles_done")
        self.saved_crashes, self.saved_hangs = earlier.next_crash_id, earlier.next_hang_id
        self.last_find = earlier.number("last_find")
        self.last_crash = earlier.number("last_crash")
        self.last_hang = earlier.number("last_hang")

    def elapsed_ms(self) -> int:
        """Fuzzing time of all sessions, as queue file names give it (time:...)."""
        return int((time.time() - self.started) * 1000) + self.earlier_run_time * 1000


def snapshot(progress: Progress, executor: Executor, queue: Queue, scheduler: Scheduler,
             labels: LabelMap | None, edge_end: int, config: Config) -> Snapshot:
    """The campaign's numbers now; edge_end: where the label region starts in the map."""
    now = time.time()
    counters = executor.counters()
    session = max(now - progress.started, 1e-6)
    virgin = executor.virgin()
    edges = int(np.count_nonzero(virgin[:edge_end] != 0xFF))
    variable = int(np.count_nonzero(executor.variable_bytes()[:edge_end]))
    tokens, auto_tokens = executor.token_counts()
    selection = progress.current
    return Snapshot(
        start_time=int(progress.started) - progress.earlier_run_time, now=int(now),
        run_time=progress.earlier_run_time + int(now - progress.started),
        cycles_done=progress.earlier_cycles + max(scheduler.cursor.cycle - 1, 0),
        cur_item=selection.entry.id if selection else 0,
        execs_done=progress.earlier_execs + counters.execs,
        execs_per_sec=counters.execs / session,
        corpus_count=len(queue), corpus_favored=queue.favoured_count,
        corpus_found=sum(e.parent is not None for e in queue),
        corpus_variable=sum(e.variable for e in queue),
        max_depth=queue.max_depth, pending_total=queue.pending_total,
        pending_favs=queue.pending_favoured,
        stability=100.0 * (1 - variable / edges) if edges else 100.0,
        edges_found=edges, total_edges=edge_end,
        saved_crashes=progress.saved_crashes, saved_hangs=progress.saved_hangs,
        total_crashes=counters.crashes, total_hangs=counters.hangs,
        last_find=progress.last_find, last_crash=progress.last_crash,
        last_hang=progress.last_hang,
        exec_timeout=executor.timeout_ms, slowest_exec_ms=counters.slowest_exec_ms,
        schedule=scheduler.name, stage=progress.stage,
        target=selection.target if selection else None,
        rarity_cutoff=rarity_cutoff(queue_hits(virgin, executor.branch_hits())),
        labels_found=labels.covered(virgin) if labels else 0,
        labels_total=labels.count if labels else 0,
        tokens=tokens, auto_tokens=auto_tokens,
        banner=Path(config.target_argv[0]).name,
        command_line=shlex.join(config.argv))


def peak_rss_mb() -> int:
    kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return kib >> 10


def fuzzer_stats_text(s: Snapshot) -> str:
    rows = [
        ("start_time", s.start_time), ("last_update", s.now), ("run_time", s.run_time),
        ("fuzzer_pid", os.getpid()), ("cycles_done", s.cycles_done),
        ("execs_done", s.execs_done), ("execs_per_sec", f"{s.execs_per_sec:.2f}"),
        ("corpus_count", s.corpus_count), ("corpus_favored", s.corpus_favored),
        ("corpus_found", s.corpus_found), ("corpus_imported", 0),
        ("corpus_variable", s.corpus_variable), ("max_depth", s.max_depth),
        ("cur_item", s.cur_item), ("pending_favs", s.pending_favs),
        ("pending_total", s.pending_total), ("stability", f"{s.stability:.2f}%"),
        ("bitmap_cvg", f"{s.bitmap_cvg:.2f}%"), ("saved_crashes", s.saved_crashes),
        ("saved_hangs", s.saved_hangs), ("last_find", s.last_find),
        ("last_crash", s.last_crash), ("last_hang", s.last_hang),
        ("exec_timeout", s.exec_timeout), ("slowest_exec_ms", s.slowest_exec_ms),
        ("peak_rss_mb", peak_rss_mb()), ("edges_found", s.edges_found),
        ("total_edges", s.total_edges), ("auto_dict_entries", s.auto_tokens),
        ("afl_banner", s.banner),
        ("afl_version", VERSION), ("target_mode", "default"),
        ("command_line", s.command_line),
        ("schedule", s.schedule), ("labels_found", s.labels_found),
        ("labels_total", s.labels_total),
    ]
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


def write_setup_files(root: Path, argv: list[str], target_argv: list[str]) -> None:
    """fuzzer_setup (AFL_* environment and our command line) and cmdline."""
    env = "".join(f"{k}={v}\n" for k, v in sorted(os.environ.items()) if k.startswith("AFL_"))
    setup = f"# environment variables:\n{env}# command line:\n{shlex.join(argv)}\n"
    write_atomic(root / "fuzzer_setup", setup.encode())
    write_atomic(root / "cmdline", "".join(f"{a}\n" for a in target_argv).encode())
