"""Generative differential testing, a fixed-seed sample: labels never change what a program does.

One program from each generator (Csmith's, and bench/gen_c.py's macro, float and bit-field
heavy C: a few thousand labels each), on two axes (no options, and UBSan), built plain and with
``--mcc --wm=all --labels-required`` by gcc and clang at -O0 and -O2 (bench/gen_diff.py's
matrix).  Programs
whose plain builds disagree are dropped there as suspects of undefined behaviour; of the rest,
no labelled run may differ from its plain run, no labelled build may be refused, and ffcc may
never crash.  ``python bench/gen_diff.py`` runs the same on as many programs as one likes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import have

from bench.gen_diff import Program, Settings, Verdict, examine

GEN_SEEDS = (11,)
CSMITH_SEEDS = (21,)
AXES = ("base", "ubsan")
WORKERS = 2


def sample() -> list[Program]:
    """The fixed programs; Csmith's only where csmith is installed, unless real-world tools
    are required (then a missing csmith fails the test, as the other real-world tests do)."""
    progs = [Program("gen", seed) for seed in GEN_SEEDS]
    if have("csmith") and Path("/usr/include/csmith/csmith.h").exists():
        progs += [Program("csmith", seed) for seed in CSMITH_SEEDS]
    elif os.environ.get("FFCC_REQUIRE_REALWORLD"):
        pytest.fail("csmith (and libcsmith-dev's headers) not installed")
    return progs


def summary(verdicts: list[Verdict]) -> str:
    return "\n".join(f"{v.program.name} on {v.axis}: {v.outcome} "
                     + ", ".join(f"{cls} {c.cc}{c.level}" for cls, c in v.failures)
                     for v in verdicts if v.failures)


@pytest.mark.skipif(not (have("gcc") and have("clang")), reason="needs gcc and clang")
def test_generated_programs_behave_the_same_labelled(tmp_path: Path):
    settings = Settings("ffcc", tmp_path, run_timeout=10.0, server=True)
    jobs = [(p, axis) for p in sample() for axis in AXES]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        verdicts = list(pool.map(lambda job: examine(job[0], job[1], settings), jobs))
    compared = [v for v in verdicts if v.outcome == "ok" or v.failures]
    assert len(compared) >= len(jobs) // 2, [v.outcome for v in verdicts]  # not all dropped
    assert not [v for v in verdicts if v.failures], \
        f"{summary(verdicts)}\n(cases kept in {tmp_path})"
