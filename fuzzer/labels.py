"""Where a binary's labels sit in the coverage map.

The map is [edges][labels]; ffcc.runtime.abi owns that layout and the label database
(`<binary>.labels.jsonl`, whose header record gives the label region's size): label slot s
is at map index label_region_start(map_size, region) + s.  Slots are not dense: each
instrumented unit's slots follow a small unit header, so only the slots the database names
are labels.  Records marked "pruned" (infeasible or trivial, compiled to nothing by ffcc
--prune) still occupy their slot but are not labels the fuzzer counts.  The fuzzer needs
nothing else about labels: they are map bytes like edges, so they count for rarity and can
be FairFuzz targets without special cases.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.abi import LabelDbError, label_region_start, read_label_db


@dataclass(frozen=True)
class LabelMap:
    label_ids: tuple[int, ...]   # label id of slot s at position s, -1 where no label
    region_size: int             # bytes of the map's label region

    @property
    def count(self) -> int:
        return sum(1 for label in self.label_ids if label >= 0)

    def region_start(self, map_size: int) -> int:
        """First map index of the label region (= end of the edge region)."""
        start = label_region_start(map_size, self.region_size)
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
        try:
            database = read_label_db(binary)
        except LabelDbError as exc:
            raise FuzzerError(str(exc)) from None
        if database is None:
            return None
        # Pruned labels are never hit and are not goals; their slots stay empty.
        slots = {label["slot"]: label["id"] for label in database.labels if not label.get("pruned")}
        size = max((label["slot"] for label in database.labels), default=-1) + 1
        return cls(tuple(slots.get(s, -1) for s in range(size)), database.label_region)


def edge_region_end(labels: LabelMap | None, map_size: int) -> int:
    return map_size if labels is None else labels.region_start(map_size)
