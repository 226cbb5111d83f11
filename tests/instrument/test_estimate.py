"""ffcc --estimate: the labels a build gets, per file, without compiling; files it cannot
read or parse are named."""

import re
import subprocess
from pathlib import Path

import pytest

from ffcc.instrument.cli import run
from ffcc.rewriters import lines_of_code

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "samples").glob("*/*.c"))
PAIRS = "(a && b) || (c && d) || (e && f) || (g && h)"


def _estimated(capsys, *argv: str) -> tuple[int, int, int]:
    """(mcc, wm, left out) of the one file ``ffcc --estimate ARGV`` prints."""
    assert run(["--estimate", *argv]) == 0
    columns = capsys.readouterr().out.splitlines()[1].split()
    return int(columns[2]), int(columns[3]), int(columns[4])


@pytest.mark.parametrize("source", SAMPLES, ids=lambda p: p.stem)
def test_the_estimate_is_what_the_build_gets(tmp_path, capsys, source) -> None:
    built = subprocess.run(["ffcc", "--mcc", "--wm", "-o", f"{tmp_path}/", str(source)],
                           capture_output=True, text=True, check=True).stderr
    counts = re.search(r"(\d+) labels \(mcc (\d+), wm (\d+)\), (\d+) left out", built)
    assert counts is not None, built
    assert _estimated(capsys, "--mcc", "--wm", str(source)) == \
        (int(counts[2]), int(counts[3]), int(counts[4]))


def test_the_estimate_counts_what_the_label_options_ask(tmp_path, capsys) -> None:
    source = tmp_path / "e.c"
    source.write_text("int f(int a, int b, int c, int d, int e, int f, int g, int h) {\n"
                      f"  if ({PAIRS}) return a < d;\n  return a << b;\n}}\n")
    path = str(source)
    every = _estimated(capsys, path)  # no label option: every group, BOR's << included
    default = _estimated(capsys, "--mcc", "--wm", path)
    assert every[0] == default[0] == 31 and every[1] > default[1]
    assert _estimated(capsys, "--mcc", "--mcc-max=2", path)[:2] == (21, 0)
    assert _estimated(capsys, "--mcc", "--mcc-max=0", path)[:2] == (31, 0)
    mcc_of_ror, ror, _ = _estimated(capsys, "--wm=ROR", path)
    assert mcc_of_ror == 0 and 0 < ror < default[1]


def test_a_file_it_cannot_read_or_parse_is_named(tmp_path, capsys) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("int f(int a) { return a < ; }\n")
    missing_header = tmp_path / "header.c"
    missing_header.write_text("#include <no_such_header.h>\nint f(int a) { return a < 2; }\n")
    good = tmp_path / "good.c"
    good.write_text("int f(int a) { return a < 2; }\n")
    argv = ["--estimate", "--wm", str(broken), str(missing_header), str(tmp_path / "absent.c"),
            str(good)]
    assert run(argv) == 1
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[1:]] == [str(good)]
    named = [line.split(": ")[2] for line in err.splitlines()]
    assert named == [str(broken), str(missing_header), str(tmp_path / "absent.c")]
    assert all("cannot estimate" in line for line in err.splitlines())


def test_lines_of_code_leave_out_comments_and_blank_lines(tmp_path) -> None:
    source = tmp_path / "e.c"
    source.write_text("/* a\n   comment */\n#include <missing.h>\n\nint f(int a) {  // why\n"
                      "  return a;\n}\n")
    assert lines_of_code(str(source)) == 4
