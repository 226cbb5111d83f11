"""WM / ROR: each relational operator replaced by each other one.

An operator is the set of orderings of (a, b) for which it holds; original and mutant differ
exactly on the symmetric difference of their sets, and that set is itself one relational
operator, which is the simplified kill condition (``<`` vs ``<=`` differ iff ``a == b``).
Floating operands are unordered when NaN is involved, so for them the kill condition is the
unsimplified ``(a < b) != (a <= b)``. For pointers the kill condition may use an ordered
comparison only if the original already was one (``p == q`` to ``p < q`` would compare pointers
the program never ordered). A mutant killed by every input (the negation) is not emitted.
"""

from __future__ import annotations

from clang.cindex import TypeKind

from .model import Emitter, LabelOptions, LabelRequest
from .sites import Binop, Function
from .unit import FLOAT_KINDS, canonical_kind

name = "ROR"
help = "relational operator replacement: < <= > >= == != replaced by each other"

LT, EQ, GT = "lt", "eq", "gt"
HOLDS_ON: dict[str, frozenset[str]] = {
    "<": frozenset({LT}), "<=": frozenset({LT, EQ}), ">": frozenset({GT}),
    ">=": frozenset({GT, EQ}), "==": frozenset({EQ}), "!=": frozenset({LT, GT}),
}
OPERATOR_OF = {orderings: op for op, orderings in HOLDS_ON.items()}
SHORT_NAME = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
ORDERED = frozenset({"<", "<=", ">", ">="})


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        if site.op in HOLDS_ON:
            for mutant in HOLDS_ON:
                if mutant != site.op:
                    _label(site, mutant, emit)


def kill_operator(original: str, mutant: str) -> str | None:
    """The relational operator true exactly where the two differ; None if that is always."""
    return OPERATOR_OF.get(HOLDS_ON[original] ^ HOLDS_ON[mutant])


def _label(site: Binop, mutant: str, emit: Emitter) -> None:
    kinds = {canonical_kind(site.lhs), canonical_kind(site.rhs)}
    if kinds & FLOAT_KINDS:
        template = f"(($x0) {site.op} ($x1)) != (($x0) {mutant} ($x1))"
    else:
        kill = kill_operator(site.op, mutant)
        if kill is None:
            return  # the negation: killed whenever reached
        if TypeKind.POINTER in kinds and kill in ORDERED and site.op not in ORDERED:
            return
        template = f"($x0) {kill} ($x1)"
    emit.label(LabelRequest(
        site=site,
        criterion="wm",
        operator=f"wm.ror.{SHORT_NAME[site.op]}_{SHORT_NAME[mutant]}",
        predicate=site.render(template),
        code=template,
    ))

