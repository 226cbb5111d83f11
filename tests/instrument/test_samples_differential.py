"""An ffcc build behaves exactly like a plain build, on every seed and trigger.

Stdout and exit status must equal a plain gcc build's; stderr must equal a plain
build by the same compiler (gcc and clang word assert() messages differently).
"""

from __future__ import annotations

import subprocess

import pytest
from helpers import REPO, SAMPLE_NAMES, ffcc, have, run_program, sample_inputs, sample_sources

BACKENDS = [b for b in ("gcc", "clang") if have(b)]


@pytest.fixture(scope="module")
def plain_builds(tmp_path_factory):
    """Reference binaries per compiler, sample and optimisation level."""
    out = tmp_path_factory.mktemp("plain")
    builds = {}
    for compiler in BACKENDS:
        for name in SAMPLE_NAMES:
            for opt in ("-O0", "-O2"):
                exe = out / f"{compiler}{name}{opt}" / name
                exe.parent.mkdir()
                subprocess.run([compiler, opt, *sample_sources(name), "-o", str(exe)], cwd=REPO,
                               check=True)
                builds[compiler, name, opt] = exe
    return builds


LABELS = {"edges": (), "labels": ("--mcc", "--wm"), "in-macros": ("--mcc", "--wm", "--in-macros")}


@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_same_behaviour_as_plain_gcc(name, opt, backend, labels, plain_builds, tmp_path):
    build = tmp_path / "build"
    ffcc(f"--cc={backend}", *LABELS[labels], opt, "-o", f"{build}/", *sample_sources(name),
         cwd=REPO)
    if labels == "labels":
        assert (build / f"{name}.labels.jsonl").stat().st_size > 0
    exe = build / name
    for path in sample_inputs(name):
        got = run_program([str(exe), str(path)], timeout=2)
        expected = run_program([str(plain_builds[backend, name, opt]), str(path)], timeout=2)
        assert got == expected, f"{name} {opt} {backend} differs on {path.name}"
        gcc_build = run_program([str(plain_builds["gcc", name, opt]), str(path)], timeout=2)
        assert (got.stdout, got.status) == (gcc_build.stdout, gcc_build.status)
        # stdin works as well as a file argument
        assert run_program([str(exe)], stdin=path.read_bytes(), timeout=2).status == expected.status
