"""WM / ABS: an arithmetic operand e replaced by abs(e), -abs(e), or fail-on-zero.

Kill conditions (``operators.ABS``): abs(e) differs iff ``e < 0``; -abs(e) differs iff
``e > 0``; fail-on-zero is killed iff ``e == 0``. Operands are those of relational and
arithmetic expressions. Literal and other constant operands are skipped (their kill condition
is a constant), as is ``abs`` of an unsigned operand (never negative: an equivalent mutant).
"""

from __future__ import annotations

from .model import Emitter, LabelOptions, LabelRequest
from .operators import ABS
from .safety import is_constant
from .sites import Function
from .unit import FLOAT_KINDS, INTEGER_KINDS, SIGNED_KINDS, canonical_kind, strip_implicit

group = "ABS"


def apply(function: Function, options: LabelOptions, emit: Emitter) -> None:
    for site in function.binops:
        for slot, operand in (("x0", site.lhs), ("x1", site.rhs)):
            kind = canonical_kind(strip_implicit(operand))
            if kind not in INTEGER_KINDS and kind not in FLOAT_KINDS or is_constant(operand):
                continue
            can_be_negative = kind in SIGNED_KINDS or kind in FLOAT_KINDS
            for mutant in ABS:
                if mutant.needs_sign and not can_be_negative:
                    continue
                code = mutant.kill.replace("$x", f"${slot}")
                emit.label(LabelRequest(site=site, operator=mutant,
                                        predicate=site.render(code), code=code))
