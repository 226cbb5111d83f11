"""WM / ABS: an arithmetic operand e replaced by abs(e), -abs(e), or fail-on-zero.

Kill conditions: abs(e) differs iff ``e < 0``; -abs(e) differs iff ``e > 0``; fail-on-zero is
killed iff ``e == 0``. Operands are those of relational and arithmetic expressions. Literal and
other constant operands are skipped (their kill condition is a constant), as is ``abs`` of an
unsigned operand (never negative: an equivalent mutant).
"""

from __future__ import annotations

from .model import Emitter, LabelOptions, LabelRequest
from .safety import is_constant
from .sites import Function
from .unit import FLOAT_KINDS, INTEGER_KINDS, SIGNED_KINDS, canonical_kind, strip_implicit

name = "ABS"
help = "absolute value insertion: operand e replaced by abs(e), -abs(e), fail-on-zero"

# mutant id -> (kill template over the operand "$x", needs a signed or floating operand)
MUTANTS = (
    ("wm.abs.abs", "($x) < 0", True),
    ("wm.abs.neg", "($x) > 0", False),
    ("wm.abs.zero", "($x) == 0", False),
)


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        for slot, operand in (("x0", site.lhs), ("x1", site.rhs)):
            kind = canonical_kind(strip_implicit(operand))
            if kind not in INTEGER_KINDS and kind not in FLOAT_KINDS or is_constant(operand):
                continue
            can_be_negative = kind in SIGNED_KINDS or kind in FLOAT_KINDS
            for operator, template, needs_sign in MUTANTS:
                if needs_sign and not can_be_negative:
                    continue
                code = template.replace("$x", f"${slot}")
                emit.label(LabelRequest(site=site, criterion="wm", operator=operator,
                                        predicate=site.render(code), code=code))
