"""Multiple condition coverage: one label per combination of atom truth values per decision.

With ``mcc_max = K`` a decision of n > K atoms gets, instead of 2^n labels, the 2^K combinations
of every window of K consecutive atoms (seed 004 §6.5: 3-bounded MCC cut labels by 67%).
A combination needing the value of an atom that the original may skip and that a label cannot
evaluate safely (a call, a side effect, a read through a pointer, ``safety``) is left out
and counted.
"""

from __future__ import annotations

from itertools import product

from .logic import Decision, feasible
from .model import Emitter, LabelOptions, LabelRequest
from .operators import MCC
from .sites import Function

group = MCC.group


def windows(atom_count: int, bound: int | None) -> list[range]:
    """Atom index windows covered by labels: all atoms, or each run of ``bound`` atoms."""
    if bound is None or atom_count <= bound:
        return [range(atom_count)]
    return [range(start, start + bound) for start in range(atom_count - bound + 1)]


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for decision in function.decisions:
        if len(decision.atoms) >= options.mcc_min_atoms:
            _label_decision(decision, options.mcc_max, emit)


def _label_decision(decision: Decision, bound: int | None, emit: Emitter) -> None:
    unreadable = frozenset(a.index for a in decision.atoms if not a.readable)
    for window in windows(len(decision.atoms), bound):
        for values in product((True, False), repeat=len(window)):
            fixed = dict(zip(window, values))
            if not feasible(decision.root, fixed, unreadable & frozenset(window)):
                emit.left_out()
                continue
            emit.label(LabelRequest(
                site=decision,
                operator=MCC,
                predicate=" && ".join(
                    f"({decision.atoms[i].text})" if v else f"!({decision.atoms[i].text})"
                    for i, v in fixed.items()),
                code=" && ".join(f"$c{i} == {int(v)}" for i, v in fixed.items()),
                needs=frozenset(f"c{i}" for i in window),
            ))
