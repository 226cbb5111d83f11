"""What a weak-mutation mutant changes in its site's source text: the edits a WM criterion
attaches to its request (``LabelRequest.mutation``), from which display.mutated_text writes the
label record's ``mutants``. The rewriters own C's operators; a report shows the text as it is.

An operator replaced by one that binds differently keeps the meaning of the mutant only with
parentheses: ``a + b * c`` with ``+`` -> ``/`` is ``a / (b * c)``, and ``a && b && c`` with the
first ``&&`` -> ``||`` is ``(a || b) && c``. They are added where C's grouping asks for them, and
nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable

from clang.cindex import Cursor, CursorKind

from .logic import Logic
from .model import Edit
from .operators import LHS
from .ops import binary_op
from .sites import BINARY, Binop
from .unit import Span, strip_implicit

# C's binary operators, from the loosest binding to the tightest
PRECEDENCE: dict[str, int] = {op: level for level, ops in enumerate(
    (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
     ("<<", ">>"), ("+", "-"), ("*", "/", "%")), start=1) for op in ops}
TIGHTEST = len(set(PRECEDENCE.values())) + 1  # unary, postfix, primary, in parentheses
LOOSEST = 0  # assignment, conditional, comma


def binding(cursor: Cursor) -> int:
    """How tightly an operand's own outermost operator binds (PRECEDENCE's levels)."""
    node = strip_implicit(cursor)
    if node.kind == CursorKind.CONDITIONAL_OPERATOR:
        return LOOSEST
    op = binary_op(node)
    return TIGHTEST if op is None else PRECEDENCE.get(op, LOOSEST)


def operator_replaced(site: Binop, new: str) -> tuple[Edit, ...]:
    """The site's operator spelled ``new`` ("" deletes a unary one); an operand of a binary
    expression that would group otherwise around ``new`` in parentheses. Empty where the
    operator is not a token of the file."""
    if site.token is None:
        return ()
    edits = [(site.token.offset, site.token.end, new)]
    if site.form == BINARY:
        edits += _grouped(new, zip((site.lhs, site.rhs), site.spans))
    return tuple(sorted(edits))


def operand_replaced(site: Binop, slot: str, form: str) -> tuple[Edit, ...]:
    """Operand ``slot`` (``x0``, ``x1``) of the site written as ``form`` (``abs({})``): a call
    around it, which needs no parentheses of its own."""
    start, end = site.spans[slot == "x1"]
    prefix, suffix = form.split("{}")
    return (start, start, prefix), (end, end, suffix)


def logical_replaced(node: Logic, new: str, parent: tuple[Logic, int] | None) -> tuple[Edit, ...]:
    """Logical node ``node`` of a decision with ``new`` in place of its operator; the node in
    parentheses where it is operand ``parent[1]`` (0 left, 1 right) of a ``parent`` it would no
    longer group under (``a && b && c``: ``(a || b) && c``)."""
    edits = [(node.operator.offset, node.operator.end, new),
             *_grouped(new, zip((node.left_cursor, node.right_cursor), node.spans))]
    if parent is not None:
        outer, side = parent
        if binding((outer.left_cursor, outer.right_cursor)[side]) != TIGHTEST and \
                _loosens(PRECEDENCE[new], outer.op, side):
            edits += _parenthesised((node.spans[0][0], node.spans[1][1]))
    return tuple(sorted(edits))


def operand_alone(node: Logic, kept: str) -> tuple[Edit, ...]:
    """Logical node ``node`` replaced by its operand ``kept`` (LHS or RHS): the operator and the
    other operand deleted, with the space on the side away from what follows or precedes the
    node (``(a && b)``: ``(a)``). The operand binds at least as tightly as the node did."""
    (left_start, left_end), (right_start, right_end) = node.spans
    if kept == LHS:
        return ((left_end, right_end, ""),)
    return ((left_start, right_start, ""),)


def _grouped(new: str, operands: Iterable[tuple[Cursor, Span]]) -> list[Edit]:
    """Parentheses around each operand that would group otherwise around ``new``."""
    edits: list[Edit] = []
    for side, (cursor, span) in enumerate(operands):
        if _loosens(binding(cursor), new, side):
            edits += _parenthesised(span)
    return edits


def _loosens(level: int, op: str, side: int) -> bool:
    """Does an operand binding at ``level`` need parentheses as operand ``side`` of ``op``? C's
    binary operators group left to right: the left one where it binds more loosely, the right
    one also where it binds alike."""
    return level < PRECEDENCE[op] + side


def _parenthesised(span: Span) -> list[Edit]:
    start, end = span
    return [(start, start, "("), (end, end, ")")]
