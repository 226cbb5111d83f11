"""FairFuzz shadow mode (-s): does the mask make children hit the target?

For every parent fuzzed with a target, the stages first run without the
mask and without side effects (the shadow run), then for real with it.  One
CSV row per parent records executions and target hits of each of the four
runs; `summarize` turns the rows into the paper's Table 2 (per-parent hit
percentages averaged over parents).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from pathlib import Path

from ffcc.fuzzer.output.outdir import append_line

LOG_NAME = "shadow_mode.csv"


@dataclass
class ShadowRow:
    parent: int
    target: int
    det_mask_execs: int = 0
    det_mask_hits: int = 0
    det_plain_execs: int = 0
    det_plain_hits: int = 0
    havoc_mask_execs: int = 0
    havoc_mask_hits: int = 0
    havoc_plain_execs: int = 0
    havoc_plain_hits: int = 0


COLUMNS = [f.name for f in fields(ShadowRow)]


def append_row(path: Path, row: ShadowRow) -> None:
    if not path.exists():
        append_line(path, ",".join(COLUMNS) + "\n")
    append_line(path, ",".join(str(getattr(row, c)) for c in COLUMNS) + "\n")


@dataclass(frozen=True)
class Table2:
    """Average % of children hitting the target branch (None: no such runs)."""

    parents: int
    det_mask: float | None
    det_plain: float | None
    havoc_mask: float | None
    havoc_plain: float | None


def _mean_share(rows: list[dict[str, str]], execs: str, hits: str) -> float | None:
    shares = [100.0 * int(r[hits]) / int(r[execs]) for r in rows if int(r[execs])]
    return sum(shares) / len(shares) if shares else None


def summarize(path: Path) -> Table2:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return Table2(len(rows),
                  _mean_share(rows, "det_mask_execs", "det_mask_hits"),
                  _mean_share(rows, "det_plain_execs", "det_plain_hits"),
                  _mean_share(rows, "havoc_mask_execs", "havoc_mask_hits"),
                  _mean_share(rows, "havoc_plain_execs", "havoc_plain_hits"))
