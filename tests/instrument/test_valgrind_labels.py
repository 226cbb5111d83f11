"""Labels add no memcheck error: no read of an uninitialised value, no invalid access.

The temperature sample (seeds and its trigger) and the adversarial program whose local is
uninitialised unless a flag is set are built with every label by both backends and run under
valgrind's memcheck.  Their plain builds are memcheck-clean on these inputs, so the labelled
build must be too; the trigger crashes, where only the signal is compared.  DWARF 4, as
valgrind 3.19 cannot read clang 14's DWARF 5.  bench/realworld_check.py --valgrind runs every
sample at -O0 and -O2 against its unlabelled build.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import REPO, ffcc, have, run_program, sample_inputs, sample_sources

pytestmark = pytest.mark.skipif(not have("valgrind"), reason="valgrind not installed")
BACKENDS = [cc for cc in ("gcc", "clang") if have(cc)]
UNINITIALISED = REPO / "tests/rewriters/adversarial/uninitialised_skipped.c"
MEMCHECK = ["valgrind", "-q", "--error-exitcode=99", "--track-origins=yes"]


def labelled(sources: list[str], out: Path, cc: str) -> Path:
    ffcc(f"--cc={cc}", "--mcc", "--wm", "-O0", "-gdwarf-4", "-o", f"{out}/", *sources, cwd=REPO)
    return out / Path(sources[0]).stem


def memcheck_errors(stderr: bytes) -> list[str]:
    return re.findall(r"^==\d+== (\S.*)$", stderr.decode(errors="replace"), re.M)


@pytest.mark.parametrize("cc", BACKENDS)
def test_labelled_sample_is_memcheck_clean(cc, tmp_path):
    program = labelled(sample_sources("temperature"), tmp_path, cc)
    for path in sample_inputs("temperature"):
        under_valgrind = run_program([*MEMCHECK, str(program), str(path)], timeout=60)
        natively = run_program([str(program), str(path)])
        assert under_valgrind.status == natively.status != 99, path.name
        if natively.status >= 0:  # the trigger's SIGFPE is reported by memcheck too
            assert memcheck_errors(under_valgrind.stderr) == [], path.name


@pytest.mark.parametrize("cc", BACKENDS)
def test_labels_read_no_local_the_program_leaves_uninitialised(cc, tmp_path):
    program = labelled([str(UNINITIALISED.relative_to(REPO))], tmp_path, cc)
    under_valgrind = run_program([*MEMCHECK, str(program)], timeout=60)
    assert memcheck_errors(under_valgrind.stderr) == []
    assert under_valgrind.status == run_program([str(program)]).status != 99
