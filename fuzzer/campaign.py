"""The fuzzing loop: pick an entry -> run its stages -> record what they found.

The campaign owns the queue, the output directory and the clock; the
scheduler decides what to fuzz, the stages how, the executor runs the target.
Everything found is written (atomically) before the loop moves on, so a
SIGKILL loses at most the execution in flight.
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
from ffcc.fuzzer.energy import (
    SPLICE_CYCLES,
    havoc_budget,
    performance_score,
    splice_budget,
)
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.executor import Executor, Finding, FindingKind, RunStatus
from ffcc.fuzzer.labels import LabelMap, edge_region_end
from ffcc.fuzzer.outdir import CRASH_README, OutputDir, write_atomic
from ffcc.fuzzer.queue import Queue, QueueEntry
from ffcc.fuzzer.scheduler import Scheduler, Selection, rarity_cutoff
from ffcc.fuzzer.shadow import LOG_NAME, ShadowRow, append_row
from ffcc.fuzzer.stats import Snapshot, append_plot, write_fuzzer_stats
from ffcc.fuzzer.status import Status

SEED_CALIBRATION_RUNS = 4
FIND_CALIBRATION_RUNS = 3
STATS_INTERVAL = 5.0
STATUS_INTERVAL = 0.25
MAX_INPUT = 1 << 20
TIMEOUT_ROUND_MS = 20
MAX_AUTO_TIMEOUT_MS = 1000
SMALL_BLOCKS_SECONDS = 600


def read_seeds(input_dir: Path) -> list[tuple[Path, bytes]]:
    """The seed files (recursively, no dot-files), or a one-line error."""
    if not input_dir.is_dir():
        raise FuzzerError(f"seed directory not found: {input_dir}")
    files = sorted(p for p in input_dir.rglob("*")
                   if p.is_file() and not any(part.startswith(".")
                                              for part in p.relative_to(input_dir).parts))
    seeds = [(p, p.read_bytes()) for p in files if 0 < p.stat().st_size <= MAX_INPUT]
    if not seeds:
        raise FuzzerError(f"no usable seeds in {input_dir} (need non-empty files up to 1 MB)")
    return seeds


def auto_timeout_ms(exec_us: list[int]) -> int:
    """AFL's rule: a few times the seeds' mean run time, rounded up, at most 1 s."""
    avg = sum(exec_us) / len(exec_us)
    factor = 2 if avg > 50_000 else 3 if avg > 10_000 else 5
    ms = max(avg * factor / 1000, max(exec_us) / 1000)
    ms = (int(ms) + TIMEOUT_ROUND_MS) // TIMEOUT_ROUND_MS * TIMEOUT_ROUND_MS
    return min(ms, MAX_AUTO_TIMEOUT_MS)


class Campaign:
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
        self.cycle = 0
        self.cursor = 0
        self.use_splicing = False
        self.stalled_cycles = 0  # whole cycles in a row without a new entry
        self.cycle_new_entries = 0
        self.cycle_new_branch = False
        self.saved_crashes = 0
        self.saved_hangs = 0
        self.last_find = self.last_crash = self.last_hang = 0
        self.prev_run_time = 0
        self.prev_execs = 0
        self.prev_cycles = 0
        self.started = time.time()
        self.stop_requested = False
        self.stage_name = "init"
        self.current: Selection | None = None
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
                self.step()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.write_stats()

    def _request_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    def step(self) -> None:
        """Consider the next queue entry; fuzz it if the scheduler wants it."""
        self.queue.cull()
        if self.cursor >= len(self.queue):
            self.end_cycle()
        entry = self.queue[self.cursor]
        self.cursor += 1
        selection = self.scheduler.select(entry, self.queue, self.queue_branch_hits(),
                                          self.cycle, self.rng)
        if selection is not None:
            self.fuzz_one(selection)

    def end_cycle(self) -> None:
        if self.cycle:
            self.scheduler.on_cycle_end(self.cycle_new_branch)
            if not self.cycle_new_entries:
                self.use_splicing = True
            self.stalled_cycles = 0 if self.cycle_new_entries else self.stalled_cycles + 1
        self.cycle += 1
        self.cursor = 0
        self.cycle_new_entries = 0
        self.cycle_new_branch = False

    @property
    def block_level(self) -> int:
        """Havoc inserts, overwrites and deletes blocks of at most 32 bytes for the first
        ten minutes (as AFL++ 4 does) and while cycles find entries, larger ones after
        stalled cycles.  AFL grows them with the queue cycle, which with havoc only comes
        every few seconds: children then grew to tens of KB (half the executions per
        second on cJSON) without finding more."""
        if time.time() - self.started < SMALL_BLOCKS_SECONDS:
            return 1
        return 1 + self.stalled_cycles

    def fuzz_one(self, selection: Selection) -> None:
        entry, target, cfg = selection.entry, selection.target, self.config
        self.current = selection
        entry.times_selected += 1
        if not entry.trimmed:
            self.trim(entry, target if cfg.target_trim else None)
        mask = None
        if selection.use_mask and target is not None:
            mask = stages.compute_mask(self, entry, target)
            if mask is None:
                return
            if not mask.any():  # every probe lost the target: nothing to mutate towards it
                self.scheduler.on_frozen_target(target)
                return
        score = performance_score(entry, self.queue)
        run_det = cfg.deterministic and selection.deterministic_allowed and not entry.passed_det
        tokens = self.executor.token_counts()[0]
        row = ShadowRow(entry.id, target) if cfg.shadow and target is not None else None
        budget = havoc_budget(score, run_det)

        if row is not None:
            if run_det:
                row.det_plain_execs, row.det_plain_hits = stages.deterministic(
                    self, entry, None, target, tokens, shadow=True)
            plain = stages.havoc(self, entry, None, target, budget, shadow=True)
            row.havoc_plain_execs, row.havoc_plain_hits = plain.execs, plain.target_hits
        if run_det and not self.stopping():
            row_det = stages.deterministic(self, entry, mask, target, tokens)
            if row is not None:
                row.det_mask_execs, row.det_mask_hits = row_det
            entry.passed_det = not self.stopping()
        if not self.stopping():
            masked = stages.havoc(self, entry, mask, target, budget)
            if row is not None:
                row.havoc_mask_execs, row.havoc_mask_hits = masked.execs, masked.target_hits
        for _ in range(SPLICE_CYCLES if self.use_splicing else 0):
            partner = stages.pick_splice_partner(self, entry)
            if partner is None or self.stopping():
                break
            stages.splice(self, entry, mask, target, splice_budget(score), partner)
        if self.stopping():
            return
        entry.was_fuzzed = True
        if row is not None:
            append_row(self.outdir.root / LOG_NAME, row)

    def trim(self, entry: QueueEntry, target: int | None) -> None:
        """AFL's trim (same trace), or FairFuzz -r (target still hit)."""
        self.set_stage("trim" if target is None else "trim-target")
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

    # -- context for stages ------------------------------------------------

    def set_stage(self, name: str) -> None:
        self.stage_name = name

    def stopping(self) -> bool:
        self.tick()
        cfg = self.config
        if self.stop_requested or (cfg.stop_on_crash and self.saved_crashes):
            return True
        if cfg.max_seconds is not None and time.time() - self.started >= cfg.max_seconds:
            return True
        return cfg.max_execs is not None and self.executor.counters().execs >= cfg.max_execs

    def record(self, finding: Finding, op: str, parent: QueueEntry,
               partner: QueueEntry | None = None) -> None:
        src = f"src:{parent.id:06d}" + (f"+{partner.id:06d}" if partner else "")
        desc = f"{src},time:{self.elapsed_ms()},execs:{self.total_execs()},op:{op}"
        if finding.position is not None:
            desc += f",pos:{finding.position}"
        now = int(time.time())
        if finding.kind == FindingKind.CRASH:
            self.outdir.save_crash(self.saved_crashes, finding.signal, desc, finding.data,
                                   self._readme)
            self.saved_crashes += 1
            self.last_crash = now
        elif finding.kind == FindingKind.HANG:
            self.outdir.save_hang(self.saved_hangs, desc, finding.data)
            self.saved_hangs += 1
            self.last_hang = now
        else:
            self.add_find(finding, desc + (",+cov" if finding.new_edges else ""), parent)
            self.last_find = now

    def add_find(self, finding: Finding, desc: str, parent: QueueEntry) -> None:
        entry_id = self.queue.next_id
        path = self.outdir.save_queue_entry(entry_id, desc, finding.data)
        cal = self.executor.calibrate(finding.data, FIND_CALIBRATION_RUNS, count_hits=False)
        ok = cal.status == RunStatus.OK
        self.queue.add(QueueEntry(
            entry_id, path, finding.data, cal.edges if ok else finding.edges,
            cal.exec_us if ok else self.executor.timeout_ms * 1000, cal.bitmap_size,
            cal.checksum, depth=parent.depth + 1, parent=parent.id, variable=cal.variable,
            handicap=max(self.cycle - 1, 0)))
        self.cycle_new_entries += 1
        if finding.new_edges:
            self.cycle_new_branch = True
            self.scheduler.on_new_branch()

    # -- corpus loading ----------------------------------------------------

    def load_seeds(self, seeds: list[tuple[Path, bytes]]) -> None:
        self.set_stage("calibration")
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
        previous = self.outdir.previous_stats()
        self.prev_run_time = int(previous.get("run_time", 0))
        self.prev_execs = int(previous.get("execs_done", 0))
        self.prev_cycles = int(previous.get("cycles_done", 0))
        if self.config.timeout_ms is None and previous.get("exec_timeout"):
            self.executor.timeout_ms = int(previous["exec_timeout"])
        self.set_stage("resume")
        for position, case in enumerate(self.outdir.saved_queue()):
            path = case.path
            if case.id != position:  # a gap (a user deleted a file): keep ids dense
                path = path.with_name(f"id:{position:06d}" + path.name[len(f"id:{case.id:06d}"):])
                path = case.path.rename(path)
            data = path.read_bytes()
            cal = self.executor.calibrate(data, SEED_CALIBRATION_RUNS, True)
            self.queue.add(QueueEntry(position, path, data, cal.edges,
                                      cal.exec_us or self.executor.timeout_ms * 1000,
                                      cal.bitmap_size, cal.checksum, variable=cal.variable))
        for case in self.outdir.saved_crashes():
            self.executor.note_fault(case.path.read_bytes())
            self.saved_crashes = max(self.saved_crashes, case.id + 1)
        for case in self.outdir.saved_hangs():
            self.executor.note_fault(case.path.read_bytes())
            self.saved_hangs = max(self.saved_hangs, case.id + 1)
        for key, attr in (("last_find", "last_find"), ("last_crash", "last_crash"),
                          ("last_hang", "last_hang")):
            setattr(self, attr, int(previous.get(key, 0)))

    # -- numbers -----------------------------------------------------------

    def queue_branch_hits(self) -> np.ndarray:
        """numHits restricted to branches some queue-worthy run covered."""
        return np.where(self.executor.virgin() != 0xFF, self.executor.branch_hits(), 0)

    def elapsed_ms(self) -> int:
        return int((time.time() - self.started) * 1000) + self.prev_run_time * 1000

    def total_execs(self) -> int:
        return self.prev_execs + self.executor.counters().execs

    def snapshot(self) -> Snapshot:
        now = time.time()
        counters = self.executor.counters()
        session = max(now - self.started, 1e-6)
        virgin = self.executor.virgin()
        edges = int(np.count_nonzero(virgin[:self._edge_end] != 0xFF))
        variable = int(np.count_nonzero(self.executor.variable_bytes()[:self._edge_end]))
        tokens, auto_tokens = self.executor.token_counts()
        selection = self.current
        return Snapshot(
            start_time=int(self.started) - self.prev_run_time, now=int(now),
            run_time=self.prev_run_time + int(now - self.started),
            cycles_done=self.prev_cycles + max(self.cycle - 1, 0),
            cur_item=selection.entry.id if selection else 0,
            execs_done=self.prev_execs + counters.execs,
            execs_per_sec=counters.execs / session,
            corpus_count=len(self.queue), corpus_favored=self.queue.favoured_count,
            corpus_found=sum(e.parent is not None for e in self.queue),
            corpus_variable=sum(e.variable for e in self.queue),
            max_depth=self.queue.max_depth, pending_total=self.queue.pending_total,
            pending_favs=self.queue.pending_favoured,
            stability=100.0 * (1 - variable / edges) if edges else 100.0,
            edges_found=edges, total_edges=self._edge_end,
            saved_crashes=self.saved_crashes, saved_hangs=self.saved_hangs,
            total_crashes=counters.crashes, total_hangs=counters.hangs,
            last_find=self.last_find, last_crash=self.last_crash, last_hang=self.last_hang,
            exec_timeout=self.executor.timeout_ms, slowest_exec_ms=counters.slowest_exec_ms,
            schedule=self.scheduler.name, stage=self.stage_name,
            target=selection.target if selection else None,
            rarity_cutoff=rarity_cutoff(self.queue_branch_hits()),
            labels_found=self.labels.covered(virgin) if self.labels else 0,
            labels_total=self.labels.count if self.labels else 0,
            tokens=tokens, auto_tokens=auto_tokens,
            banner=Path(self.config.target_argv[0]).name,
            command_line=shlex.join(self.config.argv))

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
