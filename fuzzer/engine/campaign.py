"""The fuzzing loop: pick an entry -> run its stages -> record what they find -> stats.

The scheduler decides what to fuzz (it owns the walk over the queue), the
stages how, the executor runs the target; the campaign owns the queue, the
output directory and the clock.  Everything found is written (atomically)
before the stage makes its next child, so a SIGKILL loses at most the
executions in flight; what is not a file of its own (hit counts, each entry's
history, the queue walk) is saved with the stats at every STATS_INTERVAL and
at exit (state.py), so a resumed campaign (-i -) goes on where it was.
An instance in a sync directory (-M/-S) imports its peers' new entries and
their FairFuzz hit counts between two entries, at the sync interval (peers.py).
"""
from __future__ import annotations

import errno
import gc
import random
import shlex
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine import stages
from ffcc.fuzzer.engine.calibration import calibrate, confirm_hang
from ffcc.fuzzer.engine.cmplog import STAGE_NAME as INPUT_TO_STATE
from ffcc.fuzzer.engine.cmplog import CmplogStage
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.energy import (
    SPLICE_CYCLES,
    havoc_block_level,
    havoc_budget,
    performance_score,
    splice_budget,
)
from ffcc.fuzzer.engine.executor import Calibration, Executor, Finding, FindingKind, RunStatus
from ffcc.fuzzer.engine.labels import LabelMap, edge_region_end
from ffcc.fuzzer.engine.lean import LeanBuilds
from ffcc.fuzzer.engine.mask import empty_mask
from ffcc.fuzzer.engine.peers import PeerEntry, PeerSync
from ffcc.fuzzer.engine.phases import PhaseProgress
from ffcc.fuzzer.engine.progress import Progress, snapshot
from ffcc.fuzzer.engine.queue import Focus, Queue, QueueEntry
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.engine.scheduler import Scheduler, Selection, queue_hits
from ffcc.fuzzer.engine.seeds import auto_timeout_ms
from ffcc.fuzzer.engine.shadow import LOG_NAME, ShadowRow, append_row
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output import state as saved_state
from ffcc.fuzzer.output.outdir import CRASH_README, OutputDir, QueueFile, parent_id
from ffcc.fuzzer.output.state import CampaignState, EntryRecord
from ffcc.fuzzer.output.stats import Snapshot, append_plot, write_fuzzer_stats
from ffcc.fuzzer.output.status import Status
from ffcc.runtime.abi import MAX_INPUT, label_region_start
from ffcc.runtime.files import write_atomic

STATS_INTERVAL = 5.0
CHECKPOINT_SHARE = 50  # a checkpoint may take 1/50 of the time between two
STATUS_INTERVAL = 0.25
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
NO_HITS = np.zeros(0, np.uint32)  # what a scheduler that reads no hit counts is given


@contextmanager
def stops_handled(handler: Callable[[int, object], None]) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP go to ``handler`` within the block."""
    previous = {sig: signal.signal(sig, handler)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Campaign:
    """One ffuzz run over one output directory, from seeds or resumed."""

    retirement: Retirement | None = None  # --retire first: covered labels stop counting
    lean: LeanBuilds | None = None  # --rebuild-retired: builds without the retired labels
    lean_ready: Path | None = None  # a lean build to go on with: this run stops for it
    label_source: Callable[[], LabelMap | None] | None = None  # the labels now (shared objects)
    _stale_checksums: frozenset[int] = frozenset()  # entries whose trace lost a retired label

    def __init__(self, config: Config, executor: Executor, outdir: OutputDir,
                 scheduler: Scheduler, status: Status, labels: LabelMap | None = None,
                 rng: random.Random | None = None, cmplog: CmplogStage | None = None,
                 peers: PeerSync | None = None) -> None:
        self.config = config
        self.cmplog = cmplog  # -c: input-to-state, once per entry
        self.executor = executor
        self.outdir = outdir
        self.scheduler = scheduler
        self.status = status
        self.labels = labels
        self.rng = rng or random.Random(config.seed)
        self.queue = Queue(executor.map_size)
        self.progress = Progress()
        self.stop_requested = False
        self.phase_over: str | None = None  # why phase 1 ended (config.phase_policy)
        self._loaded = False  # the queue is complete: checkpoints may replace the state file
        self._next_status = 0.0
        self._next_stats = 0.0
        self._edge_end = edge_region_end(labels, executor.map_size)
        self.sync = peers  # the sync directory's other instances (-M/-S)
        self._peer_hits: np.ndarray | None = None  # the peers' summed counts, last sync
        self._readme = CRASH_README.format(command=shlex.join(config.argv),
                                           memory=f"{config.mem_limit_mb} MB"
                                           if config.mem_limit_mb else "none")

    # -- the loop ----------------------------------------------------------

    def run(self, seeds: list[tuple[Path, bytes]] | None,
            stopped: Callable[[], bool] = lambda: False) -> None:
        """Fuzz from these seeds, or (None) resume the output directory.  A full disk
        ends the campaign with a one-line error; what it saved before stays resumable.
        ``stopped``: whether a stop came before this run could take the signals (between
        the runs of a two-phase campaign or a lean switch): the run then stops at once."""
        try:
            try:
                with stops_handled(self._request_stop):
                    self.stop_requested = self.stop_requested or stopped()
                    self.fuzz(seeds)
            finally:
                if self._loaded:
                    self.checkpoint()
        except OSError as exc:
            if exc.errno not in NO_SPACE:
                raise
            raise FuzzerError(f"no space left to write {exc.filename or self.outdir.root}: "
                              "what was saved before is kept; make room, then resume with "
                              "-i -") from None

    def fuzz(self, seeds: list[tuple[Path, bytes]] | None) -> None:
        """Load the queue, then pick an entry and run its stages until told to stop."""
        if seeds is None:
            self.resume()
        else:
            self.load_seeds(seeds)
        if self.lean is not None:
            self.carry_compiled_out(self.lean)
        self._loaded = True
        # What exists now (modules, the loaded queue) lives as long as the campaign: frozen,
        # the collector's passes over its old generations stop walking it, which on a fast
        # target cost about 4% of the fuzzer's time.
        gc.freeze()
        self.status.message(f"random seed {self.config.seed} (--seed to repeat), "
                            f"schedule {self.scheduler.name}, map {self.executor.map_size} "
                            f"bytes, timeout {self.executor.timeout_ms} ms")
        self.checkpoint()
        while not self.stopping():
            if self.sync is not None and self.sync.due():
                self.sync_peers(self.sync)
            self.retire_covered()
            hits = self.queue_hits() if self.scheduler.uses_hits else NO_HITS
            selection = self.scheduler.next(self.queue, hits, self.rng)
            if selection is not None:
                self.fuzz_one(selection)

    def _request_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    @property
    def block_level(self) -> int:
        return havoc_block_level(time.time() - self.progress.started,
                                 self.scheduler.cursor.stalled_cycles)

    def fuzz_one(self, selection: Selection) -> None:
        """AFL's fuzz_one with FairFuzz's target and mask: trim, mask, deterministic stages
        (-D), havoc, splicing; in shadow mode (-s) each stage first runs once without mask."""
        entry, target, cfg = selection.entry, selection.target, self.config
        site = self.labels.site_at(target, self.executor.map_size) \
            if self.labels is not None and target is not None else None
        self.progress.select(selection, site)
        if self.cmplog is not None:
            self.input_to_state(self.cmplog)
        if not entry.trimmed:
            self.trim(entry)
        data, mask = entry.data, None
        if target is not None and (selection.use_mask or cfg.target_trim):
            focus = self.focus(entry, target, selection.use_mask)
            if focus is None:
                return
            data, mask = focus.data, focus.mask if selection.use_mask else None
            if mask is not None and not mask.any():  # every probe lost the target
                self.scheduler.on_frozen_target(target)
                return
        score = performance_score(entry, self.queue)
        run_det = cfg.deterministic and selection.deterministic_allowed and not entry.passed_det
        tokens = self.executor.token_counts()[0]
        budget = havoc_budget(score, run_det)
        row = None
        if cfg.shadow and target is not None:
            row = self.shadow_runs(entry, data, target, tokens, budget, run_det)
        if run_det and not self.stopping():
            det = stages.deterministic(data, mask, target, tokens, self.block_level)
            entry.passed_det = self.run_stage(det, entry)
            if row is not None:
                row.det_mask_execs, row.det_mask_hits = det.execs, det.target_hits
        partners = stages.splice_partners(self.queue, entry, self.rng, SPLICE_CYCLES) \
            if self.scheduler.cursor.splicing else ()
        seconds = tuple(p.data for p in partners)
        if partners and row is None:  # one request: havoc's children, then the splice cycles'
            if not self.stopping():
                self.run_stage(stages.havoc_then_splice(data, seconds, mask, target, budget,
                                                        splice_budget(score), self.block_level),
                               entry, partners)
        else:
            if not self.stopping():
                masked = stages.havoc(data, mask, target, budget, self.block_level)
                self.run_stage(masked, entry)
                if row is not None:
                    row.havoc_mask_execs, row.havoc_mask_hits = masked.execs, masked.target_hits
            if partners and not self.stopping():
                self.run_stage(stages.splice(data, seconds, mask, target, splice_budget(score),
                                             self.block_level), entry, partners)
        if self.stopping():
            return
        entry.was_fuzzed = True
        if row is not None:
            append_row(self.outdir.root / LOG_NAME, row)

    def shadow_runs(self, entry: QueueEntry, data: bytes, target: int, tokens: int,
                    budget: int, run_det: bool) -> ShadowRow:
        """FairFuzz -s: the stages once on `data` without mask and without side effects;
        the row gets their executions and target hits (fuzz_one adds the masked runs')."""
        row = ShadowRow(entry.id, target)
        if run_det:
            plain_det = stages.deterministic(data, None, target, tokens, self.block_level,
                                             shadow=True)
            self.run_stage(plain_det, entry)
            row.det_plain_execs, row.det_plain_hits = plain_det.execs, plain_det.target_hits
        plain = stages.havoc(data, None, target, budget, self.block_level, shadow=True)
        self.run_stage(plain, entry)
        row.havoc_plain_execs, row.havoc_plain_hits = plain.execs, plain.target_hits
        return row

    def focus(self, entry: QueueEntry, target: int, with_mask: bool) -> Focus | None:
        """What to mutate towards target: with -r a copy of the entry trimmed to the
        target, and (with_mask) its FairFuzz mask; made once per (entry, target).  None if
        the campaign stopped before the mask probes were done."""
        focus = entry.focus
        if focus is not None and focus.target == target and (focus.mask is not None
                                                              or not with_mask):
            return focus
        data = self.trimmed_copy(entry, target) if self.config.target_trim else entry.data
        mask = None
        if with_mask:
            mask = empty_mask(len(data))
            if not self.run_stage(stages.mask_probes(data, mask, target, self.block_level),
                                  entry):
                return None
        entry.focus = Focus(target, data, mask)
        return entry.focus

    def trimmed_copy(self, entry: QueueEntry, target: int) -> bytes:
        """FairFuzz -r: the entry's bytes without the blocks the target branch does not
        need, as a copy (afl-rb trims a private copy in each fuzz_one).  The queue entry
        keeps its bytes on disk and in memory, and so every edge it covers: its other
        edges stay known in the virgin map and top_rated may name it for them."""
        self.progress.stage = "trim-target"
        data, _ = self.executor.trim(entry.data, target, self.checksum_of(entry))
        return data

    def run_stage(self, stage: stages.Stage, parent: QueueEntry,
                  partners: tuple[QueueEntry, ...] = ()) -> bool:
        """Run a stage, saving each finding as it comes (with the splice partner that made
        it, if any); False if the campaign stopped it."""
        for op, finding in stages.run(self.executor, stage):
            self.progress.stage = op
            if finding is not None:
                partner = partners[finding.partner] if finding.partner is not None else None
                self.record(finding, op, parent, partner)
            if self.stopping():
                return False
        return True

    def input_to_state(self, cmplog: CmplogStage) -> None:
        """-c: colorization and input-to-state replacement (fuzzer/engine/cmplog.py) on each entry
        added since the last time, trimmed first; each finding is saved as it comes.  The
        entries these runs add wait for the next call, so that havoc runs in between."""
        pending = len(self.queue)
        while not self.stopping() and (index := cmplog.next_entry(pending)) is not None:
            entry = self.queue[index]
            if not entry.trimmed:
                self.trim(entry)
            self.progress.stage = INPUT_TO_STATE
            for finding in cmplog.run(entry.data, self.checksum_of(entry)):
                if finding is not None:
                    self.record(finding, INPUT_TO_STATE, entry)
                if self.stopping():
                    return

    def trim(self, entry: QueueEntry) -> None:
        """AFL's trim, in place: blocks go only while the trace keeps its checksum, and the
        shorter input replaces the entry only if calibration confirms that trace."""
        self.progress.stage = "trim"
        entry.trimmed = True
        data, _ = self.executor.trim(entry.data, None, self.checksum_of(entry))
        if len(data) == len(entry.data):
            return
        cal = calibrate(self.executor, data, count_hits=False)
        if cal.status != RunStatus.OK or cal.checksum != entry.checksum:
            return
        entry.data = data
        entry.focus = None
        write_atomic(entry.path, data)
        self.queue.remeasure(entry, cal.exec_us, cal.bitmap_size)

    def stopping(self) -> bool:
        """Whether to stop (signal, -V, -E, AFL_BENCH_UNTIL_CRASH); also refreshes the status
        and the stats files when they are due."""
        self.tick()
        cfg = self.config
        if self.stop_requested or self.phase_over or self.lean_ready or (cfg.env.bench_until_crash
                                                      and self.progress.saved_crashes):
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
        kind, signal_number = finding.kind, finding.signal
        if kind == FindingKind.HANG:
            status, signal_number = confirm_hang(self.executor, finding.data,
                                                 self.config.env.hang_timeout_ms)
            if status == RunStatus.CRASH:
                kind = FindingKind.CRASH
            elif status != RunStatus.TIMEOUT:
                return  # slow, not hung: it finishes within the hang timeout
        if kind == FindingKind.CRASH:
            self.outdir.save_crash(progress.saved_crashes, signal_number, desc, finding.data,
                                   self._readme)
            progress.saved_crashes += 1
            progress.last_crash, progress.last_crash_execs = now, self.total_execs()
        elif kind == FindingKind.HANG:
            self.outdir.save_hang(progress.saved_hangs, desc, finding.data)
            progress.saved_hangs += 1
            progress.last_hang = now
        else:
            self.add_find(finding, desc + (",+cov" if finding.new_edges else ""), parent)
            progress.last_find = now

    def add_find(self, finding: Finding, desc: str, parent: QueueEntry) -> None:
        entry_id = self.queue.next_id
        path = self.outdir.save_queue_entry(entry_id, desc, finding.data)
        cal = calibrate(self.executor, finding.data, count_hits=False, generous=True)
        ok = cal.status == RunStatus.OK
        self.queue.add(QueueEntry(
            entry_id, path, finding.data, cal.edges if ok else finding.edges,
            cal.exec_us if ok else self.executor.timeout_ms * 1000, cal.bitmap_size,
            cal.checksum, depth=parent.depth + 1, parent=parent.id, variable=cal.variable,
            handicap=max(self.scheduler.cursor.cycle - 1, 0)))
        self.scheduler.on_new_entry(finding.new_edges)

    # -- sync directory ----------------------------------------------------

    def sync_peers(self, sync: PeerSync) -> None:
        """Import what is new in the peers' queues and -F directories, then share this
        instance's hit counts and take the peers' latest.  A stop (signal, -V, -E) ends
        the imports; the next sync or a resumed one goes on from the first entry not run."""
        self.progress.stage = "sync"
        for peer in sync.peers():
            looked_at = []
            for entry in sync.new_entries(peer):
                if self.stopping():
                    break
                self.import_entry(entry)
                looked_at.append(entry)
            sync.done(peer, looked_at)
        for entry in sync.foreign_entries():
            if not self.stopping():
                self.import_entry(entry)
        sync.share_hits(self.executor.branch_hits())
        self._peer_hits = sync.peer_hits(self.executor.map_size)

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
        entry_id = self.queue.next_id
        path = self.outdir.save_queue_entry(entry_id, desc, data)
        cal = calibrate(self.executor, data, count_hits=False, generous=True)
        ok = cal.status == RunStatus.OK
        self.queue.add(QueueEntry(entry_id, path, data, cal.edges if ok else probe.edges,
                                  cal.exec_us if ok else probe.exec_us, probe.bitmap_size,
                                  probe.checksum, variable=cal.variable,
                                  handicap=max(self.scheduler.cursor.cycle - 1, 0)))
        self.scheduler.on_new_entry(probe.new_bits == 2)
        self.progress.imported += 1

    # -- corpus loading ----------------------------------------------------

    def _seed_calibration(self, data: bytes) -> Calibration:
        """A seed's calibration, run once more when it timed out: on a loaded machine one run
        can stall past the timeout, and a campaign whose seeds are all skipped does not start.
        A run that times out counts no branch hits, so the second run counts them once."""
        cal = calibrate(self.executor, data, count_hits=True)
        if cal.status == RunStatus.TIMEOUT:
            cal = calibrate(self.executor, data, count_hits=True)
        return cal

    def load_seeds(self, seeds: list[tuple[Path, bytes]]) -> None:
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
        if self.config.timeout_ms is None:
            self.executor.timeout_ms = auto_timeout_ms([c.exec_us for _, _, c in good])
        for path, data, cal in good:
            entry_id = self.queue.next_id
            name = path.name.replace(",", "_")
            saved = self.outdir.save_queue_entry(entry_id, f"time:0,execs:0,orig:{name}", data)
            self.queue.add(QueueEntry(entry_id, saved, data, cal.edges, cal.exec_us,
                                      cal.bitmap_size, cal.checksum, variable=cal.variable))

    def resume(self) -> None:
        """Reload every saved queue entry, crash and hang, and what the state file kept
        (without one, the counters of the last fuzzer_stats)."""
        earlier = self.outdir.resume()
        state = saved_state.load(self.outdir.state_file) \
            or saved_state.from_fuzzer_stats(earlier.stats)
        self.progress.carry_on(state.totals, earlier.next_crash_id, earlier.next_hang_id)
        if self.config.timeout_ms is None and state.totals.exec_timeout:
            self.executor.timeout_ms = state.totals.exec_timeout
        self.scheduler.restore(state.scheduler)
        hits_restored = self.restore_maps(state)
        self.progress.stage = "resume"
        for saved in earlier.queue:
            record = state.entries.get(saved.saved_as)
            self.queue.add(self.resumed_entry(saved, record, count_hits=record is None
                                              or not hits_restored))
        for case in earlier.crashes + earlier.hangs:
            self.executor.note_fault(case.path.read_bytes())

    def carry_compiled_out(self, lean: LeanBuilds) -> None:
        """The labels the running lean build compiled out after they were covered stay
        covered: no trace of it can show them again."""
        virgin = self.executor.virgin()
        virgin[label_region_start(len(virgin), lean.database.label_region)
               + lean.covered_slots()] = 0

    def restore_maps(self, state: CampaignState) -> bool:
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

    def resumed_entry(self, saved: QueueFile, record: EntryRecord | None,
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

    # -- numbers -----------------------------------------------------------

    def queue_hits(self) -> np.ndarray:
        """FairFuzz's rarity input: this instance's hit counts plus, in a sync directory,
        its peers' as of the last sync."""
        hits = self.executor.branch_hits()
        if self._peer_hits is not None:
            hits = hits + self._peer_hits
        hits = queue_hits(self.executor.virgin(), hits)
        return self.retirement.exclude(hits) if self.retirement is not None else hits

    def retire_covered(self) -> None:
        """Retire the labels the queue covers.  The checksum of an entry that hit one no
        longer describes its trace, nor, once a site's gate closed, that of any entry that
        ran the site (its label code's edges stop too; which entries did, no trace says):
        checksum_of takes it again when it is next needed."""
        if self.retirement is None:
            return
        retired = self.retirement.retire_covered(self.executor.virgin())
        if len(retired):
            every = self.retirement.closed_now > 0
            self._stale_checksums |= {entry.id for entry in self.queue
                                      if every or np.isin(retired, entry.edges).any()}

    def checksum_of(self, entry: QueueEntry) -> int:
        """The entry's trace checksum as its runs have it now (trimming and input-to-state
        compare runs with it)."""
        if entry.id in self._stale_checksums:
            entry.checksum = self.executor.calibrate(entry.data, 1, False).checksum
            self._stale_checksums -= {entry.id}
        return entry.checksum

    def phase_progress(self) -> PhaseProgress:
        now, progress = time.time(), self.progress
        return PhaseProgress(self.scheduler.cursor.stalled_cycles, now - progress.started,
                             now - max(progress.last_find, progress.started),
                             self.executor.counters().execs)

    def total_execs(self) -> int:
        return self.progress.earlier.execs + self.executor.counters().execs

    def snapshot(self) -> Snapshot:
        return snapshot(self.progress, self.executor, self.queue, self.scheduler, self.labels,
                        self._edge_end, self.config,
                        self.cmplog.stats if self.cmplog is not None else None)

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_status:
            self._next_status = now + STATUS_INTERVAL
            if self.label_source is not None:
                self.labels = self.label_source()
            self.status.update(self.snapshot())
            if self.config.phase_policy is not None and self._loaded:
                self.phase_over = self.config.phase_policy.due(self.phase_progress())
            if self.lean is not None and self.retirement is not None and self._loaded:
                self.lean_ready = self.lean.step(self.retirement, self.executor.virgin(),
                                                 self.status)
        if now >= self._next_stats:
            self.checkpoint()

    def checkpoint(self) -> None:
        """The state file, queue/.state, fuzzer_stats and a plot_data row, as of now.  The
        state goes first: a campaign resumed after a kill between the writes starts from
        numbers no smaller than the last plot row's.  Checkpoints come every STATS_INTERVAL,
        or less often when a huge queue makes them cost more than 1/CHECKPOINT_SHARE."""
        started = time.monotonic()
        self.queue.cull()
        snap = self.snapshot()
        saved_state.save(self.outdir.state_file, self.state(), self.queue.entries)
        self.outdir.mark("deterministic_done", {e.path.name for e in self.queue if e.passed_det})
        self.outdir.mark("redundant_edges", {e.path.name for e in self.queue if not e.favoured})
        self.outdir.mark("variable_behavior", {e.path.name for e in self.queue if e.variable})
        write_fuzzer_stats(self.outdir.fuzzer_stats, snap)
        append_plot(self.outdir.plot_data, snap)
        now = time.monotonic()
        self._next_stats = now + max(STATS_INTERVAL, (now - started) * CHECKPOINT_SHARE)

    def state(self) -> CampaignState:
        executor = self.executor
        return CampaignState(self.progress.totals(executor.counters(), executor.timeout_ms),
                             self.scheduler.state(), map_size=executor.map_size,
                             branch_hits=executor.branch_hits(),
                             var_bytes=executor.variable_bytes(),
                             phase=2 if self.phase_over or self.config.labelled_phase else 1)
