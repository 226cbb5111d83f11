"""The campaign loop with a fake executor: which stages run, with what mask
and target, and what gets written."""
from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ffcc.fuzzer.engine import energy, stages
from ffcc.fuzzer.engine.campaign import Campaign, StopNote
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.executor import (
    Calibration,
    Counters,
    Finding,
    FindingKind,
    RunStatus,
    StageKind,
    StageRequest,
)
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.mask import ALL
from ffcc.fuzzer.engine.scheduler import AflScheduler, FairFuzzScheduler, Schedule, Scheduler
from ffcc.fuzzer.engine.seeds import read_seeds
from ffcc.fuzzer.engine.shadow import LOG_NAME, summarize
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.status import PlainStatus

MAP = 64


class FakeExecutor:
    """A 'program' whose edges are 1 + each distinct byte value % 60; the first
    havoc stage 'finds' one new input and one crash."""

    timeout_ms = 100

    def __init__(self) -> None:
        self.map_size = MAP
        self.requests: list[StageRequest] = []
        self.execs = 0
        self.hits = np.zeros(MAP, np.uint32)
        self._virgin = np.full(MAP, 0xFF, np.uint8)
        self._virgin_crash = np.full(MAP, 0xFF, np.uint8)
        self.found = False

    @staticmethod
    def edges(data: bytes) -> np.ndarray:
        return np.array(sorted({1 + b % 60 for b in data}), np.uint32)

    def calibrate(self, data: bytes, runs: int, count_hits: bool) -> Calibration:
        edges = self.edges(data)
        new = 2 if (self._virgin[edges] == 0xFF).any() else 0
        self._virgin[edges] = 0
        if count_hits:
            self.hits[edges] += 1
        return Calibration(RunStatus.OK, 0, new, False, 50, hash(data), len(edges), edges)

    def run_stage(self, request: StageRequest) -> Iterator[Finding | None]:
        self.requests.append(request)
        if request.kind == StageKind.MASK:
            request.mask[:] = int(ALL)
        request.execs = request.budget or 10
        self.execs += request.execs
        self.hits[1] += request.execs  # everything hits branch 1: never rare
        if request.kind == StageKind.HAVOC and not request.shadow and not self.found:
            self.found = True
            yield Finding(FindingKind.NEW_PATH, b"zz", new_edges=True, edges=self.edges(b"zz"))
            yield Finding(FindingKind.CRASH, b"boom", signal=11)
        yield None

    def trim(self, data: bytes, target: int | None, checksum: int) -> tuple[bytes, int]:
        return data, 0

    def note_fault(self, data: bytes) -> RunStatus:
        return RunStatus.CRASH

    def branch_hits(self) -> np.ndarray:
        return self.hits

    def virgin(self) -> np.ndarray:
        return self._virgin

    def virgin_crash(self) -> np.ndarray:
        return self._virgin_crash

    def variable_bytes(self) -> np.ndarray:
        return np.zeros(MAP, np.uint8)

    def counters(self) -> Counters:
        return Counters(self.execs, 0, 0, 0)

    def token_counts(self) -> tuple[int, int]:
        return 0, 0

    def modes(self) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        pass


def campaign_run(tmp_path: Path, scheduler: Scheduler, ex: FakeExecutor, seed: bytes,
                 max_execs: int, labels: LabelMap | None = None, stopped: bool = False,
                 **options) -> tuple[Campaign, OutputDir]:
    """One campaign of ``ex`` from a single seed, run to ``max_execs``; ``stopped``: with a
    stop that came before the run began."""
    seeds = tmp_path / "in"
    seeds.mkdir()
    (seeds / "s1").write_bytes(seed)
    config = Config(input_dir=seeds, output_dir=tmp_path / "out", target_argv=("prog", "@@"),
                    max_execs=max_execs, seed=1, argv=("ffuzz",), **options)
    out = OutputDir(config.output_dir)
    out.open(resume=False)
    stop = StopNote()
    if stopped:
        stop.note(signal.SIGTERM, None)
    campaign = Campaign(config, ex, out, scheduler, PlainStatus(interval=3600), Labelling(labels),
                        rng=random.Random(1), stop=stop)
    try:
        campaign.run(read_seeds(seeds))
    finally:
        out.close()
    return campaign, out


def run_campaign(tmp_path: Path, scheduler: Scheduler, **options) -> tuple[FakeExecutor, OutputDir]:
    ex = FakeExecutor()
    _, out = campaign_run(tmp_path, scheduler, ex, b"\x01\x02\x01", 5000, **options)
    return ex, out


def test_a_run_stopped_before_it_began_keeps_its_seeds_and_fuzzes_nothing(tmp_path) -> None:
    ex = FakeExecutor()
    campaign, out = campaign_run(tmp_path, FairFuzzScheduler(), ex, b"\x01\x02\x01", 5000,
                                 stopped=True)
    assert campaign.stop.requested and not ex.requests
    assert campaign.ended_by == "SIGTERM"
    assert len(list((out.root / "queue").glob("id:*"))) == 1


def test_fairfuzz_targets_the_rarest_branch_and_masks_havoc(tmp_path) -> None:
    ex, _ = run_campaign(tmp_path, FairFuzzScheduler())
    first = ex.requests[0]
    assert first.kind == StageKind.MASK and first.target == 2  # byte 1 -> edge 2, rarer than edge 1
    havoc = next(r for r in ex.requests if r.kind == StageKind.HAVOC)
    assert havoc.target == 2 and havoc.mask is first.mask
    assert not any(r.kind not in (StageKind.MASK, StageKind.HAVOC) for r in ex.requests)


def test_no_mask_option_targets_without_masking(tmp_path) -> None:
    ex, _ = run_campaign(tmp_path, FairFuzzScheduler(use_mask=False), use_mask=False)
    assert all(r.kind == StageKind.HAVOC and r.mask is None for r in ex.requests)
    assert all(r.target is not None for r in ex.requests)


def test_afl_schedule_is_the_same_engine_without_target_or_mask(tmp_path) -> None:
    ex, _ = run_campaign(tmp_path, AflScheduler(), schedule=Schedule.AFL)
    assert ex.requests and all(r.target is None and r.mask is None for r in ex.requests)


def test_deterministic_stages_only_with_D_and_with_the_mask(tmp_path) -> None:
    ex, _ = run_campaign(tmp_path, FairFuzzScheduler(), deterministic=True)
    det = [r for r in ex.requests if r.kind not in (StageKind.MASK, StageKind.HAVOC)]
    assert {r.kind for r in det} >= {StageKind.FLIP1, StageKind.ARITH8, StageKind.INTEREST32}
    assert all(r.mask is not None for r in det)
    assert StageKind.TOKEN_INSERT not in {r.kind for r in det}  # no dictionary


def test_shadow_mode_runs_plain_shadows_first_and_logs_table_2(tmp_path) -> None:
    ex, out = run_campaign(tmp_path, FairFuzzScheduler(), shadow=True)
    havocs = [r for r in ex.requests if r.kind == StageKind.HAVOC and not r.splice_with]
    assert havocs[0].shadow and havocs[0].mask is None
    assert not havocs[1].shadow and havocs[1].mask is not None
    assert havocs[0].budget == havocs[1].budget
    table = summarize(out.root / LOG_NAME)
    assert table.parents >= 1 and table.det_mask is None and table.havoc_plain is not None


def test_findings_are_saved_with_afl_names(tmp_path) -> None:
    _, out = run_campaign(tmp_path, FairFuzzScheduler())
    queue = sorted(p.name for p in out.queue.iterdir() if p.is_file())
    assert queue[0] == "id:000000,time:0,execs:0,orig:s1"
    assert queue[1].startswith("id:000001,src:000000,time:") and queue[1].endswith(",op:havoc,+cov")
    readme, crash = sorted(p.name for p in out.crashes.iterdir())
    assert readme == "README.txt" and crash.startswith("id:000000,sig:11,src:000000,")
    stats = out.previous_stats()
    assert stats["corpus_count"] == "2" and stats["saved_crashes"] == "1"
    assert int(stats["execs_done"]) >= 5000


@pytest.mark.parametrize("only_empty_files", [False, True])
def test_seed_dirs_without_usable_files_are_refused(tmp_path, only_empty_files) -> None:
    seeds = tmp_path / "in"
    seeds.mkdir()
    if only_empty_files:
        (seeds / "empty").write_bytes(b"")
    with pytest.raises(FuzzerError, match="no usable seeds"):
        read_seeds(seeds)


class FindingForAWhile(FakeExecutor):
    """Fuzzing the seed (once a cycle) finds an input with a new edge, ``finds`` times."""

    def __init__(self, finds: int) -> None:
        super().__init__()
        self.left = finds

    def run_stage(self, request: StageRequest) -> Iterator[Finding | None]:
        self.requests.append(request)
        request.execs = request.budget or 10
        self.execs += request.execs
        if request.kind == StageKind.HAVOC and request.data == b"\x01" and self.left:
            self.left -= 1
            data = bytes([100 + self.left])
            yield Finding(FindingKind.NEW_PATH, data, new_edges=True, edges=self.edges(data))
        yield None


def test_havoc_blocks_stay_small_until_cycles_stop_finding(tmp_path, monkeypatch) -> None:
    """After the first minutes: while cycles find entries havoc gets level 1 (small blocks
    only); each whole cycle without a find raises it by one (AFL raised it with every
    queue cycle)."""
    monkeypatch.setattr(energy, "SMALL_BLOCKS_SECONDS", 0)
    ex = FindingForAWhile(finds=4)
    campaign, _ = campaign_run(tmp_path, AflScheduler(), ex, b"\x01", 60000)
    levels = [r.cycle for r in ex.requests if r.kind == StageKind.HAVOC]
    cursor = campaign.scheduler.cursor
    assert levels == sorted(levels) and max(levels) == 1 + cursor.stalled_cycles > 2
    assert cursor.cycle >= cursor.stalled_cycles + 4  # cycles that found kept level 1


def test_havoc_blocks_stay_small_in_the_first_minutes(tmp_path) -> None:
    """As AFL++ 4: small blocks only for the first ten minutes, stalled cycles or not."""
    ex = FindingForAWhile(finds=1)
    campaign, _ = campaign_run(tmp_path, AflScheduler(), ex, b"\x01", 20000)
    assert campaign.scheduler.cursor.stalled_cycles > 2
    assert {r.cycle for r in ex.requests if r.kind == StageKind.HAVOC} == {1}


def test_a_stage_yields_its_findings_with_their_op_and_pauses_where_it_may_stop() -> None:
    ex = FakeExecutor()
    steps = list(stages.run(ex, stages.havoc(b"ab", None, None, 10, 1)))
    assert [(op, f and f.kind) for op, f, _ in steps] == [
        ("havoc", FindingKind.NEW_PATH), ("havoc", FindingKind.CRASH), ("havoc", None),
        ("havoc", None)]
    det = stages.deterministic(b"ab", None, None, tokens=0, level=1)
    assert [op for op, _ in det.requests][-1] == "int32"  # no token stages without tokens
    assert [step.op for step in stages.run(ex, det)].count("flip1") == 2  # a slice, then the end
    assert det.execs == 10 * len(det.requests)


def test_havoc_then_splice_names_each_finding_by_the_cycle_that_made_it() -> None:
    [(op, request)] = stages.havoc_then_splice(b"ab", (b"cd",), None, None, 10, 5, 1).requests
    assert request.plain == 10 and request.budget == 5
    assert stages.step_op(op, request, Finding(FindingKind.NEW_PATH, b"x")) == "havoc"
    assert stages.step_op(op, request, Finding(FindingKind.NEW_PATH, b"x", partner=0)) == "splice"


class TrimmingToTheTarget(FakeExecutor):
    """Trimming to a target keeps only the input's first byte; AFL's trim keeps it all."""

    def trim(self, data: bytes, target: int | None, checksum: int) -> tuple[bytes, int]:
        return (data if target is None else data[:1]), 10


def test_target_trimming_mutates_a_trimmed_copy_and_keeps_the_entry(tmp_path) -> None:
    """FairFuzz -r: the mask and the stages get the trimmed copy; the queue entry keeps its
    bytes, in memory and on disk, and so its edges."""
    ex = TrimmingToTheTarget()
    campaign, out = campaign_run(tmp_path, FairFuzzScheduler(), ex, b"\x01\x02\x01", 5000,
                                 target_trim=True)
    seed = campaign.queue[0]
    assert seed.data == b"\x01\x02\x01" and seed.path.read_bytes() == seed.data
    assert seed.edges.tolist() == [2, 3]
    fuzzed = [r for r in ex.requests if r.data in (b"\x01", b"\x01\x02\x01")]
    assert fuzzed and all(r.data == b"\x01" for r in fuzzed)
    focus = campaign.focuses.get(seed.id, 2) or campaign.focuses.get(seed.id, 3)
    assert focus is not None and focus.data == b"\x01" and focus.mask is not None \
        and len(focus.mask) == 2


class VariableZz(FakeExecutor):
    def calibrate(self, data: bytes, runs: int, count_hits: bool) -> Calibration:
        cal = super().calibrate(data, runs, count_hits)
        return replace(cal, variable=data == b"zz")


def test_queue_state_is_filled_as_afl_fills_it(tmp_path) -> None:
    campaign, out = campaign_run(tmp_path, FairFuzzScheduler(), VariableZz(), b"\x01\x02\x01",
                                 5000, deterministic=True)
    names = {e.path.name: e for e in campaign.queue}
    state = out.queue / ".state"
    assert {p.name for p in (state / "deterministic_done").iterdir()} == \
        {n for n, e in names.items() if e.passed_det} != set()
    assert {p.name for p in (state / "redundant_edges").iterdir()} == \
        {n for n, e in names.items() if not e.favoured}
    variable = list((state / "variable_behavior").iterdir())
    assert [p.name for p in variable] == [n for n, e in names.items() if e.variable] != []
    assert variable[0].is_symlink() and variable[0].read_bytes() == b"zz"
    assert (state / "auto_extras").is_dir()
