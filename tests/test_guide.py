"""docs/GUIDE.md followed end to end, as a newcomer would, on the temperature sample made into
a small project with a Makefile: estimate, plain and labelled builds (project form and
drop-in), a campaign bounded by its first crash, a resumed one, the report with its files,
the report on the plain build's edges, plots.  Every command is one the guide shows."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "temperature"
MAKEFILE = "temperature: temperature.c\n\t$(CC) $(CFLAGS) -o $@ temperature.c\n"
# The crash comes within a few thousand executions; the bound only ends a campaign that
# never finds it.
UNTIL_CRASH = "200000"


def sh(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "AFL_NO_UI": "1", "AFL_NO_AFFINITY": "1", **env})
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(SAMPLE / "temperature.c", tmp_path)
    shutil.copytree(SAMPLE / "seeds", tmp_path / "seeds")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return tmp_path


def test_the_guide_from_build_to_report(project: Path) -> None:
    estimate = sh("ffcc", "--estimate", "--mcc", "--wm", "temperature.c", cwd=project).stdout
    estimated = estimate.splitlines()[1].split()
    sh("ffcc", "-o", "build/", "temperature.c", cwd=project)                      # section 4
    built = sh("ffcc", "--mcc", "--wm", "-o", "build-labels/", "temperature.c", cwd=project)
    assert f"{int(estimated[2]) + int(estimated[3])} labels in the program" in built.stderr
    sh("make", "CC=ffcc", cwd=project, FFCC_FLAGS="--mcc --wm")                     # drop-in
    assert (project / "temperature.labels.jsonl").is_file()
    assert json.loads((project / "temperature.ffcc-summary.json").read_text())

    program = str(project / "build-labels" / "temperature")                          # section 5
    sh("ffuzz", "-i", "seeds", "-o", "out", "-E", UNTIL_CRASH, "--", program, "@@", cwd=project,
       AFL_BENCH_UNTIL_CRASH="1")
    crashes = [p for p in (project / "out/default/crashes").iterdir() if p.name.startswith("id:")]
    assert crashes
    resumed = sh("ffuzz", "-i", "-", "-o", "out", "-E", "2000", "--", program, "@@", cwd=project)
    assert "stopped by execution limit (-E 2000)" in resumed.stderr

    report = sh("ffuzz", "report", "out", cwd=project).stdout                         # section 6
    assert "weak-mutation score" in report
    files = project / "out/default/report"
    assert {"index.html", "mutation.json", "labels.info"} <= {p.name for p in files.iterdir()}
    mutants = [m for f in json.loads((files / "mutation.json").read_text())["files"].values()
               for m in f["mutants"]]
    headline = [m for m in mutants if m.get("replacement") == "current_temp > TEMPERATURE_LIMIT"]
    assert headline and headline[0]["status"] == "Killed"
    edges = sh("ffuzz", "report", "out", "--edges-binary", str(project / "build/temperature"),
               cwd=project).stdout
    assert "edges:" in edges
    if shutil.which("genhtml"):
        sh("genhtml", "--branch-coverage", "-o", "lcov", str(files / "labels.info"), cwd=project)
        assert (project / "lcov" / "index.html").is_file()
    sh("ffuzz", "plot", "out", "-o", "plots", cwd=project)
    assert list((project / "plots").glob("*.png"))

    reproduced = subprocess.run([str(project / "build/temperature"), str(crashes[0])])
    assert reproduced.returncode < 0  # the plain build crashes on it too
