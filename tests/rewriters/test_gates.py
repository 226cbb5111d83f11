"""Gates: each site's label code is one block behind the site's gate (rewrite.py), which the
driver compiles to a skip of the block once the site is retired (instrument/labels.py).
A program whose gates are all closed behaves as the original and lights no label; the
driver's gate compiles where a site's text occurs twice in one function."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, sample_sources
from rewriter_harness import ALL_WM, build, run
from test_differential import PROGRAM_INPUTS, program  # noqa: F401 (a fixture)

from ffcc.instrument.labels import UnitLabel, preamble, unit_db
from ffcc.rewriters import LabelOptions, annotate
from ffcc.rewriters.model import Label
from ffcc.runtime.abi import UNIT_HEADER_SIZE

GATE_BLOCK = re.compile(r"\{ __FFCC_GATE_OPEN\((\d+)\) (.*?) __FFCC_GATE_CLOSE\((\d+)\) \}")
LABEL = re.compile(r"__FFCC_LABEL\((\d+), ")


def test_each_label_is_in_the_block_of_its_sites_gate():
    (source,) = sample_sources("boundaries")
    annotation = annotate(str(REPO / source), [], LabelOptions(mcc=True, wm_ops=ALL_WM))
    blocks = GATE_BLOCK.findall(annotation.text)
    assert all(opened == closed for opened, _, closed in blocks)
    assert sorted(int(gate) for gate, _, _ in blocks) == list(range(len(blocks))), \
        "one gate per site, numbered from 0"
    inside = {int(index): int(gate) for gate, code, _ in blocks for index in LABEL.findall(code)}
    assert inside == {label.index: label.gate for label in annotation.labels}
    assert len(LABEL.findall(annotation.text)) == len(inside), "no label outside a gate block"


@pytest.mark.parametrize("cc", [cc for cc in ("gcc", "clang") if shutil.which(cc)])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_closed_gates_skip_labels_and_change_nothing_else(program, cc, opt, monkeypatch):
    name, original, labelled, tmp = program
    plain = build(tmp, original, cc, opt, "orig")
    instrumented = build(tmp, labelled, cc, opt, "labelled")
    inputs = PROGRAM_INPUTS[name](20)
    assert any(run(instrumented, stdin=stdin).hits for stdin in inputs), "open gates: labels run"
    monkeypatch.setenv("FFCC_GATES_CLOSED", "1")
    for stdin in inputs:
        expected, got = run(plain, stdin=stdin), run(instrumented, stdin=stdin)
        assert (got.stdout, got.stderr, got.status) == (expected.stdout, expected.stderr,
                                                        expected.status), stdin
        assert not got.hits, stdin


# One site's text twice in a function, as a macro that uses its argument twice makes it: the
# gate's labels are local to each copy's block.  main prints label 0's slot, label 1's slot,
# and the sum; with any argument, the first gate byte set, so the site is skipped.
TWICE = r"""#include <stdio.h>
#define TWICE(e) ((e) + (e))
static int twice(int x) {
  return TWICE(({ { __FFCC_GATE_OPEN(0) __FFCC_LABEL(0, (x > 1)); __FFCC_LABEL(1, (x < 1));
                    __FFCC_GATE_CLOSE(0) } x; }));
}
int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) __ffcc_unit_slots[%(gate)d] = 1;
  int sum = twice(2);
  printf("%%d %%d %%d\n", __ffcc_unit_slots[%(first)d], __ffcc_unit_slots[%(first)d + 1], sum);
  return 0;
}
"""


@pytest.mark.skipif(not shutil.which("clang"), reason="no clang")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_a_site_repeated_in_one_function_compiles_with_the_drivers_gate(tmp_path: Path, opt):
    source = tmp_path / "twice.c"
    records = [UnitLabel(Label(index, 0, "mcc", "mcc", str(source), 4, 18, "twice", "x > 1",
                               predicate), gated=True)
               for index, predicate in enumerate(("x > 1", "x < 1"))]
    # Without ffcc's runtime the deltas are 0: labels count in the section itself, and the
    # retirement byte a label and a gate read is their own byte.
    db = tmp_path / "twice.db"
    db.write_text(unit_db(7, str(source), records))
    source.write_text(preamble(7, str(source), records, str(db)) + TWICE % {
        "gate": UNIT_HEADER_SIZE + 2, "first": UNIT_HEADER_SIZE})
    binary = tmp_path / "twice"
    done = subprocess.run(["clang", opt, "-Werror", str(source), "-o", str(binary)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "1 0 4\n"
    assert subprocess.run([str(binary), "closed"], capture_output=True,
                          text=True).stdout == "0 0 4\n"
