"""WM / ABS: an arithmetic operand e replaced by abs(e), -abs(e), or fail-on-zero.

Kill conditions (``operators.ABS``): abs(e) differs iff ``e < 0``; -abs(e) differs iff ``e > 0``
(and, where e's arithmetic is unsigned and -e wraps, ``e != 2^(bits-1)``: the arithmetic of e's
promoted type, an int for an ``unsigned x : 3`` bit-field); fail-on-zero is killed iff
``e == 0`` (for floating e, -0.0 equals 0.0 and NaN equals itself: abs(NaN) is no kill).
Operands are those of relational and arithmetic binary expressions, the value assigned by an
arithmetic compound assignment (e in ``x += e``), and the operand of a unary minus: the kill
condition is about the operand's value, as at a binary expression (``x *= abs(e)`` is killed
where e < 0, whatever x). Constant operands are skipped (their kill condition is a constant),
and so is a mutant whose kill condition is constant over the values e can have where the
original is defined (those of its type, or of its width for a bit-field: ``abs`` of an unsigned
or 0/1 operand is an equivalent mutant, ``-abs`` of an ``int x : 1`` too; fail-on-zero of a
divisor the original never divides by: an integer one, or a floating one whose quotient is
stored to an integer object, ``n /= 0.0`` storing an infinity or NaN; everything at ``x / 0``).
Floating tests are quiet comparisons (no FE_INVALID on a NaN). Each kill condition is keyed as
a comparison of the operand with zero, so ROR's same condition at ``e < 0`` is one label.
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .kill_rules import EQ, GT, both, ordering_test, relational_test
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operand_replaced
from .operators import ABS, ARITHMETIC, RELATIONAL
from .sites import ASSIGNMENT, BINARY, Binop, Function
from .unit import INTEGER_KINDS, canonical_kind
from .wm_operands import Operand, against_zero, operands, zero_key

group = "ABS"
reads_binops = True  # its labels sit on operator sites

DIVIDING = frozenset({"/", "%", "/=", "%="})
BINARY_OPERATORS = frozenset(RELATIONAL + ARITHMETIC)
ASSIGNING = frozenset(f"{op}=" for op in ARITHMETIC)


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        left, right = operands(site)
        mutated = _operands(site, left, right)
        if not mutated:
            continue
        divides = _nonzero_divisor(site, left, right)
        if divides and right.is_zero:
            continue  # never defined: nothing to kill
        for operand in mutated:
            if operand.constant or not (operand.integer or operand.floating):
                continue
            domain = against_zero(operand)
            if divides and operand is right:
                domain -= {EQ}  # the original is defined only for a divisor other than 0
            for mutant in ABS:
                kill = mutant.kill & domain
                wraps = mutant.kill == {GT} and operand.promoted_unsigned  # -e == e at 2^(bits-1)
                if not kill or kill == domain and not wraps:
                    continue
                if wraps and operand.wide_bitfield:  # where -e == e differs between compilers
                    emit.left_out()
                    continue
                placeholder = f"${operand.slot}"
                code, display = ordering_test(kill, domain, placeholder, "0")
                relation = relational_test(kill, domain, placeholder, "0") \
                    if operand.machine_integer else None
                key = zero_key(operand.slot, kill)
                if wraps:
                    half = f"({placeholder}) != {operand.half}"
                    code, display, key = both(code, half), f"{display} && {half}", ""
                    relation = None
                emit.label(LabelRequest(site=site, operator=mutant, predicate=display, code=code,
                                        key=key, relation=relation,
                                        mutation=operand_replaced(site, operand.slot, mutant.form)))


def _nonzero_divisor(site: Binop, left: Operand, right: Operand) -> bool:
    """Is the original defined only where the right operand is not 0? At an integer division;
    and at ``n /= e`` of an integer object n and a floating e, whose quotient by 0 (an
    infinity or NaN) converts to n's type, which is undefined (a _Bool stores it as ``!= 0``:
    defined)."""
    integer = left.integer and canonical_kind(site.cursor) in INTEGER_KINDS
    if site.op not in DIVIDING or not integer:
        return False
    return right.integer or site.form == ASSIGNMENT and left.own != TypeKind.BOOL


def _operands(site: Binop, left: Operand, right: Operand) -> tuple[Operand, ...]:
    """The operands ABS mutates at a site."""
    if site.form == BINARY:
        return (left, right) if site.op in BINARY_OPERATORS else ()
    if site.form == ASSIGNMENT:
        return (right,) if site.op in ASSIGNING and left.converted != TypeKind.POINTER else ()
    return (left,) if site.op == "-" else ()
