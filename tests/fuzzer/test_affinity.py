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


BIND = ("import os; from ffcc.fuzzer.parallel.affinity import bind_to_free_cpu; "
        "from ffcc.fuzzer.engine.config import read_afl_environment; "
        "cpu = bind_to_free_cpu(read_afl_environment().no_affinity); "
        "print(cpu, sorted(os.sched_getaffinity(0)))")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_binds_to_a_free_cpu_unless_told_not_to():
    env = {k: v for k, v in os.environ.items() if k != "AFL_NO_AFFINITY"}
    cpu, allowed = subprocess.run([sys.executable, "-c", BIND], env=env, capture_output=True,
                                  text=True, check=True).stdout.split(" ", 1)
    assert allowed.strip() == f"[{cpu}]" and int(cpu) not in pinned_cpus()
    off = subprocess.run([sys.executable, "-c", BIND], env={**env, "AFL_NO_AFFINITY": "1"},
                         capture_output=True, text=True, check=True).stdout
    assert off.startswith("None ") and off.count(",") >= 1
