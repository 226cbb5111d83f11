"""kill_rules.py against brute force: which constant right operands make an AOR mutant's kill
condition constant (every width's rule checked exhaustively on small widths), which operand
ranges do (every range of a small width where the rules decide), the same for BOR against a
range of the other operand, and the relational tests true exactly on their orderings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ffcc.rewriters.kill_rules import (
    EQ,
    EVERY,
    GT,
    HOLDS_ON,
    LT,
    NO_POINT,
    ORDERED,
    UN,
    bitwise_constant,
    literal_kill,
    literal_set_kill,
    mirrored,
    ordering_test,
    range_kill,
    relational_kill,
    unsigned_intervals,
    value_range_kill,
)

ARITHMETIC = "+-*/%"


def _values(op: str, a: np.ndarray, c: int, signed: bool, bits: int):
    """(value, defined, traps) of ``a op c`` for every a, as C computes it at this width."""
    size, count = 1 << bits, len(a)
    if op in "/%" and c == 0:
        return np.zeros(count, np.int64), np.zeros(count, bool), np.ones(count, bool)
    if op in "+-*":
        value = {"+": a + c, "-": a - c, "*": a * c}[op]
    else:
        quotient = np.trunc(a / c).astype(np.int64) if signed else a // c
        value = quotient if op == "/" else a - quotient * c
    if signed:
        defined = (value >= -(size >> 1)) & (value < size >> 1)
        return value, defined, np.zeros(count, bool)
    return value % size, np.ones(count, bool), np.zeros(count, bool)


def brute_force(original: str, mutant: str, c: int, signed: bool, bits: int):
    """The kill condition's constant value over every left operand, as literal_kill says it."""
    size = 1 << bits
    a = np.arange(-(size >> 1), size >> 1) if signed else np.arange(size)
    first, first_defined, _ = _values(original, a, c, signed, bits)
    second, second_defined, traps = _values(mutant, a, c, signed, bits)
    kills = np.where(traps, True, first != second)[first_defined & (second_defined | traps)]
    found = set(kills.tolist())
    if not found:
        return NO_POINT
    return found.pop() if len(found) == 1 else None


@pytest.mark.parametrize("bits", [8, 9, 10])
@pytest.mark.parametrize("signed", [True, False])
def test_literal_kill_is_exact(bits: int, signed: bool):
    size = 1 << bits
    constants = range(-(size >> 1), size >> 1) if signed else range(size)
    wrong = [(original, mutant, c, literal_kill(original, mutant, c, signed, bits), expected)
             for original, mutant in itertools.permutations(ARITHMETIC, 2) for c in constants
             if literal_kill(original, mutant, c, signed, bits)
             != (expected := brute_force(original, mutant, c, signed, bits))]
    assert not wrong, wrong[:10]


def test_literal_kill_the_issue_cases():
    for original, mutant, c in [("-", "*", 1), ("-", "/", 1), ("*", "/", 0), ("*", "%", 0),
                                ("*", "+", -1), ("*", "-", -1), ("/", "+", 1), ("/", "-", 1),
                                ("/", "*", -1), ("/", "+", -1), ("/", "-", -1)]:
        assert literal_kill(original, mutant, c, True, 32) is not None, (original, mutant, c)
    assert literal_kill("/", "%", -1, True, 32) is None  # x / -1 == -x, x % -1 == 0: x != 0
    assert literal_kill("+", "-", 1 << 31, False, 32) is False  # a + 2^31 == a - 2^31
    assert literal_kill("*", "+", 2, True, 32) is None  # 2 * 2 == 2 + 2


INT = (-(1 << 31), (1 << 31) - 1)


def test_literal_set_kill_over_a_comparison_result():
    assert literal_set_kill("+", "/", (0, 1), INT, True, 32, 32) is True  # traps at 0, a + 1 != a
    assert literal_set_kill("+", "-", (0, 1), INT, True, 32, 32) is None  # equal at 0 only
    assert literal_set_kill("/", "*", (0, 1), INT, True, 32, 32) is False  # a / 1 == a * 1
    # signed char a; _Bool b; a += b against a /= b: a + 1 != a / 1 in any number of bits
    assert literal_set_kill("+", "/", (0, 1), (-128, 127), True, 32, 8) is True
    # unsigned char a; a += 128 against a -= 128 store the same
    assert literal_set_kill("+", "-", (128,), (0, 255), False, 8, 8) is False


def _c_value(op: str, x: int, y: int, signed: bool, bits: int) -> int | str | None:
    """``x op y`` as C computes it in a type of ``bits``: its value, TRAP (a division by zero),
    or None (undefined: signed overflow, MIN / -1, MIN % -1)."""
    if op in "/%" and y == 0:
        return TRAP
    quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) if op in "/%" else 0
    value = {"+": x + y, "-": x - y, "*": x * y, "/": quotient, "%": x - y * quotient}[op]
    if not signed:
        return value % (1 << bits)
    half = 1 << (bits - 1)
    return value if -half <= value < half and -half <= quotient < half else None


TRAP = "trap"


def _kills(original: str, mutant: str, xs: range, ys: range, signed: bool, bits: int,
           kept: int) -> set[bool]:
    """The kill condition's values where the original is defined (and the mutant, or it
    traps), comparing the low ``kept`` bits."""
    found = set()
    for x, y in itertools.product(xs, ys):
        first, second = _c_value(original, x, y, signed, bits), _c_value(mutant, x, y, signed, bits)
        if first is None or first == TRAP or second is None:
            continue
        found.add(second == TRAP or (first - second) % (1 << kept) != 0)
    return found


def _ranges(signed: bool, bits: int) -> list[tuple[int, int]]:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return [(a, b) for a in range(low, high + 1) for b in range(a, high + 1)]


@pytest.mark.parametrize("signed", [True, False])
def test_value_range_kill_is_right_where_it_decides(signed: bool):
    """Against every left range, constant and number of bits kept of a 4-bit type."""
    bits = 4
    wrong = []
    for (low, high), kept in itertools.product(_ranges(signed, bits), range(1, bits + 1)):
        for c in range(*(-8, 8) if signed else (0, 16)):
            for original, mutant in itertools.permutations(ARITHMETIC, 2):
                kill = value_range_kill(original, mutant, c, (low, high), signed, bits, kept)
                if kill is None:
                    continue
                found = _kills(original, mutant, range(low, high + 1), range(c, c + 1), signed,
                               bits, kept)
                if found != ({kill} if kill != NO_POINT else set()):
                    wrong.append((original, mutant, c, low, high, kept, kill, found))
    assert not wrong, wrong[:10]


@pytest.mark.parametrize("signed", [True, False])
def test_range_kill_is_right_where_it_decides(signed: bool):
    """Against every pair of ranges and number of bits kept of a 4-bit type."""
    bits = 4
    ranges = _ranges(signed, bits)
    wrong = []
    for left, right, kept in itertools.product(ranges, ranges, range(1, bits + 1)):
        for original, mutant in itertools.permutations("+-/%", 2):
            if range_kill(original, mutant, left, right, signed, bits, kept):
                found = _kills(original, mutant, range(left[0], left[1] + 1),
                               range(right[0], right[1] + 1), signed, bits, kept)
                if found - {True}:
                    wrong.append((original, mutant, left, right, kept))
    assert not wrong, wrong[:10]


def test_range_kill_the_brute_force_cases():
    """The pairs brute force's (test_kill_conditions_pairs.py), and one it did not see."""
    long, unsigned = (-(1 << 63), (1 << 63) - 1), (0, (1 << 32) - 1)
    assert range_kill("+", "/", (0, 1), INT, True, 32, 32)  # _Bool a; int b;
    assert range_kill("-", "/", (0, 1), INT, True, 32, 32)
    assert range_kill("/", "+", (-1, 0), INT, True, 32, 32)  # int a : 1
    assert range_kill("+", "/", unsigned, long, True, 64, 64)  # unsigned a; long b;
    assert range_kill("+", "/", unsigned, (0, 65535), False, 32, 32)  # unsigned short b
    assert not range_kill("+", "/", (0, 1), unsigned, False, 32, 32)  # 1 + UINT_MAX == 0
    assert range_kill("+", "%", (0, 255), unsigned, False, 32, 32)
    assert range_kill("+", "/", (0, (1 << 31) - 1), (0, (1 << 31) - 1), True, 32, 31)
    # unsigned a : 31; int b : 31; a += b against a /= b: equal in 31 bits at a = 1431655767,
    # b = -2 (a + b is 2^31 above a / b)
    assert not range_kill("+", "/", (0, (1 << 31) - 1), (-(1 << 30), (1 << 30) - 1), True, 32,
                          31)


def _holds(op: str, ordering: str) -> bool:
    return ordering in HOLDS_ON[op]


@pytest.mark.parametrize("domain", [EVERY, ORDERED, frozenset({GT, EQ}), frozenset({LT, EQ})])
def test_relational_kill_is_where_the_operators_differ(domain):
    for original, mutant in itertools.permutations(HOLDS_ON, 2):
        kill = relational_kill(original, mutant, domain)
        differ = frozenset(o for o in domain if _holds(original, o) != _holds(mutant, o))
        holds = frozenset(o for o in domain if _holds(original, o))
        if differ in (frozenset(), domain, holds, domain - holds):
            assert kill is None
        else:
            assert kill == differ


SAMPLES = {LT: (1.0, 2.0), EQ: (2.0, 2.0), GT: (3.0, 2.0), UN: (math.nan, 2.0)}
TESTS = {"isless": lambda a, b: a < b, "isgreater": lambda a, b: a > b,
         "islessequal": lambda a, b: a <= b, "isgreaterequal": lambda a, b: a >= b,
         "islessgreater": lambda a, b: a < b or a > b,
         "isunordered": lambda a, b: math.isnan(a) or math.isnan(b)}


def _evaluate(display: str, a: float, b: float) -> bool:
    """A display test over a and b, in Python."""
    expression = display.replace("!=", "<>").replace("!", "not ").replace("<>", "!=")
    return bool(eval(expression, {**TESTS}, {"a": a, "b": b}))  # noqa: S307 (our own text)


@pytest.mark.parametrize("domain", [EVERY, ORDERED, frozenset({GT, EQ})])
def test_ordering_tests_hold_exactly_on_their_orderings(domain):
    for size in range(1, len(domain)):
        for kill in map(frozenset, itertools.combinations(sorted(domain), size)):
            code, display = ordering_test(kill, domain, "a", "b")
            signalling = any(f" {op} " in code for op in ("<", "<=", ">", ">="))
            assert not (signalling and UN in domain)  # a NaN raises FE_INVALID in those
            for ordering in domain:
                assert _evaluate(display, *SAMPLES[ordering]) == (ordering in kill), (kill, display)


def test_mirrored():
    assert mirrored({LT, EQ, UN}) == {GT, EQ, UN}


def test_bitwise_constant_is_exact_on_small_widths():
    """kill_rules.bitwise_constant against every value of every range of a 4-bit type."""
    ops = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}
    bits = 4
    for low in range(-8, 16):
        for high in range(low, 16):
            intervals = unsigned_intervals((low, high), bits)
            values = {x % 16 for x in range(low, high + 1)}
            for c in range(16):
                for op, mutant in itertools.permutations("&|^", 2):
                    kills = {ops[op](x, c) != ops[mutant](x, c) for x in values}
                    expected = None if len(kills) == 2 else kills.pop()
                    assert bitwise_constant(frozenset((op, mutant)), c, intervals, bits) \
                        == expected, (low, high, c, op, mutant)
