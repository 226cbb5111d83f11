"""CPU binding as afl-fuzz does it: a free core, none when asked not to, kernel threads ignored."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ffcc.fuzzer.parallel.affinity import pinned_cpus


def _proc(tmp_path, pid: int, cpus: str, user: bool = True) -> None:
    (tmp_path / str(pid)).mkdir()
    vm = "VmSize:\t  1000 kB\n" if user else ""
    (tmp_path / str(pid) / "status").write_text(f"Name:\tx\n{vm}Cpus_allowed_list:\t{cpus}\n")


def test_only_user_processes_pinned_to_one_cpu_count(tmp_path):
    _proc(tmp_path, 10, "3")            # another fuzzer on CPU 3
    _proc(tmp_path, 11, "0-7")          # an ordinary process
    _proc(tmp_path, 12, "1", user=False)  # a kernel thread (no VmSize)
    _proc(tmp_path, 13, "2,5")
    assert pinned_cpus(tmp_path) == {3}


# Binds as ffuzz does, reading other processes' bindings from the directory argv[1] (a fake
# /proc, so the test does not depend on what else runs on the machine), and prints the CPU
# chosen and the CPUs allowed afterwards.
BIND = ("import os, sys; from pathlib import Path; "
        "from ffcc.fuzzer.parallel.affinity import bind_to_free_cpu; "
        "from ffcc.fuzzer.engine.config import read_afl_environment; "
        "cpu = bind_to_free_cpu(read_afl_environment().no_affinity, Path(sys.argv[1])); "
        "print(cpu, sorted(os.sched_getaffinity(0)))")


def _bind(proc, **env: str) -> tuple[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "AFL_NO_AFFINITY"}
    out = subprocess.run([sys.executable, "-c", BIND, str(proc)], env={**environ, **env},
                         capture_output=True, text=True, check=True).stdout
    cpu, allowed = out.split(" ", 1)
    return cpu, allowed.strip()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_binds_to_the_first_cpu_no_other_process_is_pinned_to(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    _proc(tmp_path, 10, str(allowed[0]))  # another fuzzer holds the first CPU
    assert _bind(tmp_path) == (str(allowed[1]), f"[{allowed[1]}]")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_shares_when_every_cpu_is_taken_and_stays_unbound_when_told(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    for pid, cpu in enumerate(allowed, start=10):
        _proc(tmp_path, pid, str(cpu))
    assert _bind(tmp_path) == ("None", str(allowed))
    (tmp_path / "10").rename(tmp_path / "free")  # the first CPU free again
    assert _bind(tmp_path, AFL_NO_AFFINITY="1") == ("None", str(allowed))
