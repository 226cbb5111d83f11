"""The drop-in driver parses with libclang in a short-lived child, so that while the backend
compiles, the driver holds no libclang and none of its parse (a build's memory peaks there)."""

from __future__ import annotations

import os

import pytest
from helpers import ffcc, have

from ffcc.runtime.abi import LABELDB_SECTION

SPY = '#!/bin/sh\ngrep -c libclang "/proc/$PPID/maps" >> "$SPY_OUT"\nexec gcc "$@"\n'
SOURCE = "int check(int a, int b) {\n  return a > 1 && b < 2;\n}\n"


@pytest.mark.skipif(not have("gcc"), reason="needs gcc")
def test_the_driver_has_no_libclang_while_the_backend_compiles(tmp_path):
    spy = tmp_path / "gcc-spy"  # a gcc by its name, so ffcc passes gcc's flags
    spy.write_text(SPY)
    spy.chmod(0o755)
    (tmp_path / "check.c").write_text(SOURCE)
    seen = tmp_path / "libclang-mappings"
    ffcc(f"--cc={spy}", "--mcc", "--wm", "-c", "check.c", "-o", "check.o", cwd=tmp_path,
         env={"FFCC_SERVER": "0", "SPY_OUT": str(seen), "PATH": os.environ["PATH"]})
    assert LABELDB_SECTION.encode() in (tmp_path / "check.o").read_bytes()  # labelled
    assert seen.read_text().split() == ["0"]  # one backend run, its parent without libclang
