"""The label operators as data: every operator id a label record can carry, with its criterion,
group, one-line help and the data its criterion module builds the kill condition from.

Users choose groups (``--mcc`` is group MCC, ``--wm=ROR,COR`` names WM groups); every label
record names its operator by id. The criterion modules (mcc.py, wm_*.py) take their operators
from these tables, and option checking, ``--help`` and ``--estimate`` read them, so each id,
group and help line is written here only. Order is part of the contract: groups run in
``GROUPS`` order and a group's operators in table order, which fixes the order of a site's labels
and so their indices.

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
    "AOR": "arithmetic operator replacement: + - * / % by each other",
    "COR": "conditional operator replacement: && <-> ||, each operand alone",
    "ABS": "absolute value insertion: operand e -> abs(e), -abs(e), fail-on-zero",
}
CRITERION_GROUPS: dict[str, tuple[str, ...]] = {
    MCC_CRITERION: ("MCC",),
    WM_CRITERION: ("ROR", "AOR", "COR", "ABS"),
}
WM_GROUPS = CRITERION_GROUPS[WM_CRITERION]  # what --wm= accepts

# C operators the WM groups mutate, in the order their mutants are emitted
RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = ("+", "-", "*", "/", "%")
LOGICAL = ("&&", "||")
_SHORT_NAME = {
    "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne",
    "+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod",
}


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
class BinaryMutant(Operator):
    """A mutant of the binary expressions whose C operator is ``original``."""

    original: str


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
    """COR: killed where the operands' truth values (left, right) are one of ``kill_pairs``."""

    kill_pairs: frozenset[tuple[int, int]]


@dataclass(frozen=True, eq=False)
class OperandMutant(Operator):
    """ABS: an arithmetic operand e replaced; killed where e compares with 0 as ``kill`` says
    (orderings of (e, 0), kill_rules)."""

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


def _logical(id: str, help: str, original: str, kill_pairs: set[tuple[int, int]]) -> Logical:
    return Logical(id=id, criterion=WM_CRITERION, group="COR", help=help, original=original,
                   kill_pairs=frozenset(kill_pairs))


def _operand(id: str, help: str, kill: set[str]) -> OperandMutant:
    return OperandMutant(id=id, criterion=WM_CRITERION, group="ABS", help=help,
                         kill=frozenset(kill))


ROR = tuple(_relational(original, mutant)
            for original in RELATIONAL for mutant in RELATIONAL if mutant != original)
AOR = tuple(_arithmetic(original, mutant)
            for original in ARITHMETIC for mutant in ARITHMETIC if mutant != original)
COR = (
    _logical("wm.cor.and_or", "a && b replaced by a || b", "&&", {(1, 0), (0, 1)}),
    _logical("wm.cor.and_lhs", "a && b replaced by a", "&&", {(1, 0)}),
    _logical("wm.cor.and_rhs", "a && b replaced by b", "&&", {(0, 1)}),
    _logical("wm.cor.or_and", "a || b replaced by a && b", "||", {(1, 0), (0, 1)}),
    _logical("wm.cor.or_lhs", "a || b replaced by a", "||", {(0, 1)}),
    _logical("wm.cor.or_rhs", "a || b replaced by b", "||", {(1, 0)}),
)
ABS = (
    _operand("wm.abs.abs", "operand e replaced by abs(e)", {kill_rules.LT}),
    _operand("wm.abs.neg", "operand e replaced by -abs(e)", {kill_rules.GT}),
    _operand("wm.abs.zero", "operand e replaced by fail-on-zero(e)", {kill_rules.EQ}),
)

# id -> operator, every operator a label can name
OPERATORS: dict[str, Operator] = {op.id: op for op in (MCC, *ROR, *AOR, *COR, *ABS)}

M = TypeVar("M", bound=BinaryMutant)


def by_original(operators: Iterable[M]) -> dict[str, tuple[M, ...]]:
    """The operators per C operator they mutate, each in table order."""
    found: dict[str, list[M]] = {}
    for operator in operators:
        found.setdefault(operator.original, []).append(operator)
    return {original: tuple(mutants) for original, mutants in found.items()}

