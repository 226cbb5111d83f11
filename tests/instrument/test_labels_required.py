"""A labelled unit that does not compile: built without labels with a warning that says why, in
the project summary and build record too, or with --labels-required a one-line error (issue 17.9).

``-D__FFCC_TEMP=1 -Werror`` stands for any flag that only labelled code trips over (a frame
size limit, a warning the pragmas do not silence): the labelled unit redefines the macro."""

from __future__ import annotations

import json
import os
import pty
import subprocess

import pytest
from helpers import ffcc, have, run_program

from ffcc.runtime.abi import read_label_db

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
TRIP = ("-Werror", "-D__FFCC_TEMP=1")
MAIN = ("#include <stdio.h>\nint check(int a, int b);\n"
        "int main(int argc, char **argv) {\n  if (argc > 3 && argv[1][0] == 'x') return 2;\n"
        "  printf(\"%d\\n\", check(argc > 1, argc > 2));\n  return 0;\n}\n")
CHECK = "int check(int a, int b) {\n  return a && b;\n}\n"


@pytest.fixture
def sources(tmp_path):
    (tmp_path / "main.c").write_text(MAIN)
    (tmp_path / "check.c").write_text(CHECK)
    return tmp_path


@pytest.mark.parametrize("backend", BACKENDS)
def test_drop_in_falls_back_with_the_reason_or_fails_when_required(sources, backend):
    compile_check = (f"--cc={backend}", "--mcc", *TRIP, "-c", "check.c", "-o", "check.o")
    done = ffcc(*compile_check, cwd=sources)
    assert (sources / "check.o").exists()
    warning, = [line for line in done.stderr.splitlines() if line.startswith("ffcc:")]
    assert warning.startswith("ffcc: warning: check.c: built without labels, as the labelled "
                              "code does not compile: ")
    assert "__FFCC_TEMP" in warning and warning.endswith("(--labels-required makes this an error)")
    (sources / "check.o").unlink()
    failed = ffcc("--labels-required", *compile_check, cwd=sources, check=False)
    assert failed.returncode != 0 and not (sources / "check.o").exists()
    assert len(failed.stderr.splitlines()) == 1
    assert failed.stderr.startswith("ffcc: error: check.c: labelled code does not compile "
                                    "(--labels-required): ")
    assert "error:" in failed.stderr.split("(--labels-required): ")[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_summary_and_record_name_the_units_without_labels(sources, backend):
    build = sources / "build"
    done = ffcc(f"--cc={backend}", "--mcc", *TRIP, "-o", f"{build}/", "main.c", "check.c",
                cwd=sources)
    record = json.loads((build / "ffcc-build.json").read_text())
    assert [u["source"] for u in record["unlabelled"]] == [str(sources / "check.c"),
                                                          str(sources / "main.c")]
    assert all("__FFCC_TEMP" in u["reason"] for u in record["unlabelled"])
    assert "ffcc: warning: 2 of 2 labelled files were built without labels" in done.stderr
    assert run_program([str(build / "main"), "x", "y"]).stdout == b"1\n"
    failed = ffcc(f"--cc={backend}", "--mcc", "--labels-required", *TRIP, "-o", f"{build}/",
                  "main.c", "check.c", cwd=sources, check=False)
    assert failed.returncode == 1
    errors = [line for line in failed.stderr.splitlines() if "labelled code does not compile" in line]
    assert sorted(line.split(":")[2].strip() for line in errors) == ["check.c", "main.c"]


def test_a_clean_build_records_no_unit_without_labels(sources):
    ffcc("--mcc", "-o", f"{sources}/build/", "main.c", "check.c", cwd=sources)
    record = json.loads((sources / "build" / "ffcc-build.json").read_text())
    assert record["unlabelled"] == []


def _on_a_terminal(argv: list[str], cwd) -> str:
    """What ``argv`` writes to a terminal (a pseudo-terminal as stdout and stderr)."""
    leader, follower = pty.openpty()
    subprocess.run(argv, cwd=cwd, stdout=follower, stderr=follower, check=True)
    os.close(follower)
    text = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is closed once everything is read
            break
        if not chunk:
            break
        text += chunk
    os.close(leader)
    return text.decode(errors="replace")


@pytest.mark.parametrize("backend", BACKENDS)
def test_drop_in_link_summary_names_labels_per_file_and_units_without(sources, backend):
    """The objects record their units without labels; the link's summary lists them beside
    the labels per file, and says so on a terminal only (configure keeps stderr)."""
    ffcc(f"--cc={backend}", "--mcc", "-c", "main.c", "-o", "main.o", cwd=sources)
    ffcc(f"--cc={backend}", "--mcc", *TRIP, "-c", "check.c", "-o", "check.o", cwd=sources)
    link = ("ffcc", f"--cc={backend}", "--mcc", "main.o", "check.o", "-o", "prog")
    assert ffcc(*link[1:], cwd=sources).stderr == ""
    summary = json.loads((sources / "prog.ffcc-summary.json").read_text())
    labels = read_label_db(sources / "prog")
    assert labels is not None and summary["labels"] == len(labels.labels) > 0
    assert summary["files"] == [{"file": str(sources / "main.c"), "labels": summary["labels"],
                                 "mcc": summary["labels"]}]
    (unlabelled,) = summary["unlabelled"]
    assert unlabelled["file"] == str(sources / "check.c")
    assert unlabelled["reason"].startswith("the labelled code does not compile: ")
    assert "__FFCC_TEMP" in unlabelled["reason"]
    assert _on_a_terminal(list(link), sources).strip() == (
        f"ffcc: prog: {summary['labels']} labels in 1 file; 1 file without labels "
        "(see prog.ffcc-summary.json)")
    assert run_program([str(sources / "prog"), "x", "y"]).stdout == b"1\n"
