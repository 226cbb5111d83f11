"""The C core against real targets: both hellos, inputs, faults, stages, masks."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import NEW_HELLO_C, SILENT_C, build

from ffcc.fuzzer.engine.executor import (
    NativeExecutor,
    RunStatus,
    StageKind,
    StageRequest,
    TargetCommand,
    check_target,
)
from ffcc.fuzzer.engine.mask import ALL, MaskFlag, empty_mask
from ffcc.fuzzer.errors import FuzzerError
from ffcc.native import ffi, lib


def executor(tmp_path: Path, *argv: str, timeout_ms: int = 200) -> NativeExecutor:
    return NativeExecutor(TargetCommand(tuple(argv)), tmp_path / "cur", timeout_ms, seed=7)


def edges_of(ex: NativeExecutor, data: bytes) -> set[int]:
    cal = ex.calibrate(data, 2, count_hits=False)
    assert cal.status == RunStatus.OK
    return set(cal.edges.tolist())


def test_old_hello_reports_map_size_and_different_inputs_differ(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        assert 0 < ex.map_size <= 65536 and ex.map_size % 64 == 0
        assert edges_of(ex, b"FUx") != edges_of(ex, b"abc")
        assert edges_of(ex, b"FUx") == edges_of(ex, b"FUy")
    finally:
        ex.close()


def test_crash_and_timeout_are_told_apart(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@", timeout_ms=50)
    try:
        crash = ex.calibrate(b"FUZZ", 1, count_hits=False)
        assert crash.status == RunStatus.CRASH and crash.signal == 6
        assert ex.calibrate(b"aaaaH", 1, count_hits=False).status == RunStatus.TIMEOUT
        assert ex.calibrate(b"aaaaa", 1, count_hits=False).status == RunStatus.OK
        assert ex.counters().crashes == 1 and ex.counters().hangs == 1
    finally:
        ex.close()


def test_a_fault_is_judged_on_the_trace_its_run_left(targets, tmp_path) -> None:
    """Input-to-state judges each crash it runs into without running it again."""
    ex = executor(tmp_path, str(targets["magic"]), "@@", timeout_ms=50)
    try:
        crash = ex.calibrate(b"FUZZ", 1, count_hits=False).status
        assert ex.last_fault_is_new(crash) and ex.counters().execs == 1
        assert ex.calibrate(b"FUZZ", 1, count_hits=False).status == crash
        assert not ex.last_fault_is_new(crash), "the first joined the crash map"
        hang = ex.calibrate(b"aaaaH", 1, count_hits=False).status
        assert ex.last_fault_is_new(hang) and ex.counters().execs == 3
        assert ex.calibrate(b"aaaaa", 1, count_hits=False).status == RunStatus.OK
        assert not ex.last_fault_is_new(RunStatus.OK)
    finally:
        ex.close()


def test_stdin_input_when_there_is_no_file_argument(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]))
    try:
        assert ex.calibrate(b"FUZZ", 1, count_hits=False).status == RunStatus.CRASH
        assert edges_of(ex, b"FUx") != edges_of(ex, b"xx")
    finally:
        ex.close()


def test_persistent_target_takes_inputs_through_shared_memory(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["persistent"]))
    try:
        assert ex.uses_shared_memory_input()
        assert edges_of(ex, b"PA") != edges_of(ex, b"AA")
        assert ex.calibrate(b"PQ", 1, count_hits=False).status == RunStatus.CRASH
        assert ex.calibrate(b"PA", 1, count_hits=False).status == RunStatus.OK  # restarted fine
    finally:
        ex.close()


def test_new_style_hello_with_map_size_and_dictionary(tmp_path) -> None:
    server = build(NEW_HELLO_C, "new_hello", tmp_path, compiler=shutil.which("cc"))
    ex = executor(tmp_path, str(server), "@@")
    try:
        assert ex.map_size == 128
        assert ex.token_counts() == (2, 2)
        assert edges_of(ex, b"A") == {1 + ord("A") % 127}
        assert edges_of(ex, b"B") == {1 + ord("B") % 127}
    finally:
        ex.close()


def test_uninstrumented_targets_are_refused_in_one_line(tmp_path) -> None:
    plain = build("int main(void) { return 0; }", "plain", tmp_path, compiler=shutil.which("cc"))
    with pytest.raises(FuzzerError, match="not instrumented"):
        check_target(plain)
    silent = build(SILENT_C, "silent", tmp_path, compiler=shutil.which("cc"))
    with pytest.raises(FuzzerError, match="no forkserver hello"):
        executor(tmp_path, str(silent))
    with pytest.raises(FuzzerError, match="not found"):
        check_target(tmp_path / "missing")


def z_branch(ex: NativeExecutor) -> int:
    """The edge taken exactly when the input starts with FUZ."""
    (only,) = (edges_of(ex, b"FUZa") & edges_of(ex, b"FUZ") & edges_of(ex, b"FUZbbbbb")) \
        - edges_of(ex, b"FUaa") - edges_of(ex, b"FU")
    return only


def test_mask_stage_is_algorithm_3(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        target = z_branch(ex)
        mask = empty_mask(4)
        request = StageRequest(StageKind.MASK, b"FUZa", mask=mask, target=target)
        list(ex.run_stage(request))
        assert request.execs == 3 * 4 + 1
        # F, U, Z: any change loses the branch; 'a' and the end are free.
        assert mask.tolist()[:3] == [0, 0, 0]
        assert mask[3] == ALL
        assert mask[4] == MaskFlag.INSERT
        assert request.target_hits == 3 + 1
    finally:
        ex.close()


def test_one_set_of_mask_probes_makes_each_branchs_mask(targets, tmp_path) -> None:
    """The masks made alongside the target's are those the branches' own probes make."""
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        target = z_branch(ex)
        others = np.array(sorted(edges_of(ex, b"FUZa") - {target}), np.int64)
        mask, also_masks = empty_mask(4), np.zeros((len(others), 5), np.uint8)
        list(ex.run_stage(StageRequest(StageKind.MASK, b"FUZa", mask=mask, target=target,
                                       also=others, also_masks=also_masks)))
        alone = [empty_mask(4) for _ in others]
        for branch, own in zip(others.tolist(), alone):
            list(ex.run_stage(StageRequest(StageKind.MASK, b"FUZa", mask=own, target=branch)))
        assert [m.tolist() for m in also_masks] == [m.tolist() for m in alone]
        assert len({m.tobytes() for m in (mask, *alone)}) > 1  # the branches differ
    finally:
        ex.close()


def test_deterministic_stages_skip_masked_bytes_except_bit_flips(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        data, protect_all = b"abcd", empty_mask(4)
        flips = StageRequest(StageKind.FLIP1, data, mask=protect_all)
        list(ex.run_stage(flips))
        assert flips.execs == 8 * len(data)
        arith = StageRequest(StageKind.ARITH8, data, mask=protect_all)
        list(ex.run_stage(arith))
        assert arith.execs == 0
        one_free = empty_mask(4)
        one_free[2] = MaskFlag.OVERWRITE
        arith = StageRequest(StageKind.ARITH8, data, mask=one_free)
        list(ex.run_stage(arith))
        assert arith.execs == 2 * 35
    finally:
        ex.close()


def test_masked_havoc_hits_the_target_more_often(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        target = z_branch(ex)
        mask = empty_mask(8)
        list(ex.run_stage(StageRequest(StageKind.MASK, b"FUZabcde", mask=mask, target=target)))
        runs = {}
        for name, m in (("plain", None), ("masked", mask)):
            request = StageRequest(StageKind.HAVOC, b"FUZabcde", budget=300, mask=m,
                                   target=target, shadow=True)
            list(ex.run_stage(request))
            runs[name] = request.target_hits / request.execs
        assert runs["masked"] > 0.9 > runs["plain"]
    finally:
        ex.close()


def test_shadow_stages_have_no_side_effects(targets, tmp_path) -> None:
    ex = executor(tmp_path, str(targets["magic"]), "@@")
    try:
        ex.calibrate(b"aaaaa", 1, count_hits=True)
        hits, virgin = ex.branch_hits().copy(), ex.virgin().copy()
        request = StageRequest(StageKind.HAVOC, b"FUZa", budget=200, shadow=True)
        assert [f for f in ex.run_stage(request) if f is not None] == []
        assert request.execs == 200
        assert np.array_equal(hits, ex.branch_hits()) and np.array_equal(virgin, ex.virgin())
    finally:
        ex.close()


def havoc_engine():
    engine = ffi.gc(lib.ffcc_engine_new(65536, 3), lib.ffcc_engine_free)
    buf = ffi.new("uint8_t[]", lib.FFCC_SHM_FUZZ_MAX)
    mask = ffi.new("uint8_t[]", lib.FFCC_SHM_FUZZ_MAX + 1)
    return engine, buf, mask


def test_havoc_never_touches_protected_bytes_and_keeps_the_mask_aligned() -> None:
    engine, buf, mask = havoc_engine()
    data = b"ab" + b"MAGIC" + b"cdefgh"
    for round_ in range(300):
        ffi.memmove(buf, data, len(data))
        m = np.full(len(data) + 1, int(ALL), np.uint8)
        m[2:7] = 0  # M A G I C: no overwrite, no delete, no insert before A..C
        ffi.memmove(mask, m.tobytes(), len(m))
        length = len(data)
        for _ in range(4):  # several stacked rounds reuse the edited mask
            length = lib.ffcc_havoc_mutate(engine, buf, length, mask, 3)
        out = bytes(ffi.buffer(buf, length))
        after = np.frombuffer(ffi.buffer(mask, length + 1), np.uint8)
        # Clones may copy MAGIC elsewhere (unprotected); the original survives
        # intact, with its protection still lined up on it.
        protected = [at for at in range(length - 4)
                     if out[at:at + 5] == b"MAGIC" and not after[at:at + 5].any()]
        assert len(protected) == 1, (round_, out)


def test_havoc_without_mask_changes_everything_eventually() -> None:
    engine, buf, _ = havoc_engine()
    changed = np.zeros(8, bool)
    for _ in range(200):
        ffi.memmove(buf, b"01234567", 8)
        length = lib.ffcc_havoc_mutate(engine, buf, 8, ffi.NULL, 1)
        out = bytes(ffi.buffer(buf, length))
        changed |= [i >= len(out) or out[i] != b"01234567"[i] for i in range(8)]
    assert changed.all()


def test_splice_keeps_the_first_parts_mask() -> None:
    """FairFuzz: a spliced child is mutated under its first parent's mask up to the split;
    the second parent's bytes carry no mask (everything allowed)."""
    engine, _, _ = havoc_engine()
    a, b = b"AAAAxxxxxxBBBB", b"AAAAyyyyyyCCCCDD"
    a_mask = bytes([1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7])
    out, out_mask = ffi.new("uint8_t[]", 64), ffi.new("uint8_t[]", 65)
    split = ffi.new("uint32_t *")
    splits = set()
    for _ in range(50):
        n = lib.ffcc_splice(engine, a, len(a), a_mask, b, len(b), out, out_mask, split)
        s = split[0]
        splits.add(s)
        assert n == len(b) and 4 <= s < 13  # between the first and last differing byte
        assert bytes(ffi.buffer(out, n)) == a[:s] + b[s:]
        assert bytes(ffi.buffer(out_mask, s)) == a_mask[:s]
        assert set(bytes(ffi.buffer(out_mask, n + 1))[s:]) == {int(ALL)}
    assert len(splits) > 1
    assert lib.ffcc_splice(engine, a, len(a), a_mask, a, len(a), out, out_mask, split) == 0
