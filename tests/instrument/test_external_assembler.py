"""Label-dense units assembled by GNU as (instrument/plan.py ``assembler_flags``)."""

from __future__ import annotations

import subprocess

import pytest
from elftools.elf.elffile import ELFFile
from helpers import ffcc, have, needs_clang

from ffcc.instrument import plan
from ffcc.instrument.cli import run
from ffcc.instrument.command_line import parse_command
from ffcc.instrument.toolchain import C_DRIVER
from ffcc.runtime.abi import LABELDB_SECTION

DENSE = plan.EXTERNAL_ASSEMBLER_LABELS


@pytest.mark.skipif(not have("as"), reason="needs GNU as")
@pytest.mark.parametrize("args, labels, expected", [
    (["-O2", "-c", "big.c"], DENSE, ("-fno-integrated-as",)),
    (["-O2", "-c", "big.c"], DENSE - 1, ()),                   # too few labels to pay
    (["-O2", "-S", "big.c"], DENSE, ()),                       # no assembler runs
    (["-O2", "-flto", "-c", "big.c"], DENSE, ()),              # bitcode
    (["-Wa,--noexecstack", "-c", "big.c"], DENSE, ()),         # the command's own assembler options
    (["-fintegrated-as", "-c", "big.c"], DENSE, ()),           # its own choice
])
def test_only_dense_compiles_to_objects_leave_the_integrated_assembler(args, labels, expected):
    assert plan.assembler_flags(parse_command(args), labels) == expected


PROGRAM = """#include <stdio.h>
int classify(int a, int b) {
  if (a > 0 && (b < 3 || a == b)) return a * b;
  return a - b;
}
int main(void) {
  int sum = 0;
  for (int i = -3; i < 4; i++) sum += classify(i, 2 - i);
  printf("%d\\n", sum);
  return 0;
}
"""


def labeldb_lines(obj) -> list[str]:
    with open(obj, "rb") as stream:
        return ELFFile(stream).get_section_by_name(LABELDB_SECTION).data().decode().splitlines()


@needs_clang
@pytest.mark.skipif(not have("as"), reason="needs GNU as")
def test_a_dense_unit_assembled_by_gnu_as_runs_and_keeps_its_labels(tmp_path, monkeypatch, capfd):
    (tmp_path / "prog.c").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FFCC_SERVER", "0")
    monkeypatch.setenv("FFCC_ANNOTATION_CACHE", "0")
    assert run(["--mcc", "--wm", "-O2", "-c", "prog.c", "-o", "integrated.o"], C_DRIVER) == 0
    monkeypatch.setattr(plan, "EXTERNAL_ASSEMBLER_LABELS", 1)
    capfd.readouterr()
    assert run(["--mcc", "--wm", "--ffcc-verbose", "-O2", "-c", "prog.c", "-o", "gnu.o"],
               C_DRIVER) == 0
    assert "-fno-integrated-as" in capfd.readouterr().err
    assert labeldb_lines("gnu.o")[1:] == labeldb_lines("integrated.o")[1:]  # after the unit's
    outputs = []
    for obj in ("integrated.o", "gnu.o"):
        ffcc(obj, "-o", obj + ".out", cwd=tmp_path)
        outputs.append(subprocess.run([f"./{obj}.out"], capture_output=True, text=True,
                                      cwd=tmp_path).stdout)
    assert outputs[0] == outputs[1] == "-22\n"
