"""The fuzzing loop: pick an entry -> run its stages -> record what they find -> stats.

The scheduler decides what to fuzz (it owns the walk over the queue), the
stages how, the executor runs the target; the campaign owns the queue and the
clock, and runs the loop.  Each of its other concerns is an object of its own:
Findings (findings.py) saves what the stages find, atomically, before the stage
makes its next child, so a SIGKILL loses at most the executions in flight;
CorpusLoader (corpus.py) fills the queue from the seeds or the output directory;
PeerImports (peers.py) imports the entries and FairFuzz hit counts of the other
instances in a sync directory (-M/-S) between two entries, at the sync interval;
Labelling (labelling.py) retires covered labels and runs lean rebuilds;
PhaseSwitch (phases.py) says when phase 1 of a two-phase campaign is over; and
Checkpoints (checkpoint.py) saves what is not a file of its own (hit counts, each
entry's history, the queue walk) with the stats at every STATS_INTERVAL and at
exit, so a resumed campaign (-i -) goes on where it was.
"""
from __future__ import annotations

import errno
import gc
import random
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine import stages
from ffcc.fuzzer.engine.calibration import calibrate
from ffcc.fuzzer.engine.checkpoint import Checkpoints
from ffcc.fuzzer.engine.cmplog import STAGE_NAME as INPUT_TO_STATE
from ffcc.fuzzer.engine.cmplog import CmplogStage
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.corpus import CorpusLoader
from ffcc.fuzzer.engine.energy import (
    SPLICE_CYCLES,
    havoc_block_level,
    havoc_budget,
    performance_score,
    splice_budget,
)
from ffcc.fuzzer.engine.executor import Executor, RunStatus
from ffcc.fuzzer.engine.findings import Findings
from ffcc.fuzzer.engine.focus import MASKS_PER_PROBE, CarriedFocuses, Focus, FocusCache
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.labels import edge_region_end
from ffcc.fuzzer.engine.mask import empty_mask
from ffcc.fuzzer.engine.peers import PeerImports, PeerSync
from ffcc.fuzzer.engine.phases import PhaseSwitch
from ffcc.fuzzer.engine.progress import Progress
from ffcc.fuzzer.engine.queue import Queue, QueueEntry
from ffcc.fuzzer.engine.scheduler import Scheduler, Selection, queue_hits
from ffcc.fuzzer.engine.shadow import LOG_NAME, ShadowRow, append_row
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.status import Status
from ffcc.runtime.files import write_atomic

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


class StopNote:
    """Whether a Ctrl-C, SIGTERM or SIGHUP came, and which: a campaign notes it while it
    runs, the command line between the runs of a campaign of several (two phases, lean
    rebuilds)."""

    def __init__(self) -> None:
        self.signal: int | None = None

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def note(self, signum: int, frame: object) -> None:
        self.signal = signum

    def reason(self) -> str:
        """The stop in words, as the last line of a campaign gives it."""
        if self.signal == signal.SIGINT:
            return "Ctrl-C"
        return signal.Signals(self.signal).name if self.signal is not None else "not stopped"


class Campaign:
    """One ffuzz run over one output directory, from seeds or resumed."""

    def __init__(self, config: Config, executor: Executor, outdir: OutputDir,
                 scheduler: Scheduler, status: Status, labels: Labelling | None = None,
                 rng: random.Random | None = None, cmplog: CmplogStage | None = None,
                 peers: PeerSync | None = None, stop: StopNote | None = None,
                 carried: CarriedFocuses | None = None) -> None:
        """``labels``: the target's labels, retirement and lean rebuilds; ``cmplog``: -c's
        input-to-state stage; ``peers``: the sync directory's other instances (-M/-S);
        ``stop``: where stops are noted, shared with the runs before and after this one
        (a stop noted before this run began ends it at once); ``carried``: the focuses of
        the run before, on another build of the target."""
        self.config = config
        self.executor = executor
        self.outdir = outdir
        self.scheduler = scheduler
        self.status = status
        self.labels = labels or Labelling()
        self.rng = rng or random.Random(config.seed)
        self.cmplog = cmplog
        self.stop = stop or StopNote()
        self.queue = Queue(executor.map_size)
        self.focuses = FocusCache()
        self._carried = carried
        self.progress = Progress()
        self.findings = Findings(config, executor, outdir, self.queue, scheduler, self.progress)
        self.corpus = CorpusLoader(executor, outdir, self.queue, scheduler, status,
                                   self.progress, config.timeout_ms)
        self.peers = PeerImports(peers, self.findings.import_entry, executor, self.progress)
        self.phases = PhaseSwitch(config.phase_policy, config.labelled_phase)
        self.checkpoints = Checkpoints(config, executor, outdir, self.queue, scheduler,
                                       self.progress, self.labels, self.phases,
                                       cmplog.stats if cmplog is not None else None)
        self.lean_ready: Path | None = None  # a lean build to go on with: this run stops for it
        self.ended_by: str | None = None  # why the campaign stopped (stopping())
        self._loaded = False  # the queue is complete: checkpoints may replace the state file
        self._next_status = 0.0

    # -- the loop ----------------------------------------------------------

    def run(self, seeds: list[tuple[Path, bytes]] | None) -> None:
        """Fuzz from these seeds, or (None) resume the output directory.  A full disk
        ends the campaign with a one-line error; what it saved before stays resumable."""
        try:
            try:
                with stops_handled(self.stop.note):
                    self.fuzz(seeds)
            finally:
                if self._loaded:
                    self.checkpoints.save()
        except OSError as exc:
            if exc.errno not in NO_SPACE:
                raise
            raise FuzzerError(f"no space left to write {exc.filename or self.outdir.root}: "
                              "what was saved before is kept; make room, then resume with "
                              "-i -") from None

    def fuzz(self, seeds: list[tuple[Path, bytes]] | None) -> None:
        """Load the queue, then pick an entry and run its stages until told to stop;
        between two entries, sync with the peers and retire the labels covered."""
        carried, self._carried = self._carried, None
        moved = self.corpus.load(seeds, carried.edges if carried is not None else None)
        if carried is not None and moved is not None:
            self.focuses = carried.cache.renumbered(moved, {entry.id for entry in self.queue})
        self.labels.keep_compiled_out(self.executor.virgin())
        self._loaded = True
        # What exists now (modules, the loaded queue) lives as long as the campaign: frozen,
        # the collector's passes over its old generations stop walking it, a cost a fast
        # target makes visible (bench/RESULTS.md, "The garbage collector on a fast target").
        gc.freeze()
        self.status.message(f"random seed {self.config.seed} (--seed to repeat), "
                            f"schedule {self.scheduler.name}, map {self.executor.map_size} "
                            f"bytes, timeout {self.executor.timeout_ms} ms")
        self.checkpoints.save()
        while not self.stopping():
            self.peers.step(self.stopping)
            self.retire_labels()
            hits = self.queue_hits() if self.scheduler.uses_hits else NO_HITS
            selection = self.scheduler.next(self.queue, hits, self.rng,
                                            edge_region_end(self.labels.map, self.executor.map_size))
            if selection is not None:
                self.fuzz_one(selection)

    def focuses_to_carry(self) -> CarriedFocuses:
        """This run's focuses, for the next run on another build to renumber."""
        return CarriedFocuses.of(self.focuses, self.queue)

    def retire_labels(self) -> None:
        """Retire the labels that are due (retire.py): between two entries, and between two
        entries of input-to-state, which runs every entry added since its last turn in one go
        (on LAVA-M's md5sum, nine entries took most of a 120 s campaign)."""
        self.labels.retire_covered(self.queue, self.executor.virgin(), self.queue_hits,
                                   self.scheduler.turns())

    def queue_hits(self) -> np.ndarray:
        """FairFuzz's rarity input: this instance's hit counts plus, in a sync directory,
        its peers' as of the last sync, over the queue's coverage, without retired labels."""
        hits = self.peers.added_to(self.executor.branch_hits())
        return self.labels.rarity(queue_hits(self.executor.virgin(), hits))

    @property
    def block_level(self) -> int:
        return havoc_block_level(time.time() - self.progress.started,
                                 self.scheduler.cursor.stalled_cycles)

    def fuzz_one(self, selection: Selection) -> None:
        """AFL's fuzz_one with FairFuzz's target and mask: trim, mask, deterministic stages
        (-D), havoc, splicing; in shadow mode (-s) each stage first runs once without mask."""
        entry, target, cfg = selection.entry, selection.target, self.config
        labels = self.labels.map
        site = labels.site_at(target, self.executor.map_size) \
            if labels is not None and target is not None else None
        self.progress.select(selection, site)
        if self.cmplog is not None:
            self.input_to_state(self.cmplog)
        if not entry.trimmed:
            self.trim(entry)
        data, mask = entry.data, None
        if target is not None and (selection.use_mask or cfg.target_trim):
            focus = self.focus(selection, target)
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

    def focus(self, selection: Selection, target: int) -> Focus | None:
        """What to mutate towards `target`, the selection's, made once per (entry, target) and
        kept (FocusCache): the entry's bytes or, with FairFuzz -r, a copy without the blocks
        the target branch does not need (afl-rb trims a private copy in each fuzz_one); and
        with a mask, FairFuzz's.  Without -r the mask probes make masks for the entry's other
        rare branches too, for their turns.  The queue entry keeps its bytes on disk and in
        memory, and so every edge it covers: its other edges stay known in the virgin map
        and top_rated may name it for them.  None if the campaign stopped before the mask
        probes were done."""
        entry = selection.entry
        focus = self.focuses.get(entry.id, target)
        if focus is not None and (focus.mask is not None or not selection.use_mask):
            return focus
        data = entry.data
        if self.config.target_trim:
            self.progress.stage = "trim-target"
            checksum = self.labels.checksum_of(entry, self.executor)
            data, _ = self.executor.trim(entry.data, target, checksum)
        mask = None
        if selection.use_mask:
            also = np.zeros(0, np.int64) if self.config.target_trim else \
                self.unmasked(selection, target)
            mask, also_masks = empty_mask(len(data)), np.zeros((len(also), len(data) + 1), np.uint8)
            if not self.run_stage(stages.mask_probes(data, mask, target, self.block_level,
                                                     also, also_masks), entry):
                return None
            for branch, also_mask in zip(also.tolist(), also_masks):
                self.focuses.put(entry.id, Focus(branch, data, also_mask.copy()), entry.data)
        focus = Focus(target, data, mask)
        self.focuses.put(entry.id, focus, entry.data)
        return focus

    def unmasked(self, selection: Selection, target: int) -> np.ndarray:
        """The selection's rarest branches besides `target` without a kept mask for its
        entry, at most MASKS_PER_PROBE: those its mask probes make masks for as well."""
        entry = selection.entry
        return np.array([branch for branch in selection.rarest.tolist() if branch != target
                         and (entry.id, branch) not in self.focuses][:MASKS_PER_PROBE], np.int64)

    def run_stage(self, stage: stages.Stage, parent: QueueEntry,
                  partners: tuple[QueueEntry, ...] = ()) -> bool:
        """Run a stage, saving each finding as it comes (with the splice partner that made
        it, if any) and counting what each op found and ran; False if the campaign stopped
        it."""
        progress = self.progress
        try:
            for op, finding, request in stages.run(self.executor, stage):
                progress.step(op, request.execs, stages.planned_execs(request))
                if finding is not None:
                    saved = len(self.queue) + progress.saved_crashes
                    partner = partners[finding.partner] if finding.partner is not None else None
                    self.findings.record(finding, op, parent, partner)
                    progress.count(op, finds=len(self.queue) + progress.saved_crashes - saved)
                if self.stopping():
                    return False
            return True
        finally:
            for op, execs in stages.execs_by_op(stage).items():
                progress.count(op, execs=execs)

    def input_to_state(self, cmplog: CmplogStage) -> None:
        """-c: colorization and input-to-state replacement (cmplog.py) on each entry added
        since the last time, trimmed first; each finding is saved as it comes.  The
        entries these runs add wait for the next call, so that havoc runs in between."""
        pending = len(self.queue)
        while not self.stopping() and (index := cmplog.next_entry(pending)) is not None:
            self.retire_labels()
            entry = self.queue[index]
            if not entry.trimmed:
                self.trim(entry)
            self.progress.stage = INPUT_TO_STATE
            checksum = self.labels.checksum_of(entry, self.executor)
            for finding in cmplog.run(entry.data, checksum):
                if finding is not None:
                    self.findings.record(finding, INPUT_TO_STATE, entry)
                if self.stopping():
                    return

    def trim(self, entry: QueueEntry) -> None:
        """AFL's trim, in place: blocks go only while the trace keeps its checksum, and the
        shorter input replaces the entry only if calibration confirms that trace."""
        self.progress.stage = "trim"
        entry.trimmed = True
        checksum = self.labels.checksum_of(entry, self.executor)
        data, _ = self.executor.trim(entry.data, None, checksum)
        if len(data) == len(entry.data):
            return
        cal = calibrate(self.executor, data, count_hits=False)
        if cal.status != RunStatus.OK or cal.checksum != entry.checksum:
            return
        entry.data = data
        write_atomic(entry.path, data)
        self.queue.remeasure(entry, cal.exec_us, cal.bitmap_size)

    def stopping(self) -> bool:
        """Whether to stop, and why (``ended_by``): a signal, -V, -E, AFL_BENCH_UNTIL_CRASH,
        the end of phase 1, a lean build ready; also refreshes the status and the stats files
        when they are due."""
        self.tick()
        cfg = self.config
        if self.stop.signal is not None:
            self.ended_by = self.stop.reason()
        elif self.phases.over:
            self.ended_by = "phase 1 over"
        elif self.lean_ready:
            self.ended_by = "a lean build is ready"
        elif cfg.env.bench_until_crash and self.progress.saved_crashes:
            self.ended_by = "first crash (AFL_BENCH_UNTIL_CRASH)"
        elif cfg.max_seconds is not None \
                and cfg.seconds_spent + time.time() - self.progress.started >= cfg.max_seconds:
            self.ended_by = f"time limit (-V {cfg.max_seconds:g})"
        elif cfg.max_execs is not None \
                and cfg.execs_spent + self.executor.counters().execs >= cfg.max_execs:
            self.ended_by = f"execution limit (-E {cfg.max_execs})"
        return self.ended_by is not None

    def tick(self) -> None:
        """Every STATUS_INTERVAL: the labels as they are now, the status, whether phase 1 is
        over and whether a lean rebuild is ready; a checkpoint when one is due."""
        now = time.monotonic()
        if now >= self._next_status:
            self._next_status = now + STATUS_INTERVAL
            self.labels.refresh()
            self.status.update(self.checkpoints.snapshot())
            self.phases.judge(self.progress.phase_progress(self.scheduler.cursor.stalled_cycles,
                                                           self.executor.counters().execs))
            self.lean_ready = self.labels.lean_step(self.executor.virgin(), self.status,
                                                     self.queue)
        if self.checkpoints.due(now):
            self.checkpoints.save()
