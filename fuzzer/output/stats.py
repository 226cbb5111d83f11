"""A campaign's numbers at one instant, and the files that show them: fuzzer_stats,
plot_data, fuzzer_setup and cmdline, in AFL++ 4.x formats.  The engine builds the Snapshot
(engine/progress.py); this module only writes it.

Key names and order follow AFL++ 4.04c (tools such as afl-whatsup and
afl-plot parse them); ffuzz adds a few keys of its own at the end.
"""
from __future__ import annotations

import os
import resource
import shlex
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Protocol

from ffcc.fuzzer.output.outdir import CMDLINE, FUZZER_SETUP, append_line
from ffcc.runtime.files import write_atomic

PLOT_HEADER = ("# relative_time, cycles_done, cur_item, corpus_count, pending_total, "
               "pending_favs, map_size, saved_crashes, saved_hangs, max_depth, "
               "execs_per_sec, total_execs, edges_found\n")
VERSION = f"ffuzz-{version('ffcc')}"  # fuzzer_stats' afl_version


class Site(Protocol):
    """A label as the status line names it (the engine's LabelSite is one)."""

    @property
    def label(self) -> int: ...

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int | None: ...

    @property
    def operator(self) -> str: ...


class CmplogCounts(Protocol):
    """What the input-to-state stage (-c) did (the engine's CmplogStats is one)."""

    @property
    def entries(self) -> int: ...

    @property
    def execs(self) -> int: ...

    @property
    def finds(self) -> int: ...

    @property
    def tokens(self) -> int: ...


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
    target_site: Site | None  # the target's label, when it is one
    targets_selected: int    # FairFuzz selections with a target, all sessions
    targets_labels: int      # those whose target was a label
    targets_distinct: int    # branches some selection aimed at, each once
    targets_distinct_labels: int  # those that are labels
    rarity_cutoff: int       # FairFuzz's cutoff over every branch (labels also have theirs)
    labels_found: int
    labels_total: int
    labels_given_up: int     # labels retired uncovered (at hot sites, or by --retire stall)
    tokens: int
    auto_tokens: int
    banner: str
    command_line: str
    stage_done: int = 0      # executions of the running stage so far
    stage_of: int = 0        # what it will make; 0 when unknown
    yields: tuple[tuple[str, int, int], ...] = ()  # (op, finds, execs) this session
    cmplog: CmplogCounts | None = None  # -c: what the input-to-state stage did, this session

    @property
    def bitmap_cvg(self) -> float:
        return 100.0 * self.edges_found / self.total_edges if self.total_edges else 0.0


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
        ("targets_labels", s.targets_labels), ("targets_distinct", s.targets_distinct),
        ("targets_distinct_labels", s.targets_distinct_labels),
        ("labels_given_up", s.labels_given_up),
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
    write_atomic(root / FUZZER_SETUP, setup.encode())
    write_atomic(root / CMDLINE, "".join(f"{a}\n" for a in target_argv).encode())
