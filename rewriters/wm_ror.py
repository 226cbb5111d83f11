"""WM / ROR: each relational operator replaced by each other one (``operators.ROR``).

The registry gives each mutant's kill condition on totally ordered operands: the one relational
operator true exactly where original and mutant differ (``<`` vs ``<=`` differ iff ``a == b``).
Floating operands are unordered when NaN is involved, so for them the kill condition is the
unsimplified ``(a < b) != (a <= b)``. For pointers the kill condition may use an ordered
comparison only if the original already was one (``p == q`` to ``p < q`` would compare pointers
the program never ordered). A mutant killed by every input (the negation) is not emitted.
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .model import Emitter, LabelOptions, LabelRequest
from .operators import ROR, Relational, by_original
from .sites import Binop, Function
from .unit import FLOAT_KINDS, canonical_kind

group = "ROR"

MUTANTS = by_original(ROR)
ORDERED = frozenset({"<", "<=", ">", ">="})


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        for operator in MUTANTS.get(site.op, ()):
            _label(site, operator, emit)


def _label(site: Binop, operator: Relational, emit: Emitter) -> None:
    kinds = {canonical_kind(site.lhs), canonical_kind(site.rhs)}
    if kinds & FLOAT_KINDS:
        template = f"(($x0) {site.op} ($x1)) != (($x0) {operator.mutant} ($x1))"
    else:
        if operator.kill is None:
            return  # the negation: killed whenever reached
        if TypeKind.POINTER in kinds and operator.kill in ORDERED and site.op not in ORDERED:
            return
        template = f"($x0) {operator.kill} ($x1)"
    emit.label(LabelRequest(site=site, operator=operator, predicate=site.render(template),
                            code=template))
