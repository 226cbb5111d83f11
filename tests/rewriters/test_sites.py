"""The walk finds operator sites only for criteria that read them (sites.find_sites)."""

from __future__ import annotations

import pytest
from rewriter_harness import PROGRAMS

import ffcc.rewriters.labelling as labelling
from ffcc.rewriters import LabelOptions
from ffcc.rewriters.operators import WM_DEFAULT
from ffcc.rewriters.sites import find_sites
from ffcc.rewriters.unit import Unit

SOURCES = sorted(PROGRAMS.glob("*.c"))
DECISIONS_ONLY = {"mcc": LabelOptions(mcc=True),
                  "cor": LabelOptions(mcc=False, wm_ops=frozenset({"COR"})),
                  "mcc+cor": LabelOptions(mcc=True, wm_ops=frozenset({"COR"}))}


def outcome(annotation):
    return (annotation.text, annotation.labels, annotation.left_out, annotation.skipped,
            annotation.bounded)


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_a_walk_without_operator_sites_finds_the_same_decisions(source):
    found = {}
    for find_binops in (True, False):
        unit = Unit(str(source), ["-O2"])
        functions = list(find_sites(unit, frozenset(), find_binops))
        found[find_binops] = ([len(function.binops) for function in functions],
                         [[(unit.span(d.cursor), len(d.atoms)) for d in function.decisions]
                          for function in functions])
    assert any(found[True][0]) and not any(found[False][0])
    assert found[False][1] == found[True][1] and any(found[True][1])


@pytest.mark.parametrize("mode", DECISIONS_ONLY)
@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_decision_criteria_label_alike_without_operator_sites(source, mode, monkeypatch):
    options = DECISIONS_ONLY[mode]
    skipping = labelling.annotate(str(source), ["-O2"], options)
    real = labelling.find_sites
    monkeypatch.setattr(labelling, "find_sites",
                        lambda unit, only, find_binops: real(unit, only, True))
    walking_all = labelling.annotate(str(source), ["-O2"], options)
    assert skipping.labels
    assert outcome(skipping) == outcome(walking_all)


def test_operator_criteria_still_get_their_sites():
    source = str(SOURCES[0])
    labels = labelling.annotate(source, ["-O2"], LabelOptions(mcc=False, wm_ops=frozenset(WM_DEFAULT))).labels
    assert any(label.operator.startswith("wm.ror") for label in labels)
