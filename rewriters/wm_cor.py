"""WM / COR: ``&&`` and ``||`` replaced by each other or by one of their operands.

Kill conditions are the sets of (left, right) operand truth values where original and mutant
differ (``operators.COR``). A pair that needs the right operand where the original skips it
(left false for ``&&``, true for ``||``) needs a right operand a label can evaluate; otherwise
the mutant is left out and counted. Replacing the whole expression by true/false is not a
mutant here: it is killed exactly when the decision takes the other branch, which edge coverage
already sees. Labels test the captures with ``&`` and ``|``, without branches (mcc.py).
"""

from __future__ import annotations

from .logic import Decision, Logic, render
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import logical_replaced, operand_alone
from .operators import COR, LOGICAL, by_original
from .sites import Function

group = "COR"
reads_binops = False  # its labels sit on decisions only

MUTANTS = by_original(COR)


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for decision in function.decisions:
        parents = {id(child): (node, side) for node in decision.logic
                   for side, child in enumerate((node.left, node.right)) if isinstance(child, Logic)}
        for node in decision.logic:
            _label_node(decision, node, parents.get(id(node)), emit)


def _label_node(decision: Decision, node: Logic, parent: tuple[Logic, int] | None,
                emit: Emitter) -> None:
    """``parent``: the node ``node`` is an operand of, and which (0 left, 1 right)."""
    skipping_left = 0 if node.op == "&&" else 1
    left_text, right_text = render(node.left), render(node.right)
    for mutant in MUTANTS[node.op]:
        if not node.right_readable and any(left == skipping_left for left, _ in mutant.kill_pairs):
            emit.left_out()
            continue
        ordered = sorted(mutant.kill_pairs, reverse=True)
        emit.label(LabelRequest(
            site=decision,
            operator=mutant,
            predicate=" || ".join(
                f"({_lit(left_text, a)} && {_lit(right_text, b)})" for a, b in ordered),
            code=" | ".join(f"(($l{node.index} == {a}) & ($r{node.index} == {b}))"
                            for a, b in ordered),
            needs=frozenset({f"l{node.index}", f"r{node.index}"}),
            mutation=logical_replaced(node, mutant.mutant, parent) if mutant.mutant in LOGICAL
            else operand_alone(node, mutant.mutant),
        ))


def _lit(text: str, value: int) -> str:
    return f"({text})" if value else f"!({text})"
