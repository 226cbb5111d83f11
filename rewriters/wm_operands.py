"""What the WM criteria know about an operand of a binary expression: its type as written and
after the usual arithmetic conversions, its value when it is a constant, and the range that
follows from them (never negative, never NaN). The kill conditions of ROR, AOR and ABS depend
on these (kill_rules.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from clang.cindex import Cursor, CursorKind, TypeKind

from .kill_rules import EQ, EVERY, GT, LT, ORDERED, Orderings
from .operators import LOGICAL, RELATIONAL
from .ops import binary_op, constant_number, unary_op
from .sites import Binop
from .unit import (
    FLOAT_KINDS,
    INTEGER_KINDS,
    SIGNED_KINDS,
    UNSIGNED_SPELLING,
    canonical_kind,
    strip_implicit,
    type_kind,
    unparenthesised,
)

BOOLEAN_OPERATORS = frozenset(RELATIONAL + LOGICAL)
INT_BITS = 32  # int's width on every target gcc and clang build ffcc's runtime for


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
    def wide_bitfield(self) -> bool:
        """A bit-field of a type wider than int, whose arithmetic the compilers disagree on:
        gcc computes it modulo 2^width (``-b`` of a 40-bit ``unsigned long long`` field is
        2^40 - b), clang in the declared type; one label text cannot say what both compute."""
        node = unparenthesised(strip_implicit(self.cursor))
        field = node.referenced if node.kind == CursorKind.MEMBER_REF_EXPR else None
        return (field is not None and field.kind == CursorKind.FIELD_DECL and field.is_bitfield()
                and self.own_bits > INT_BITS)

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
    def bounds(self) -> tuple[int, int] | None:
        """The least and greatest integer value it can have as written; None if not an
        integer. (A bit-field's are its declared type's: wider, so still bounds.)"""
        if self.boolean or self.own == TypeKind.BOOL:
            return 0, 1
        if not self.integer:
            return None
        if self.own in SIGNED_KINDS:
            return -(1 << (self.own_bits - 1)), (1 << (self.own_bits - 1)) - 1
        return 0, (1 << self.own_bits) - 1

    def below_half(self, bits: int) -> bool:
        """Never negative and below 2^(bits-1): narrower unsigned, or a 0/1 result."""
        return self.boolean or (self.integer and self.own not in SIGNED_KINDS
                                and self.own_bits < bits)

    @property
    def promoted_unsigned(self) -> bool:
        """Its arithmetic is unsigned (it is an unsigned type of int's width or wider)."""
        return self.own in UNSIGNED_SPELLING and self.own not in SIGNED_KINDS

    @property
    def sign_kept(self) -> bool:
        """Its conversion keeps how it compares with zero (not signed to unsigned)."""
        return not (self.own in SIGNED_KINDS and self.converted in INTEGER_KINDS
                    and self.converted not in SIGNED_KINDS)

    @property
    def is_zero(self) -> bool:
        return self.value == 0


def operands(site: Binop) -> tuple[Operand, Operand]:
    return (Operand("x0", site.lhs, site.constant[0]), Operand("x1", site.rhs, site.constant[1]))


def against_zero(operand: Operand) -> Orderings:
    """The orderings of (operand, 0) its values can have, in its own type."""
    bounds = operand.bounds
    if bounds is None:
        return EVERY if operand.can_be_nan else ORDERED
    return _orderings(bounds, 0)


def against_constant(operand: Operand, constant: Operand, site: Binop) -> Orderings:
    """The orderings of (operand, constant) that ``operand OP constant`` can meet: for an
    integer comparison, those its bounds allow (an unsigned value is never below 0, a 0/1 one
    never above 1); otherwise every one (unordered too if the operand can be NaN)."""
    bounds, value = operand.bounds, constant.value
    comparison = operand.converted
    if bounds is None or not isinstance(value, int) or comparison not in INTEGER_KINDS:
        return EVERY if operand.can_be_nan else ORDERED
    if comparison not in SIGNED_KINDS:  # both converted to an unsigned type of this width
        size = 1 << (int(site.lhs.type.get_canonical().get_size()) * 8)
        value %= size
        if not operand.sign_kept:  # a negative value converts to a large one
            bounds = 0, size - 1
    return _orderings(bounds, value)


def _orderings(bounds: tuple[int, int], value: int) -> Orderings:
    low, high = bounds
    return frozenset(ordering for ordering, possible in (
        (LT, low < value), (EQ, low <= value <= high), (GT, high > value)) if possible)


def zero_key(slot: str, kill: Orderings) -> str:
    """The dedupe key (LabelRequest.key) of "operand ``slot`` compares with 0 as ``kill``"."""
    return f"{slot} vs 0: {' '.join(sorted(kill))}"


