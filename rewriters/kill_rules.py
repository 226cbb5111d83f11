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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

LT, EQ, GT, UN = "lt", "eq", "gt", "un"
Orderings = frozenset[str]
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
_INTEGER_TESTS: dict[Orderings, tuple[str, str]] = {
    orderings & ORDERED: (f"{{0}} {op} {{1}}",) * 2 for op, orderings in HOLDS_ON.items()}
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
    test = tests.get(kill) or next(test for holds, test in tests.items() if holds & domain == kill)
    operands = (_operand(left), _operand(right), left, right)
    return test[0].format(*operands), test[1].format(*operands)


def _operand(text: str) -> str:
    """An operand of a relational operator: parenthesised unless it is a number."""
    return text if _NUMBER.fullmatch(text) else f"({text})"


# --- arithmetic -------------------------------------------------------------------------------

NO_POINT: Final = "no point"  # the original is undefined for every left operand
Constant = bool | Literal["no point"] | None  # None: the kill condition depends on the operand


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


def literal_set_kill(original: str, mutant: str, values: Iterable[int], signed: bool,
                     bits: int) -> Constant:
    """``literal_kill`` for a right operand known to be one of ``values``: constant only if it is
    the same constant for each value (values where the original is never defined left out)."""
    found: set[Constant] = set()
    for c in values:
        kill = literal_kill(original, mutant, c, signed, bits)
        if kill is None:
            return None
        if kill != NO_POINT:
            found.add(kill)
    if not found:
        return NO_POINT
    return found.pop() if len(found) == 1 else None
