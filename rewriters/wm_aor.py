"""WM / AOR: ``+ - * / %`` replaced by each other on arithmetic operands (``operators.AOR``).

Kill where the two values differ. Integers: values are compared in the unsigned type of the
result's width (wrapping instead of overflowing, which is exact wherever both are defined),
``a / b`` and ``a % b`` only for a divisor that is not 0, and for a signed divisor of -1
written as ``-a`` and ``0``, so the label never divides MIN by -1 (only that quotient is
undefined; every other dividend is killed as usual there). A mutant dividing by zero would
trap, so a zero divisor kills it; the original dividing by zero is undefined, so no label fires
there. ``a + b`` and ``a - b`` differ iff ``b != 0`` for a signed result, and also
``b != 2^(bits-1)`` for an unsigned one (where ``a + b == a - b`` modulo 2^bits). A constant
right operand, or one with few values (a comparison, ``_Bool``, ``char``), can make the kill
condition constant (kill_rules.literal_kill: ``x - 1`` to ``x * 1``, ``x * 0`` to ``x / 0``,
``x / -1`` to ``x * -1``), and so can small operands (two ``unsigned char``: ``a + b`` never
equals ``a / b``): such mutants are not emitted.

Floating values are the same when they compare equal or are both NaN: -0.0 equals 0.0 (as ``==``
says; no comparison tells them apart), and a NaN mutant of a NaN original is no kill. Computing
the mutant's value would raise floating-point exceptions the program does not (inexact,
overflow, division by zero, invalid), and trap in a program that enabled them
(``feenableexcept``). So the label saves the floating-point environment, masks every exception,
computes both values, and restores it exactly as it was, flags included: SSE's MXCSR
(``stmxcsr``/``ldmxcsr``, about 10 ns per label evaluation) or, for ``long double``, the x87
environment (``fnstenv``/``fldenv``, about 130 ns). Empty ``asm`` statements carry the operands
into and the results out of the masked region, so the compiler cannot move the arithmetic out
of it. That is x86-64 code: on other targets floating AOR mutants are left out (counted).
``x * 1.0`` to ``/`` and ``x + 0.0`` to ``-`` are equivalent and not emitted; other floating
constants are not decided statically. ``%`` is only used between integers, and pointer
arithmetic is not mutated.
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .kill_rules import literal_set_kill
from .model import Emitter, LabelOptions, LabelRequest
from .opaque import TEMP
from .operators import AOR, Arithmetic, by_original
from .ops import target_triple
from .sites import Binop, Function
from .unit import FLOAT_KINDS, INTEGER_KINDS, SIGNED_KINDS, UNSIGNED_SPELLING, bit_width, canonical_kind
from .wm_operands import Operand, operands

group = "AOR"

MUTANTS = by_original(AOR)
DIVIDING = frozenset({"/", "%"})
ARITHMETIC_KINDS = INTEGER_KINDS | FLOAT_KINDS
# Floating mutants equivalent for a constant right operand of these values.
FLOAT_EQUIVALENT = {frozenset("+-"): (0.0,), frozenset("*/"): (1.0, -1.0)}
# For operands never negative and too small to overflow: a / b <= a <= a + b and a % b < b, equal
# only for b == 0, which kills the mutant.
NEVER_EQUAL_WHEN_SMALL = frozenset({frozenset("+/"), frozenset("+%")})
FEW_VALUES = 256  # a right operand with fewer possible values has its kill conditions decided
HELD_TARGET = "x86_64"  # where the floating-point environment can be held (held_difference)


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    held: bool | None = None  # can floating values be computed here; asked on first need
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        left, right = operands(site)
        if not mutants or not {left.converted, right.converted} <= ARITHMETIC_KINDS:
            continue
        result = canonical_kind(site.cursor)
        if result in FLOAT_KINDS:
            if held is None:
                held = target_triple(function.cursor.translation_unit).startswith(HELD_TARGET)
            _label_floating(site, right, result, mutants, held, emit)
        elif result in UNSIGNED_SPELLING:
            for operator in mutants:
                code = integer_kill(site, left, right, operator)
                if code is not None:
                    emit.label(LabelRequest(site=site, operator=operator, predicate=code,
                                            code=code))


def _label_floating(site: Binop, right: Operand, result: TypeKind,
                    mutants: tuple[Arithmetic, ...], held: bool, emit: Emitter) -> None:
    for operator in mutants:
        if operator.mutant == "%" or right.value in FLOAT_EQUIVALENT.get(
                frozenset((site.op, operator.mutant)), ()):
            continue
        if not held:
            emit.left_out()
            continue
        emit.label(LabelRequest(
            site=site, operator=operator, code=held_difference(site.op, operator.mutant, result),
            predicate=_floating_difference(f"($x0) {site.op} ($x1)",
                                           f"($x0) {operator.mutant} ($x1)")))


def _floating_difference(original: str, mutant: str) -> str:
    """The record's text of "the floating values differ" (NaN equal to NaN)."""
    return f"({original}) != ({mutant}) && !(isnan({original}) && isnan({mutant}))"


def held_difference(op: str, mutant: str, result: TypeKind) -> str:
    """C template: do ``$x0 op $x1`` and ``$x0 mutant $x1`` differ, computed with every
    floating-point exception masked and the environment restored exactly afterwards."""
    copies = (f"{TEMP} __typeof__($x0) __ffcc_a = ($x0); "
              f"{TEMP} __typeof__($x1) __ffcc_b = ($x1); ")
    values = (f"{TEMP} __typeof__(__ffcc_a {op} __ffcc_b) __ffcc_r = __ffcc_a {op} __ffcc_b, "
              f"__ffcc_m = __ffcc_a {mutant} __ffcc_b; ")
    if result == TypeKind.LONGDOUBLE:  # x87
        hold = (f"{TEMP} char __ffcc_env[28]; {copies}"
                '__asm__ volatile("fnstenv %0" : "=m"(__ffcc_env), "+m"(__ffcc_a), "+m"(__ffcc_b)); ')
        restore = '__asm__ volatile("fldenv %2" : "+m"(__ffcc_r), "+m"(__ffcc_m) : "m"(__ffcc_env)); '
    else:  # SSE, also for the helpers of __float128 and _Float16
        hold = (f"{TEMP} unsigned int __ffcc_env, __ffcc_masked; {copies}"
                '__asm__ volatile("stmxcsr %0" : "=m"(__ffcc_env)); '
                "__ffcc_masked = __ffcc_env | 0x1f80u; "
                '__asm__ volatile("ldmxcsr %2" : "+m"(__ffcc_a), "+m"(__ffcc_b) : "m"(__ffcc_masked)); ')
        restore = '__asm__ volatile("ldmxcsr %2" : "+m"(__ffcc_r), "+m"(__ffcc_m) : "m"(__ffcc_env)); '
    return (f"({{ {hold}{values}{restore}"
            "__ffcc_r != __ffcc_m && (__ffcc_r == __ffcc_r || __ffcc_m == __ffcc_m); })")


def integer_kill(site: Binop, left: Operand, right: Operand, operator: Arithmetic) -> str | None:
    """C template true where ``x0 OP x1`` and ``x0 MUTANT x1`` differ; None: not a label."""
    result = canonical_kind(site.cursor)
    unsigned, bits, signed = UNSIGNED_SPELLING[result], bit_width(site.cursor), result in SIGNED_KINDS
    op, mutant = site.op, operator.mutant
    values = _right_values(right, signed, bits)
    if values is not None and literal_set_kill(op, mutant, values, signed, bits) is not None:
        return None
    if frozenset((op, mutant)) in NEVER_EQUAL_WHEN_SMALL and signed and left.below_half(bits) \
            and right.below_half(bits):
        return None
    if operator.simplified is not None:
        if signed or right.own_bits < bits:  # a narrower operand never converts to 2^(bits-1)
            return operator.simplified
        return f"{operator.simplified} && ($x1) != (({unsigned})1 << {bits - 1})"
    divisors = _Divisors(values, signed)
    differ = f"{_value(op, unsigned, divisors)} != {_value(mutant, unsigned, divisors)}"
    if op in DIVIDING:
        return f"($x1) != 0 && {differ}" if divisors.zero else differ
    if mutant in DIVIDING and divisors.zero:
        return f"(($x1) == 0 || {differ})"
    return differ


class _Divisors:
    """Which special divisors the right operand can be: 0, and -1 (signed)."""

    def __init__(self, values: tuple[int, ...] | None, signed: bool) -> None:
        self.zero = values is None or 0 in values
        self.minus_one = signed and (values is None or -1 in values)
        self.only_minus_one = signed and values == (-1,)


def _value(op: str, unsigned: str, divisors: _Divisors) -> str:
    """The value of ``$x0 op $x1`` as ``unsigned``, never dividing by -1 (MIN / -1)."""
    if op not in DIVIDING:
        return f"(({unsigned})($x0) {op} ({unsigned})($x1))"
    by_minus_one = f"-({unsigned})($x0)" if op == "/" else f"({unsigned})0"
    if divisors.only_minus_one:
        return f"({by_minus_one})" if op == "/" else by_minus_one
    quotient = f"({unsigned})(($x0) {op} ($x1))"
    return f"(($x1) == -1 ? {by_minus_one} : {quotient})" if divisors.minus_one else quotient


def _right_values(right: Operand, signed: bool, bits: int) -> tuple[int, ...] | None:
    """The values the right operand can have in the result type, when few are known: a
    constant's, or those of a narrow type (``_Bool``, a comparison result, ``char``)."""
    if isinstance(right.value, int):
        values = [right.value]
    elif right.bounds is not None and right.bounds[1] - right.bounds[0] < FEW_VALUES:
        values = list(range(right.bounds[0], right.bounds[1] + 1))
    else:
        return None
    size = 1 << bits
    return tuple(v % size - (size if signed and v % size >= size >> 1 else 0) for v in values)
