"""WM / IDR: ``++`` and ``--`` replaced by each other, prefix and postfix (``operators.IDR``;
Mull's cxx_increment and cxx_decrement).

The mutant stores x - 1 where the original stores x + 1 (and the other way round); a prefix
expression's value is the value stored, a postfix one's is x either way. So a mutant is killed
where x + 1 and x - 1, as stored, differ. For integers (2 is not 0 modulo any width above one
bit) and pointers they always differ: killed by every evaluation, no label. A one-bit bit-field
stores the same either way: equivalent, no label. A ``_Bool`` stores 1 after ``++`` and !x
after ``--``: killed iff x is 1. A floating x: where x + 1 and x - 1 differ as floating values
(not at magnitudes where both round to x, not at infinities or NaN), computed as AOR computes
floating values (wm_aor.held_difference: exceptions masked, the environment restored).
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .model import Emitter, LabelOptions, LabelRequest
from .mutation import operator_replaced
from .operators import IDR, by_original
from .sites import UNARY, Function
from .unit import FLOAT_KINDS
from .wm_aor import Holding, floating_difference, held_difference
from .wm_operands import operands

group = "IDR"
reads_binops = True  # its labels sit on operator sites

MUTANTS = {original: mutants[0] for original, mutants in by_original(IDR).items()}
BOOL_KILL = "($x0) != 0"


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    holding = Holding(function)
    for site in function.binops:
        operator = MUTANTS.get(site.op)
        if site.form != UNARY or operator is None:
            continue
        target = operands(site)[0]
        mutation = operator_replaced(site, operator.mutant.strip("x"))  # ops.UNARY_SPELLING
        if target.own == TypeKind.BOOL:
            emit.label(LabelRequest(site=site, operator=operator, predicate=BOOL_KILL,
                                    code=BOOL_KILL, mutation=mutation))
        elif target.own in FLOAT_KINDS:
            if not holding.held:
                emit.left_out()
                continue
            emit.label(LabelRequest(
                site=site, operator=operator,
                code=held_difference("+", "-", target.own).replace("$x1", "1"),
                predicate=floating_difference("($x0) + 1", "($x0) - 1"), mutation=mutation))
