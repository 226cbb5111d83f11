"""Pruning's pieces without a full build: analysis variants, verdicts on small C units,
the pruned preamble, the fuzzer skipping pruned labels, the report."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.instrument.labels import UnitLabel, preamble
from ffcc.instrument.plan import analysis_flags
from ffcc.instrument.prune.compile import AnalysisCompiler
from ffcc.instrument.prune.pruner import FAST, GCCDIFF, analyse
from ffcc.instrument.prune.report import PruneReport, UnitPruning
from ffcc.instrument.prune.variants import LabelShapeError, check_label_uses, neutralise_laundering
from ffcc.rewriters.model import Label
from ffcc.rewriters.opaque import copies, launder
from ffcc.runtime.abi import INFEASIBLE, TRIVIAL, LabelDatabase, LabelRecord, write_label_db

COMPILERS = [c for c in ("gcc", "clang") if shutil.which(c)]

# Label 0 infeasible (x*0 is never 1), 1 trivial, 2 kept, 3 dead (static, never called),
# 4 decided only once the laundering of the copy of a constant is neutralised.
UNIT = """
static int unused(int v) { __FFCC_LABEL(3, (v > 1)); return v; }
int f(int x) {
  __FFCC_LABEL(0, (x * 0 == 1));
  __FFCC_LABEL(1, ((unsigned)x * 0u == 0u));
  __FFCC_LABEL(2, (x > 3));
  int k = ({ COPY __FFCC_LABEL(4, (__ffcc_k != 7)); 7; });
  return x + k;
}
""".replace("COPY", copies([("__ffcc_k", "7")]))
EXPECTED = {0: "infeasible", 1: "trivial", 3: "infeasible", 4: "infeasible"}


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("method", [FAST, GCCDIFF])
def test_methods_decide_a_small_unit(cc, method):
    compiler = AnalysisCompiler(shutil.which(cc), [], "unit.c")
    assert analyse(method, UNIT, 5, compiler, jobs=2) == EXPECTED
    opaque = analyse(method, UNIT, 5, AnalysisCompiler(shutil.which(cc), [], "unit.c"),
                     jobs=2, keep_laundering=True)
    assert opaque == {k: v for k, v in EXPECTED.items() if k != 4}, \
        "laundered values hide the constant from the optimiser"
    assert compiler.compiles == (1 if method == FAST else 1 + 5 + 2)


def test_neutralising_matches_what_the_rewriters_emit():
    names = [f"__ffcc_{i}_ox0" for i in range(40)]  # 20 in memory: two asm statements
    text = f"int a; {launder(names, set(names[20:]))} {copies([('__ffcc_c', 'a + 1')])} done"
    neutral, count = neutralise_laundering(text)
    assert count == 20 + 2 + 1 and "__asm__" not in neutral
    assert neutralise_laundering('__asm__ volatile("" : "+m"(x));')[1] == 0, \
        "the program's own asm is left alone"


def test_label_uses_must_be_whole_statements():
    check_label_uses("__FFCC_LABEL(0, (a == ')')); __FFCC_LABEL(1, (f((T){1, 2}) > 0));", 2)
    for bad in ("__FFCC_LABEL(0, (a));", "x = __FFCC_LABEL(0, (a)), 1; __FFCC_LABEL(1, (b));",
                "__FFCC_LABEL(0, (a)); __FFCC_LABEL(0, (b));", "__FFCC_LABEL(0, a); "
                "__FFCC_LABEL(1, (b));", "__FFCC_LABEL(0, (a) || (b)); __FFCC_LABEL(1, (b));"):
        with pytest.raises(LabelShapeError):
            check_label_uses(bad, 2)


def test_a_unit_in_another_shape_is_not_pruned():
    compiler = AnalysisCompiler(shutil.which(COMPILERS[0]), [], "unit.c")
    with pytest.raises(Exception, match="analysis compile"):
        analyse(FAST, "int f(int x) { for (__FFCC_LABEL(0, (x)); x < 3; x++); return x; }", 1,
                compiler)


def test_analysis_flags_keep_the_preprocessor_and_replace_optimisation():
    flags = ["-DX=1", "-Iinc", "-std=c99", "-O0", "-g3", "-Wall", "-Werror", "-fsanitize=address",
             "-flto", "-Wp,-MD,x.d"]
    assert analysis_flags(flags) == ["-DX=1", "-Iinc", "-std=c99", "-Wp,-MD,x.d"]


def unit_label(index: int, operator: str, pruned: str | None = None) -> UnitLabel:
    """A label record of unit u.c; only its index, operator and verdict matter here."""
    criterion = operator.split(".")[0]
    return UnitLabel(Label(index, 0, criterion, operator, "u.c", 1, 1, "f", "x", "x"),
                     pruned=pruned)


def test_pruned_labels_compile_to_nothing_and_keep_their_slots(tmp_path):
    records = [unit_label(0, "mcc"), unit_label(1, "wm.ror.lt_le", INFEASIBLE)]
    for branch_free in (True, False):
        text = preamble(7, "u.c", records, "u.db", branch_free)
        assert "#define __FFCC_LABEL_1(p) ((void)0)" in text
        assert "#define __FFCC_LABEL_0(p) __FFCC_COUNT(0, p)" in text
        assert "#define __FFCC_LABEL(i, p) __FFCC_COUNT(i, p)" in preamble(7, "u.c", records[:1], "u.db",
                                                                          branch_free)
    write_label_db(tmp_path / "prog", LabelDatabase(128, [
        LabelRecord(0, 12), LabelRecord(1, 13), LabelRecord(2, 90, pruned=TRIVIAL)]))
    labels = LabelMap.load(tmp_path / "prog")
    assert labels.count == 2, "pruned labels are not goals"
    assert labels.label_ids[90] == -1 and labels.region_size == 128, "but keep their slots"


def test_report_counts_per_operator_group(tmp_path):
    records = [unit_label(0, "mcc"), unit_label(1, "wm.ror.lt_le", INFEASIBLE),
               unit_label(2, "wm.ror.lt_gt", TRIVIAL)]
    report = PruneReport(FAST)
    report.add(UnitPruning.of("u.c", records, 0.5, 1))
    data = json.loads(report.write(tmp_path, 2.0).read_text())
    assert data["totals"] == {"mcc": {"before": 1, "infeasible": 0, "trivial": 0, "after": 1},
                              "wm.ror": {"before": 2, "infeasible": 1, "trivial": 1, "after": 0}}
    assert data["files"][0]["seconds"] == 0.5 and data["build_seconds"] == 2.0
    assert any(re.search(r"TOTAL\s+wm.ror\s+2\s+1\s+1\s+0", line) for line in report.lines())
