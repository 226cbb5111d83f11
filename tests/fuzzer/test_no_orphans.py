"""A fuzzer killed outright leaves no target behind: not its forkserver, not a hanging child.

SIGKILL runs no cleanup, so the kernel does it: the forkserver dies with ffuzz and each child
with the forkserver (PR_SET_PDEATHSIG on both).  Without that, every killed campaign left a
hanging child spinning on a core until someone noticed.
"""

from __future__ import annotations

import signal
from pathlib import Path

from forkserver_client import cpu_seconds
from fuzz_targets import MAGIC_C, build, ffuzz_env
from helpers import poll_until, run_until, target_processes


def test_a_fuzzer_killed_outright_leaves_no_target_running(tmp_path: Path):
    target = build(MAGIC_C, "magic", tmp_path, compiler="ffcc")  # hangs when byte 4 is 'H'
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a").write_bytes(b"AAAAHAAA")  # hangs while ffuzz calibrates it (-t 30000)

    def a_child_hangs() -> bool:
        return any(0.3 < cpu_seconds(pid) < float("inf")  # inf: a zombie, not running
                   for pid in target_processes(target))

    run_until(["ffuzz", "-i", str(seeds), "-o", str(tmp_path / "out"), "-t", "30000",
               "-E", "1000000", "--", str(target), "@@"],
              a_child_hangs, timeout=120, env=ffuzz_env(), stop=signal.SIGKILL)
    assert poll_until(lambda: not running(target), 5), running(target)


def running(binary: Path) -> list[int]:
    """Pids of processes of ``binary`` that are not zombies."""
    return [pid for pid in target_processes(binary) if cpu_seconds(pid) < float("inf")]
