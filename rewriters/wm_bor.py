"""WM / BOR: ``& | ^`` replaced by each other, ``<<`` and ``>>`` by each other (``operators.BOR``).

Kill where the two values differ (kill_rules.BITWISE_KILLS): ``a & b`` and ``a | b`` iff ``a !=
b``, ``&`` and ``^`` iff ``(a | b) != 0``, ``|`` and ``^`` iff ``(a & b) != 0``, each over the
operands converted to the unsigned type of the result's width (exact: both operators work on the
operands after the usual arithmetic conversions, and the conversion to the unsigned type keeps
every bit; no signed/unsigned comparison). ``a << b`` and ``a >> b`` differ iff ``a != 0`` and
``b != 0`` in signed arithmetic wherever both are defined (the shift amount in range, and for a
signed ``<<`` a non-negative value that does not overflow); in unsigned arithmetic bits shifted
out can make both 0 (``2u << 31`` and ``2u >> 31``), so there the two values are compared where
the amount is below the width, the label shifting by the amount's low bits (never by the width
or more). A mutant whose kill
condition is the same for every value the other operand can have (``x ^ 0`` to ``|``, ``x <<
0``, ``c & 0x100`` for an ``unsigned char c``) is not emitted: kill_rules.bitwise_constant
decides it exactly from a constant operand, or one with few values, and the other's range. So
is ``<<`` against ``>>`` where the operands' ranges leave only a value of 0 or an amount of 0
wherever both are defined (an ``int x : 1`` value, 0 or -1), or a 0/1 value stored to one bit.

``~e -> e`` (Mull's bitwise group) always differs (no integer equals its complement), so it is
no label: edge coverage shows it is killed.

An operand that is a bit-field wider than int (gcc's ``unsigned long long x:40``) leaves the
site's mutants out: gcc computes ``& | << >>`` on it in the field's 40 bits, clang in 64, and
one label text cannot say both (wm_operands.Operand.wide_bitfield).

``bitwise_kill`` also serves compound assignments (wm_asr.py), where only the low bits of the
object assigned count.
"""

from __future__ import annotations

from .kill_rules import Kill, bitwise_constant, both, unsigned_intervals
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .operators import BOR, SHIFT, Bitwise, by_original
from .sites import BINARY, Function
from .unit import UNSIGNED_SPELLING, bit_width, canonical_kind
from .wm_aor import FEW_VALUES, Computed, differ_in
from .wm_operands import Operand, operands

group = "BOR"
reads_binops = True  # its labels sit on operator sites

MUTANTS = by_original(BOR)
AMOUNT_BITS = 64  # a shift amount is tested as an unsigned long long


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        result = canonical_kind(site.cursor)
        if site.form != BINARY or not mutants or result not in UNSIGNED_SPELLING:
            continue
        left, right = operands(site)
        if left.wide_bitfield or right.wide_bitfield:  # gcc computes in the field's width
            emit.left_out(len(mutants))
            continue
        computed = Computed(result, bit_width(site.cursor), bit_width(site.cursor))
        for operator in mutants:
            kill = bitwise_kill(operator, left, right, computed)
            if kill is not None:
                emit.label(LabelRequest(site=site, operator=operator, predicate=kill.text,
                                        code=kill.code,
                                        mutation=operator_replaced(site, operator.mutant)))


def bitwise_kill(operator: Bitwise, left: Operand, right: Operand, computed: Computed
                 ) -> Kill | None:
    """(code, record text): C templates true where ``x0 OP x1`` and ``x0 MUTANT x1`` differ in
    the low ``computed.kept`` bits (shifts: of a value of that width); None: not a label."""
    unsigned = UNSIGNED_SPELLING[computed.kind]
    if operator.original in SHIFT:
        return _shift_kill(left, right, computed)
    if _constant(operator, left, right, computed):
        return None
    a, b = f"(({unsigned})($x0))", f"(({unsigned})($x1))"
    if operator.kill == "{a} != {b}":
        differ = differ_in(a, b, unsigned, computed)
        return Kill(differ, differ)
    value = operator.kill.format(a=a, b=b).removesuffix(" != 0")
    if computed.narrowed:
        value = f"({value} & ((({unsigned})1 << {computed.kept}) - 1))"
    kill = f"{value} != 0"
    return Kill(kill, kill)


def _shift_kill(left: Operand, right: Operand, computed: Computed) -> Kill | None:
    """``x0 << x1`` against ``x0 >> x1``. In signed arithmetic, where the original is defined
    and the mutant too, both non-zero (a non-negative x0 shifted left is above x0, shifted right
    at most x0). Where the value wraps (unsigned arithmetic) or only its low bits are kept,
    bits shifted out can leave both 0 (``2u << 31``, ``2u >> 31``): the two values are
    compared, the amount first checked to be in range so that the label never shifts by more
    than the width, whatever the original does. The code has no branch (wm_aor.integer_kill
    says why): it joins the tests with ``&`` and shifts by the amount's low bits, the same
    amount wherever the range test holds."""
    if _never_differ(left, right, computed):
        return None
    if computed.signed and not computed.narrowed:
        tests = [f"($x{i}) != 0" for i, operand in enumerate((left, right))
                 if not operand.constant]
        if not tests:
            return None
        return Kill(" & ".join(f"({test})" for test in tests), " && ".join(tests))
    if not right.constant and right.own_bits > AMOUNT_BITS:
        return None  # the amount test below would truncate it
    unsigned = UNSIGNED_SPELLING[computed.kind]
    value = f"(({unsigned})($x0))"
    code, text = (differ_in(f"({value} << {amount})", f"({value} >> {amount})", unsigned, computed)
                  for amount in (f"(($x1) & {computed.bits - 1})", "($x1)"))
    if right.constant:
        return Kill(text, text)
    in_range = f"(unsigned long long)($x1) < {computed.bits}"
    return Kill(both(in_range, code), f"{in_range} && {text}")


def _never_differ(left: Operand, right: Operand, computed: Computed) -> bool:
    """Are ``x0 << x1`` and ``x0 >> x1`` the same in the low ``computed.kept`` bits wherever
    both are defined, or is the original never defined? Both are defined for an amount below
    the width, and in signed arithmetic for a value that is not negative (``-1 << b`` is
    undefined): where the value is then 0, or the amount 0, they are equal; where the value is
    0 or 1, they differ only for an amount from 1 to below the bits kept (1 << b is 2^b, 1 >> b
    is 0: a 1-bit object stores 0 both ways)."""
    values, amounts = left.bounds, right.bounds
    if values is None or amounts is None:
        return False
    most = values[1] if computed.signed or values[0] >= 0 else (1 << computed.bits) - 1
    least_amount, most_amount = max(amounts[0], 0), min(amounts[1], computed.bits - 1)
    if least_amount > most_amount:
        return True  # never defined
    if most <= 0 or most_amount < 1:
        return True
    return most == 1 and computed.kept <= max(least_amount, 1)


def _constant(operator: Bitwise, left: Operand, right: Operand, computed: Computed) -> bool:
    """Is the kill condition the same wherever the site can be (a constant, or an operand of
    few values, against the other operand's range)?"""
    kept = computed.kept
    pair = frozenset((operator.original, operator.mutant))
    for fixed, other in ((right, left), (left, right)):
        values = _values(fixed)
        if values is None:
            continue
        intervals = [(0, (1 << kept) - 1)] if other.bounds is None or computed.narrowed \
            else unsigned_intervals(other.bounds, kept)
        found = {bitwise_constant(pair, value, intervals, kept) for value in values}
        if len(found) == 1 and None not in found:
            return True
    return False


def _values(operand: Operand) -> list[int] | None:
    """The values of an operand that is a constant or has few."""
    bounds = operand.bounds
    if bounds is not None and bounds[1] - bounds[0] < FEW_VALUES:
        return list(range(bounds[0], bounds[1] + 1))
    return None
