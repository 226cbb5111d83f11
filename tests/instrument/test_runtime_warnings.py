"""The C runtime compiles without a warning under gcc and clang.

Users' builds compile it with warnings off (plan.RUNTIME_CFLAGS), so that a new compiler's
new warning never stops them; this test is where the warnings are seen.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ffcc import runtime
from ffcc.instrument.plan import RUNTIME_EDGE_FLAGS
from ffcc.instrument.toolchain import BackendKind

STRICT = ("-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC")
SOURCES = sorted(runtime.RUNTIME_DIR.glob("*.c"))


@pytest.mark.parametrize("edge_flags", [(), RUNTIME_EDGE_FLAGS[BackendKind.GCC]], ids=["guard", "hashed"])
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_runtime_is_clean_under_werror(compiler, edge_flags, tmp_path):
    path = shutil.which(compiler)
    if path is None:
        pytest.skip(f"{compiler} not installed")
    assert SOURCES
    for source in SOURCES:
        argv = [path, *STRICT, *edge_flags, "-I", str(runtime.RUNTIME_DIR), "-c", str(source),
                "-o", str(tmp_path / f"{source.stem}.o")]
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(argv)}\n{done.stderr}"
