"""The label operators as data: every operator id a label record can carry, with its criterion,
group, one-line help and the data its criterion module builds the kill condition from.

Users choose groups (``--mcc`` is group MCC, ``--wm=ROR,COR`` names WM groups, ``--wm`` alone is
``WM_DEFAULT``); every label record names its operator by id. The criterion modules (mcc.py,
wm_*.py) take their operators from these tables, and option checking, ``--help`` and
``--estimate`` read them, so each id, group and help line is written here only. Order is part of
the contract: groups run in ``GROUPS`` order and a group's operators in table order, which fixes
the order of a site's labels and so their indices.

Free of libclang and tree-sitter on purpose: ffcc's option parser imports this module for every
compiler command a build runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from . import kill_rules
from .kill_rules import Orderings

MCC_CRITERION, WM_CRITERION = "mcc", "wm"

# group -> help line, in the order the criteria run at a site
GROUPS: dict[str, str] = {
    "MCC": "multiple condition coverage: each combination of condition values",
    "ROR": "relational operator replacement: < <= > >= == != by each other",
    "AOR": "arithmetic operator replacement: + - * / % by each other (p + n <-> p - n)",
    "COR": "conditional operator replacement: && <-> ||, each operand alone",
    "ABS": "absolute value insertion: operand e -> abs(e), -abs(e), fail-on-zero",
    "UOD": "unary operator deletion: -e -> e (~e -> e, !e -> e always differ: no labels)",
    "IDR": "increment/decrement replacement: ++ <-> -- (labels for floating and _Bool only)",
    "BOR": "bitwise operator replacement: & | ^ by each other, << <-> >>",
    "ASR": "compound assignment replacement: += -= *= /= %=, &= |= ^=, <<= >>= within each",
}
CRITERION_GROUPS: dict[str, tuple[str, ...]] = {
    MCC_CRITERION: ("MCC",),
    WM_CRITERION: ("ROR", "AOR", "COR", "ABS", "UOD", "IDR", "BOR", "ASR"),
}
WM_GROUPS = CRITERION_GROUPS[WM_CRITERION]  # what --wm= accepts
# What --wm alone selects: Mull's default set (cxx_default: arithmetic, which has -x -> x,
# increment, comparison, boundary) as ffcc's groups, with ffcc's COR and ABS; Mull leaves its
# bitwise and assignment groups out by default, and so does ffcc (BOR, ASR).
WM_DEFAULT = ("ROR", "AOR", "COR", "ABS", "UOD", "IDR")

# C operators the WM groups mutate, in the order their mutants are emitted
RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = ("+", "-", "*", "/", "%")
LOGICAL = ("&&", "||")
BITWISE = ("&", "|", "^")
SHIFT = ("<<", ">>")
COMPOUND = tuple(f"{op}=" for op in ARITHMETIC + BITWISE + SHIFT)  # += ... >>=
INCREMENTS = ("++x", "x++", "--x", "x--")  # ops.UNARY_SPELLING's names
_SHORT_NAME = {
    "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne",
    "+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod",
    "&": "band", "|": "bor", "^": "xor", "<<": "shl", ">>": "shr",
    "++x": "preinc", "x++": "postinc", "--x": "predec", "x--": "postdec",
}
_SHORT_NAME.update({f"{op}=": f"{_SHORT_NAME[op]}eq" for op in ARITHMETIC + BITWISE + SHIFT})


# eq=False: each operator exists once, so identity is equality (and the classes are quicker to
# make, which every compiler command pays for).
@dataclass(frozen=True, eq=False)
class Operator:
    """One operator: what a label record names in its ``operator`` field."""

    id: str  # stable: "mcc", "wm.ror.lt_le", ...
    criterion: str  # MCC_CRITERION | WM_CRITERION
    group: str  # what users choose: a key of GROUPS
    help: str  # one line


@dataclass(frozen=True, eq=False)
class Mutant(Operator):
    """A mutant of the expressions whose C operator is ``original``."""

    original: str


@dataclass(frozen=True, eq=False)
class BinaryMutant(Mutant):
    """A mutant of the binary expressions whose C operator is ``original``."""


@dataclass(frozen=True, eq=False)
class Relational(BinaryMutant):
    """ROR: ``original`` replaced by the relational operator ``mutant``."""

    mutant: str
    kill: Orderings | None  # where the two differ on totally ordered operands; None when that
    # is everywhere (the mutant is the negation). Other domains: kill_rules.relational_kill.


@dataclass(frozen=True, eq=False)
class Arithmetic(BinaryMutant):
    """AOR: ``original`` replaced by the arithmetic operator ``mutant``. Kill conditions compare
    the two values (wm_aor.py); a constant right operand may make them constant
    (kill_rules.literal_kill)."""

    mutant: str
    simplified: str | None  # integer kill condition over $x0/$x1 simpler than comparing values
    # (exact for a signed result; an unsigned one also needs $x1 != 2^(bits-1))


@dataclass(frozen=True, eq=False)
class Logical(BinaryMutant):
    """COR: ``original`` replaced by the other logical operator ``mutant``, or the expression
    by one operand alone (``mutant`` LHS or RHS); killed where the operands' truth values
    (left, right) are one of ``kill_pairs``."""

    mutant: str
    kill_pairs: frozenset[tuple[int, int]]


@dataclass(frozen=True, eq=False)
class Bitwise(BinaryMutant):
    """BOR: ``original`` replaced by ``mutant``. ``kill`` is where the two differ, a template
    over the operands' values ``{a}`` and ``{b}`` in the unsigned type of the result's width
    (kill_rules.BITWISE_KILLS: exact wherever both are defined; for shifts in signed
    arithmetic only: where values wrap, wm_bor.py compares them)."""

    mutant: str
    kill: str


@dataclass(frozen=True, eq=False)
class Assignment(BinaryMutant):
    """ASR: compound assignment ``x original e`` replaced by ``x mutant e``; killed where the
    values stored differ: ``underlying``'s kill condition on the value computed, taken in the
    width of the object assigned (wm_asr.py)."""

    mutant: str
    underlying: Arithmetic | Bitwise


@dataclass(frozen=True, eq=False)
class Update(Mutant):
    """IDR: ``original`` (``x++``, ``--x`` ...) replaced by ``mutant``; killed where the values
    stored, x + 1 and x - 1, differ (the expression's value differs exactly then too)."""

    mutant: str


@dataclass(frozen=True, eq=False)
class Deletion(Mutant):
    """UOD: the unary ``original`` removed, ``op e`` -> ``e``; killed where e compares with 0
    as ``kill`` says (orderings of (e, 0); -e == e only at 0, NaN, and for unsigned
    arithmetic also at 2^(bits-1))."""

    kill: Orderings


@dataclass(frozen=True, eq=False)
class OperandMutant(Operator):
    """ABS: an arithmetic operand e replaced by ``form`` (``{}`` standing for e's text); killed
    where e compares with 0 as ``kill`` says (orderings of (e, 0), kill_rules)."""

    form: str
    kill: Orderings


MCC = Operator("mcc", MCC_CRITERION, "MCC", "one combination of a decision's condition values")


def _relational(original: str, mutant: str) -> Relational:
    return Relational(
        id=f"wm.ror.{_SHORT_NAME[original]}_{_SHORT_NAME[mutant]}", criterion=WM_CRITERION,
        group="ROR", help=f"{original} replaced by {mutant}", original=original, mutant=mutant,
        kill=kill_rules.relational_kill(original, mutant, kill_rules.ORDERED))


# Integers: a + b and a - b differ iff 2b != 0: b != 0 where both are defined for a signed
# result; modulo 2^bits for an unsigned one, also b != 2^(bits-1).
_AOR_SIMPLIFIED = {("+", "-"): "($x1) != 0", ("-", "+"): "($x1) != 0"}


def _arithmetic(original: str, mutant: str) -> Arithmetic:
    return Arithmetic(
        id=f"wm.aor.{_SHORT_NAME[original]}_{_SHORT_NAME[mutant]}", criterion=WM_CRITERION,
        group="AOR", help=f"{original} replaced by {mutant}", original=original, mutant=mutant,
        simplified=_AOR_SIMPLIFIED.get((original, mutant)))


def _logical(id: str, help: str, original: str, mutant: str,
             kill_pairs: set[tuple[int, int]]) -> Logical:
    return Logical(id=id, criterion=WM_CRITERION, group="COR", help=help, original=original,
                   mutant=mutant, kill_pairs=frozenset(kill_pairs))


def _operand(id: str, help: str, form: str, kill: set[str]) -> OperandMutant:
    return OperandMutant(id=id, criterion=WM_CRITERION, group="ABS", help=help, form=form,
                         kill=frozenset(kill))


def _bitwise(original: str, mutant: str) -> Bitwise:
    return Bitwise(
        id=f"wm.bor.{_SHORT_NAME[original]}_{_SHORT_NAME[mutant]}", criterion=WM_CRITERION,
        group="BOR", help=f"{original} replaced by {mutant}", original=original, mutant=mutant,
        kill=kill_rules.BITWISE_KILLS[frozenset((original, mutant))])


def _assignment(underlying: Arithmetic | Bitwise) -> Assignment:
    original, mutant = f"{underlying.original}=", f"{underlying.mutant}="
    return Assignment(
        id=f"wm.asr.{_SHORT_NAME[original]}_{_SHORT_NAME[mutant]}", criterion=WM_CRITERION,
        group="ASR", help=f"{original} replaced by {mutant}", original=original, mutant=mutant,
        underlying=underlying)


def _update(original: str, mutant: str) -> Update:
    return Update(id=f"wm.idr.{_SHORT_NAME[original]}_{_SHORT_NAME[mutant]}",
                  criterion=WM_CRITERION, group="IDR", help=f"{original} replaced by {mutant}",
                  original=original, mutant=mutant)


ROR = tuple(_relational(original, mutant)
            for original in RELATIONAL for mutant in RELATIONAL if mutant != original)
AOR = tuple(_arithmetic(original, mutant)
            for original in ARITHMETIC for mutant in ARITHMETIC if mutant != original)
LHS, RHS = "lhs", "rhs"  # Logical.mutant: the operand that replaces the whole expression
COR = (
    _logical("wm.cor.and_or", "a && b replaced by a || b", "&&", "||", {(1, 0), (0, 1)}),
    _logical("wm.cor.and_lhs", "a && b replaced by a", "&&", LHS, {(1, 0)}),
    _logical("wm.cor.and_rhs", "a && b replaced by b", "&&", RHS, {(0, 1)}),
    _logical("wm.cor.or_and", "a || b replaced by a && b", "||", "&&", {(1, 0), (0, 1)}),
    _logical("wm.cor.or_lhs", "a || b replaced by a", "||", LHS, {(0, 1)}),
    _logical("wm.cor.or_rhs", "a || b replaced by b", "||", RHS, {(1, 0)}),
)
ABS = (
    _operand("wm.abs.abs", "operand e replaced by abs(e)", "abs({})", {kill_rules.LT}),
    _operand("wm.abs.neg", "operand e replaced by -abs(e)", "-abs({})", {kill_rules.GT}),
    _operand("wm.abs.zero", "operand e replaced by fail-on-zero(e)", "failOnZero({})",
             {kill_rules.EQ}),
)

UOD = (Deletion(id="wm.uod.neg_noop", criterion=WM_CRITERION, group="UOD",
               help="-e replaced by e", original="-",
               kill=frozenset({kill_rules.LT, kill_rules.GT})),)
IDR = tuple(_update(original, mutant) for original, mutant in
            (("++x", "--x"), ("x++", "x--"), ("--x", "++x"), ("x--", "x++")))
BOR = tuple(_bitwise(original, mutant) for family in (BITWISE, SHIFT)
            for original in family for mutant in family if mutant != original)
ASR = tuple(_assignment(underlying) for family in (AOR, BOR) for underlying in family)

# id -> operator, every operator a label can name
OPERATORS: dict[str, Operator] = {op.id: op for op in (MCC, *ROR, *AOR, *COR, *ABS, *UOD, *IDR,
                                                       *BOR, *ASR)}

M = TypeVar("M", bound=Mutant)


def by_original(operators: Iterable[M]) -> dict[str, tuple[M, ...]]:
    """The operators per C operator they mutate, each in table order."""
    found: dict[str, list[M]] = {}
    for operator in operators:
        found.setdefault(operator.original, []).append(operator)
    return {original: tuple(mutants) for original, mutants in found.items()}

