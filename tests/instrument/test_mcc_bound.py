"""MCC's default bound through the driver: one note per file that it cuts, --mcc-max=0 lifts
it, --estimate counts what the build gets; a 40-atom decision builds in seconds (issue 17.8)."""

from __future__ import annotations

import json

import pytest
from helpers import ffcc, run_program

# 20 ranges: 2^21 - 1 combinations of condition values, 474 with the default bound
RANGES = " || ".join(f"(c >= {i * 10} && c < {i * 10 + 5})" for i in range(20))
PROGRAM = f"""#include <stdio.h>
#include <stdlib.h>
static int in_ranges(int c) {{
  return {RANGES};
}}
static int blank(int c) {{
  return c == ' ' || c == '\\t' || c == '\\n' || c == '\\r' || c == '\\f' || c == '\\v' || c == 0 ||
         c == ',' || c == ';' || c == ':' || c == '.' || c == '(' || c == ')' || c == '[' ||
         c == ']' || c == '{{';
}}
int main(int argc, char **argv) {{
  int c = argc > 1 ? atoi(argv[1]) : 0;
  printf("%d %d\\n", in_ranges(c), blank(c));
  return 0;
}}
"""


def labels_of(program) -> list[dict]:
    lines = (program.parent / f"{program.name}.labels.jsonl").read_text().splitlines()
    return [record for record in map(json.loads, lines) if "slot" in record]


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "ranges.c"
    path.write_text(PROGRAM)
    return path


def test_the_default_bound_cuts_the_huge_decision_with_one_note(tmp_path, source):
    program = tmp_path / "ranges"
    done = ffcc("--mcc", "-O1", "-o", str(program), str(source), cwd=tmp_path)
    notes = [line for line in done.stderr.splitlines() if "note:" in line]
    assert notes == [f"ffcc: note: {source}:4: decision with 40 conditions bounded to windows "
                     "of 6 (--mcc-max)"]
    labels = labels_of(program)
    by_line = {line: sum(1 for label in labels if label["line"] == line) for line in (4, 7)}
    assert by_line == {4: 474, 7: 17}  # the 16-atom chain keeps its 17 combinations whole
    assert run_program([str(program), "42"]).stdout == b"1 0\n"
    estimate = ffcc("--estimate", "--mcc", str(source)).stdout.splitlines()[1].split()
    assert int(estimate[2]) == len(labels)


def test_mcc_max_zero_lifts_the_bound_and_another_bound_names_itself(tmp_path, source):
    small = tmp_path / "small.c"
    small.write_text("int f(int a, int b, int c, int d, int e, int f, int g, int h) {\n"
                     "  return (a && b) || (c && d) || (e && f) || (g && h);\n}\n")
    lifted = ffcc("--mcc", "--mcc-max=0", "-c", str(small), "-o", str(tmp_path / "s.o"))
    assert "note:" not in lifted.stderr
    cut = ffcc("--mcc", "--mcc-max=2", "-c", str(small), "-o", str(tmp_path / "s.o"))
    assert cut.stderr.splitlines() == [
        f"ffcc: note: {small}:2: decision with 8 conditions bounded to windows of 2 (--mcc-max)"]
