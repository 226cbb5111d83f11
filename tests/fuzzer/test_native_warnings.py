"""The C of the cffi modules (native/, and the rewriters' top-level walk) compiles without a
warning under C11 with gcc and clang (-Werror), optimised, so that warnings only the
optimiser's analyses find (uninitialised values, overflows) count too."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted((REPO / "native").glob("*.c")) + [REPO / "rewriters" / "top_level.c"]
FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO / 'native'}",
         f"-I{REPO / 'runtime'}", f"-I{REPO / 'rewriters'}"]


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_cffi_modules_are_warning_free(cc: str) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    assert SOURCES
    for source in SOURCES:
        done = subprocess.run([cc, *FLAGS, "-c", str(source), "-o", "/dev/null"],
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{source.name}:\n{done.stderr}"
