"""Hostile targets (fuzz_targets.HOSTILE): whatever a persistent target does between, after
or around its cases, ffuzz saves the crash it finds (or stops with a one-line error: none of
these targets needs one), never shows a traceback, never hangs, and stops on -V, -E and
Ctrl-C (SIGINT) within a second; with batches (the default for an ffcc-built persistent
target) and without."""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from fuzz_targets import HOSTILE, build, ffuzz_env
from helpers import poll_until

MODES = {"batches": (), "no-batch": ("--no-batch",)}
STOP_SECONDS = 1.0
# Every child of hang_after_loop costs a timeout once its 100 cases are done.
TIMEOUT_MS = "50"
# Ends a campaign whose crash never comes; each came within a few thousand executions.
UNTIL_FOUND = "300000"
EXECS = 5000
RUN_SECONDS = 2.0
# What a campaign may take at worst on a loaded machine before the test gives up on it.
CAMPAIGN_SECONDS = 120


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    return {name: build(target.source, name, directory, compiler="ffcc")
            for name, target in HOSTILE.items()}


@dataclass
class Run:
    """A running ffuzz and its output directory."""

    proc: subprocess.Popen
    out: Path
    stderr_file: IO[bytes]

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def crashes(self) -> list[Path]:
        directory = self.out / "default" / "crashes"
        return sorted(p for p in directory.glob("id:*")) if directory.is_dir() else []

    def loaded(self) -> bool:
        return (self.out / "default" / "fuzzer_stats").exists()

    def stats(self) -> dict[str, str]:
        lines = (self.out / "default" / "fuzzer_stats").read_text().splitlines()
        return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")

    def stop(self, signum: int) -> float:
        """Send signum; seconds until ffuzz has exited."""
        sent = time.monotonic()
        self.proc.send_signal(signum)
        assert poll_until(self.exited, CAMPAIGN_SECONDS), "ffuzz ignored the signal"
        return time.monotonic() - sent


@contextmanager
def ffuzz(binary: Path, tmp_path: Path, *args: str) -> Iterator[Run]:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for number, seed in enumerate(HOSTILE[binary.name].seeds):
        (seeds / f"seed{number}").write_bytes(seed)
    out = tmp_path / "out"
    argv = ["ffuzz", "-i", str(seeds), "-o", str(out), "-t", TIMEOUT_MS, "--seed", "3", *args,
            "--", str(binary)]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, env=ffuzz_env())
        try:
            yield Run(proc, out, stderr)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            poll_until(lambda: not live_processes(binary), STOP_SECONDS)
            stray = live_processes(binary)
            for pid in stray:
                os.kill(pid, signal.SIGKILL)
        assert not stray, f"{binary.name}: processes left running: {stray}"


def live_processes(binary: Path) -> list[int]:
    """Processes of this binary that are not zombies."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "exe") == str(binary) and \
                    (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def assert_clean_exit(run: Run) -> None:
    assert run.proc.returncode == 0, run.stderr()
    assert "Traceback" not in run.stderr(), run.stderr()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", HOSTILE)
def test_the_crash_is_saved_and_ctrl_c_stops_within_a_second(hostile, tmp_path, name,
                                                             mode) -> None:
    with ffuzz(hostile[name], tmp_path, "-E", UNTIL_FOUND, *MODES[mode]) as run:
        assert poll_until(lambda: run.crashes() or run.exited(), CAMPAIGN_SECONDS)
        assert run.crashes(), f"no crash saved: {run.stderr()}"
        latency = run.stop(signal.SIGINT)
        assert_clean_exit(run)
    assert latency < STOP_SECONDS
    crash = run.crashes()[0]
    assert f",sig:{HOSTILE[name].signal:02d}," in crash.name
    if name == "crash_between_cases" and mode == "batches":
        # Pinned on the case that armed it: the saved input crashes the program by itself.
        alone = subprocess.run([str(hostile[name])], stdin=crash.open("rb"))
        assert alone.returncode == -signal.SIGABRT, crash.read_bytes()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", HOSTILE)
def test_minus_V_stops_within_a_second(hostile, tmp_path, name, mode) -> None:
    with ffuzz(hostile[name], tmp_path, "-V", str(RUN_SECONDS), *MODES[mode]) as run:
        # The campaign's clock starts before it writes its first stats.
        assert poll_until(lambda: run.loaded() or run.exited(), CAMPAIGN_SECONDS), run.stderr()
        loaded = time.monotonic()
        assert poll_until(run.exited, CAMPAIGN_SECONDS)
        assert time.monotonic() - loaded < RUN_SECONDS + STOP_SECONDS
        assert_clean_exit(run)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", HOSTILE)
def test_minus_E_stops_within_a_second_of_executions(hostile, tmp_path, name, mode) -> None:
    with ffuzz(hostile[name], tmp_path, "-E", str(EXECS), *MODES[mode]) as run:
        assert poll_until(run.exited, CAMPAIGN_SECONDS)
        assert_clean_exit(run)
        stats = run.stats()
    execs, rate = int(stats["execs_done"]), float(stats["execs_per_sec"])
    assert EXECS <= execs <= EXECS + max(rate * STOP_SECONDS, 64)
