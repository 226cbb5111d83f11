"""The runtime's side of the AFL++ 4.04c forkserver protocol and its coverage map."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from forkserver_client import ForkServer, hello_map_size
from helpers import REPO, ffcc, have, needs_clang, run_program, sample_sources

FS_OPT_ENABLED, FS_OPT_SHDMEM_FUZZ = 0x80000001, 0x01000000
BACKENDS = [b for b in ("gcc", "clang") if have(b)]


def build_sample(tmp_path: Path, name: str, backend: str) -> Path:
    ffcc(f"--cc={backend}", "-o", f"{tmp_path}/b/", *sample_sources(name), cwd=REPO)
    return tmp_path / "b" / name


def edges(map_bytes: bytes) -> set[int]:
    return {i for i, v in enumerate(map_bytes) if v}


@pytest.mark.parametrize("backend", BACKENDS)
def test_hello_announces_map_size_and_runs_are_stable(backend, tmp_path):
    exe = build_sample(tmp_path, "temperature", backend)
    cool, hot = tmp_path / "cool", tmp_path / "hot"
    cool.write_bytes(b"T\x01\x14\x00")
    hot.write_bytes(b"T\x01\x4b\x00")
    maps = []
    for _ in range(2):  # two forkservers: new ASLR layout each time
        server = ForkServer([str(exe), str(cool)])
        try:
            assert server.hello & FS_OPT_ENABLED == FS_OPT_ENABLED
            size = hello_map_size(server.hello)
            assert size and size % 64 == 0 and size <= 1 << 16
            first = server.run()
            assert os.WIFEXITED(first.status) and os.WEXITSTATUS(first.status) == 0
            assert first.map == server.run().map  # deterministic within a forkserver
            maps.append(edges(first.map[:size]))
        finally:
            server.close()
    assert maps[0] == maps[1] and maps[0], "edge ids must not depend on load addresses"
    server = ForkServer([str(exe), str(hot)])
    try:
        assert edges(server.run().map) != maps[0], "different paths, different maps"
    finally:
        server.close()


def test_crash_status_reaches_the_fuzzer(tmp_path):
    exe = build_sample(tmp_path, "temperature", "gcc")
    trigger = tmp_path / "fifty"
    trigger.write_bytes(b"T\x01\x32\x00")
    server = ForkServer([str(exe), str(trigger)])
    try:
        status = server.run().status
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGFPE
    finally:
        server.close()


def test_hang_killed_by_fuzzer_is_reported(tmp_path):
    exe = build_sample(tmp_path, "bugs", "gcc")
    trigger = REPO / "samples/bugs/triggers/hang.txt"
    server = ForkServer([str(exe), str(trigger)])
    try:
        status = server.run(kill_after=0.3).status
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert server.proc.poll() is None  # the server survives its child
    finally:
        server.close()


PERSISTENT_HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__AFL_FUZZ_INIT();
int main(void) {
  __AFL_INIT();
  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
  int runs = 0;
  while (__AFL_LOOP(1000)) {
    int len = __AFL_FUZZ_TESTCASE_LEN;
    runs++;
    if (len > 0 && buf[0] == 'X') printf("x\n");
  }
  printf("%d\n", runs);
  return 0;
}
"""


@needs_clang
def test_persistent_mode_stops_and_continues(tmp_path):
    src = tmp_path / "persist.c"
    src.write_text(PERSISTENT_HARNESS)
    exe = tmp_path / "persist"
    ffcc("-O1", str(src), "-o", str(exe))
    blob = exe.read_bytes()
    assert b"##SIG_AFL_PERSISTENT##\0" in blob and b"##SIG_AFL_DEFER_FORKSRV##\0" in blob
    assert run_program([str(exe)], stdin=b"X").stdout == b"x\n1\n"  # no fuzzer: one run
    server = ForkServer([str(exe)], env={"__AFL_PERSISTENT": "1", "__AFL_DEFER_FORKSRV": "1"})
    try:
        pids = set()
        for _ in range(5):
            server.map.clear()
            server.write_word(0)
            pids.add(server.read_word())
            status = server.read_word()
            assert os.WIFSTOPPED(status), "each iteration ends in SIGSTOP"
        assert len(pids) == 1, "one process serves every iteration"
    finally:
        server.close()


HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 3 && data[0] == 'B' && data[1] == 'U' && data[2] == 'G') abort();
  printf("%zu bytes\n", size);
  return 0;
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_libfuzzer_harness_gets_a_main(backend, tmp_path):
    src = tmp_path / "harness.c"
    src.write_text(HARNESS)
    exe = tmp_path / "harness"
    ffcc(f"--cc={backend}", str(src), "-o", str(exe))
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_bytes(b"abc")
    two.write_bytes(b"hello")
    assert run_program([str(exe), str(one), str(two)]).stdout == b"3 bytes\n5 bytes\n"
    assert run_program([str(exe)], stdin=b"xy").stdout == b"2 bytes\n"
    assert run_program([str(exe), "-runs=1", str(one)]).stdout == b"3 bytes\n"
    bug = tmp_path / "bug"
    bug.write_bytes(b"BUG")
    assert run_program([str(exe), str(bug)]).status == -signal.SIGABRT


def test_harness_loop_runs_afl_fuzzer_loopcount_iterations_per_process(tmp_path):
    """ffcc's harness main forks a fresh process after AFL_FUZZER_LOOPCOUNT iterations (as
    AFL++'s libFuzzer driver does): the last iteration of each process ends in its exit."""
    src, exe, case = tmp_path / "harness.c", tmp_path / "harness", tmp_path / "case"
    src.write_text(HARNESS)
    case.write_bytes(b"abc")
    ffcc(str(src), "-o", str(exe))
    server = ForkServer([str(exe), str(case)],
                        env={"__AFL_PERSISTENT": "1", "AFL_FUZZER_LOOPCOUNT": "2"})
    try:
        pids, stopped = [], []
        for _ in range(4):
            server.write_word(0)
            pids.append(server.read_word())
            stopped.append(os.WIFSTOPPED(server.read_word()))
    finally:
        server.close()
    assert stopped == [True, False, True, False]
    assert pids[0] == pids[1] != pids[2] == pids[3]


def test_program_main_wins_over_harness_main(tmp_path):
    src = tmp_path / "both.c"
    src.write_text(HARNESS + "int main(void) { puts(\"own main\"); return 7; }\n")
    exe = tmp_path / "both"
    ffcc(str(src), "-o", str(exe))
    outcome = run_program([str(exe)])
    assert (outcome.stdout, outcome.status) == (b"own main\n", 7)
