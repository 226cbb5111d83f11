"""WM / COR: ``&&`` and ``||`` replaced by each other or by one of their operands.

Kill conditions are sets of (left, right) operand truth values where original and mutant
differ. A pair that needs the right operand where the original skips it (left false for
``&&``, true for ``||``) needs a right operand a label can evaluate; otherwise the mutant is
left out and counted. Replacing the whole expression by true/false is not a mutant here: it is
killed exactly when the decision takes the other branch, which edge coverage already sees.
"""

from __future__ import annotations

from .logic import Decision, Logic, render
from .model import Emitter, LabelOptions, LabelRequest
from .sites import Function

name = "COR"
help = "conditional operator replacement: && <-> ||, and each operand alone"

# original operator -> (mutant id, kill pairs (left, right))
MUTANTS: dict[str, tuple[tuple[str, frozenset[tuple[int, int]]], ...]] = {
    "&&": (
        ("wm.cor.and_or", frozenset({(1, 0), (0, 1)})),
        ("wm.cor.and_lhs", frozenset({(1, 0)})),
        ("wm.cor.and_rhs", frozenset({(0, 1)})),
    ),
    "||": (
        ("wm.cor.or_and", frozenset({(1, 0), (0, 1)})),
        ("wm.cor.or_lhs", frozenset({(0, 1)})),
        ("wm.cor.or_rhs", frozenset({(1, 0)})),
    ),
}


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for decision in function.decisions:
        for node in decision.logic:
            _label_node(decision, node, emit)


def _label_node(decision: Decision, node: Logic, emit: Emitter) -> None:
    skipping_left = 0 if node.op == "&&" else 1
    left_text, right_text = render(node.left), render(node.right)
    for operator, pairs in MUTANTS[node.op]:
        if not node.right_readable and any(left == skipping_left for left, _ in pairs):
            emit.left_out()
            continue
        ordered = sorted(pairs, reverse=True)
        emit.label(LabelRequest(
            site=decision,
            criterion="wm",
            operator=operator,
            predicate=" || ".join(
                f"({_lit(left_text, a)} && {_lit(right_text, b)})" for a, b in ordered),
            code=" || ".join(f"($l{node.index} == {a} && $r{node.index} == {b})" for a, b in ordered),
            needs=frozenset({f"l{node.index}", f"r{node.index}"}),
        ))


def _lit(text: str, value: int) -> str:
    return f"({text})" if value else f"!({text})"
