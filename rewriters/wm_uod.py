"""WM / UOD: a unary operator removed: ``-e`` -> ``e`` (``operators.UOD``; Mull's
cxx_minus_to_noop).

``-e`` and ``e`` differ iff e != 0 in signed arithmetic (``-MIN`` is undefined: no point),
also e != 2^(bits-1) in unsigned arithmetic (there -e == e), and for a floating e iff it is
neither zero (-0.0 equals 0.0) nor NaN (a NaN mutant of a NaN original is no kill), which a quiet
test says (``islessgreater(e, 0)``). An operand that is never 0 makes the mutant killed by every
input: not a label.

``~e -> e`` and ``!e -> e`` (Mull's bitwise and logical groups) always differ (no integer equals
its complement; ``!e`` is 1 exactly where e is 0), so they are never labels.
"""

from __future__ import annotations

from .kill_rules import both, ordering_test, relational_test
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .operators import UOD
from .sites import UNARY, Function
from .wm_operands import against_zero, operands, zero_key

group = "UOD"
reads_binops = True  # its labels sit on operator sites

DELETIONS = {operator.original: operator for operator in UOD}


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        operator = DELETIONS.get(site.op)
        operand = operands(site)[0]
        if site.form != UNARY or operator is None or not (operand.integer or operand.floating):
            continue
        if operand.wide_bitfield:
            emit.left_out()
            continue
        domain = against_zero(operand)
        kill = operator.kill & domain
        wraps = operand.promoted_unsigned  # -e == e at 2^(bits-1) too
        if not kill or kill == domain and not wraps:
            continue
        code, display = ordering_test(kill, domain, "$x0", "0")
        relation = relational_test(kill, domain, "$x0", "0") if operand.machine_integer else None
        key = zero_key("x0", kill)
        if wraps:
            half = f"($x0) != {operand.half}"
            code, display, key = both(code, half), f"{display} && {half}", ""
            relation = None
        emit.label(LabelRequest(site=site, operator=operator, predicate=display, code=code,
                                key=key, relation=relation,
                                mutation=operator_replaced(site, "")))
