"""`ffuzz -j N`: N instances in one sync directory, one status, stopped together."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env
from helpers import poll_until, target_processes
from test_sync import WAIT, letters, seed_dir, stats  # noqa: F401  (letters: a fixture)

from ffcc.fuzzer import launcher
from ffcc.fuzzer.launcher import Combined, plan_instances, strip_jobs
from ffcc.fuzzer.sync import HITS_FILE

NEVER = "100000000"


def ffuzz_j(sync: Path, seeds: Path, binary: Path, *options: str) -> list[str]:
    return ["ffuzz", "-j", "2", "-i", str(seeds), "-o", str(sync), "--sync-seconds", "0.2",
            *options, "--", str(binary), "@@"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def no_orphans(sync: Path, binary: Path) -> bool:
    pids = [int(stats(sync / name)["fuzzer_pid"]) for name in ("main", "sec1")]
    return not any(pid_alive(pid) for pid in pids) and not target_processes(binary)


def test_two_instances_run_under_one_status_and_end_together(letters, tmp_path) -> None:
    sync = tmp_path / "sync"
    done = subprocess.run(ffuzz_j(sync, seed_dir(tmp_path, "A"), letters, "-E", "3000"),
                          capture_output=True, text=True, env=ffuzz_env(), timeout=WAIT)
    assert done.returncode == 0, done.stderr
    for name in ("main", "sec1"):
        assert int(stats(sync / name)["execs_done"]) >= 3000, name
    assert (sync / "main" / "is_main_node").exists()
    assert not (sync / "sec1" / "is_main_node").exists()
    assert "-p fairfuzz" in (sync / "main" / "fuzzer_setup").read_text()
    assert "-p afl" in (sync / "sec1" / "fuzzer_setup").read_text()
    status = [line for line in done.stderr.splitlines() if " instances  execs " in line]
    assert status and status[-1].startswith("[") and " 0/2 instances " in status[-1], done.stderr
    assert poll_until(lambda: no_orphans(sync, letters), 5)


def test_a_killed_instance_is_reported_and_the_other_goes_on(letters, tmp_path) -> None:
    sync, log = tmp_path / "sync", tmp_path / "launcher.log"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(ffuzz_j(sync, seed_dir(tmp_path, "A"), letters, "-E", NEVER),
                                stdout=subprocess.DEVNULL, stderr=stderr, env=ffuzz_env())
    try:
        main_hits = sync / "main" / HITS_FILE
        assert poll_until(lambda: main_hits.exists() and (sync / "sec1" / HITS_FILE).exists(),
                          WAIT), log.read_text()
        queue = {p.name for p in (sync / "main" / "queue").glob("id:*")}
        os.kill(int(stats(sync / "sec1")["fuzzer_pid"]), signal.SIGKILL)
        assert poll_until(lambda: "sec1 ended (killed by SIGKILL); 1 still running"
                          in log.read_text(), WAIT), log.read_text()
        shared = main_hits.stat().st_mtime_ns
        assert poll_until(lambda: main_hits.stat().st_mtime_ns != shared, WAIT), "main stopped"
        assert proc.poll() is None
        assert queue <= {p.name for p in (sync / "main" / "queue").glob("id:*")}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "1 of 2 instances failed (sec1)" in log.read_text()
    assert poll_until(lambda: no_orphans(sync, letters), 5)


def test_a_killed_launcher_takes_its_instances_along(letters, tmp_path) -> None:
    sync = tmp_path / "sync"
    proc = subprocess.Popen(ffuzz_j(sync, seed_dir(tmp_path, "A"), letters, "-E", NEVER),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ffuzz_env())
    try:
        assert poll_until(lambda: all((sync / n / "fuzzer_stats").exists()
                                      for n in ("main", "sec1")), WAIT)
    finally:
        proc.kill()
        proc.wait()
    assert poll_until(lambda: no_orphans(sync, letters), WAIT)


def test_instances_get_their_roles_schedules_seeds_and_cpus() -> None:
    argv = ["-j", "3", "-i", "in", "-o", "out", "--seed", "7", "--", "prog", "-j", "@@"]
    plans = plan_instances(argv, ["prog", "-j", "@@"], 3, None, 7, [0, 1, None])
    assert [(p.name, p.cpu) for p in plans] == [("main", 0), ("sec1", 1), ("sec2", None)]
    assert plans[0].argv == ["-i", "in", "-o", "out", "--seed", "7", "-M", "main",
                             "-p", "fairfuzz", "--seed", "7", "--", "prog", "-j", "@@"]
    assert plans[1].argv[6:11] == ["-S", "sec1", "-p", "afl", "--seed"]
    assert plans[2].argv[8:12] == ["-p", "fairfuzz", "--seed", "9"]
    chosen = plan_instances(["-o", "o", "-p", "afl", "prog"], ["prog"], 2, "afl", None, [None] * 2)
    assert [p.argv[-4:-2] for p in chosen] == [["-p", "afl"], ["-p", "afl"]]


def test_jobs_options_are_stripped() -> None:
    assert strip_jobs(["-j", "2", "-j4", "--jobs", "3", "--jobs=5", "-i", "x", "-jx"]) == \
        ["-i", "x", "-jx"]


def test_cpus_pinned_elsewhere_are_left_out(monkeypatch) -> None:
    monkeypatch.delenv("AFL_NO_AFFINITY", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(launcher, "pinned_cpus", lambda: {1})
    assert launcher.free_cpus(3) == [0, 2, None]
    monkeypatch.setenv("AFL_NO_AFFINITY", "1")
    assert launcher.free_cpus(2) == [None, None]


def test_numbers_are_combined() -> None:
    both = Combined.of([{"execs_done": "10", "execs_per_sec": "2.5", "corpus_count": "4",
                         "edges_found": "7", "total_edges": "64", "saved_crashes": "1"},
                        {"execs_done": "5", "execs_per_sec": "1.5", "corpus_count": "6",
                         "edges_found": "3", "total_edges": "64", "saved_hangs": "2"}])
    assert both == Combined(2, 15, 4.0, 6, 7, 64, 1, 2)
    assert Combined.of([{}]).line(1, 0).startswith("[00h 00m 00s] 1/1 instances  execs 0")


@pytest.mark.parametrize("words", [["-j", "2", "-M", "a"], ["-j", "2", "-S", "b"]])
def test_jobs_name_the_instances_themselves(tmp_path, words) -> None:
    done = subprocess.run(["ffuzz", *words, "-i", "x", "-o", str(tmp_path), "--", "prog"],
                          capture_output=True, text=True, env=ffuzz_env())
    assert done.returncode == 1 and "leave out -M and -S" in done.stderr
