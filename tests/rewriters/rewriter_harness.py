"""Shared by rewriter tests: annotate C snippets, build them with the test preamble, run them.

No conftest.py here on purpose: other test folders import their helpers with ``from conftest
import ...``, and a second module named conftest would shadow theirs. Tests import the ``cc``
fixture from this module instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from ffcc.rewriters import Annotation, LabelOptions, annotate
from ffcc.rewriters.operators import WM_GROUPS

HERE = Path(__file__).parent
HARNESS = HERE / "harness"
PROGRAMS = HERE / "programs"
COMPILERS = [cc for cc in ("gcc", "clang") if shutil.which(cc)]
ALL_WM = frozenset(WM_GROUPS)


@dataclass
class Run:
    stdout: bytes
    stderr: bytes
    status: int
    hits: set[int]


def annotate_code(tmp_path: Path, code: str, options: LabelOptions | None = None,
                  name: str = "case.c", args: list[str] | None = None) -> Annotation:
    source = tmp_path / name
    source.write_text(code)
    return annotate(str(source), args or [], options or LabelOptions())


def build(tmp_path: Path, code: str, cc: str, opt: str, name: str,
          extra: tuple[str, ...] = ()) -> Path:
    """Compile one C file with the test preamble and the hit-dumping harness."""
    source = tmp_path / f"{name}.c"
    source.write_text(code)
    binary = tmp_path / f"{name}-{cc}{opt}"
    cmd = [cc, opt, "-w", "-include", str(HARNESS / "ffcc_hits.h"), str(source),
           str(HARNESS / "hits.c"), "-o", str(binary), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return binary


def run(binary: Path, args: list[str] = (), stdin: bytes = b"") -> Run:
    hits_file = binary.with_suffix(".hits")
    hits_file.unlink(missing_ok=True)
    env = {**os.environ, "FFCC_HITS": str(hits_file), "UBSAN_OPTIONS": "print_stacktrace=0"}
    done = subprocess.run([str(binary), *args], input=stdin, capture_output=True, env=env,
                          timeout=20)
    hits = {int(x) for x in hits_file.read_text().split()} if hits_file.exists() else set()
    return Run(done.stdout, done.stderr, done.returncode, hits)


def labels_where(annotation: Annotation, **fields) -> set[int]:
    return {label.index for label in annotation.labels
            if all(getattr(label, key) == value for key, value in fields.items())}



@pytest.fixture(params=COMPILERS)
def cc(request) -> str:
    """Each C compiler on the machine (clang is skipped when absent)."""
    return request.param
