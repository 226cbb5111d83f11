"""Turn the labels of one site into edits, with side effects normalised away.

Labels never re-evaluate original code that has side effects. Two shapes, both plain GNU C
expressions, so no braces or statements have to be added around the site:

Decision ``a && f(x)``: the whole decision becomes a statement expression. Atoms and logical
operands the labels need are captured *as the original evaluates them* into tri-state
temporaries (2 = not evaluated); short-circuiting is kept. Where the original skips a right
operand, its atoms are evaluated speculatively instead, only if side-effect free and behind their
guards (seed 004 Fig. 8 a/b/c generalised, Fig. 10 guards). The labels run after the decision
and read temporaries only; loops re-run them on every evaluation of the condition::

    ({ unsigned char c0 = 2, c1 = 2; int d = ((c0 = !!(a)) ? (c1 = !!(f(x))) : (0));
       if (c0 == 1 && c1 == 1) __FFCC_LABEL(0); ...; d; })

Binary expression ``e0 OP e1`` (WM): operands that are plain variables or literals are re-read
by the label; otherwise both are first stored in temporaries, in order::

    ({ __auto_type t0 = (e0); __auto_type t1 = (e1); if (KILL) __FFCC_LABEL(3); t0 OP t1; })
"""

from __future__ import annotations

from string import Template

from .edits import EditSet
from .logic import Decision, Logic, atoms_of
from .model import LabelRequest
from .sites import Binop
from .unit import Unit

UNKNOWN = 2  # tri-state value of a capture the original did not evaluate

Indexed = list[tuple[int, LabelRequest]]


def label_statements(labels: Indexed, values: dict[str, str]) -> str:
    """``if (PRED) __FFCC_LABEL(i);`` for each label, placeholders bound to ``values``."""
    return " ".join(
        f"if ({Template(request.code).substitute(values)}) __FFCC_LABEL({index});"
        for index, request in labels
    )


def rewrite_decision(unit: Unit, edits: EditSet, decision: Decision, labels: Indexed,
                     tag: str) -> None:
    needs = frozenset().union(*(request.needs for _, request in labels))
    names = {need: f"__ffcc_{tag}{need}" for need in sorted(needs)}
    result = f"__ffcc_{tag}d"
    declarations = ", ".join(f"{name} = {UNKNOWN}" for name in names.values())
    start, end = unit.span(decision.cursor)
    edits.wrap(start, end,
               f"({{ unsigned char {declarations}; int {result} = ",
               f"; {label_statements(labels, names)} {result}; }})")
    for node in decision.logic:
        _rewrite_logic(unit, edits, node, names)
    for atom in decision.atoms:
        name = names.get(f"c{atom.index}")
        if name is not None:
            edits.wrap(*unit.span(atom.cursor), f"({name} = !!(", "))")


def _rewrite_logic(unit: Unit, edits: EditSet, node: Logic, names: dict[str, str]) -> None:
    left_name, right_name = names.get(f"l{node.index}"), names.get(f"r{node.index}")
    if left_name is not None:
        edits.wrap(*unit.span(node.left_cursor), f"({left_name} = !!(", "))")
        edits.wrap(*unit.span(node.right_cursor), f"({right_name} = !!(", "))")
    speculation = [
        f"{names[f'c{atom.index}']} = {_guarded(atom.guard, atom.text)}"
        for atom in atoms_of(node.right)
        if atom.readable and f"c{atom.index}" in names
    ]
    if right_name is not None and node.right_readable:
        speculation.append(f"{right_name} = {_guarded(node.right_guard, node.right_text)}")
    if not speculation:
        return
    start, end = unit.span(node.cursor)
    operator = unit.operator_between(node.left_cursor, node.right_cursor)
    skipped = ", ".join(speculation)
    edits.wrap(*unit.span(node.right_cursor), "!!(", ")")
    if node.op == "&&":
        edits.wrap(start, end, "(", f" : ({skipped}, 0))")
        edits.replace(operator.offset, operator.end - operator.offset, "?")
    else:
        edits.wrap(start, end, "(", ")")
        edits.replace(operator.offset, operator.end - operator.offset, f"? ({skipped}, 1) :")


def _guarded(guard: str, text: str) -> str:
    return f"(({guard}) ? !!({text}) : {UNKNOWN})" if guard else f"!!({text})"


def rewrite_binop(edits: EditSet, site: Binop, labels: Indexed, tag: str) -> None:
    start, end = site.cursor.extent.start.offset, site.cursor.extent.end.offset
    if site.plain:
        statements = label_statements(labels, {"x0": site.lhs_text, "x1": site.rhs_text})
        edits.wrap(start, end, f"({{ {statements} ", "; })")
        return
    first, second = f"__ffcc_{tag}x0", f"__ffcc_{tag}x1"
    promote = tuple("+" if bitfield else "" for bitfield in site.bitfield)
    statements = label_statements(labels, {"x0": first, "x1": second})
    edits.wrap(start, end, f"({{ __auto_type {first} = ({promote[0]}",
               f"); {statements} {first} {site.op} {second}; }})")
    gap_start, gap_end = site.lhs.extent.end.offset, site.rhs.extent.start.offset
    edits.replace(gap_start, gap_end - gap_start, f"); __auto_type {second} = ({promote[1]}")
