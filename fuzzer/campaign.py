"""The fuzzing loop: pick an entry -> run its stages -> record what they find -> stats.

The scheduler decides what to fuzz (it owns the walk over the queue), the
stages how, the executor runs the target; the campaign owns the queue, the
output directory and the clock.  Everything found is written (atomically)
before the stage makes its next child, so a SIGKILL loses at most the
executions in flight.
"""
from __future__ import annotations

import random
import shlex
import signal
import time
from pathlib import Path

import numpy as np

from ffcc.fuzzer import stages
from ffcc.fuzzer.config import Config
from ffcc.fuzzer.energy import SPLICE_CYCLES, havoc_budget, performance_score, splice_budget
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.executor import Executor, Finding, FindingKind, RunStatus
from ffcc.fuzzer.labels import LabelMap, edge_region_end
from ffcc.fuzzer.mask import empty_mask
from ffcc.fuzzer.outdir import CRASH_README, OutputDir
from ffcc.fuzzer.queue import Queue, QueueEntry
from ffcc.fuzzer.scheduler import Scheduler, Selection, queue_hits
from ffcc.fuzzer.seeds import auto_timeout_ms
from ffcc.fuzzer.shadow import LOG_NAME, ShadowRow, append_row
from ffcc.fuzzer.stats import Progress, Snapshot, append_plot, snapshot, write_fuzzer_stats
from ffcc.fuzzer.status import Status
from ffcc.runtime.files import write_atomic

SEED_CALIBRATION_RUNS = 4
FIND_CALIBRATION_RUNS = 3
STATS_INTERVAL = 5.0
STATUS_INTERVAL = 0.25
SMALL_BLOCKS_SECONDS = 600


class Campaign:
    """One ffuzz run over one output directory, from seeds or resumed."""

    def __init__(self, config: Config, executor: Executor, outdir: OutputDir,
                 scheduler: Scheduler, status: Status, labels: LabelMap | None = None,
                 rng: random.Random | None = None) -> None:
        self.config = config
        self.executor = executor
        self.outdir = outdir
        self.scheduler = scheduler
        self.status = status
        self.labels = labels
        self.rng = rng or random.Random(config.seed)
        self.queue = Queue(executor.map_size)
        self.progress = Progress()
        self.stop_requested = False
        self._next_status = 0.0
        self._next_stats = 0.0
        self._edge_end = edge_region_end(labels, executor.map_size)
        self._readme = CRASH_README.format(command=shlex.join(config.argv),
                                           memory=f"{config.mem_limit_mb} MB"
                                           if config.mem_limit_mb else "none")

    # -- the loop ----------------------------------------------------------

    def run(self, seeds: list[tuple[Path, bytes]] | None) -> None:
        """Fuzz from these seeds, or (None) resume the output directory."""
        previous = {sig: signal.signal(sig, self._request_stop)
                    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            if seeds is None:
                self.resume()
            else:
                self.load_seeds(seeds)
            self.status.message(f"random seed {self.config.seed} (--seed to repeat), "
                                f"schedule {self.scheduler.name}, map {self.executor.map_size} "
                                f"bytes, timeout {self.executor.timeout_ms} ms")
            self.write_stats()
            while not self.stopping():
                selection = self.scheduler.next(self.queue, self.queue_hits(), self.rng)
                if selection is not None:
                    self.fuzz_one(selection)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.write_stats()

    def _request_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    @property
    def block_level(self) -> int:
        """Havoc inserts, overwrites and deletes blocks of at most 32 bytes for the first
        ten minutes (as AFL++ 4 does) and while cycles find entries; each cycle in a row
        without a new entry allows larger ones.  Small blocks keep children small and fast;
        larger ones are for when small changes have stopped finding anything."""
        if time.time() - self.progress.started < SMALL_BLOCKS_SECONDS:
            return 1
        return 1 + self.scheduler.cursor.stalled_cycles

    def fuzz_one(self, selection: Selection) -> None:
        """AFL's fuzz_one with FairFuzz's target and mask: trim, mask, deterministic stages
        (-D), havoc, splicing; in shadow mode (-s) each stage first runs once without mask."""
        entry, target, cfg = selection.entry, selection.target, self.config
        self.progress.current = selection
        if not entry.trimmed:
            self.trim(entry, target if cfg.target_trim else None)
        mask = None
        if selection.use_mask and target is not None:
            mask = self.target_mask(entry, target)
            if mask is None:
                return
            if not mask.any():  # every probe lost the target: nothing to mutate towards it
                self.scheduler.on_frozen_target(target)
                return
        score = performance_score(entry, self.queue)
        run_det = cfg.deterministic and selection.deterministic_allowed and not entry.passed_det
        tokens = self.executor.token_counts()[0]
        budget = havoc_budget(score, run_det)
        row = None
        if cfg.shadow and target is not None:
            row = self.shadow_runs(entry, target, tokens, budget, run_det)
        if run_det and not self.stopping():
            det = stages.deterministic(entry.data, mask, target, tokens, self.block_level)
            entry.passed_det = self.run_stage(det, entry)
            if row is not None:
                row.det_mask_execs, row.det_mask_hits = det.execs, det.target_hits
        if not self.stopping():
            masked = stages.havoc(entry.data, mask, target, budget, self.block_level)
            self.run_stage(masked, entry)
            if row is not None:
                row.havoc_mask_execs, row.havoc_mask_hits = masked.execs, masked.target_hits
        for _ in range(SPLICE_CYCLES if self.scheduler.cursor.splicing else 0):
            partner = stages.pick_splice_partner(self.queue, entry, self.rng)
            if partner is None or self.stopping():
                break
            self.run_stage(stages.splice(entry.data, partner.data, mask, target,
                                         splice_budget(score), self.block_level),
                           entry, partner)
        if self.stopping():
            return
        entry.was_fuzzed = True
        if row is not None:
            append_row(self.outdir.root / LOG_NAME, row)

    def shadow_runs(self, entry: QueueEntry, target: int, tokens: int, budget: int,
                    run_det: bool) -> ShadowRow:
        """FairFuzz -s: the stages once without mask and without side effects; the row
        gets their executions and target hits (fuzz_one adds the masked runs')."""
        row = ShadowRow(entry.id, target)
        if run_det:
            plain_det = stages.deterministic(entry.data, None, target, tokens, self.block_level,
                                             shadow=True)
            self.run_stage(plain_det, entry)
            row.det_plain_execs, row.det_plain_hits = plain_det.execs, plain_det.target_hits
        plain = stages.havoc(entry.data, None, target, budget, self.block_level, shadow=True)
        self.run_stage(plain, entry)
        row.havoc_plain_execs, row.havoc_plain_hits = plain.execs, plain.target_hits
        return row

    def target_mask(self, entry: QueueEntry, target: int) -> np.ndarray | None:
        """The entry's FairFuzz mask for target, probed once per (entry, target); None if
        the campaign stopped before the probes were done."""
        if entry.mask is None or entry.mask_target != target:
            mask = empty_mask(len(entry.data))
            if not self.run_stage(stages.mask_probes(entry.data, mask, target, self.block_level),
                                  entry):
                return None
            entry.mask, entry.mask_target = mask, target
        return entry.mask

    def run_stage(self, stage: stages.Stage, parent: QueueEntry,
                  partner: QueueEntry | None = None) -> bool:
        """Run a stage, saving each finding as it comes; False if the campaign stopped it."""
        for op, finding in stages.run(self.executor, stage):
            self.progress.stage = op
            if finding is not None:
                self.record(finding, op, parent, partner)
            if self.stopping():
                return False
        return True

    def trim(self, entry: QueueEntry, target: int | None) -> None:
        """AFL's trim (same trace), or FairFuzz -r (target still hit)."""
        self.progress.stage = "trim" if target is None else "trim-target"
        entry.trimmed = True
        data, _ = self.executor.trim(entry.data, target, entry.checksum)
        if len(data) == len(entry.data):
            return
        cal = self.executor.calibrate(data, FIND_CALIBRATION_RUNS, count_hits=False)
        if cal.status != RunStatus.OK:
            return
        entry.data = data
        entry.mask = entry.mask_target = None
        entry.exec_us, entry.bitmap_size, entry.checksum = cal.exec_us, cal.bitmap_size, cal.checksum
        entry.edges = cal.edges
        write_atomic(entry.path, data)
        self.queue.update_rating(entry)

    def stopping(self) -> bool:
        """Whether to stop (signal, -V, -E, AFL_BENCH_UNTIL_CRASH); also refreshes the status
        and the stats files when they are due."""
        self.tick()
        cfg = self.config
        if self.stop_requested or (cfg.stop_on_crash and self.progress.saved_crashes):
            return True
        if cfg.max_seconds is not None and time.time() - self.progress.started >= cfg.max_seconds:
            return True
        return cfg.max_execs is not None and self.executor.counters().execs >= cfg.max_execs

    # -- findings ----------------------------------------------------------

    def record(self, finding: Finding, op: str, parent: QueueEntry,
               partner: QueueEntry | None = None) -> None:
        """Save a finding under AFL's name for it: queue entry, crash or hang."""
        progress = self.progress
        src = f"src:{parent.id:06d}" + (f"+{partner.id:06d}" if partner else "")
        desc = f"{src},time:{progress.elapsed_ms()},execs:{self.total_execs()},op:{op}"
        if finding.position is not None:
            desc += f",pos:{finding.position}"
        now = int(time.time())
        if finding.kind == FindingKind.CRASH:
            self.outdir.save_crash(progress.saved_crashes, finding.signal, desc, finding.data,
                                   self._readme)
            progress.saved_crashes += 1
            progress.last_crash = now
        elif finding.kind == FindingKind.HANG:
            self.outdir.save_hang(progress.saved_hangs, desc, finding.data)
            progress.saved_hangs += 1
            progress.last_hang = now
        else:
            self.add_find(finding, desc + (",+cov" if finding.new_edges else ""), parent)
            progress.last_find = now

    def add_find(self, finding: Finding, desc: str, parent: QueueEntry) -> None:
        entry_id = self.queue.next_id
        path = self.outdir.save_queue_entry(entry_id, desc, finding.data)
        cal = self.executor.calibrate(finding.data, FIND_CALIBRATION_RUNS, count_hits=False)
        ok = cal.status == RunStatus.OK
        self.queue.add(QueueEntry(
            entry_id, path, finding.data, cal.edges if ok else finding.edges,
            cal.exec_us if ok else self.executor.timeout_ms * 1000, cal.bitmap_size,
            cal.checksum, depth=parent.depth + 1, parent=parent.id, variable=cal.variable,
            handicap=max(self.scheduler.cursor.cycle - 1, 0)))
        self.scheduler.on_new_entry(finding.new_edges)

    # -- corpus loading ----------------------------------------------------

    def load_seeds(self, seeds: list[tuple[Path, bytes]]) -> None:
        self.progress.stage = "calibration"
        results = [(path, data, self.executor.calibrate(data, SEED_CALIBRATION_RUNS, True))
                   for path, data in seeds]
        good = [(p, d, c) for p, d, c in results if c.status == RunStatus.OK]
        if not good:
            crashing = sum(c.status == RunStatus.CRASH for _, _, c in results)
            raise FuzzerError(f"all {len(seeds)} seeds crash or time out ({crashing} crash, "
                              f"{len(seeds) - crashing} time out after {self.executor.timeout_ms} ms)")
        for path, _, cal in results:
            if cal.status != RunStatus.OK:
                why = "crashes" if cal.status == RunStatus.CRASH else "times out"
                self.status.message(f"seed {path.name} {why}; skipped")
        if self.config.timeout_ms is None:
            self.executor.timeout_ms = auto_timeout_ms([c.exec_us for _, _, c in good])
        for path, data, cal in good:
            entry_id = self.queue.next_id
            name = path.name.replace(",", "_")
            saved = self.outdir.save_queue_entry(entry_id, f"time:0,execs:0,orig:{name}", data)
            self.queue.add(QueueEntry(entry_id, saved, data, cal.edges, cal.exec_us,
                                      cal.bitmap_size, cal.checksum, variable=cal.variable))

    def resume(self) -> None:
        """Reload every saved queue entry, crash and hang; carry the counters on."""
        earlier = self.outdir.resume()
        self.progress.carry_on(earlier)
        timeout = earlier.stats.get("exec_timeout")
        if self.config.timeout_ms is None and timeout:
            self.executor.timeout_ms = int(timeout)
        self.progress.stage = "resume"
        for entry_id, path in enumerate(earlier.queue):
            data = path.read_bytes()
            cal = self.executor.calibrate(data, SEED_CALIBRATION_RUNS, True)
            self.queue.add(QueueEntry(entry_id, path, data, cal.edges,
                                      cal.exec_us or self.executor.timeout_ms * 1000,
                                      cal.bitmap_size, cal.checksum, variable=cal.variable))
        for case in earlier.crashes + earlier.hangs:
            self.executor.note_fault(case.path.read_bytes())

    # -- numbers -----------------------------------------------------------

    def queue_hits(self) -> np.ndarray:
        return queue_hits(self.executor.virgin(), self.executor.branch_hits())

    def total_execs(self) -> int:
        return self.progress.earlier_execs + self.executor.counters().execs

    def snapshot(self) -> Snapshot:
        return snapshot(self.progress, self.executor, self.queue, self.scheduler, self.labels,
                        self._edge_end, self.config)

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_status:
            self._next_status = now + STATUS_INTERVAL
            self.status.update(self.snapshot())
        if now >= self._next_stats:
            self.write_stats()

    def write_stats(self) -> None:
        self._next_stats = time.monotonic() + STATS_INTERVAL
        snap = self.snapshot()
        write_fuzzer_stats(self.outdir.fuzzer_stats, snap)
        append_plot(self.outdir.plot_data, snap)
