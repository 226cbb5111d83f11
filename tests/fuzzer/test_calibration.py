"""Calibration runs (7, 12 when the map varies) and hang confirmation with the longer
hang timeout, as AFL++ 4.04c does them, on purpose-built targets."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fuzz_targets import CLANG_FAST, build, ffuzz_env, reading_main
from helpers import one_seed

from ffcc.fuzzer.engine.calibration import CAL_RUNS, CAL_RUNS_VARIABLE, calibrate, confirm_hang
from ffcc.fuzzer.engine.executor import NativeExecutor, RunStatus, TargetCommand

# Three branches chosen by the pid and the clock: the map differs between runs of one
# input (all seven runs alike has a chance of about 1 in 250,000).
VARIABLE_C = r"""
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned v = (unsigned)getpid() ^ (unsigned)(ts.tv_nsec >> 8);
  if (v & 1) puts("a");
  if (v & 2) puts("b");
  if (v & 4) puts("c");
  return 0;
}
"""

# 'xS' runs 300 ms (slow, not hung), 'xH' never ends, 'xC' crashes after 300 ms.
SLOW_C = ("\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n" + reading_main(16)
          + r"""  if (n > 1 && b[0] == 'x') {
    if (b[1] == 'S') usleep(300000);
    else if (b[1] == 'H') for (;;) {}
    else if (b[1] == 'C') { usleep(300000); abort(); }
  }
  return 0;
}
""")

# Stalls 300 ms on its first run only (the one that creates the file named by STALL_MARKER):
# a run a loaded machine held up.
STALL_ONCE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
  const char *marker = getenv("STALL_MARKER");
  if (marker && access(marker, F_OK) != 0) {
    FILE *f = fopen(marker, "w");
    if (f) fclose(f);
    usleep(300000);
  }
  return 0;
}
"""

needs_afl_cc = pytest.mark.skipif(CLANG_FAST is None, reason="afl-clang-fast not installed")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if CLANG_FAST is None:
        pytest.skip("afl-clang-fast not installed")
    d = tmp_path_factory.mktemp("calibration")
    return {"variable": build(VARIABLE_C, "variable", d), "slow": build(SLOW_C, "slow", d),
            "stall_once": build(STALL_ONCE_C, "stall_once", d)}


def runs_of(ex: NativeExecutor, data: bytes) -> tuple[int, bool]:
    before = ex.counters().execs
    cal = calibrate(ex, data, count_hits=False)
    return ex.counters().execs - before, cal.variable


@needs_afl_cc
def test_variable_maps_get_twelve_runs_stable_ones_seven(built, targets, tmp_path) -> None:
    variable = NativeExecutor(TargetCommand((str(built["variable"]),)), tmp_path / "a", 1000, 0)
    stable = NativeExecutor(TargetCommand((str(targets["branchy"]), "@@")), tmp_path / "b", 1000, 0)
    try:
        assert runs_of(variable, b"x") == (CAL_RUNS_VARIABLE, True) == (12, True)
        assert runs_of(stable, b"ab3x4") == (CAL_RUNS, False) == (7, False)
        assert variable.variable_bytes().any() and not stable.variable_bytes().any()
    finally:
        variable.close()
        stable.close()


@needs_afl_cc
def test_a_suspected_hang_is_run_again_with_the_hang_timeout(built, tmp_path) -> None:
    ex = NativeExecutor(TargetCommand((str(built["slow"]), "@@")), tmp_path / "cur", 50, 0)
    try:
        assert ex.calibrate(b"xS", 1, False).status == RunStatus.TIMEOUT  # at 50 ms
        assert confirm_hang(ex, b"xS", 1000) == (RunStatus.OK, 0)  # slow, not hung
        assert confirm_hang(ex, b"xH", 1000) == (RunStatus.TIMEOUT, 0)
        assert confirm_hang(ex, b"xC", 1000) == (RunStatus.CRASH, 6)
        assert ex.timeout_ms == 50  # the fuzzing timeout again
        assert confirm_hang(ex, b"xS", 40) == (RunStatus.TIMEOUT, 0)  # no longer: no rerun
    finally:
        ex.close()


@needs_afl_cc
def test_the_campaign_saves_only_confirmed_hangs(built, tmp_path) -> None:
    """-D reaches 'xS', 'xH' and 'xC' from 'xA' (arith8); at -t 50 all three time out,
    and only the one still running after AFL_HANG_TMOUT is a hang."""
    seeds = one_seed(tmp_path, b"xA")
    out = tmp_path / "out"
    done = subprocess.run(["ffuzz", "-i", str(seeds), "-o", str(out), "-t", "50", "-D",
                           "-p", "afl", "-E", "1500", "--seed", "3", "--",
                           str(built["slow"]), "@@"],
                          capture_output=True, text=True, timeout=300,
                          env=ffuzz_env(AFL_HANG_TMOUT="1000"))
    assert done.returncode == 0, done.stderr
    hangs = [p.read_bytes() for p in (out / "default" / "hangs").glob("id:*")]
    crashes = [p.read_bytes() for p in (out / "default" / "crashes").glob("id:*")]
    assert [h[:2] for h in hangs] == [b"xH"]
    assert any(c.startswith(b"xC") for c in crashes)


@needs_afl_cc
def test_a_seed_that_times_out_once_is_run_again_before_it_is_skipped(built, tmp_path) -> None:
    """One run can stall past the timeout on a loaded machine: a campaign whose only seed
    timed out once starts; a seed that times out twice is skipped (here: no campaign)."""
    marker = tmp_path / "stalled"
    stalled_once = subprocess.run(["ffuzz", "-i", str(one_seed(tmp_path, b"x")), "-o",
                                   str(tmp_path / "once"), "-t", "50", "-E", "100", "--",
                                   str(built["stall_once"])], capture_output=True, text=True,
                                  timeout=120, env=ffuzz_env(STALL_MARKER=str(marker)))
    assert marker.exists()  # the first run stalled
    assert stalled_once.returncode == 0, stalled_once.stderr
    hung = tmp_path / "hung"
    hung.mkdir()
    (hung / "s").write_bytes(b"xH")
    always = subprocess.run(["ffuzz", "-i", str(hung), "-o", str(tmp_path / "always"), "-t", "50",
                             "-E", "100", "--", str(built["slow"]), "@@"], capture_output=True,
                            text=True, timeout=120, env=ffuzz_env())
    assert always.returncode != 0
    assert "all 1 seeds crash or time out (0 crash, 1 time out after 50 ms)" in always.stderr
