"""Batches (ffcc_protocol.h): an ffcc-built persistent target runs many children per
request, and everything ffuzz learns is what one request per child would have taught;
what a child does outside its cases (hang or crash after its loop) costs at most a timeout,
and a crash there is pinned on the case that armed it."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from fuzz_targets import HOSTILE, build

from ffcc.fuzzer.engine.executor import (
    FindingKind,
    NativeExecutor,
    RunStatus,
    StageKind,
    StageRequest,
    TargetCommand,
    target_environment,
)
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.mask import empty_mask
from ffcc.native import lib

# Crashes on "PQ", hangs on "PH", calls exit() on "PX" (a run like any other), sleeps
# 30 ms on "PS", and leaves its persistent loop every 7 cases, so batches are cut short
# mid-way too.
BATCH_C = r"""
#include <stdlib.h>
#include <time.h>
__AFL_FUZZ_INIT();
int main(void) {
  __AFL_INIT();
  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
  while (__AFL_LOOP(7)) {
    int n = __AFL_FUZZ_TESTCASE_LEN;
    if (n > 1 && buf[0] == 'P') {
      if (buf[1] == 'Q') abort();
      if (buf[1] == 'H') for (;;) {}
      if (buf[1] == 'X') exit(0);
      if (buf[1] == 'S') nanosleep(&(struct timespec){0, 30000000}, NULL);
      if (buf[1] > 'a') n += 2;
    }
    if (n > 3 && buf[2] == buf[3]) n++;
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def batch_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(BATCH_C, "batched", tmp_path_factory.mktemp("batch"), compiler="ffcc")


# Generous enough that a loaded machine does not turn a quick case into a timeout, which
# would make the two ways of running differ.
TIMEOUT_MS = 200


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    return {name: build(HOSTILE[name].source, name, directory, compiler="ffcc")
            for name in ("hang_after_loop", "crash_between_cases")}


def executor(tmp_path: Path, binary: Path, batches: bool,
             timeout_ms: int = TIMEOUT_MS) -> NativeExecutor:
    return NativeExecutor(TargetCommand((str(binary),)), tmp_path / f"cur{batches}", timeout_ms,
                          seed=11, batches=batches)


def findings(ex: NativeExecutor, request: StageRequest) -> list[tuple]:
    return [(f.kind, f.data, f.signal, f.position, tuple(f.edges.tolist()), f.partner)
            for f in ex.run_stage(request) if f is not None]


def test_ffcc_runtime_runs_batches_and_afl_runtime_does_not(batch_target, targets, tmp_path):
    on, off = executor(tmp_path, batch_target, True), executor(tmp_path, batch_target, False)
    afl = executor(tmp_path, targets["persistent"], True)
    try:
        assert on.batch_size() > 1 and off.batch_size() == 1 and afl.batch_size() == 1
    finally:
        on.close(), off.close(), afl.close()


def hello_with_batch_layout(binary: Path, layout: int) -> int:
    """The hello ``binary`` sends to a fuzzer offering a batch segment that says ``layout``."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    sizes = (lib.FFCC_MAX_HELLO_MAPSIZE, lib.FFCC_SHM_FUZZ_MAX + 4, lib.FFCC_BATCH_SHM_SIZE)
    ids = [libc.shmget(0, size, 0o1600) for size in sizes]  # IPC_PRIVATE, IPC_CREAT | 0600
    try:
        assert min(ids) >= 0
        segment = libc.shmat(ids[2], None, 0)
        ctypes.c_uint32.from_address(segment).value = layout
        libc.shmdt(ctypes.c_void_p(segment))
        control, status = os.pipe(), os.pipe()

        def forkserver_fds() -> None:
            os.dup2(control[0], lib.FFCC_FD_CONTROL)
            os.dup2(status[1], lib.FFCC_FD_STATUS)

        try:
            child = subprocess.Popen([str(binary)], env=target_environment(binary, *ids),
                                     preexec_fn=forkserver_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL)
        finally:
            os.close(control[0]), os.close(status[1])
        hello = int.from_bytes(os.read(status[0], 4), "little")
        os.close(control[1]), os.close(status[0])  # the forkserver leaves when its pipes close
        child.wait(timeout=10)
        return hello
    finally:
        for shm_id in ids:
            libc.shmctl(shm_id, 0, None)  # IPC_RMID


def test_a_runtime_runs_no_batches_from_a_segment_of_another_layout(batch_target):
    assert hello_with_batch_layout(batch_target, lib.FFCC_BATCH_LAYOUT) & lib.FFCC_HELLO_BATCH
    hello = hello_with_batch_layout(batch_target, lib.FFCC_BATCH_LAYOUT - 1)
    assert hello & lib.FFCC_HELLO_ENABLED == lib.FFCC_HELLO_ENABLED
    assert not hello & lib.FFCC_HELLO_BATCH


@pytest.mark.parametrize("slice_seconds", [NativeExecutor.SLICE_SECONDS, 0.001])
def test_batches_teach_what_single_runs_teach(batch_target, tmp_path, monkeypatch,
                                              slice_seconds) -> None:
    """Same seeded stages with and without batches: the same finds, in the same order,
    with the same traces, hit counts, virgin maps and masks, crashes and hangs included.
    With tiny slices every batch in which a child dies is cut short there (its time is
    up), and the children that did not run are made again, the same."""
    monkeypatch.setattr(NativeExecutor, "SLICE_SECONDS", slice_seconds)
    outcomes = []
    for batches in (True, False):
        ex = executor(tmp_path, batch_target, batches)
        try:
            seen = [ex.calibrate(seed, 2, count_hits=True).status for seed in (b"Pa", b"PQ", b"PH")]
            mask = empty_mask(4)
            stages = [StageRequest(StageKind.MASK, b"Pbcc", mask=mask, target=int(
                          ex.calibrate(b"Pbcc", 1, count_hits=False).edges[-1])),
                      StageRequest(StageKind.ARITH8, b"Pbcc"),
                      StageRequest(StageKind.HAVOC, b"Pbcd", budget=3000, mask=mask),
                      StageRequest(StageKind.HAVOC, b"Pbcd", budget=700,
                                   splice_with=(b"AAAAAAA", b"Pbcd", b"PbAAx", b"QQQQQ")),
                      StageRequest(StageKind.HAVOC, b"Pbcd", budget=300, plain=500,
                                   splice_with=(b"PQAAAAA", b"xyzw!!"))]
            found = [findings(ex, request) for request in stages]
            counts = [(r.execs, r.target_hits) for r in stages]
            outcomes.append((seen, found, counts, mask.tolist(), ex.branch_hits().tolist(),
                             ex.virgin().tolist(), ex.counters().execs))
        finally:
            ex.close()
    batched, single = outcomes
    assert batched == single
    seen, found = batched[0], batched[1]
    assert seen == [RunStatus.OK, RunStatus.CRASH, RunStatus.TIMEOUT]
    kinds = {kind for stage in found for kind, *_ in stage}
    assert {FindingKind.NEW_PATH, FindingKind.CRASH} <= kinds


# One of 192 functions per case, chosen by its first byte: its edges lie in many 64-byte
# blocks of the map, and each case touches a few of them.
SPREAD_C = "\n".join(
    ["volatile int sink;"]
    + [f"__attribute__((noinline)) static void arm{k}(void) {{ sink = {k}; }}" for k in range(192)]
    + ["__AFL_FUZZ_INIT();", "int main(void) {", "  __AFL_INIT();",
       "  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;", "  while (__AFL_LOOP(1000)) {",
       "    if (__AFL_FUZZ_TESTCASE_LEN < 1) continue;", "    switch (buf[0] % 192) {"]
    + [f"    case {k}: arm{k}(); break;" for k in range(192)]
    + ["    }", "  }", "  return 0;", "}"])


def test_a_slot_holds_only_its_own_case(tmp_path) -> None:
    """A batch slot gets only the blocks its case touched (ffcc_protocol.h); every block an
    earlier case left there is cleared first, so hit counts and new bits are those of
    single runs on a target whose cases touch different blocks of a wide map."""
    target = build(SPREAD_C, "spread", tmp_path, compiler="ffcc")
    outcomes = []
    for batches in (True, False):
        ex = executor(tmp_path, target, batches)
        try:
            assert ex.batch_size() > 1 if batches else ex.batch_size() == 1
            found = findings(ex, StageRequest(StageKind.HAVOC, b"\x00\x40\x80", budget=2000))
            outcomes.append((found, ex.branch_hits().tolist(), ex.virgin().tolist()))
        finally:
            ex.close()
    batched, single = outcomes
    assert len(batched[0]) > 20  # cases reached many arms
    assert batched == single


# Labels of each form the label code takes: a comparison group (ROR on a < b), MCC's counts
# of a two-condition decision, floating-point AOR (a shared region); most cases make no label
# count, so a slot skips the label region there.
LABELLED_C = r"""
#include <unistd.h>
__AFL_FUZZ_INIT();
volatile double sink;
int main(void) {
  __AFL_INIT();
  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
  while (__AFL_LOOP(1000)) {
    if (__AFL_FUZZ_TESTCASE_LEN < 3 || buf[0] != 'L') continue;
    int a = buf[1], b = buf[2];
    if (a < b && b != 'z') sink = 1;
    if (a == 'f') sink = (double)b / 3.5;
  }
  return 0;
}
"""


def test_labels_reach_their_slots_as_single_runs_show_them(tmp_path) -> None:
    """The target copies its label region into a case's slot only when one of its labels
    counted (the label code says so, runtime/ffcc_map.c): every label form, counted in a
    batch among cases that count none, teaches what single runs teach."""
    source = tmp_path / "labelled.c"
    source.write_text(LABELLED_C)
    target = tmp_path / "labelled"
    subprocess.run(["ffcc", "--mcc", "--wm", "-O1", "-o", str(target), str(source)],
                   check=True, capture_output=True)
    labels = LabelMap.load(target)
    assert labels is not None
    outcomes = []
    for batches in (True, False):
        ex = executor(tmp_path, target, batches)
        try:
            found = findings(ex, StageRequest(StageKind.HAVOC, b"Lab", budget=3000))
            outcomes.append((found, ex.branch_hits().tolist(), ex.virgin().tolist()))
        finally:
            ex.close()
    batched, single = outcomes
    region = single[2][labels.region_start(len(single[2])):]
    assert sum(byte != 0xFF for byte in region) >= 6  # labels of each form counted
    assert batched == single


def test_a_crash_judged_in_its_slot_leaves_no_coverage_to_later_cases(tmp_path) -> None:
    """A crash is judged on its trace as hit / not hit, where every byte is non-zero.  Done
    in its batch slot, that left every block the target had not written non-zero, and the
    fuzzer clears only the blocks the target wrote: a later case in the slot, copied aside
    whole while a find was calibrated, showed the crash's unhit bytes as hit, and put every
    label of a campaign in the virgin map at once.  Finds calibrated as a campaign does,
    the virgin maps are those of single runs."""
    arms = SPREAD_C.replace("    case 7: arm7(); break;", "    case 7: abort();")
    target = build("#include <stdlib.h>\n" + arms, "spread_abort", tmp_path, compiler="ffcc")
    outcomes = []
    for batches in (True, False):
        ex = executor(tmp_path, target, batches)
        try:
            kinds = []
            for found in ex.run_stage(StageRequest(StageKind.HAVOC, b"\x00\x40\x80",
                                                   budget=4000)):
                if found is not None:
                    kinds.append(found.kind)
                    if found.kind == FindingKind.NEW_PATH:
                        ex.calibrate(found.data, 1, count_hits=False)
            outcomes.append((kinds, ex.virgin().tolist(), ex.virgin_crash().tolist()))
        finally:
            ex.close()
    batched, single = outcomes
    assert FindingKind.CRASH in batched[0] and batched[0].count(FindingKind.NEW_PATH) > 20
    assert batched == single


def test_splice_cycles_run_as_one_stage_and_name_their_partner(batch_target, tmp_path) -> None:
    """AFL's splice cycles in one request: `budget` children from each second parent in
    turn, none from a parent that has no cut with the input (here: the input itself), and
    each finding names the parent it was spliced with."""
    ex = executor(tmp_path, batch_target, True)
    try:
        partners = (b"PQAAAAA", b"Pbcd", b"xyzw!!")
        request = StageRequest(StageKind.HAVOC, b"Pbcd", budget=300, splice_with=partners)
        found = [f for f in ex.run_stage(request) if f is not None]
        assert request.execs == 600
        assert found and {f.partner for f in found} <= {0, 2}
        crashes = [f for f in found if f.kind == FindingKind.CRASH]
        assert crashes and all(f.partner == 0 for f in crashes)  # only "PQ..." gives the Q
    finally:
        ex.close()


def test_havoc_then_splice_runs_the_parent_alone_first(batch_target, tmp_path) -> None:
    """havoc and the splice cycles in one request: `plain` children of the input alone (no
    partner), then `budget` from each second parent."""
    ex = executor(tmp_path, batch_target, True)
    try:
        request = StageRequest(StageKind.HAVOC, b"Pbcd", budget=300, plain=400,
                               splice_with=(b"Pbcd", b"PQAAAAA"))
        found = [f for f in ex.run_stage(request) if f is not None]
        assert request.execs == 700  # the input itself has no cut: its cycle is skipped
        partners = [f.partner for f in found]
        assert partners[0] is None  # a fresh map: the first child is new, and plain
        assert set(partners) <= {None, 1} and partners == sorted(partners, key=lambda p: p or 0)
    finally:
        ex.close()


def test_a_batch_case_is_timed_as_the_clock_runs(batch_target, tmp_path) -> None:
    """The target times its cases (with the time-stamp counter where the fuzzer offers its
    rate, else CLOCK_MONOTONIC), and the slowest case is the 30 ms one."""
    ex = executor(tmp_path, batch_target, True)
    try:
        ex.calibrate(b"Pb", 3, count_hits=False)
        assert ex.counters().slowest_exec_ms < 10
        ex.calibrate(b"PS", 1, count_hits=False)
        assert 29 <= ex.counters().slowest_exec_ms < 58
    finally:
        ex.close()


def test_exit_inside_a_batch_is_a_run_and_the_rest_still_runs(batch_target, tmp_path) -> None:
    ex = executor(tmp_path, batch_target, True)
    try:
        request = StageRequest(StageKind.FLIP1, b"PX\x00\x00")
        list(ex.run_stage(request))
        assert request.execs == 32 and ex.counters().crashes == 0
        assert ex.calibrate(b"Pb", 1, count_hits=False).status == RunStatus.OK
    finally:
        ex.close()



def test_a_hang_after_the_loop_costs_one_timeout_per_child(hostile, tmp_path) -> None:
    """Each child spins at exit after its 100 cases: it is killed a timeout later, counted as
    a hang, and the stage goes on in a fresh child."""
    ex = executor(tmp_path, hostile["hang_after_loop"], True, timeout_ms=20)
    try:
        request = StageRequest(StageKind.HAVOC, b"xyz", budget=1000)
        started = time.monotonic()
        kinds = {f.kind for f in ex.run_stage(request) if f is not None}
        assert time.monotonic() - started < 60
        assert request.execs > 900  # a few havoc rounds found no room
        assert kinds <= {FindingKind.NEW_PATH}
        assert ex.counters().hangs >= 9  # one per child that reached its end
    finally:
        ex.close()


@pytest.mark.parametrize("batches", [True, False])
def test_a_crash_at_exit_is_saved(hostile, tmp_path, batches) -> None:
    """The program aborts at exit when a case starting "AB" ran in its process.  With batches
    the crash is pinned on a case that reproduces it alone; without, it is the last case
    before the exit, as in afl-fuzz."""
    binary = hostile["crash_between_cases"]
    ex = executor(tmp_path, binary, batches)
    try:
        request = StageRequest(StageKind.HAVOC, b"AA", budget=20000)
        crashes = [f for f in ex.run_stage(request)
                   if f is not None and f.kind == FindingKind.CRASH]
    finally:
        ex.close()
    assert crashes and crashes[0].signal == signal.SIGABRT
    if batches:
        assert crashes[0].data.startswith(b"AB")
        alone = subprocess.run([str(binary)], input=crashes[0].data)
        assert alone.returncode == -signal.SIGABRT


@pytest.mark.parametrize("batches", [True, False])
def test_a_signal_cuts_a_hanging_case_short(batch_target, tmp_path, batches) -> None:
    """A signal to the fuzzer (Ctrl-C) returns control to Python at once, not when the
    hanging case times out; the case does not count, and the target runs on afterwards."""
    ex = executor(tmp_path, batch_target, batches, timeout_ms=30_000)
    handled: list[float] = []  # Python runs the handler as soon as the C core returns
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: handled.append(time.monotonic()))
    timer = threading.Timer(0.3, signal.raise_signal, (signal.SIGUSR1,))
    try:
        request = StageRequest(StageKind.HAVOC, b"PHxy", budget=100)
        started = time.monotonic()
        timer.start()
        for _ in ex.run_stage(request):
            if handled:
                break
        assert handled and handled[0] - started < 5
        assert ex.counters().hangs == 0
        assert ex.calibrate(b"Pb", 1, count_hits=False).status == RunStatus.OK
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
        ex.close()
