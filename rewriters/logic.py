"""Decisions: maximal trees of ``&&``, ``||`` and ``!`` over atomic conditions.

A decision is found wherever such a tree is evaluated (if/while/do/for/switch conditions, ``?:``
conditions, ``return a && b;``, ...). Atoms are numbered left to right, which is also the order
in which C evaluates them; logical nodes are numbered in pre-order.
"""

from __future__ import annotations

from dataclasses import dataclass

from clang.cindex import Cursor, CursorKind

from .display import value_text
from .opaque import Speculation, speculation
from .operators import LOGICAL
from .ops import binary_op, unary_op
from .safety import readable
from .unit import Span, Token, Unit, children, strip_implicit
from .variables import Variables


@dataclass
class Atom:
    index: int
    cursor: Cursor
    text: str  # for predicates (display.value_text)


@dataclass
class Not:
    child: Node


@dataclass
class Logic:
    index: int
    op: str  # "&&" or "||"
    cursor: Cursor
    left: Node
    right: Node
    left_cursor: Cursor  # operand expressions as written (a Not node has no cursor)
    right_cursor: Cursor
    operator: Token  # the operator as spelled between them
    spans: tuple[Span, Span]  # where the operands are in the unit
    right_readable: bool  # may the right operand be evaluated when short-circuited?
    right_speculative: Speculation | None  # that evaluation (None if not readable)


Node = Atom | Not | Logic


@dataclass
class Decision:
    """One decision: its tree, atoms in evaluation order and logical nodes in pre-order."""

    cursor: Cursor
    root: Node
    atoms: list[Atom]
    logic: list[Logic]
    order_exposed: bool = False  # labels here could change evaluation order (sites.py): none
    unlabelled: str | None = None  # why a decision like any other gets no labels (sites.py)
    full_expression: int | None = None  # where its temporaries live (frame.py): None, its own

    @property
    def text(self) -> str:
        return render(self.root)


def build_decision(cursor: Cursor, unit: Unit, variables: Variables) -> Decision | None:
    """The decision rooted at ``cursor``, or None if it holds no ``&&``/``||`` spelled in the file.
    ``variables``: those of the enclosing function (what skipped operands may read)."""
    builder = _Builder(unit, variables)
    root = builder.build(cursor)
    if not builder.logic or builder.unspelled_atom:
        return None
    return Decision(cursor, root, builder.atoms, builder.logic)


def _unwrap(cursor: Cursor, unit: Unit) -> Cursor:
    node = strip_implicit(cursor)
    while node.kind == CursorKind.PAREN_EXPR and not unit.opaque(node):
        node = strip_implicit(children(node)[0])
    return node


class _Builder:
    """Numbers atoms and logical nodes while descending (pre-order = evaluation order)."""

    def __init__(self, unit: Unit, variables: Variables) -> None:
        self.unit = unit
        self.variables = variables
        self.atoms: list[Atom] = []
        self.logic: list[Logic] = []
        self.unspelled_atom = False  # an atom has no text that can be copied (no decision then)

    def build(self, cursor: Cursor) -> Node:
        unit = self.unit
        node = _unwrap(cursor, unit)
        if not unit.opaque(node):
            if unary_op(node) == "!":
                return Not(self.build(children(node)[0]))
            op = binary_op(node)
            operator = _spelled_operator(node, unit) if op in LOGICAL else None
            if op is not None and operator is not None:
                left_cursor, right_cursor = children(node)
                index = len(self.logic)
                self.logic.append(None)  # type: ignore[arg-type]  # keep pre-order numbering
                left = self.build(left_cursor)
                right = self.build(right_cursor)
                self.logic[index] = Logic(index, op, node, left, right, left_cursor,
                                          right_cursor, operator,
                                          (unit.span(left_cursor), unit.span(right_cursor)),
                                          *_speculative(right_cursor, unit, self.variables))
                return self.logic[index]
        text = value_text(unit, cursor)
        if text is None:
            self.unspelled_atom = True
        atom = Atom(len(self.atoms), cursor, text or "")
        self.atoms.append(atom)
        return atom


def _spelled_operator(node: Cursor, unit: Unit) -> Token | None:
    """The operator token of a binary node whose operands and operator are spelled in the file."""
    left, right = children(node)
    if not (unit.spelled(left) and unit.spelled(right)):
        return None
    return unit.operator_between(left, right)


def _speculative(cursor: Cursor, unit: Unit, variables: Variables
                 ) -> tuple[bool, Speculation | None]:
    """(readable, the guarded expression over opaque copies that evaluates it for labels)."""
    if not readable(cursor, unit, variables):
        return False, None
    return True, speculation(cursor, unit)


def render(node: Node) -> str:
    """A node as C text on one line, fully parenthesised."""
    if isinstance(node, Atom):
        return node.text
    if isinstance(node, Not):
        return f"!({render(node.child)})"
    return f"({render(node.left)}) {node.op} ({render(node.right)})"
