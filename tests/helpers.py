"""Test helpers shared across rooms: building with ffcc and plain compilers, running programs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
SAMPLE_NAMES = ("keywords", "temperature", "bugs", "boundaries")
AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
           "AFL_NO_AFFINITY": "1", "AFL_QUIET": "1"}


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


needs_clang = pytest.mark.skipif(not have("clang"), reason="clang not installed")
needs_afl = pytest.mark.skipif(not have("afl-fuzz"), reason="AFL++ not installed")


@dataclass(frozen=True)
class Outcome:
    """What a run of a program showed the outside world."""

    stdout: bytes
    stderr: bytes
    status: int | str  # exit code, negative signal, or "timeout"


def run_program(argv: list[str], stdin: bytes | None = None, timeout: float = 5,
                env: dict[str, str] | None = None) -> Outcome:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return Outcome(b"", b"", "timeout")
    return Outcome(done.stdout, done.stderr, done.returncode)


def ffcc(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ffcc", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        raise AssertionError(f"ffcc {' '.join(args)} failed:\n{done.stderr}")
    return done


def sample_sources(name: str) -> list[str]:
    """The sample's sources, relative to the repo (so __FILE__ matches across builds)."""
    return sorted(str(p.relative_to(REPO)) for p in (SAMPLES / name).glob("*.c"))


def sample_inputs(name: str) -> list[Path]:
    return sorted((SAMPLES / name / "seeds").iterdir()) + sorted(
        (SAMPLES / name).glob("triggers/*"))


POLL_SECONDS = 0.05


def poll_until(holds: Callable[[], bool], timeout: float) -> bool:
    """Whether ``holds()`` came true within ``timeout`` seconds.  Tests wait for the thing
    itself (a file, a socket, a process gone), so a loaded machine only makes them slower."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def run_until(argv: list[str], done: Callable[[], bool], timeout: float,
              env: dict[str, str] | None = None,
              stop: int = signal.SIGINT) -> subprocess.CompletedProcess:
    """Run ``argv`` until it exits or ``done()`` holds, then send it ``stop`` and wait for it.
    A campaign ended at its first find costs what finding it costs, however busy the machine;
    its own bound (``-E``) ends it when the find never comes.  Past ``timeout`` seconds the
    process is killed and ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` does."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env)
        deadline = time.monotonic() + timeout
        try:
            if not poll_until(lambda: proc.poll() is not None or done(), timeout):
                raise subprocess.TimeoutExpired(argv, timeout)
            proc.send_signal(stop)  # does nothing once the process has exited
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(argv, proc.returncode,
                                           stdout.read().decode(errors="replace"),
                                           stderr.read().decode(errors="replace"))


def target_processes(binary: Path) -> list[int]:
    """Pids of running processes whose executable is ``binary``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/exe") == str(binary):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_leftovers(binary: Path) -> None:
    """SIGKILL every process of ``binary``: an AFL++-built target's children outlive a fuzzer
    killed outright (afl-clang-fast's forkserver does not tie them to itself)."""
    for pid in target_processes(binary):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def one_seed(tmp_path: Path, data: bytes) -> Path:
    """A seed directory ``tmp_path/in`` holding ``data`` as its one file."""
    seeds = tmp_path / "in"
    seeds.mkdir()
    (seeds / "s").write_bytes(data)
    return seeds
