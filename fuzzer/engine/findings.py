"""What the campaign keeps: each find of its stages (a queue entry, a crash or a hang) and
each peer entry that is new here, saved under AFL's name for it as it comes.

A find and an import become queue entries the same way (_enqueue): saved first, so a
SIGKILL loses nothing found, then calibrated with the generous timeout.
"""
from __future__ import annotations

import shlex
import time

import numpy as np

from ffcc.fuzzer.engine.calibration import calibrate, confirm_hang
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.executor import Calibration, Executor, Finding, FindingKind, RunStatus
from ffcc.fuzzer.engine.peers import PeerEntry
from ffcc.fuzzer.engine.progress import Progress
from ffcc.fuzzer.engine.queue import Queue, QueueEntry
from ffcc.fuzzer.engine.scheduler import Scheduler
from ffcc.fuzzer.output.outdir import CRASH_README, OutputDir
from ffcc.runtime.abi import MAX_INPUT


class Findings:
    """Saves finds and imports into the output directory and the queue, and counts them."""

    def __init__(self, config: Config, executor: Executor, outdir: OutputDir, queue: Queue,
                 scheduler: Scheduler, progress: Progress) -> None:
        self.executor = executor
        self.outdir = outdir
        self.queue = queue
        self.scheduler = scheduler  # hears of each new entry, and gives its handicap
        self.progress = progress
        self.hang_timeout_ms = config.env.hang_timeout_ms
        self.readme = CRASH_README.format(command=shlex.join(config.argv),
                                          memory=f"{config.mem_limit_mb} MB"
                                          if config.mem_limit_mb else "none")

    def record(self, finding: Finding, op: str, parent: QueueEntry,
               partner: QueueEntry | None = None) -> None:
        """Save a finding of stage ``op`` on ``parent`` (spliced with ``partner``) under
        AFL's name for it: queue entry, crash or hang.  A suspected hang is run again with
        the hang timeout first: one that finishes is dropped, one that crashes is a crash."""
        progress = self.progress
        src = f"src:{parent.id:06d}" + (f"+{partner.id:06d}" if partner else "")
        execs = progress.total_execs(self.executor.counters())
        desc = f"{src},time:{progress.elapsed_ms()},execs:{execs},op:{op}"
        if finding.position is not None:
            desc += f",pos:{finding.position}"
        now = int(time.time())
        kind, signal_number = finding.kind, finding.signal
        if kind == FindingKind.HANG:
            status, signal_number = confirm_hang(self.executor, finding.data, self.hang_timeout_ms)
            if status == RunStatus.CRASH:
                kind = FindingKind.CRASH
            elif status != RunStatus.TIMEOUT:
                return  # slow, not hung: it finishes within the hang timeout
        if kind == FindingKind.CRASH:
            self.outdir.save_crash(progress.saved_crashes, signal_number, desc, finding.data,
                                   self.readme)
            progress.saved_crashes += 1
            progress.last_crash = now
            progress.last_crash_execs = progress.total_execs(self.executor.counters())
        elif kind == FindingKind.HANG:
            self.outdir.save_hang(progress.saved_hangs, desc, finding.data)
            progress.saved_hangs += 1
            progress.last_hang = now
        else:
            self._enqueue(finding.data, desc + (",+cov" if finding.new_edges else ""),
                          finding.new_edges, finding.edges, parent=parent)
            progress.last_find = now

    def import_entry(self, peer_entry: PeerEntry) -> None:
        """A peer's entry joins the queue if one run of it gives new coverage here (as
        afl-fuzz's sync does), and is calibrated only then; it is named after its peer and
        the id it had there."""
        try:
            data = peer_entry.path.read_bytes()
        except FileNotFoundError:  # the peer renumbered its queue on resume
            return
        if not 0 < len(data) <= MAX_INPUT:
            return
        probe = self.executor.calibrate(data, 1, True)
        if probe.status != RunStatus.OK or not probe.new_bits:
            return
        desc = f"sync:{peer_entry.peer},src:{peer_entry.source:06d}" \
            + (",+cov" if probe.new_bits == 2 else "")
        self._enqueue(data, desc, probe.new_bits == 2, probe.edges, probe=probe)
        self.progress.imported += 1

    def _enqueue(self, data: bytes, desc: str, new_branch: bool, edges: np.ndarray,
                 parent: QueueEntry | None = None, probe: Calibration | None = None) -> None:
        """A new queue entry, saved, then calibrated.  Where calibration fails it keeps the
        ``edges`` of the run that found it, and the run time of an import's ``probe`` (a
        find's: the timeout).  An import keeps its probe's checksum and map size, a find
        those of its calibration.  ``new_branch``: it covered a map byte never seen before."""
        entry_id = self.queue.next_id
        path = self.outdir.save_queue_entry(entry_id, desc, data)
        cal = calibrate(self.executor, data, count_hits=False, generous=True)
        ok = cal.status == RunStatus.OK
        measured = probe or cal
        failed_us = probe.exec_us if probe is not None else self.executor.timeout_ms * 1000
        self.queue.add(QueueEntry(
            entry_id, path, data, cal.edges if ok else edges, cal.exec_us if ok else failed_us,
            measured.bitmap_size, measured.checksum,
            depth=parent.depth + 1 if parent is not None else 1,
            parent=parent.id if parent is not None else None, variable=cal.variable,
            handicap=max(self.scheduler.cursor.cycle - 1, 0)))
        self.scheduler.on_new_entry(new_branch)
