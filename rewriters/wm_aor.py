"""WM / AOR: ``+ - * / %`` replaced by each other on arithmetic operands (``operators.AOR``).

Kill where the two values differ. Integers: values are compared in the unsigned type of the
result's width (wrapping instead of overflowing, which is exact wherever both are defined),
``a / b`` and ``a % b`` only for a divisor that is not 0, and for a signed divisor of -1
written as ``-a`` and ``0``, so the label never divides MIN by -1 (only that quotient is
undefined; every other dividend is killed as usual there). The label's code divides by 1
where the divisor is 0 or -1 and selects with arithmetic, not with ``?:`` or ``&&``: it has
no branch, so it adds no block (no coverage edge) to the program. A mutant dividing by zero would
trap, so a zero divisor kills it; the original dividing by zero is undefined, so no label fires
there. ``a + b`` and ``a - b`` differ iff ``b != 0`` for a signed result, and also
``b != 2^(bits-1)`` for an unsigned one (where ``a + b == a - b`` modulo 2^bits). A constant
right operand, or one with few values (a comparison, ``_Bool``, ``char``), can make the kill
condition constant (kill_rules.literal_kill: ``x - 1`` to ``x * 1``, ``x * 0`` to ``x / 0``,
``x / -1`` to ``x * -1``), and so can the operands' ranges (kill_rules.range_kill: ``a + b``
never equals ``a / b`` for a ``_Bool`` a, nor for an unsigned short b in unsigned int
arithmetic): such mutants are not emitted.

Floating values are the same when they compare equal or are both NaN: -0.0 equals 0.0 (as ``==``
says; no comparison tells them apart), and a NaN mutant of a NaN original is no kill. Computing
the mutant's value would raise floating-point exceptions the program does not (inexact,
overflow, division by zero, invalid), and trap in a program that enabled them
(``feenableexcept``). So the values are computed in a region that saves the floating-point
environment, masks every exception, and restores it exactly as it was, flags included: SSE's
MXCSR (``stmxcsr``/``ldmxcsr``, about 10 ns a region), one region for all the labels of a site
(the original's value and each mutant's computed once: ``shared_difference``), or, for
``long double``, the x87 environment (``fnstenv``/``fldenv``, about 130 ns), a region per
label. Empty ``asm`` statements carry the operands into and the results out of the masked
region, so the compiler cannot move the arithmetic out of it. That is x86-64 code: on other
targets floating AOR mutants are left out (counted).
``x * 1.0`` to ``/`` and ``x + 0.0`` to ``-`` are equivalent and not emitted; other floating
constants are not decided statically. ``%`` is only used between integers.

Pointer arithmetic ``p + n`` and ``p - n`` (an integer offset on the right) has one mutant each,
the other of the two, killed where ``n != 0`` (p + n == p - n only then, wherever both are
defined). The label compares the offset only: it never forms the mutant's pointer, which may
point outside every object (undefined). ``p - q`` and ``n + p`` have no arithmetic mutant.

``integer_kill`` also serves compound assignments (wm_asr.py): ``Computed.kept`` is then the
width of the object assigned, and the values are compared in its low bits only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clang.cindex import Cursor, TypeKind

from .kill_rules import (
    DIVIDING,
    Bounds,
    Kill,
    both,
    converted_bounds,
    literal_set_kill,
    range_kill,
)
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .opaque import TEMP, held_region
from .operators import AOR, Arithmetic, Assignment, by_original
from .ops import target_triple
from .sites import BINARY, Binop, Function
from .unit import (
    FLOAT_KINDS,
    INTEGER_KINDS,
    SIGNED_KINDS,
    UNSIGNED_SPELLING,
    bit_width,
    canonical_kind,
    type_kind,
)
from .wm_operands import Operand, operands

group = "AOR"
reads_binops = True  # its labels sit on operator sites

MUTANTS = by_original(AOR)
ARITHMETIC_KINDS = INTEGER_KINDS | FLOAT_KINDS
# Floating mutants equivalent for a constant right operand of these values.
FLOAT_EQUIVALENT = {frozenset("+-"): (0.0,), frozenset("*/"): (1.0, -1.0)}
FEW_VALUES = 256  # a right operand with fewer possible values has its kill conditions decided
# Clobbers of an asm statement across which no x87 register may hold a value.
X87_STACK = ", ".join(f'"st({n})"' if n else '"st"' for n in range(8))
HELD_TARGET = "x86_64"  # where the floating-point environment can be held (held_difference)
OFFSET_KILL = "($x1) != 0"  # p + n against p - n
REGISTER_BITS = (32, 64)  # widths whose values the driver may compute (LabelRequest.arithmetic)


@dataclass(frozen=True)
class Computed:
    """The integer type an operation computes in, and how many low bits of the value count
    (fewer than its width where the value is stored in a narrower object)."""

    kind: TypeKind
    bits: int
    kept: int

    @property
    def signed(self) -> bool:
        return self.kind in SIGNED_KINDS

    @property
    def narrowed(self) -> bool:
        return self.kept < self.bits


class Holding:
    """Whether floating values can be computed with the environment held, asked once per
    function on first need."""

    def __init__(self, function: Function) -> None:
        self.function = function
        self._held: bool | None = None

    @property
    def held(self) -> bool:
        if self._held is None:
            unit = self.function.cursor.translation_unit
            self._held = target_triple(unit).startswith(HELD_TARGET)
        return self._held


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    holding = Holding(function)
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        if site.form != BINARY or not mutants:
            continue
        left, right = operands(site)
        if left.wide_bitfield or right.wide_bitfield:
            emit.left_out(len(mutants))
            continue
        if left.converted == TypeKind.POINTER:
            _label_offset(site, left, right, mutants, emit)
            continue
        if not {left.converted, right.converted} <= ARITHMETIC_KINDS:
            continue
        result = canonical_kind(site.cursor)
        if result in FLOAT_KINDS:
            label_floating(site, right, result, mutants, holding, emit)
        elif result in UNSIGNED_SPELLING:
            computed = Computed(result, bit_width(site.cursor), bit_width(site.cursor))
            for operator in mutants:
                kill = integer_kill(site.op, operator, left, right, computed)
                if kill is not None:
                    emit.label(LabelRequest(site=site, operator=operator, predicate=kill.text,
                                            code=kill.code,
                                            arithmetic=_arithmetic(site.op, operator, computed),
                                            mutation=operator_replaced(site, operator.mutant)))


def _arithmetic(op: str, operator: Arithmetic, computed: Computed) -> tuple[str, str] | None:
    """``LabelRequest.arithmetic`` of a label at an integer site: where its values have a
    register's width (``REGISTER_BITS``), whose arithmetic wraps as the label's does."""
    return (op, operator.mutant) if computed.bits in REGISTER_BITS else None


def _label_offset(site: Binop, pointer: Operand, offset: Operand,
                  mutants: tuple[Arithmetic, ...], emit: Emitter) -> None:
    """``p + n`` -> ``p - n`` and back: killed where n != 0, compared without forming p - n."""
    if site.op in "+-" and offset_mutable(pointer.cursor, offset):
        swapped = next(m for m in mutants if m.mutant == ("-" if site.op == "+" else "+"))
        emit.label(LabelRequest(site=site, operator=swapped, predicate=OFFSET_KILL,
                                code=OFFSET_KILL, mutation=operator_replaced(site, swapped.mutant)))


def offset_mutable(pointer: Cursor, offset: Operand) -> bool:
    """Is ``pointer +- offset`` against ``pointer -+ offset`` a live mutant: a variable integer
    offset, and a pointee of non-zero size (GNU C gives void and functions size 1)?"""
    if offset.constant or offset.converted not in INTEGER_KINDS:
        return False
    pointee = pointer.type.get_canonical().get_pointee()
    return type_kind(pointee) in (TypeKind.VOID, TypeKind.FUNCTIONPROTO, TypeKind.FUNCTIONNOPROTO) \
        or pointee.get_size() > 0


def label_floating(site: Binop, right: Operand, result: TypeKind,
                   mutants: Sequence[Arithmetic | Assignment], holding: Holding,
                   emit: Emitter) -> None:
    """Floating mutants of ``site``; of a compound assignment (``+=`` to ``-=``), those of the
    value it computes (the object assigned has the type it is computed in)."""
    op = site.op.rstrip("=")
    for operator in mutants:
        mutant = operator.mutant.rstrip("=")
        if mutant == "%" or right.value in FLOAT_EQUIVALENT.get(frozenset((op, mutant)), ()):
            continue
        if not holding.held:
            emit.left_out()
            continue
        code, held = ((held_difference(op, mutant, result), ()) if result == TypeKind.LONGDOUBLE
                      else shared_difference(op, mutant))
        emit.label(LabelRequest(
            site=site, operator=operator, code=code, held=held,
            predicate=floating_difference(f"($x0) {op} ($x1)", f"($x0) {mutant} ($x1)"),
            mutation=operator_replaced(site, operator.mutant)))


def floating_difference(original: str, mutant: str) -> str:
    """The record's text of "the floating values differ" (NaN equal to NaN)."""
    return f"({original}) != ({mutant}) && !(isnan({original}) && isnan({mutant}))"


# The scratch object of each mutant's value where a site's SSE labels share one held region.
SHARED_MUTANT = {"+": "fm_add", "-": "fm_sub", "*": "fm_mul", "/": "fm_div"}


def shared_difference(op: str, mutant: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(code, held) of an SSE label: do ``$x0 op $x1`` and ``$x0 mutant $x1`` differ, their
    values computed in the region a site's floating labels share (``LabelRequest.held``,
    opaque.held_region: the environment saved and masked once for all of them, where each
    label held it for itself, which made floating-point units several times as long to
    compile). The values are as ``held_difference`` computes them: no C division by zero."""
    value = SHARED_MUTANT[mutant]
    held: tuple[tuple[str, str], ...]
    if "/" not in (op, mutant):
        held = (("fr", f"$fa {op} $fb"), (value, f"$fa {mutant} $fb"))
        return _differ("$fr", f"${value}"), held
    if op == "/":
        held = (("fr", _by_zero(op, "$fa", "$fb", False)),
                ("frz", _by_zero(op, "$fa", "$fb", True)), (value, f"$fa {mutant} $fb"))
        zero = _differ("$frz", f"${value}")
    else:
        held = (("fr", f"$fa {op} $fb"), (value, _by_zero(mutant, "$fa", "$fb", False)),
                ("fmz_div", _by_zero(mutant, "$fa", "$fb", True)))
        zero = _differ("$fr", "$fmz_div")
    return f"((($fb == 0) & {zero}) | (($fb != 0) & {_differ('$fr', f'${value}')}))", held


def held_difference(op: str, mutant: str, result: TypeKind) -> str:
    """C template: do ``$x0 op $x1`` and ``$x0 mutant $x1`` differ, computed with every
    floating-point exception masked and the environment restored exactly afterwards: a
    label on its own (IDR's, and every ``long double`` one). SSE's values and environment are
    the site's scratch objects (``opaque.HELD``); the x87's, of ``long double``, are the
    label's. Where one of the two divides, no C division has a zero divisor (``_by_zero``):
    both are computed for a divisor that is not 0 and for one that is, and the divisor decides
    which pair counts, without a branch.  The x87's fnstenv and fldenv clobber every register
    of its stack: fldenv puts back the stack's top and tags as fnstenv saw them, so no value
    may live in a register across either."""
    divides = "/" in (op, mutant)
    if result == TypeKind.LONGDOUBLE:  # x87
        a, b, r, m, rz, mz = "__ffcc_a", "__ffcc_b", "__ffcc_r", "__ffcc_m", "__ffcc_rz", "__ffcc_mz"
    else:  # SSE, also for the helpers of __float128 and _Float16
        a, b, r, m, rz, mz = "$fa", "$fb", "$fr", "$fm", "$frz", "$fmz"
    values = [(r, _by_zero(op, a, b, False)), (m, _by_zero(mutant, a, b, False))]
    if divides:
        values += [(rz, _by_zero(op, a, b, True)), (mz, _by_zero(mutant, a, b, True))]
    if result == TypeKind.LONGDOUBLE:
        results = [name for name, _ in values]
        computed = " ".join(f"{name} = {expression};" for name, expression in values)
        held = (f"{TEMP} char __ffcc_env[28]; {TEMP} __typeof__($x0) {a} = ($x0); "
                f"{TEMP} __typeof__($x1) {b} = ($x1); "
                f'__asm__ volatile("fnstenv %0" : "=m"(__ffcc_env), "+m"({a}), "+m"({b}) : : '
                f"{X87_STACK}); "
                f"{TEMP} __typeof__({a} + {b}) {', '.join(results)}; {computed} "
                f'__asm__ volatile("fldenv %{len(results)}" : {_in_memory(results)} : '
                f'"m"(__ffcc_env) : {X87_STACK}); ')
    else:
        held = held_region(tuple((name.lstrip("$"), expression) for name, expression in values))
    if not divides:
        return f"({{ {held}{_differ(r, m)}; }})"
    return (f"({{ {held}{TEMP} int __ffcc_z = ({b} == 0); "
            f"(__ffcc_z & {_differ(rz, mz)}) | (!__ffcc_z & {_differ(r, m)}); }})")


def _in_memory(results: list[str]) -> str:
    """Output operands of the asm that ends the masked region: the values computed in it."""
    return ", ".join(f'"+m"({name})' for name in results)


def _differ(r: str, m: str) -> str:
    """C: the values ``r`` and ``m`` differ (NaN equal to NaN)."""
    return f"(({r} != {m}) & (({r} == {r}) | ({m} == {m})))"


def _by_zero(op: str, a: str, b: str, zero: bool) -> str:
    """``a op b`` as a label computes it: for a divisor that is not 0 (``zero`` False), or is
    (True).  A division divides by 1 in place of 0, and by a zero divisor it is ``a`` times
    the infinity of the divisor's sign, which IEEE 754 makes the same value (0/0 and NaN/0 are
    NaN, x/0 and inf/0 infinite with the signs' product): no division by zero for a
    sanitizer (``-fsanitize=float-divide-by-zero``) to report, as the program made none."""
    if op != "/":
        return f"{a} {op} {b}"
    if not zero:
        return f"{a} / ({b} + ({b} == 0))"
    computed = f"__typeof__({a} + {b})"  # the divisor may be an integer, of no sign
    return f"{a} * (({computed})__builtin_inf() * (1 - 2 * !!__builtin_signbit(({computed}){b})))"


def integer_kill(op: str, operator: Arithmetic, left: Operand, right: Operand,
                 computed: Computed) -> Kill | None:
    """(code, record text): C templates true where ``x0 OP x1`` and ``x0 MUTANT x1`` differ in
    the low ``computed.kept`` bits; None: not a label, where the operands' ranges make that
    constant (``_constant``). The record says it as it reads (``b != 0 && a / b != a + b``);
    the code computes the same without a branch (``divided``): a branch in a label is a block
    of its own, a coverage edge of the label's code that the fuzzer would count, and a jump for
    the compiler to lay out."""
    unsigned, bits, signed = UNSIGNED_SPELLING[computed.kind], computed.bits, computed.signed
    mutant = operator.mutant
    values = _right_values(right, signed, bits)
    if _constant(op, mutant, left, right, values, computed):
        return None
    if operator.simplified is not None and not computed.narrowed:
        if signed or right.own_bits < bits:  # a narrower operand never converts to 2^(bits-1)
            return Kill(operator.simplified, operator.simplified)
        half = f"($x1) != (({unsigned})1 << {bits - 1})"
        return Kill(both(operator.simplified, half), f"{operator.simplified} && {half}")
    # A divisor of an unsigned type is never -1 in the signed type it converts to (an unsigned
    # int divisor of a long dividend: UINT_MAX there, not -1).
    divisors = _Divisors(values, signed and (values is not None or right.own in SIGNED_KINDS))
    code, text = (differ_in(_value(op, unsigned, divisors, branch_free),
                            _value(mutant, unsigned, divisors, branch_free), unsigned, computed)
                  for branch_free in (True, False))
    if op in DIVIDING and divisors.zero:
        return Kill(both("($x1) != 0", code), f"($x1) != 0 && {text}")
    if mutant in DIVIDING and divisors.zero:
        return Kill(f"((($x1) == 0) | ({code}))", f"(($x1) == 0 || {text})")
    return Kill(code, text)


def differ_in(first: str, second: str, unsigned: str, computed: Computed) -> str:
    """C: do two values of type ``unsigned`` differ in the bits that count?"""
    if not computed.narrowed:
        return f"{first} != {second}"
    return f"(({first} ^ {second}) & ((({unsigned})1 << {computed.kept}) - 1)) != 0"


def _constant(op: str, mutant: str, left: Operand, right: Operand,
              values: tuple[int, ...] | None, computed: Computed) -> bool:
    """Is the kill condition the same wherever the site is defined (not a label)? Decided from
    the right operand's ``values`` where it has few and the left operand's range
    (kill_rules.literal_set_kill), else from both ranges (kill_rules.range_kill). Where the
    value is narrowed, + - * are exact modulo 2^kept: decided as unsigned arithmetic of that
    width, over every residue of the right operand where there are few (``x += y`` against
    ``x -= y`` store the same bit to a 1-bit object whatever y is)."""
    signed, bits, kept = computed.signed, computed.bits, computed.kept
    if computed.narrowed and not {op, mutant} & DIVIDING:
        size = 1 << kept
        if values is None and size > FEW_VALUES:
            return False
        residues = range(size) if values is None else {v % size for v in values}
        return literal_set_kill(op, mutant, residues, (0, size - 1), False, kept, kept) is not None
    first, second = (converted_bounds(_bounds(operand, computed), signed, bits)
                     for operand in (left, right))
    if values is not None \
            and literal_set_kill(op, mutant, values, first, signed, bits, kept) is not None:
        return True
    return range_kill(op, mutant, first, second, signed, bits, kept)


def _bounds(operand: Operand, computed: Computed) -> Bounds:
    """The operand's least and greatest value (any of the type computed in if not known)."""
    half = 1 << (computed.bits - 1)
    return operand.bounds or ((-half, half - 1) if computed.signed else (0, 2 * half - 1))


class _Divisors:
    """Which special divisors the right operand can be: 0, and -1 (signed)."""

    def __init__(self, values: tuple[int, ...] | None, signed: bool) -> None:
        self.zero = values is None or 0 in values
        self.minus_one = signed and (values is None or -1 in values)
        self.only_minus_one = signed and values == (-1,)


def _value(op: str, unsigned: str, divisors: _Divisors, branch_free: bool) -> str:
    """The value of ``$x0 op $x1`` as ``unsigned``, never dividing by -1 (MIN / -1); where the
    divisor can be 0, a value only read where it is not. ``branch_free``: written without a
    conditional, dividing by ``divided``'s divisor; else as the record says it."""
    if op not in DIVIDING:
        return f"(({unsigned})($x0) {op} ({unsigned})($x1))"
    by_minus_one = f"-({unsigned})($x0)" if op == "/" else f"({unsigned})0"
    if divisors.only_minus_one:
        return f"({by_minus_one})" if op == "/" else by_minus_one
    if not branch_free:
        quotient = f"({unsigned})(($x0) {op} ($x1))"
        return f"(($x1) == -1 ? {by_minus_one} : {quotient})" if divisors.minus_one else quotient
    quotient = f"({unsigned})(($x0) {op} {divided(divisors)})"
    if op == "/" and divisors.minus_one:  # x / 1 negated where the divisor is -1
        negate = f"(-({unsigned})(($x1) == -1))"
        return f"(({quotient} ^ {negate}) - {negate})"
    return quotient  # x % 1 == 0 == x % -1


def divided(divisors: _Divisors) -> str:
    """The divisor ``$x1``, with 1 in place of 0 and of -1 where it can be either: the
    quotient is then always defined (no trap at 0, none at MIN / -1), and where the divisor
    was 0 the label does not read it. ``x1 + (x1 == 0)`` has ``x1``'s promoted type, so the
    division converts its operands as the original's does."""
    terms = ["($x1)"]
    if divisors.zero:
        terms.append("(($x1) == 0)")
    if divisors.minus_one:
        terms.append("((($x1) == -1) << 1)")
    return f"({' + '.join(terms)})" if len(terms) > 1 else terms[0]


def _right_values(right: Operand, signed: bool, bits: int) -> tuple[int, ...] | None:
    """The values the right operand can have in the result type, when few are known: a
    constant's, or those of a narrow type (``_Bool``, a comparison result, ``char``, a narrow
    bit-field)."""
    bounds = right.bounds
    if bounds is None or bounds[1] - bounds[0] >= FEW_VALUES:
        return None
    size = 1 << bits
    return tuple(v % size - (size if signed and v % size >= size >> 1 else 0)
                 for v in range(bounds[0], bounds[1] + 1))
