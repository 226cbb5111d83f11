"""A unit libclang cannot parse but the backend compiles must not lose its labels silently.

Found on MPFR configured by gcc: mpfr.h declares _Decimal64 and _Float128 functions, libclang
rejects them, and every MPFR file was built without a label, with no warning, nothing in the
build summary and --labels-required exiting 0.  Now such a unit is named in a warning and in
ffcc-build.json's "unlabelled", and --labels-required makes it an error.  gcc_decimal_float.c
reproduces it with decimal floats.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ffcc, have

SOURCE = Path(__file__).resolve().parent / "gcc_decimal_float.c"  # cannot have labels
BACKENDS = [cc for cc in ("gcc", "clang") if have(cc)]


@pytest.mark.parametrize("cc", BACKENDS)
def test_unparsable_unit_is_reported_and_fails_when_labels_are_required(cc, tmp_path):
    built = ffcc(f"--cc={cc}", "--mcc", "--wm", "-o", f"{tmp_path}/", str(SOURCE))
    summary = json.loads((tmp_path / "ffcc-build.json").read_text())
    assert [u for u in summary["unlabelled"] if "gcc_decimal_float.c" in json.dumps(u)]
    assert "gcc_decimal_float.c" in built.stderr
    required = ffcc(f"--cc={cc}", "--mcc", "--wm", "--labels-required", "-c", str(SOURCE), "-o",
                    str(tmp_path / "unit.o"), check=False)
    assert required.returncode != 0


def test_a_drop_in_link_summary_names_the_unparsable_unit(tmp_path):
    ffcc("--cc=gcc", "--mcc", "--wm", "-c", str(SOURCE), "-o", str(tmp_path / "unit.o"))
    ffcc("--cc=gcc", "--mcc", "--wm", str(tmp_path / "unit.o"), "-o", str(tmp_path / "prog"))
    summary = json.loads((tmp_path / "prog.ffcc-summary.json").read_text())
    (unlabelled,) = summary["unlabelled"]
    assert unlabelled["file"] == str(SOURCE) and summary["labels"] == 0
    assert unlabelled["reason"].startswith("libclang cannot parse it: ")
