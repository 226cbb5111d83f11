"""Where a binary's labels sit in the coverage map.

The map is [edges][labels]: the label region is the last ALIGN64(max slot + 1)
bytes, label slot s at index map_size - ALIGN64(max slot + 1) + s.  Slots are
not dense: each instrumented unit's slots follow a small header
(instrument/labels.py), so only the slots the database names are labels.  The fuzzer needs
nothing else about labels: they are map bytes like edges, so they count for
rarity and can be FairFuzz targets without special cases.

Source: `<binary>.labels.jsonl` next to the binary, one JSON object per line
with at least "id" and "slot"; records marked "pruned" (infeasible or trivial,
compiled to nothing by ffcc --prune) still occupy their slot but are not labels
the fuzzer counts.  (The label database format is still settling; this reader
is the one place to adapt.)
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ffcc.fuzzer.errors import FuzzerError
from ffcc.native import lib


def _align(n: int) -> int:
    a = lib.FFCC_MAP_ALIGN
    return (n + a - 1) // a * a


@dataclass(frozen=True)
class LabelMap:
    label_ids: tuple[int, ...]   # label id of slot s at position s, -1 where no label

    @property
    def count(self) -> int:
        return sum(1 for label in self.label_ids if label >= 0)

    def region_start(self, map_size: int) -> int:
        """First map index of the label region (= end of the edge region)."""
        start = map_size - _align(len(self.label_ids))
        if start < 0:
            raise FuzzerError(f"{self.count} labels do not fit in a {map_size}-byte map")
        return start

    def map_indices(self, map_size: int) -> np.ndarray:
        slots = np.flatnonzero(np.asarray(self.label_ids, dtype=np.int64) >= 0)
        return self.region_start(map_size) + slots

    def covered(self, virgin: np.ndarray) -> int:
        """Labels hit by some queue entry (their virgin byte is no longer 0xff)."""
        return int(np.count_nonzero(virgin[self.map_indices(len(virgin))] != 0xFF))

    @classmethod
    def load(cls, binary: Path) -> LabelMap | None:
        path = binary.with_name(binary.name + ".labels.jsonl")
        if not path.exists():
            return None
        slots: dict[int, int] = {}
        last_slot = -1  # over all records: pruned slots still occupy the label region
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                last_slot = max(last_slot, int(record["slot"]))
                if record.get("pruned"):
                    continue  # compiled to nothing by --prune: never hit, not a goal
                slots[int(record["slot"])] = int(record["id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise FuzzerError(f"{path}:{number}: not a label record ({exc})") from None
        size = last_slot + 1
        return cls(tuple(slots.get(s, -1) for s in range(size)))


def edge_region_end(labels: LabelMap | None, map_size: int) -> int:
    return map_size if labels is None else labels.region_start(map_size)
