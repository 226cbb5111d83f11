"""Coverage criteria, one module each: ``name``, ``help`` and ``apply(function, options, emit)``.

``selected`` turns options into the list of criteria to run, in a fixed order (MCC first, then
WM operators in table order) so label indices are reproducible.
"""

from __future__ import annotations

from .model import Criterion, LabelOptions
from . import mcc, wm_abs, wm_aor, wm_cor, wm_ror

WM_BY_NAME: dict[str, Criterion] = {"ROR": wm_ror, "AOR": wm_aor, "COR": wm_cor, "ABS": wm_abs}


def selected(options: LabelOptions) -> list[Criterion]:
    chosen: list[Criterion] = [mcc] if options.mcc else []
    chosen += [module for name, module in WM_BY_NAME.items() if name in options.wm_ops]
    return chosen
