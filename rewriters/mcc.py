"""Multiple condition coverage: one label per combination of atom values that evaluation reaches.

A combination fixes only the atoms the original evaluates (evaluation.py): for ``a && b`` the
labels are ``a && b``, ``a && !b`` and ``!a``. Each label reads the captures the original made
(2 for an atom it skipped), so no atom is ever evaluated for a label; it tests them with ``&``,
not ``&&``: no branch, so that at -O0 no value lives across blocks (clang spills each such value
to a stack slot of its own). With ``mcc_max = K`` a
decision with more than 2^K combinations gets those of its windows of K atoms instead, and the
driver is told (``Emitter.bounded``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .evaluation import Path, flow_of, paths, windows
from .logic import Atom, Decision, Node, Not
from .model import Emitter, LabelOptions, LabelRequest
from .operators import MCC
from .sites import Function

group = MCC.group
reads_binops = False  # its labels sit on decisions only


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for decision in function.decisions:
        if len(decision.atoms) >= options.mcc_min_atoms:
            _label_decision(decision, options.mcc_max, emit)


def shape(node: Node) -> tuple[str, Sequence[Node]]:
    """A logic node as evaluation.flow_of reads it."""
    if isinstance(node, Atom):
        return "atom", ()
    if isinstance(node, Not):
        return "!", (node.child,)
    return node.op, (node.left, node.right)


def _label_decision(decision: Decision, bound: int, emit: Emitter) -> None:
    flow = flow_of(decision.root, shape)
    chosen = windows(flow, bound)
    if len(chosen) > 1:
        emit.bounded(decision, bound)
    for window in chosen:
        for path in paths(flow, window):
            emit.label(_request(decision, path))


def _request(decision: Decision, path: Path) -> LabelRequest:
    atoms = decision.atoms
    return LabelRequest(
        site=decision,
        operator=MCC,
        predicate=" && ".join(f"({atoms[i].text})" if value else f"!({atoms[i].text})"
                              for i, value in path),
        code=" & ".join(f"($c{i} == {int(value)})" for i, value in path),
        needs=frozenset(f"c{i}" for i, _ in path),
    )
