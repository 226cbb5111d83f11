"""Where a mutant differs from the original: the arithmetic behind the WM kill conditions.

Pure and libclang-free: the operator registry (operators.py) and the WM criteria build on it, and
tests check it against brute force (tests/rewriters/test_kill_rules.py, test_kill_conditions.py).

Relational operators. ``a OP b`` holds on a set of orderings of (a, b): ``LT``, ``EQ``, ``GT``,
and ``UN`` (unordered: a NaN is involved). An original and a mutant differ exactly on the
symmetric difference of their sets, restricted to the orderings the operands can have (their
*domain*: no ``UN`` for integers, no ``LT`` for an unsigned value against a constant zero). A kill
set that is empty (equivalent mutant), the whole domain (killed by every input), or the
original's own outcome or its negation (the mutant is a constant: killed exactly where the
original is false, or true, which the branch already shows) is not a label. Floating tests are
written with the quiet comparisons (``__builtin_isless`` ...; ``==`` and ``!=`` are quiet): they
raise no FE_INVALID on a quiet NaN, where ``<`` does.

Arithmetic operators with a constant right operand ``c``: ``literal_kill`` says whether the kill
condition of ``x OP c`` against ``x MUTANT c`` is the same for every ``x`` where both are defined
(C semantics: signed overflow and division by zero undefined, a mutant dividing by zero traps and
so counts as killed; unsigned arithmetic modulo 2^bits), in which case the mutant is not a label.
Where the operands' ranges are narrower than their types (a ``_Bool``, a bit-field, an object
narrower than the arithmetic that its value is stored back to), ``value_range_kill`` says the same
for x within a range, and ``range_kill`` for both operands within ranges.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Final, Literal, NamedTuple

LT, EQ, GT, UN = "lt", "eq", "gt", "un"
Orderings = frozenset[str]
Bounds = tuple[int, int]  # the least and greatest value an operand can have
ORDERED: Orderings = frozenset({LT, EQ, GT})  # integers and pointers: never unordered
EVERY: Orderings = ORDERED | {UN}

HOLDS_ON: dict[str, Orderings] = {
    "<": frozenset({LT}), "<=": frozenset({LT, EQ}), ">": frozenset({GT}),
    ">=": frozenset({GT, EQ}), "==": frozenset({EQ}), "!=": frozenset({LT, GT, UN}),
}
ORDERED_OPERATORS = frozenset({"<", "<=", ">", ">="})
_MIRROR = {LT: GT, GT: LT, EQ: EQ, UN: UN}

# Tests true exactly on a set of orderings, as (code, display) formats over the operands {0}
# and {1}: relational operators where no operand can be NaN, quiet tests where one can.
_INTEGER_OPERATORS: dict[Orderings, str] = {
    orderings & ORDERED: op for op, orderings in HOLDS_ON.items()}
_INTEGER_TESTS: dict[Orderings, tuple[str, str]] = {
    holds: (f"{{0}} {op} {{1}}",) * 2 for holds, op in _INTEGER_OPERATORS.items()}
_FLOAT_TESTS: dict[Orderings, tuple[str, str]] = {
    frozenset({EQ}): ("{0} == {1}",) * 2,
    frozenset({LT, GT, UN}): ("{0} != {1}",) * 2,
}
for _name, _orderings in (("isless", {LT}), ("isgreater", {GT}), ("islessequal", {LT, EQ}),
                          ("isgreaterequal", {GT, EQ}), ("islessgreater", {LT, GT}),
                          ("isunordered", {UN})):
    _FLOAT_TESTS[frozenset(_orderings)] = (f"__builtin_{_name}({{2}}, {{3}})",
                                           f"{_name}({{2}}, {{3}})")
    _FLOAT_TESTS[EVERY - _orderings] = (f"!__builtin_{_name}({{2}}, {{3}})",
                                        f"!{_name}({{2}}, {{3}})")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*")


class Kill(NamedTuple):
    """A kill condition: the C template a label computes, and the same as its record reads it
    (the code may be written without branches, the text as one would say it)."""

    code: str
    text: str


def both(first: str, second: str) -> str:
    """C: two tests that cannot fault, both true, evaluated without a branch (``&``): at -O0 a
    value that lives across a branch costs a stack slot of its own under clang."""
    return f"({first}) & ({second})"


def mirrored(orderings: Iterable[str]) -> Orderings:
    """The orderings of (b, a) for those of (a, b)."""
    return frozenset(_MIRROR[o] for o in orderings)


def relational_kill(original: str, mutant: str, domain: Orderings) -> Orderings | None:
    """The orderings within ``domain`` where ``a original b`` and ``a mutant b`` differ, or None
    when that is no label (empty, everything, or the original's outcome or its negation)."""
    holds = HOLDS_ON[original] & domain
    kill = (holds ^ HOLDS_ON[mutant]) & domain
    return None if kill in (frozenset(), domain, holds, domain - holds) else kill


def needs_order(kill: Orderings) -> bool:
    """Does telling these orderings apart need an ordered comparison (not ``==``/``!=``)?"""
    return kill & ORDERED not in (frozenset({EQ}), frozenset({LT, GT}))


def ordering_test(kill: Orderings, domain: Orderings, left: str, right: str) -> tuple[str, str]:
    """(code, display) over the operand texts ``left`` and ``right`` (placeholders or numbers),
    true exactly on ``kill`` within ``domain``: the test for exactly that set if there is one,
    else the one agreeing with it on the domain."""
    tests = _FLOAT_TESTS if UN in domain else _INTEGER_TESTS
    test = tests[_tested(tests, kill, domain)]
    operands = (_operand(left), _operand(right), left, right)
    return test[0].format(*operands), test[1].format(*operands)


def relational_test(kill: Orderings, domain: Orderings, left: str,
                    right: str) -> tuple[str, str, str] | None:
    """``ordering_test``'s code as (left, operator, right) when it is a relational operator
    (``domain`` has no NaN), else None."""
    if UN in domain:
        return None
    return left, _INTEGER_OPERATORS[_tested(_INTEGER_OPERATORS, kill, domain)], right


def _tested(tests: Mapping[Orderings, object], kill: Orderings, domain: Orderings) -> Orderings:
    """The orderings of the test in ``tests`` true exactly on ``kill`` within ``domain``."""
    return kill if kill in tests else next(holds for holds in tests if holds & domain == kill)


def _operand(text: str) -> str:
    """An operand of a relational operator: parenthesised unless it is a number."""
    return text if _NUMBER.fullmatch(text) else f"({text})"


# --- arithmetic -------------------------------------------------------------------------------

NO_POINT: Final = "no point"  # the original is undefined for every left operand
Constant = bool | Literal["no point"] | None  # None: the kill condition depends on the operand
DIVIDING = frozenset("/%")


def literal_kill(original: str, mutant: str, c: int, signed: bool, bits: int) -> Constant:
    """The kill condition's value for every ``x`` where ``x original c`` and ``x mutant c`` are
    both defined: True (killed by every input), False (equivalent), NO_POINT, or None when it
    depends on ``x``. ``c`` is the constant as a value of the result type, ``bits`` its width.
    Exact for every width (checked exhaustively for small ones)."""
    if c == 0 and original in "/%":
        return NO_POINT
    if c == 0 and mutant in "/%":
        return True  # the mutant divides by zero
    pair = frozenset((original, mutant))
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if pair == {"+", "-"}:  # x + c == x - c iff 2c == 0
        if signed:
            return NO_POINT if c == low else c != 0
        return (2 * c) % (1 << bits) != 0
    if pair in ({"+", "*"}, {"-", "*"}):  # x (c - 1) == c, x (1 - c) == c
        if signed:
            if c in (0, 2):
                return None
            return NO_POINT if pair == {"-", "*"} and c == low else True
        return None if c % 2 == 0 else True
    if pair == {"+", "/"}:
        if signed:
            return None if c >= 2 else True
        return None if _unsigned_add_meets_quotient(c, bits) else True
    if pair == {"-", "/"}:  # x = c + 1 where c + 1 fits
        return None if 2 <= c and c + 1 <= (high if signed else (1 << bits) - 1) else True
    if pair == {"*", "/"}:
        return False if c == 1 or signed and c == -1 else None
    if pair == {"+", "%"}:
        if signed:
            return True if c == low else None
        return None if c & (c - 1) == 0 else True  # a power of two
    return None  # -,% *,% /,%: x = 0 (or c) meets, x = c (or 1) does not


def _unsigned_add_meets_quotient(c: int, bits: int) -> bool:
    """Is there an unsigned x with x + c == x / c (mod 2^bits)? Only where x + c wraps:
    x = 2^bits + q - c with q = x / c < c, i.e. q (c - 1) in (2^bits - 2c, 2^bits - c]."""
    if c < 2:
        return False
    size = 1 << bits
    largest = (size - c) // (c - 1)
    return any(0 <= q < c and (size + q - c) // c == q for q in (largest, largest - 1))


def literal_set_kill(original: str, mutant: str, values: Iterable[int], left: Bounds,
                     signed: bool, bits: int, kept: int) -> Constant:
    """The kill condition's value for a right operand known to be one of ``values`` and a left
    one within ``left``, compared in the low ``kept`` bits: constant only if it is the same
    constant for each value (values where the original is never defined left out). Each value
    is decided by ``literal_kill`` over every left operand where all bits count, else (or where
    that depends on x) by ``value_range_kill`` over ``left``."""
    found: set[Constant] = set()
    for c in values:
        kill = literal_kill(original, mutant, c, signed, bits) if kept == bits else None
        if kill is None:
            kill = value_range_kill(original, mutant, c, left, signed, bits, kept)
        if kill is None:
            return None
        if kill != NO_POINT:
            found.add(kill)
        if len(found) > 1:
            return None
    return found.pop() if found else NO_POINT


# --- arithmetic over ranges -------------------------------------------------------------------
#
# Where an operand's range is narrower than its type (a _Bool, a bit-field, an unsigned char in
# int arithmetic) a mutant can differ at every point, or none, although no constant makes it so.
# The rules below read the two values' exact difference D = (x original y) - (x mutant y),
# integers computed without wrapping and a quotient q = x / y truncated towards zero (C): the
# values the program keeps differ iff D is not a multiple of 2^kept, where kept is the width of
# the type computed in (signed values are then in its range, unsigned ones modulo 2^width), or
# fewer bits where the value is stored to a narrower object (ASR). Each rule is sound (checked
# against brute force on small widths); where none shows the kill condition constant, the
# mutant is a label.


def converted_bounds(bounds: Bounds, signed: bool, bits: int) -> Bounds:
    """The values within ``bounds`` converted to an integer type of ``bits`` at least as wide as
    theirs: the same in a signed type; in an unsigned one modulo 2^bits (a range with negative
    values and others then spans the whole type)."""
    if signed:
        return bounds
    intervals = unsigned_intervals(bounds, bits)
    return intervals[0][0], intervals[-1][1]


def value_range_kill(original: str, mutant: str, c: int, left: Bounds, signed: bool, bits: int,
                     kept: int) -> Constant:
    """``literal_kill`` for a left operand within ``left`` and values compared in their low
    ``kept`` bits; None where that is not shown. Where no division is by other than 1 or -1, D
    is linear in x (``x + c - x / 1`` is 1, ``x - c - x / -1`` is 2x + 1), and whether it is a
    multiple of 2^kept a congruence solved over the range: exact. Otherwise D is monotone in x
    (a quotient never decreases with x for c > 0, never increases for c < 0, by at most 1 a
    step: x - q, c (1 + q), c x - q ... follow), except for / against %: the kill condition is
    True where no multiple of 2^kept lies between D's values at the ends of the range."""
    span = _defined(original, c, left, signed, bits)
    if span is None:
        return NO_POINT
    if c == 0 and mutant in DIVIDING:
        return True  # the mutant divides by zero
    span = _defined(mutant, c, span, signed, bits)
    if span is None:
        return NO_POINT  # the mutant is undefined wherever the original is defined

    def difference(x: int) -> int:
        return _exact(original, x, c) - _exact(mutant, x, c)

    modulus = 1 << kept
    if not {original, mutant} & DIVIDING or c in (1, -1):
        return _congruence(difference(1) - difference(0), difference(0), span, modulus)
    if {original, mutant} == DIVIDING:
        return None
    low, high = sorted((difference(span[0]), difference(span[1])))
    if high // modulus * modulus < low:
        return True
    return False if low == high else None


def _exact(op: str, x: int, c: int) -> int:
    """``x op c`` as an integer (c != 0 for / and %), the quotient truncated towards zero."""
    if op not in DIVIDING:
        return x + c if op == "+" else x - c if op == "-" else x * c
    quotient = abs(x) // abs(c) * (1 if (x < 0) == (c < 0) else -1)
    return quotient if op == "/" else x - c * quotient


def _defined(op: str, c: int, span: Bounds, signed: bool, bits: int) -> Bounds | None:
    """The x within ``span`` where ``x op c`` is defined (signed: in the type's range; MIN / -1
    and MIN % -1 undefined); None: nowhere."""
    if op in DIVIDING and c == 0:
        return None
    low, high = span
    if signed:
        least, most = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if op == "+":
            low, high = max(low, least - c), min(high, most - c)
        elif op == "-":
            low, high = max(low, least + c), min(high, most + c)
        elif op == "*" and c:
            first, second = (least, most) if c > 0 else (most, least)
            low, high = max(low, -(-first // c)), min(high, second // c)
        elif op in DIVIDING and c == -1:
            low = max(low, least + 1)
    return (low, high) if low <= high else None


def _congruence(alpha: int, beta: int, span: Bounds, modulus: int) -> Constant:
    """Is alpha x + beta a multiple of ``modulus`` for no x within ``span`` (True), for every
    one (False), or for some (None)? Solutions, if any, are every (modulus / g)-th x, g the
    gcd of alpha and the modulus."""
    g = math.gcd(alpha, modulus)
    if beta % g:
        return True
    step = modulus // g
    solution = (-beta // g) * pow(alpha // g, -1, step) % step
    first = span[0] + (solution - span[0]) % step
    if first > span[1]:
        return True
    return False if step == 1 or span[0] == span[1] else None


def range_kill(original: str, mutant: str, left: Bounds, right: Bounds, signed: bool, bits: int,
               kept: int) -> bool:
    """Do ``x original y`` and ``x mutant y`` differ in the low ``kept`` bits wherever the
    original is defined, x within ``left`` and y within ``right`` (values in the type computed
    in)? For + and - against / and %, where D is never 0 (``_never_equal``) and never another
    multiple of 2^kept (``_never_wrapped_equal``); False: not shown."""
    pair = frozenset((original, mutant))
    return (pair in _RANGE_PAIRS and _never_equal(pair, left, right)
            and _never_wrapped_equal(pair, left, right, signed, bits, kept))


_RANGE_PAIRS = frozenset({frozenset("+/"), frozenset("-/"), frozenset("+%"), frozenset("-%")})


def _never_equal(pair: frozenset[str], left: Bounds, right: Bounds) -> bool:
    """Is D never 0? x + y == x / y needs x <= -3 and 2 <= y < -x (for y > 0 and x = -n,
    y = n - n / y, which has a solution from n = 3 on; for other signs |x + y| and |q| cannot
    meet); x - y == x / y needs x >= 3 and 2 <= y < x (y = x - q); x + y == x % y iff
    D = y (1 + q) is 0, q == -1: x and y of opposite signs; x - y == x % y iff D = y (q - 1)
    is 0, q == 1: x and y of the same sign."""
    (a1, a2), (b1, b2) = left, right
    if pair == {"+", "/"}:
        return a1 > -3 or b2 < 2 or b1 >= -a1
    if pair == {"-", "/"}:
        return a2 < 3 or b2 < 2 or b1 >= a2
    if pair == {"+", "%"}:
        return (a2 <= 0 or b1 >= 0) and (a1 >= 0 or b2 <= 0)
    return (a2 <= 0 or b2 <= 0) and (a1 >= 0 or b1 >= 0)


def _never_wrapped_equal(pair: frozenset[str], left: Bounds, right: Bounds, signed: bool,
                         bits: int, kept: int) -> bool:
    """Is D never a multiple of 2^kept other than 0? Where all bits count: signed values are
    both in the type's range, and so are unsigned ones of x - y against q or x % y (where y > x,
    q == 0 and D is x - y or -y), so |D| < 2^bits. For x, y >= 0 (y > 0 where the site is
    defined or the mutant traps): x + y - q grows with x and with y, so 0 < D <= X + Y - X / Y
    at the greatest X and Y; x + y - x % y is the least multiple of y above x, 0 < D <= x + y,
    and a multiple 2^kept of it needs x >= 2^(kept - 1) or y >= 2^kept (D <= 2x where q >= 1, and
    D = y where q == 0). In signed arithmetic D <= x + y is at most the type's maximum wherever
    that sum is defined."""
    if kept == bits and (signed or "-" in pair):
        return True
    (a1, a2), (b1, b2) = left, right
    if a1 < 0 or b1 < 0 or "-" in pair:
        return False
    modulus = 1 << kept
    most = a2 + b2 - a2 // max(b2, 1) if "/" in pair else a2 + b2
    if signed:
        most = min(most, (1 << (bits - 1)) - 1)
    return most < modulus or "%" in pair and 2 * a2 < modulus and b2 < modulus


# --- bitwise and shifts -----------------------------------------------------------------------

# Where ``a OP b`` and ``a MUTANT b`` differ, over the operands' values ``{a}``, ``{b}`` in the
# unsigned type of the result's width. Bit by bit: & and | differ where the bits differ, & and ^
# unless both are 0, | and ^ where both are 1. Shifts, wherever the original is defined
# (0 <= b < width, a >= 0 for a signed <<): a << b and a >> b are equal iff a == 0 or b == 0.
# (A non-zero a >= 0 shifted left by b >= 1 is above a >= a >> b unless it wraps; if it wraps,
# modulo 2^width bit j of a << b is a_(j-b) and bit j of a >> b is a_(j+b): equal bits chain
# every bit of a to one that must be 0, so a == 0.)
BITWISE_KILLS: dict[frozenset[str], str] = {
    frozenset("&|"): "{a} != {b}",
    frozenset("&^"): "({a} | {b}) != 0",
    frozenset("|^"): "({a} & {b}) != 0",
    frozenset(("<<", ">>")): "{a} != 0 && {b} != 0",
}
Intervals = list[tuple[int, int]]  # disjoint [low, high] ranges of unsigned values


def unsigned_intervals(bounds: Bounds, bits: int) -> Intervals:
    """The values a value within ``bounds`` takes converted to the unsigned type of ``bits``."""
    size = 1 << bits
    low, high = bounds
    if low >= 0:
        return [(low, min(high, size - 1))] if high < size else [(0, size - 1)]
    if high < 0:
        return [(low % size, high % size)]
    return [(0, high), (low % size, size - 1)]


def bitwise_constant(pair: frozenset[str], c: int, intervals: Intervals, bits: int) -> bool | None:
    """The kill condition of ``x OP c`` against ``x MUTANT c`` (OP and MUTANT among & | ^, both
    commutative) where x takes the unsigned values ``intervals``: True (killed by every input),
    False (equivalent), or None when it depends on x. Exact."""
    c %= 1 << bits
    if pair == frozenset("&|"):  # x != c
        return _constant_truth([any(lo <= c <= hi for lo, hi in intervals) and 0,
                                any((lo, hi) != (c, c) for lo, hi in intervals) and 1])
    if pair == frozenset("&^"):  # (x | c) != 0
        if c:
            return True
        return _constant_truth([any(lo == 0 for lo, _ in intervals) and 0,
                                any(hi > 0 for _, hi in intervals) and 1])
    # (x & c) != 0
    return _constant_truth([any(_first_without(lo, c) <= hi for lo, hi in intervals) and 0,
                            any(_first_with(lo, c) <= hi for lo, hi in intervals) and 1])


def _constant_truth(found: list[int | bool]) -> bool | None:
    """``found``: [0 if the kill condition can be false else False, 1 if it can be true else
    False]."""
    can_be_false, can_be_true = found[0] is not False, found[1] is not False
    return None if can_be_false and can_be_true else can_be_true


def _first_without(x: int, c: int) -> int:
    """The least y >= x with y & c == 0: past each set bit h of x & c, every y sharing x's
    bits from h up has it too, so jump to the next multiple of 2^h."""
    while x & c:
        h = (x & c).bit_length() - 1
        x = ((x >> h) + 1) << h
    return x


def _first_with(x: int, c: int) -> int:
    """The least y >= x with y & c != 0 (or a value beyond every interval when c == 0)."""
    if x & c or not c:
        return x if c else 1 << 200
    return min(((x >> j) | 1) << j for j in range(c.bit_length()) if c >> j & 1)
