"""What the WM criteria know about an operand of a binary expression: its type as written,
after the integer promotions and after the usual arithmetic conversions, its value when it is a
constant, and the range that follows from them (never negative, never NaN). A bit-field's
range is that of its width, and one narrower than int promotes to int whatever its declared
type (``unsigned x : 3`` holds 0 to 7, and ``-s.x`` is an int). The kill conditions of ROR,
AOR and ABS depend on these (kill_rules.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from clang.cindex import Cursor, TypeKind

from .kill_rules import EQ, EVERY, GT, LT, ORDERED, Bounds, Orderings, converted_bounds
from .operators import LOGICAL, RELATIONAL
from .ops import binary_op, constant_number, unary_op
from .safety import is_bitfield_ref
from .sites import Binop
from .unit import (
    FLOAT_KINDS,
    INTEGER_KINDS,
    SIGNED_KINDS,
    UNSIGNED_SPELLING,
    bit_width,
    canonical_kind,
    strip_implicit,
    type_kind,
    unparenthesised,
)

BOOLEAN_OPERATORS = frozenset(RELATIONAL + LOGICAL)
INT_BITS = 32  # int's width on every target gcc and clang build ffcc's runtime for
IntegerType = tuple[TypeKind, int]  # (kind, bits)


@dataclass(frozen=True)
class Operand:
    slot: str  # its placeholder: "x0" or "x1"
    cursor: Cursor  # with its implicit conversion, if any
    constant: bool  # known at compile time

    @cached_property
    def own(self) -> TypeKind:
        """Its type as written (what a label's copy of it has), an enumeration's being its
        integer type (unsigned in gcc and clang unless an enumerator is negative)."""
        written = strip_implicit(self.cursor).type.get_canonical()
        if type_kind(written) == TypeKind.ENUM:
            return type_kind(written.get_declaration().enum_type.get_canonical())
        return type_kind(written)

    @cached_property
    def own_bits(self) -> int:
        return int(strip_implicit(self.cursor).type.get_canonical().get_size()) * 8

    @cached_property
    def field_width(self) -> int | None:
        """Its width if it is a bit-field (its values are those of that many bits), else
        None."""
        if not is_bitfield_ref(self.cursor):
            return None
        return int(unparenthesised(self.cursor).referenced.get_bitfield_width())

    @property
    def wide_bitfield(self) -> bool:
        """A bit-field of a type wider than int, whose arithmetic the compilers disagree on:
        gcc computes it modulo 2^width (``-b`` of a 40-bit ``unsigned long long`` field is
        2^40 - b), clang in the declared type; one label text cannot say what both compute."""
        return self.field_width is not None and self.own_bits > INT_BITS

    @cached_property
    def promoted(self) -> IntegerType:
        """Its integer type after the integer promotions. A bit-field of int's width or
        narrower promotes by its width, whatever its declared type (gcc and clang alike):
        ``unsigned x : 3`` to int, ``unsigned x : 32`` to unsigned int."""
        width = self.field_width
        if width is not None and width <= INT_BITS:
            signed = width < INT_BITS or self.own in SIGNED_KINDS
            return (TypeKind.INT if signed else TypeKind.UINT), INT_BITS
        return promote((self.own, self.own_bits))

    @cached_property
    def converted(self) -> TypeKind:
        """Its type in the expression, after the usual arithmetic conversions."""
        return canonical_kind(self.cursor)

    @cached_property
    def value(self) -> int | float | None:
        return constant_number(self.cursor) if self.constant else None

    @cached_property
    def boolean(self) -> bool:
        """A comparison or logical result: 0 or 1."""
        node = unparenthesised(self.cursor)
        return binary_op(node) in BOOLEAN_OPERATORS or unary_op(node) == "!"

    @property
    def floating(self) -> bool:
        return self.own in FLOAT_KINDS

    @property
    def integer(self) -> bool:
        return self.own in INTEGER_KINDS

    @property
    def machine_integer(self) -> bool:
        """An integer of at most 64 bits: compared in one instruction."""
        return self.integer and self.own_bits <= 64

    @property
    def can_be_nan(self) -> bool:
        value = self.value
        return self.floating and (value is None or isinstance(value, float) and math.isnan(value))

    @property
    def bounds(self) -> Bounds | None:
        """The least and greatest integer value it can have as written (a constant's: its
        value; a bit-field's: those of its width, not of its declared type); None if not an
        integer."""
        value = self.value
        if isinstance(value, int):
            return value, value
        if self.boolean or self.own == TypeKind.BOOL:
            return 0, 1
        if not self.integer:
            return None
        bits = self.field_width or self.own_bits
        if self.own in SIGNED_KINDS:
            return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return 0, (1 << bits) - 1

    @property
    def promoted_unsigned(self) -> bool:
        """Its arithmetic is unsigned (it promotes to an unsigned type: of int's width or
        wider, not a bit-field narrower than int)."""
        return self.integer and self.promoted[0] not in SIGNED_KINDS

    @property
    def half(self) -> str:
        """C: 2^(bits-1) in its promoted unsigned type, where -e == e (``promoted_unsigned``)."""
        kind, bits = self.promoted
        return f"(({UNSIGNED_SPELLING[kind]})1 << {bits - 1})"

    @property
    def sign_kept(self) -> bool:
        """Its conversion keeps how it compares with zero (not signed to unsigned)."""
        return not (self.own in SIGNED_KINDS and self.converted in INTEGER_KINDS
                    and self.converted not in SIGNED_KINDS)

    @property
    def is_zero(self) -> bool:
        return self.value == 0


def promote(integer: IntegerType) -> IntegerType:
    """The integer promotion of a type that is no bit-field, as a type UNSIGNED_SPELLING
    knows."""
    kind, bits = integer
    if kind in UNSIGNED_SPELLING:
        return integer
    signed = kind in SIGNED_KINDS
    if bits < INT_BITS or bits == INT_BITS and signed:
        return TypeKind.INT, INT_BITS
    by_width = {INT_BITS: (TypeKind.UINT, TypeKind.INT), 64: (TypeKind.ULONGLONG, TypeKind.LONGLONG)}
    return by_width[bits][signed], bits


def operands(site: Binop) -> tuple[Operand, Operand]:
    return (Operand("x0", site.lhs, site.constant[0]), Operand("x1", site.rhs, site.constant[1]))


def against_zero(operand: Operand) -> Orderings:
    """The orderings of (operand, 0) its values can have, in its own type."""
    bounds = operand.bounds
    if bounds is None:
        return EVERY if operand.can_be_nan else ORDERED
    return _orderings(bounds, (0, 0))


def against(left: Operand, right: Operand) -> Orderings:
    """The orderings of (left, right) that ``left OP right`` can meet: for an integer
    comparison, those the two ranges allow as the comparison converts them (an unsigned value
    is never below 0, a 0/1 one never above 1, an ``int x : 1``, 0 or -1, never above an
    unsigned char); otherwise every one (unordered too if an operand can be NaN)."""
    first, second = _compared(left), _compared(right)
    if first is None or second is None:
        return EVERY if left.can_be_nan or right.can_be_nan else ORDERED
    return _orderings(first, second)


def _compared(operand: Operand) -> Bounds | None:
    """The values an operand of an integer comparison can have converted to the type it is
    compared in; None if it is no integer."""
    bounds = operand.bounds
    if bounds is None or operand.converted not in INTEGER_KINDS:
        return None
    return converted_bounds(bounds, operand.converted in SIGNED_KINDS, bit_width(operand.cursor))


def _orderings(first: Bounds, second: Bounds) -> Orderings:
    """The orderings of (a, b) for a within ``first`` and b within ``second``."""
    (low, high), (other_low, other_high) = first, second
    return frozenset(ordering for ordering, possible in (
        (LT, low < other_high), (EQ, low <= other_high and other_low <= high),
        (GT, high > other_low)) if possible)


def zero_key(slot: str, kill: Orderings) -> str:
    """The dedupe key (LabelRequest.key) of "operand ``slot`` compares with 0 as ``kill``"."""
    return f"{slot} vs 0: {' '.join(sorted(kill))}"


