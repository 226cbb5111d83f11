"""What pruning removed: labels before and after, per file and per criterion/operator, and
the time it took.  Printed after a build and written as ``ffcc-prune.json`` in a project's
build directory, so a campaign's label density can be compared with and without pruning.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ffcc.runtime.abi import INFEASIBLE, TRIVIAL
from ffcc.runtime.files import write_atomic

from ..labels import UnitLabel

REPORT_NAME = "ffcc-prune.json"


def operator_group(operator: str) -> str:
    """``mcc`` or the WM operator family (``wm.ror.lt_le`` -> ``wm.ror``)."""
    return ".".join(operator.split(".")[:2])


def _summary(tally: Counter) -> dict[str, int]:
    """One operator group's tally as the report shows it."""
    return {"before": tally["before"], INFEASIBLE: tally[INFEASIBLE], TRIVIAL: tally[TRIVIAL],
            "after": tally["kept"]}


@dataclass
class UnitPruning:
    """One source file's labels, pruned labels per operator group, and the analysis cost."""

    file: str
    seconds: float
    compiles: int
    counts: dict[str, Counter] = field(default_factory=dict)
    laundering_neutralised: int = 0
    error: str | None = None

    @classmethod
    def of(cls, file: str, records: list[UnitLabel], seconds: float, compiles: int,
           **extra) -> UnitPruning:
        counts: dict[str, Counter] = {}
        for record in records:
            tally = counts.setdefault(operator_group(record.label.operator), Counter())
            tally["before"] += 1
            tally[record.pruned or "kept"] += 1
        return cls(file, seconds, compiles, counts, **extra)

    def total(self, key: str) -> int:
        return sum(tally[key] for tally in self.counts.values())

    def as_json(self) -> dict:
        groups = {group: _summary(tally) for group, tally in sorted(self.counts.items())}
        return {"file": self.file, "seconds": round(self.seconds, 3), "compiles": self.compiles,
                "laundering_neutralised": self.laundering_neutralised, "error": self.error,
                "by_operator": groups}


@dataclass
class PruneReport:
    """All units one pruning run analysed (filled from the build's compile threads)."""

    method: str
    units: list[UnitPruning] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, unit: UnitPruning) -> None:
        with self._lock:
            self.units.append(unit)

    def totals(self) -> dict[str, dict[str, int]]:
        """Operator group -> before / infeasible / trivial / after, over all units."""
        merged: dict[str, Counter] = {}
        for unit in self.units:
            for group, tally in unit.counts.items():
                merged.setdefault(group, Counter()).update(tally)
        return {group: _summary(tally) for group, tally in sorted(merged.items())}

    def as_json(self, build_seconds: float | None = None) -> dict:
        return {"method": self.method,
                "analysis_seconds": round(sum(u.seconds for u in self.units), 3),
                "build_seconds": None if build_seconds is None else round(build_seconds, 3),
                "compiles": sum(u.compiles for u in self.units),
                "totals": self.totals(),
                "files": [u.as_json() for u in sorted(self.units, key=lambda u: u.file)]}

    def lines(self) -> list[str]:
        """A table: one row per file and operator group, then the totals."""
        rows = [f"{'file':32} {'labels':10} {'before':>7} {'infeas.':>7} {'trivial':>7} "
                f"{'after':>7} {'seconds':>8}"]
        for unit in sorted(self.units, key=lambda u: u.file):
            name = os.path.relpath(unit.file) if os.path.isabs(unit.file) else unit.file
            for group, t in sorted(unit.counts.items()):
                rows.append(f"{name[-32:]:32} {group:10} {t['before']:7} {t[INFEASIBLE]:7} "
                            f"{t[TRIVIAL]:7} {t['kept']:7}")
            rows.append(f"{name[-32:]:32} {'all':10} {unit.total('before'):7} "
                        f"{unit.total(INFEASIBLE):7} {unit.total(TRIVIAL):7} "
                        f"{unit.total('kept'):7} {unit.seconds:8.2f}"
                        + (f"  (not pruned: {unit.error})" if unit.error else ""))
        for group, summary in self.totals().items():
            rows.append(f"{'TOTAL':32} {group:10} {summary['before']:7} "
                        f"{summary[INFEASIBLE]:7} {summary[TRIVIAL]:7} {summary['after']:7}")
        return rows

    def print(self, stream=None) -> None:
        stream = stream or sys.stderr
        print(f"ffcc: pruning ({self.method}):", file=stream)
        for line in self.lines():
            print("  " + line, file=stream)

    def write(self, build_dir: Path, build_seconds: float | None = None) -> Path:
        path = Path(build_dir) / REPORT_NAME
        write_atomic(path, json.dumps(self.as_json(build_seconds), indent=2) + "\n")
        return path
