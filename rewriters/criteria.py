"""Coverage criteria, one module per operator group: ``group`` and ``apply(function, options,
emit)``.

``selected`` turns options into the list of criteria to run, in ``operators.GROUPS`` order (MCC
first, then the WM groups) so label indices are reproducible.
"""

from __future__ import annotations

from . import mcc, wm_abs, wm_aor, wm_asr, wm_bor, wm_cor, wm_idr, wm_ror, wm_uod
from .model import Criterion, LabelOptions
from .operators import GROUPS

BY_GROUP: dict[str, Criterion] = {module.group: module
                                  for module in (mcc, wm_ror, wm_aor, wm_cor, wm_abs, wm_uod, wm_idr,
                                                wm_bor, wm_asr)}


def selected(options: LabelOptions) -> list[Criterion]:
    wanted = options.groups
    return [BY_GROUP[group] for group in GROUPS if group in wanted]
