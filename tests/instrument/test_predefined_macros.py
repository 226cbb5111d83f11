"""A labelled build sees the predefined macros the plain build sees: ``__BASE_FILE__`` and
``__TIMESTAMP__`` name the original source, not ffcc's annotated or macro-marked copy
(docs/DESIGN.md, rule 3; issue 17.6), with both backends and with or without ``--in-macros``."""

from __future__ import annotations

import os
import subprocess

import pytest
from helpers import ffcc, have, run_program

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
HEADER = "#define WHERE __BASE_FILE__\n"
PROGRAM = """#include <stdio.h>
#include "where.h"
#define SHOW(x) printf("%s|%s|%s|%d\\n", __BASE_FILE__, __TIMESTAMP__, WHERE, (x) > 2 && (x) < 9)
int main(int argc, char **argv) {
  printf("%s|%s|%s\\n", __FILE__, __BASE_FILE__, __TIMESTAMP__);
  SHOW(argc);
  return argc > 5 && argv[0][0] == 'x';
}
"""
OLD = 981173106  # 2001-02-03, so that the copies' own times cannot match by chance


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flags", [(), ("--in-macros",)], ids=["plain", "in-macros"])
def test_base_file_and_timestamp_are_the_originals(tmp_path, backend, flags):
    src = tmp_path / "src"
    src.mkdir()
    (src / "where.h").write_text(HEADER)
    (src / "prog.c").write_text(PROGRAM)
    os.utime(src / "prog.c", (OLD, OLD))
    plain = tmp_path / "plain"
    subprocess.run([backend, "-w", "-o", str(plain), "src/prog.c"], cwd=tmp_path, check=True)
    labelled = tmp_path / "labelled"
    done = ffcc(f"--cc={backend}", "--mcc", *flags, "-Wall", "-Wextra", "-Wunused-macros", "-Werror",
                f"--keep-annotated={tmp_path / 'kept'}", "-o", str(labelled), "src/prog.c",
                cwd=tmp_path)
    assert "warning" not in done.stderr
    assert (tmp_path / "kept").exists()  # the labelled copy was built, not the original
    expected = run_program([str(plain)]).stdout
    assert b"src/prog.c|src/prog.c|" in expected and b"2001" in expected
    assert run_program([str(labelled)]).stdout == expected
