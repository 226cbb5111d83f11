"""WM / ASR: compound assignments replaced by each other (``operators.ASR``): ``+= -= *= /=
%=`` among themselves, ``&= |= ^=`` among themselves, ``<<=`` and ``>>=``.

``x OP= e`` stores ``x OP e`` computed in the usual arithmetic conversion of x's and e's types
(for shifts, x's promoted type) and converted back to x's type. A mutant is killed where the
values stored differ: the kill condition of the binary operator's mutant (wm_aor.py, wm_bor.py)
on the value computed, in the low bits of the object assigned only when it is narrower than the
computation (``char``, ``short``, a bit-field: values are compared modulo 2^width, as the
conversion stores them; ``unsigned char c``: ``c += 128`` and ``c -= 128`` store the same). The
label reads x and e just before the program does (sites.py makes such sites only for pure
operands) and never stores anything. ``_Bool`` objects (stored as ``!= 0``, not modulo) and
floating values converted to another type on the store are left alone. So are, counted as left
out, ``/=`` and ``%=`` and the mutants to them where gcc and clang divide different values: an
unsigned bit-field wider than int (gcc computes in its width, clang in its declared type) and
another operand that can be negative. A floating object assigned a value of its own type is
compared as AOR compares (environment held, NaN equal to NaN). A pointer ``p += n`` has the
one mutant ``p -= n`` (and back), killed where ``n != 0``: no mutant pointer is ever formed.
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .kill_rules import DIVIDING
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .operators import ASR, Arithmetic, Assignment, by_original
from .sites import ASSIGNMENT, Binop, Function
from .unit import FLOAT_KINDS, INTEGER_KINDS, SIGNED_KINDS
from .wm_aor import (
    OFFSET_KILL,
    Computed,
    Holding,
    integer_kill,
    label_floating,
    offset_mutable,
)
from .wm_bor import bitwise_kill
from .wm_operands import IntegerType, Operand, operands

group = "ASR"
reads_binops = True  # its labels sit on operator sites

MUTANTS = by_original(ASR)
SHIFTING = frozenset({"<<=", ">>="})


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    holding = Holding(function)
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        if site.form != ASSIGNMENT or not mutants:
            continue
        target, value = operands(site)
        if target.converted == TypeKind.POINTER:
            _label_offset(site, target, value, mutants, emit)
        elif target.own in FLOAT_KINDS:
            if value.own == target.own or value.own in INTEGER_KINDS:
                label_floating(site, value, target.own, mutants, holding, emit)
        elif target.own in INTEGER_KINDS and target.own != TypeKind.BOOL \
                and value.own in INTEGER_KINDS:
            _label_integer(site, target, value, mutants, emit)


def _label_offset(site: Binop, target: Operand, value: Operand,
                  mutants: tuple[Assignment, ...], emit: Emitter) -> None:
    if site.op in ("+=", "-=") and offset_mutable(site.lhs, value):
        swapped = next(m for m in mutants if m.mutant in ("+=", "-="))
        emit.label(LabelRequest(site=site, operator=swapped, predicate=OFFSET_KILL,
                                code=OFFSET_KILL, mutation=operator_replaced(site, swapped.mutant)))


def _label_integer(site: Binop, target: Operand, value: Operand,
                   mutants: tuple[Assignment, ...], emit: Emitter) -> None:
    if site.op in SHIFTING:
        kind, bits = target.promoted
    else:
        kind, bits = _common(target.promoted, value.promoted)
    kept = target.field_width or target.own_bits  # the bits the object assigned keeps
    computed = Computed(kind, bits, min(kept, bits))
    op = site.op.rstrip("=")
    apart = _divided_apart(target, value)
    for operator in mutants:
        underlying = operator.underlying
        if not isinstance(underlying, Arithmetic):
            kill = bitwise_kill(underlying, target, value, computed)
        elif apart and {op, underlying.mutant} & DIVIDING:
            emit.left_out()
            continue
        else:
            kill = integer_kill(op, underlying, target, value, computed)
        if kill is not None:
            emit.label(LabelRequest(site=site, operator=operator, predicate=kill.text,
                                    code=kill.code,
                                    mutation=operator_replaced(site, operator.mutant)))


def _divided_apart(target: Operand, value: Operand) -> bool:
    """Do gcc and clang divide different values at ``target /= value``? gcc computes with a
    bit-field wider than int in the field's width (an int converts to ``unsigned long long x :
    40`` modulo 2^40, a long keeps its sign), clang in its declared type (the int converts
    modulo 2^64): where the field is unsigned and the other operand can be negative, their
    quotients and remainders differ, and so do the mutants (as AOR's on such a field)."""
    for field, other in ((target, value), (value, target)):
        bounds = other.bounds
        if field.wide_bitfield and field.own not in SIGNED_KINDS and bounds and bounds[0] < 0:
            return True
    return False


def _common(first: IntegerType, second: IntegerType) -> IntegerType:
    """The usual arithmetic conversions of two promoted integer types."""
    (a, a_bits), (b, b_bits) = first, second
    if (a in SIGNED_KINDS) == (b in SIGNED_KINDS):
        return first if a_bits >= b_bits else second
    unsigned, signed = (first, second) if a not in SIGNED_KINDS else (second, first)
    return unsigned if unsigned[1] >= signed[1] else signed
