"""Test helpers shared across rooms: building with ffcc and plain compilers, running programs."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
SAMPLE_NAMES = ("keywords", "temperature", "bugs")
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
