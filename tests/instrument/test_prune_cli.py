"""``--prune`` from the command line: in a project build, on an existing build directory,
in drop-in form; and fast agreeing with the paper's gccdiff."""

from __future__ import annotations

import json
import shutil

from helpers import REPO, ffcc, sample_sources

from ffcc.instrument.prune.compile import AnalysisCompiler
from ffcc.instrument.prune.pruner import FAST, GCCDIFF, analyse
from ffcc.instrument.toolchain import predefined_macros
from ffcc.rewriters import LabelOptions, annotate
from ffcc.runtime.abi import INFEASIBLE, TRIVIAL, read_label_db

PROGRAM = """#include <stdio.h>
int main(int argc, char **argv) {
  unsigned n = (unsigned)argc;
  if (n * 0u != 0u || argc > 1) puts("args");
  return 0;
}
"""


def test_project_build_with_gccdiff_writes_report_and_database(tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    done = ffcc("--mcc", "--wm=ROR", "--prune=gccdiff", "-o", "b/", "p.c", cwd=tmp_path)
    assert "ffcc: pruning (gccdiff)" in done.stderr
    db = read_label_db(tmp_path / "b/p").labels
    assert {l.pruned for l in db if l.pruned} <= {INFEASIBLE, TRIVIAL}
    assert any(l.pruned == INFEASIBLE for l in db), "n*0u != 0u is never true"
    report = json.loads((tmp_path / "b/ffcc-prune.json").read_text())
    assert report["method"] == GCCDIFF and report["files"][0]["compiles"] > len(db)
    record = json.loads((tmp_path / "b/ffcc-build.json").read_text())
    assert record["pruned"] == GCCDIFF and record["label_options"] == ["--mcc", "--wm=ROR"]


def test_prune_needs_labels_or_a_build_directory(tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    done = ffcc("--prune", "-o", "b/", "p.c", cwd=tmp_path, check=False)
    assert done.returncode == 2 and "--prune needs labels" in done.stderr
    ffcc("-o", "plain/", "p.c", cwd=tmp_path)
    done = ffcc("--prune", "plain/", cwd=tmp_path, check=False)
    assert done.returncode == 2 and "has no labels to prune" in done.stderr


def test_drop_in_form_prunes_too(tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    done = ffcc("-O2", "p.c", "-o", "prog", cwd=tmp_path,
                env={"FFCC_FLAGS": "--mcc --wm=ROR --prune"})
    assert "ffcc: pruning (fast)" in done.stderr
    db = (tmp_path / "prog.labels.jsonl").read_text()
    assert '"pruned": "infeasible"' in db


def test_fast_agrees_with_gccdiff_on_the_temperature_sample():
    source = sample_sources("temperature")[0]
    cc = shutil.which("clang") or shutil.which("gcc")
    result = annotate(str(REPO / source), predefined_macros(),
                      LabelOptions(mcc=True, wm_ops=frozenset({"ROR", "AOR", "COR", "ABS"})))
    count = len(result.labels)
    verdicts = {method: analyse(method, result.text, count,
                                AnalysisCompiler(cc, predefined_macros(), source), jobs=2)
                for method in (FAST, GCCDIFF)}
    agree = sum(verdicts[FAST].get(i) == verdicts[GCCDIFF].get(i) for i in range(count))
    assert agree / count >= 0.95
    assert verdicts[FAST], "the sample has decidable labels"
