"""Batches (ffcc_protocol.h): an ffcc-built persistent target runs many children per
request, and everything ffuzz learns is what one request per child would have taught."""
from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_targets import build

from ffcc.fuzzer.executor import (
    FindingKind,
    NativeExecutor,
    RunStatus,
    StageKind,
    StageRequest,
    TargetCommand,
)
from ffcc.fuzzer.mask import empty_mask

# Crashes on "PQ", hangs on "PH", calls exit() on "PX" (a run like any other), and
# leaves its persistent loop every 7 cases, so batches are cut short mid-way too.
BATCH_C = r"""
#include <stdlib.h>
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


def executor(tmp_path: Path, binary: Path, batches: bool) -> NativeExecutor:
    return NativeExecutor(TargetCommand((str(binary),)), tmp_path / f"cur{batches}", 40, seed=11,
                          batches=batches)


def findings(ex: NativeExecutor, request: StageRequest) -> list[tuple]:
    return [(f.kind, f.data, f.signal, f.position, tuple(f.edges.tolist()))
            for f in ex.run_stage(request) if f is not None]


def test_ffcc_runtime_runs_batches_and_afl_runtime_does_not(batch_target, targets, tmp_path):
    on, off = executor(tmp_path, batch_target, True), executor(tmp_path, batch_target, False)
    afl = executor(tmp_path, targets["persistent"], True)
    try:
        assert on.batch_size() > 1 and off.batch_size() == 1 and afl.batch_size() == 1
    finally:
        on.close(), off.close(), afl.close()


def test_batches_teach_what_single_runs_teach(batch_target, tmp_path) -> None:
    """Same seeded stages with and without batches: the same finds, in the same order,
    with the same traces, hit counts, virgin maps and masks, crashes and hangs included."""
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
                      StageRequest(StageKind.HAVOC, b"Pbcd", budget=2000, splice_with=b"AAAAAAA")]
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


def test_exit_inside_a_batch_is_a_run_and_the_rest_still_runs(batch_target, tmp_path) -> None:
    ex = executor(tmp_path, batch_target, True)
    try:
        request = StageRequest(StageKind.FLIP1, b"PX\x00\x00")
        list(ex.run_stage(request))
        assert request.execs == 32 and ex.counters().crashes == 0
        assert ex.calibrate(b"Pb", 1, count_hits=False).status == RunStatus.OK
    finally:
        ex.close()

