"""Labels compiled out (pruned or retired) leave their sites' code: ``annotate``'s
``compiled_out`` keeps every label's record and position, and the text carries only the other
labels, which fire exactly where they fire in the full text."""

from __future__ import annotations

import re

import pytest
from rewriter_harness import ALL_WM, PROGRAMS, build, cc, run  # noqa: F401 (cc is a fixture)
from test_differential import generated_inputs

from ffcc.rewriters import LabelOptions, annotate

OPTIONS = LabelOptions(mcc=True, wm_ops=ALL_WM)
SOURCE = PROGRAMS / "mixed.c"


def test_every_label_compiled_out_leaves_the_original_text() -> None:
    full = annotate(str(SOURCE), [], OPTIONS)
    lean = annotate(str(SOURCE), [], OPTIONS, frozenset(label.index for label in full.labels))
    assert lean.labels == full.labels
    assert lean.text == SOURCE.read_text()


@pytest.mark.parametrize("kept", [2, 3])
def test_the_labels_left_fire_as_in_the_full_text(tmp_path, cc, kept) -> None:
    """Every `kept`-th label left in: each site keeps some, or none."""
    full = annotate(str(SOURCE), [], OPTIONS)
    out = frozenset(label.index for label in full.labels if label.index % kept)
    lean = annotate(str(SOURCE), [], OPTIONS, out)
    assert lean.labels == full.labels and lean.text != full.text
    original = build(tmp_path, SOURCE.read_text(), cc, "-O1", "orig")
    labelled = build(tmp_path, full.text, cc, "-O1", "full")
    lean_program = build(tmp_path, lean.text, cc, "-O1", "lean")
    fired = set()
    for stdin in generated_inputs(40):
        expected, whole, got = (run(program, stdin=stdin)
                                for program in (original, labelled, lean_program))
        assert (got.stdout, got.stderr, got.status) == (expected.stdout, expected.stderr,
                                                        expected.status), stdin
        assert got.hits == whole.hits - out, stdin
        fired |= got.hits
    assert fired, "some label left fires"


def test_each_function_is_labelled_with_the_nodes_of_none_before(monkeypatch) -> None:
    """``annotate`` labels a function at a time and the unit forgets the nodes it was asked
    about before the next (a 244,000-line unit kept some 300 MB of them): what it knows when
    it forgets is never more than one function's nodes, and the text is the same as ever."""
    from ffcc.rewriters import unit as unit_module

    kept: list[int] = []
    forget = unit_module.Unit.forget_nodes

    def counting(self: unit_module.Unit) -> None:
        kept.append(len(self.tu._ffcc_children))
        forget(self)
    monkeypatch.setattr(unit_module.Unit, "forget_nodes", counting)
    full = annotate(str(SOURCE), [], OPTIONS)
    functions = re.findall(r"^\w[^;]*?\)\s*\{", SOURCE.read_text(), re.M)  # one per line
    assert len(kept) == len(functions) >= 3, (kept, functions)
    assert max(kept) < sum(kept), kept
    assert full.labels
