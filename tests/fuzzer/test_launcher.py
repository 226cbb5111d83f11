"""`ffuzz -j N`: N instances in one sync directory, one status, stopped together, resumed
together; -c goes to one secondary."""
from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import ffuzz_env, reading_main
from helpers import ffcc, kill_leftovers, poll_until, run_until, target_processes
from test_cmplog import SEEDS as MAGIC_SEEDS
from test_cmplog import build as build_sample
from test_sync import WAIT, imported, letters, seed_dir, stats  # noqa: F401  (letters: a fixture)

from ffcc.fuzzer.engine.config import read_afl_environment
from ffcc.fuzzer.output.outdir import id_of
from ffcc.fuzzer.output.state import FILE_NAME as STATE_FILE
from ffcc.fuzzer.output.state import load as load_state
from ffcc.fuzzer.parallel import launcher
from ffcc.fuzzer.parallel.launcher import Combined, plan_instances, take_option
from ffcc.fuzzer.parallel.sync import HITS_FILE

NEVER = "100000000"
NAMES = ("main", "sec1")
# Crashes on ff ff and spins on 80 80 at its start (each second byte a branch of its own,
# so havoc's interesting values get there in a few thousand executions); sixteen letters at
# byte 2, each with its double at byte 3, give two instances different finds to exchange.
# Built with --cmplog, so that `-c 0` may use it.
FINDS_C = "#include <stdio.h>\n#include <stdlib.h>\n" + reading_main(16) + r"""  fclose(f);
  int r = 0;
  if (b[0] == 0xff) { r = 1; if (b[1] == 0xff) abort(); }
  if (b[0] == 0x80) { r = 2; if (b[1] == 0x80) for (volatile int spin = 1; spin;) {} }
""" + "".join(f"  if (b[2] == '{c}') {{ if (b[3] == '{c}') r += 3; else r += 4; }}\n"
              for c in "abcdefghijklmnop") + r"""  printf("%d\n", r);
  return 0;
}
"""
HANG_OPTIONS = ("-t", "100")  # a spin is a hang after 100 ms, confirmed at AFL_HANG_TMOUT
HANG_ENV = {"AFL_HANG_TMOUT": "200"}


@pytest.fixture(scope="module")
def finds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("finds")
    (build / "finds.c").write_text(FINDS_C)
    ffcc("--cmplog", "-o", f"{build}/out/", "finds.c", cwd=build)
    return build / "out" / "finds"


def ffuzz_j(sync: Path, seeds: Path | str, binary: Path, *options: str) -> list[str]:
    return ["ffuzz", "-j", "2", "-i", str(seeds), "-o", str(sync), "--sync-seconds", "0.2",
            *options, "--", str(binary), "@@"]


def found(sync: Path, folder: str) -> bool:
    """Whether some instance saved a case in this folder (crashes, hangs)."""
    return any(sync.glob(f"*/{folder}/id:*"))


@dataclass(frozen=True)
class Saved:
    """What a campaign left of one instance, as resuming must find it."""

    queue: dict[str, bytes]
    crashes: dict[str, bytes]
    hangs: dict[str, bytes]
    plot: str
    execs: int               # the state file's total
    hits: np.ndarray         # the state file's FairFuzz branch hit counts


def saved(instance: Path) -> Saved:
    state = load_state(instance / STATE_FILE)
    assert state is not None and state.branch_hits is not None, instance

    def cases(folder: str) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (instance / folder).glob("id:*")}
    return Saved(cases("queue"), cases("crashes"), cases("hangs"),
                 (instance / "plot_data").read_text(), state.totals.execs, state.branch_hits)


def assert_resumed(before: Saved, after: Saved) -> None:
    """Everything kept under its name (crashes and hangs with their bytes; a queue entry
    may have been trimmed since), nothing twice, the counts carried on."""
    assert before.crashes.items() <= after.crashes.items()
    assert before.hangs.items() <= after.hangs.items()
    for kind in ("queue", "crashes", "hangs"):
        old, new = getattr(before, kind), getattr(after, kind)
        assert set(old) <= set(new), f"{kind}: {sorted(set(old) - set(new))} lost"
        assert sorted(id_of(name) for name in new) == list(range(len(new))), sorted(new)
    imports = [m.groups() for name in after.queue if (m := re.search(r"sync:(\w+),src:(\d+)",
                                                                     name))]
    assert len(imports) == len(set(imports)), "an entry imported twice"
    assert after.execs > before.execs and after.plot.startswith(before.plot)
    assert (after.hits >= before.hits).all() and after.hits.sum() > before.hits.sum()


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


def test_options_are_taken_out_with_their_values() -> None:
    assert take_option(["-j", "2", "-j4", "--jobs", "3", "--jobs=5", "-i", "x"],
                       launcher.JOBS_OPTIONS) == ("5", ["-i", "x"])
    assert take_option(["-p", "afl", "--schedule=fairfuzz", "-x", "d"], ("-p", "--schedule")) \
        == ("fairfuzz", ["-x", "d"])
    assert take_option(["-cprog", "-E", "5"], ("-c",)) == ("prog", ["-E", "5"])
    assert take_option(["-V", "5"], ("--seed",)) == (None, ["-V", "5"])


def test_c_goes_to_one_or_two_secondaries() -> None:
    assert [list(launcher.cmplog_positions(jobs)) for jobs in (1, 2, 3, 4, 16)] == \
        [[0], [1], [1], [1, 2], [1, 2]]
    plans = plan_instances(["-c", "prog.cmplog", "-o", "o", "--", "prog"], ["prog"], 4, None,
                           None, [None] * 4)
    assert [p.argv[p.argv.index("-p") + 2:p.argv.index("--")] for p in plans] == \
        [[], ["-c", "prog.cmplog"], ["-c", "prog.cmplog"], []]


def test_a_stopped_campaign_resumes_every_instance(finds, tmp_path) -> None:
    sync, log = tmp_path / "sync", tmp_path / "launcher.log"
    env = ffuzz_env(**HANG_ENV)
    with open(log, "w") as stderr:
        proc = subprocess.Popen(ffuzz_j(sync, seed_dir(tmp_path, "A"), finds, *HANG_OPTIONS,
                                        "-E", NEVER), stdout=subprocess.DEVNULL, stderr=stderr,
                                env=env)
    try:
        assert poll_until(lambda: found(sync, "crashes") and found(sync, "hangs")
                          and imported(sync, "main", "sec1"), WAIT), log.read_text()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = {name: saved(sync / name) for name in NAMES}
    done = subprocess.run(ffuzz_j(sync, "-", finds, *HANG_OPTIONS, "-E", "3000"),
                          capture_output=True, text=True, env=env, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert_resumed(before[name], saved(sync / name))
    assert poll_until(lambda: no_orphans(sync, finds), 5)


def test_c_finds_the_magic_crash_through_its_secondary(tmp_path) -> None:
    plain, cmplog = build_sample(tmp_path, "plain"), build_sample(tmp_path, "cmplog", "--cmplog")
    sync = tmp_path / "sync"
    argv = ffuzz_j(sync, MAGIC_SEEDS, plain, "-E", "6000", "--seed", "1", "-c", str(cmplog))
    try:
        done = run_until(argv, lambda: found(sync, "crashes"), timeout=300, env=ffuzz_env())
    finally:
        kill_leftovers(plain)
        kill_leftovers(cmplog)
    assert done.returncode == 0, done.stderr[-2000:]
    assert found(sync, "crashes"), "ffuzz -j 2 -c did not reach the crash"
    assert int(stats(sync / "sec1")["cmplog_finds"]) >= 1
    assert "cmplog_finds" not in stats(sync / "main")
    assert all(int(stats(sync / name)["execs_done"]) <= 6000 + 64 for name in NAMES)


def test_cpus_pinned_elsewhere_are_left_out(monkeypatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(launcher, "pinned_cpus", lambda: {1})
    assert launcher.free_cpus(3, no_affinity=False) == [0, 2, None]
    assert launcher.free_cpus(2, no_affinity=read_afl_environment({"AFL_NO_AFFINITY": "1"})
                              .no_affinity) == [None, None]


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
