"""WM / AOR: ``+ - * / %`` replaced by each other on arithmetic operands (``operators.AOR``).

Kill when the values differ. Values are computed so the label itself has no undefined
behaviour: ``+ - *`` in the unsigned type of the same width (wraps instead of overflowing),
``/`` and ``%`` only for a divisor that is neither 0 nor -1 (signed). A mutant dividing by zero
would trap, so a zero divisor kills it. The registry simplifies where it knows better (for
integers ``a + b`` and ``a - b`` differ iff ``b != 0``) and names the literal divisors and
addends that make a mutant equivalent or always killed (``x * 1`` -> ``x / 1``, ``x + 1`` ->
``x - 1``): those are not emitted. Pointer arithmetic is not mutated; ``%`` is only used
between integers.
"""

from __future__ import annotations

from .model import Emitter, LabelOptions, LabelRequest
from .operators import AOR, Arithmetic, by_original
from .sites import Binop, Function
from .unit import FLOAT_KINDS, INTEGER_KINDS, SIGNED_KINDS, UNSIGNED_SPELLING, canonical_kind

group = "AOR"

MUTANTS = by_original(AOR)
DIVIDING = frozenset({"/", "%"})


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        if not mutants:
            continue
        kinds = (canonical_kind(site.lhs), canonical_kind(site.rhs))
        if not all(k in INTEGER_KINDS or k in FLOAT_KINDS for k in kinds):
            continue
        for operator in mutants:
            code = kill_condition(site, operator)
            if code is not None:
                emit.label(LabelRequest(site=site, operator=operator,
                                        predicate=site.render(code), code=code))


def kill_condition(site: Binop, operator: Arithmetic) -> str | None:
    """C template true where ``x0 OP x1`` and ``x0 MUTANT x1`` differ; None to skip."""
    result = canonical_kind(site.cursor)
    mutant = operator.mutant
    if result in FLOAT_KINDS:
        if mutant == "%":
            return None
        return f"(($x0) {site.op} ($x1)) != (($x0) {mutant} ($x1))"
    unsigned = UNSIGNED_SPELLING.get(result)
    if unsigned is None:
        return None
    pointless, literal = operator.pointless_literals, site.rhs_literal
    if literal is not None and (pointless is None or literal in pointless):
        return None
    signed = result in SIGNED_KINDS
    guard = _divisor_guard(signed) if site.op in DIVIDING else ""
    if operator.simplified is not None:
        return _join(guard, operator.simplified)
    differ = f"{_value(site.op, unsigned)} != {_value(mutant, unsigned)}"
    if mutant in DIVIDING:
        if signed:
            differ = f"($x1) != -1 && {differ}"
        differ = f"(($x1) == 0 || ({differ}))"
    return _join(guard, differ)


def _value(op: str, unsigned: str) -> str:
    if op in DIVIDING:
        return f"({unsigned})(($x0) {op} ($x1))"
    return f"(({unsigned})($x0) {op} ({unsigned})($x1))"


def _divisor_guard(signed: bool) -> str:
    return "($x1) != 0 && ($x1) != -1" if signed else "($x1) != 0"


def _join(guard: str, condition: str) -> str:
    return f"{guard} && {condition}" if guard else condition

