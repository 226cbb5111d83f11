"""Where a binary's labels sit in the coverage map, and what each one is.

The map is [edges][labels]; ffcc.runtime.abi owns that layout and the label database
(`<binary>.labels.jsonl`, whose header record gives the label region's size): label slot s
is at map index label_region_start(map_size, region) + s.  Slots are not dense: each
instrumented unit's slots follow a small unit header, so only the slots the database names
are labels.  Pruned records (``LabelRecord.pruned``: compiled to nothing by ffcc --prune or
--retired) still occupy their slot but are not labels the fuzzer counts.  A record's gate is
the slot of its site's gate: a byte of the label region that is no label and never counts,
whose retirement byte makes the site skip all its labels (retire.py sets it once they are
all retired).  For rarity and targeting labels are map bytes like edges, except that a
retired label (retire.py) leaves the rarity computation; the fuzzer keeps each label's id,
file, line and operator only to say which label a target or a count is.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.abi import (
    LabelDatabase,
    LabelDbError,
    LabelRecord,
    ModuleTable,
    label_region_start,
    read_label_db,
)

CRASH_HIT = 0x80  # crash traces are reduced to 0x80 (hit) / 0x01 before they clear virgin bits


@dataclass(frozen=True)
class LabelSite:
    """A label as the status line names it: id, source file's base name, line, operator
    (empty where the database does not say)."""

    label: int
    file: str = ""
    line: int | None = None
    operator: str = ""

    @classmethod
    def of(cls, record: LabelRecord) -> LabelSite:
        return cls(record.id, Path(record.file).name, record.line or None, record.operator)


@dataclass(frozen=True)
class LabelMap:
    sites: tuple[LabelSite | None, ...]  # label of slot s at position s, None where no label
    region_size: int                     # bytes of the map's label region
    gates: tuple[int, ...] = ()          # gate slot of the label of slot s at position s, -1
    # where no label or the database names no gate (sites of builds before gates never skip)
    site_of: tuple[int, ...] = ()        # site of the label of slot s at position s, -1 where
    # no label: labels of one site share their gate, or else their file, line and column
    # (what the database says of a site); empty: each label is a site of its own

    @property
    def label_ids(self) -> tuple[int, ...]:
        """Label id of slot s at position s, -1 where no label."""
        return tuple(-1 if site is None else site.label for site in self.sites)

    @property
    def count(self) -> int:
        return sum(1 for site in self.sites if site is not None)

    def region_start(self, map_size: int) -> int:
        """First map index of the label region (= end of the edge region)."""
        start = label_region_start(map_size, self.region_size)
        if start < 0:
            raise FuzzerError(f"{self.count} labels do not fit in a {map_size}-byte map")
        return start

    def map_indices(self, map_size: int) -> np.ndarray:
        slots = np.flatnonzero([site is not None for site in self.sites])
        return self.region_start(map_size) + slots

    def site_at(self, index: int, map_size: int) -> LabelSite | None:
        """The label at map index `index`; None for an edge or a slot without a label."""
        slot = index - self.region_start(map_size)
        return self.sites[slot] if 0 <= slot < len(self.sites) else None

    def covered(self, virgin: np.ndarray, virgin_crash: np.ndarray | None = None) -> int:
        """Labels hit by some queue entry (their virgin byte is no longer 0xff) or by some
        saved crash (CRASH_HIT cleared in virgin_crash)."""
        indices = self.map_indices(len(virgin))
        hit = virgin[indices] != 0xFF
        if virgin_crash is not None:
            hit |= (virgin_crash[indices] & CRASH_HIT) == 0
        return int(np.count_nonzero(hit))

    @classmethod
    def load(cls, binary: Path) -> LabelMap | None:
        """The labels of ``binary`` itself (its shared objects' are added once it has run:
        with_modules)."""
        database = label_database(binary)
        return None if database is None else cls.of(database)

    @classmethod
    def of(cls, database: LabelDatabase) -> LabelMap:
        # Pruned labels are never hit and are not goals; their slots stay empty.
        live = [label for label in database.labels if not label.pruned]
        sites = {label.slot: LabelSite.of(label) for label in live}
        gates = {label.slot: label.gate for label in live if label.gate is not None}
        size = max((label.slot for label in database.labels), default=-1) + 1
        return cls(tuple(sites.get(s) for s in range(size)), database.label_region,
                   tuple(gates.get(s, -1) for s in range(size)) if gates else (),
                   site_numbers(live, size))


def site_numbers(labels: list[LabelRecord], size: int) -> tuple[int, ...]:
    """The site of each slot's label (-1 where none), numbered in order of first slot; a
    record that names no line is a site of its own."""
    numbers: dict[tuple[object, ...], int] = {}
    site_of = [-1] * size
    for label in labels:
        key: tuple[object, ...] = ("gate", label.gate) if label.gate is not None else (
            (label.file, label.line, label.column) if label.line else ("slot", label.slot))
        site_of[label.slot] = numbers.setdefault(key, len(numbers))
    return tuple(site_of)


def label_database(path: Path) -> LabelDatabase | None:
    """The label database beside ``path`` (a program or shared object); None without one."""
    try:
        return read_label_db(path)
    except LabelDbError as exc:
        raise FuzzerError(str(exc)) from None


def with_modules(own: LabelDatabase | None, table: ModuleTable | None) -> LabelDatabase | None:
    """A program's labels with those of the labelled shared objects it loaded (``table``,
    from its runtime), as one database over the map's module and label regions: each
    object's label at its slot past its base, the program's own past the module region (so
    the region still ends the map), and the objects' labels numbered after the program's.
    A module region with no object in it yet (room kept for dlopen()) is still no edge."""
    if table is None or not table.region:
        return own
    labels = [] if own is None else [replace(label, slot=table.region + label.slot,
                                             gate=None if label.gate is None
                                             else table.region + label.gate)
                                     for label in own.labels]
    number = 1 + max((label.id for label in labels), default=-1)
    for module in table.modules:
        database = label_database(Path(module.path))
        for label in database.labels if database is not None else ():
            labels.append(replace(label, id=number, slot=module.base + label.slot))
            number += 1
    labels.sort(key=lambda label: label.slot)
    return LabelDatabase(table.region + (own.label_region if own else 0), labels)


class TargetLabels:
    """The labels of a running target: those of ``binary`` (the full build, whichever build
    runs), and those of the labelled shared objects its runtime reports loaded, a dlopen()ed
    one from the first run that loads it."""

    def __init__(self, binary: Path) -> None:
        self._own = label_database(binary)
        self._table: ModuleTable | None = None
        self._labels = LabelMap.of(self._own) if self._own is not None else None

    def current(self, table: ModuleTable | None) -> LabelMap | None:
        """The labels, with the objects of the module ``table`` the runtime wrote."""
        if table != self._table:
            self._table = table
            everything = with_modules(self._own, table)
            self._labels = LabelMap.of(everything) if everything is not None else None
        return self._labels


def edge_region_end(labels: LabelMap | None, map_size: int) -> int:
    return map_size if labels is None else labels.region_start(map_size)
