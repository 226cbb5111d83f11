"""WM / ROR: each relational operator replaced by each other one (``operators.ROR``).

A mutant is killed where the two comparisons differ: a set of orderings of the operands, written
as the one test true exactly there (``<`` vs ``<=`` differ iff ``a == b``; kill_rules.py). The
orderings are those the operands can have: unordered too when one can be NaN (then the test is
a quiet comparison, which raises no floating-point exception), and between integers only those
their ranges allow, as the comparison converts them (an unsigned value is never below 0, a
``_Bool`` never above 1, an ``int x : 1`` bit-field, 0 or -1, never above an ``unsigned
char``). A mutant that is no label there (equivalent, killed by every input, or a constant such
as ``n >= 0u``, or ``c > u`` of such a bit-field c and an ``unsigned char`` u) is not emitted.
A comparison with a constant on the left is written with the constant on the right (``0 < a``:
``a == 0``), and one of an operand with zero is keyed so that ABS's kill conditions on that
operand are not emitted twice. For pointers a kill condition may order them only if the
original already did (``p == q`` to ``p < q`` would compare pointers the program never
ordered).
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .kill_rules import (
    ORDERED_OPERATORS,
    mirrored,
    needs_order,
    ordering_test,
    relational_kill,
    relational_test,
)
from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .operators import ROR, Relational, by_original
from .sites import Binop, Function
from .wm_operands import Operand, against, operands, zero_key

group = "ROR"
reads_binops = True  # its labels sit on operator sites

MUTANTS = by_original(ROR)


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        mutants = MUTANTS.get(site.op, ())
        if mutants:
            _label_site(site, mutants, emit)


def _label_site(site: Binop, mutants: tuple[Relational, ...], emit: Emitter) -> None:
    left, right = operands(site)
    domain = against(left, right)
    swap = left.constant and not right.constant
    against_zero: Operand | None = None  # the operand compared with a constant zero
    if right.is_zero and not left.constant:
        against_zero = left
    elif left.is_zero and not right.constant:
        against_zero = right
    pointers = TypeKind.POINTER in (left.converted, right.converted)
    integers = left.machine_integer and right.machine_integer
    for operator in mutants:
        kill = relational_kill(site.op, operator.mutant, domain)
        if kill is None or pointers and needs_order(kill) and site.op not in ORDERED_OPERATORS:
            continue
        test = (mirrored(kill), mirrored(domain), "$x1", "$x0") if swap else \
            (kill, domain, "$x0", "$x1")
        code, display = ordering_test(*test)
        relation = relational_test(*test) if integers else None
        key = ""
        if against_zero is not None and against_zero.sign_kept:
            key = zero_key(against_zero.slot, mirrored(kill) if against_zero is right else kill)
        emit.label(LabelRequest(site=site, operator=operator, predicate=display, code=code,
                                key=key, relation=relation,
                                mutation=operator_replaced(site, operator.mutant)))
