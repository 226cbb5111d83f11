"""The label database of a linked program, read back from the program itself.

Every labelled unit left a unit header and its slots in section ``abi.LABEL_SECTION`` and
its records in ``abi.LABELDB_SECTION`` (labels.py).  After linking, a label's map slot is
the offset of its byte in the slot section; this module pairs records with unit headers by
unit id (the linker may order the two sections differently under LTO or section sorting)
and writes ``<program>.labels.jsonl`` through ffcc.runtime.abi, which owns the file's name
and format: a header record (format, version, label region size, label count), then one
``abi.LabelRecord`` per label: id and slot from the link, the file from the unit record, the
gate's slot from the unit's gate number (labels.py: a unit's gates are its bytes after its
label slots, one per site), the other fields from the label's own record as they are.  The label
region is sized from the slot section as the runtime sizes it.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict, deque
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, BinaryIO

from ffcc.runtime import abi
from ffcc.runtime.files import write_atomic

from .labels import UnitRecord


def _sections(program: str | BinaryIO) -> tuple[bytes, bytes]:
    """The slot and database sections of an ELF file (a path, or an open file or buffer of
    one: an archive's member); empty for what is no ELF file."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(program, "rb") if isinstance(program, str) else nullcontext(program) as f:
            elf = ELFFile(f)
            slots = elf.get_section_by_name(abi.LABEL_SECTION)
            db = elf.get_section_by_name(abi.LABELDB_SECTION)
            return (slots.data() if slots else b""), (db.data() if db else b"")
    except (OSError, ELFError):
        return b"", b""


def unit_records(elf: str | BinaryIO) -> list[UnitRecord]:
    """The unit records of a program's, shared object's or object file's labelled units."""
    return _headers(_sections(elf)[1])


def _headers(db: bytes) -> list[UnitRecord]:
    return [header for header, _ in _unit_spans(db)]


def _unit_offsets(slots: bytes) -> dict[tuple[int, int], deque[int]]:
    """(unit id, label count) -> section offsets of that unit's headers, in order."""
    found: dict[tuple[int, int], deque[int]] = defaultdict(deque)
    for offset, uid, count in abi.unit_headers(slots):
        found[uid, count].append(offset)
    return found


def _unit_spans(db: bytes) -> Iterator[tuple[UnitRecord, list[str]]]:
    """Each unit record of the database section with its label records' lines, unparsed, in
    section order."""
    lines = db.decode("ascii", errors="replace").splitlines()
    start = 0
    while start < len(lines):
        header = UnitRecord.from_json(lines[start])
        end = start + 1 + header.count
        yield header, lines[start + 1:end]
        start = end


def _units(db: bytes) -> Iterator[tuple[UnitRecord, list[dict[str, Any]]]]:
    """Each unit record of the database section with its label records, in section order:
    those as JSON objects (labels.UnitLabel's lines), which _labels completes with what the
    link decided and hands to abi.LabelRecord, the reader of the database's records."""
    for header, lines in _unit_spans(db):
        # One parse of the unit's records as a list: a program holds thousands, and a
        # json.loads per record costs much more than its share of one list's parse.
        yield header, json.loads("[" + ",".join(lines) + "]")


def _labels(slots: bytes, db: bytes) -> tuple[list[dict[str, Any]], list[UnitRecord]]:
    """The labels of the two sections in slot order, each the fields of its abi.LabelRecord
    with its global id and map slot, and the unit records."""
    offsets = _unit_offsets(slots)
    placed, units = [], []
    for header, records in _units(db):
        units.append(header)
        places = offsets.get((header.unit, header.count))
        if not places:
            continue  # the linker dropped this unit's slots (e.g. --gc-sections)
        base = places.popleft() + abi.UNIT_HEADER_SIZE
        for record in records:
            gate = {"gate": base + header.count + record["gate"]} if "gate" in record else {}
            placed.append({**record, "slot": base + record["index"], "file": header.file,
                           **gate})
    placed.sort(key=lambda label: label["slot"])
    for number, label in enumerate(placed):
        label["id"] = number
    return placed, units


@dataclass(frozen=True)
class ProgramLabels:
    """A linked program's labels and unit records, as its sections give them."""

    label_region: int             # bytes of the map's label region
    labels: list[dict[str, Any]]  # each label's abi.LabelRecord fields, in slot order
    units: list[UnitRecord]       # its labelled units' records, unlabelled ones' too


def program_labels(program: str) -> ProgramLabels:
    """What ``program``'s sections say of its labels, read once for its database, summary and
    link record: a program holds thousands of labels, and every link writes them."""
    slots, db = _sections(program)
    labels, units = _labels(slots, db) if slots and db else ([], _headers(db))
    return ProgramLabels(abi.label_region_size(len(slots)), labels, units)


def read_program_labels(program: str) -> abi.LabelDatabase:
    """The label database of a linked program, as its sections describe it."""
    found = program_labels(program)
    return abi.LabelDatabase(found.label_region,
                             [abi.LabelRecord.from_dict(label) for label in found.labels])


def write_label_db(program: str) -> ProgramLabels:
    """Write <program>.labels.jsonl; returns what the program's sections say."""
    found = program_labels(program)
    if not found.labels:
        # A stale database would describe another build.
        abi.db_path(program).unlink(missing_ok=True)
    else:
        abi.write_label_lines(program, found.label_region, found.labels)
    return found


def build_summary(program: str, found: ProgramLabels) -> dict:
    """What a drop-in build gave ``program``: its labels per source file (by criterion) and
    the files built without labels with the reason their objects recorded (labels.py)."""
    per_file: dict[str, Counter[str]] = defaultdict(Counter)
    for label in found.labels:
        per_file[label["file"]][label.get("criterion", "")] += 1
    unlabelled = {(header.file, header.unlabelled)
                  for header in found.units if header.unlabelled is not None}
    return {
        "program": program,
        "labels": len(found.labels),
        "files": [{"file": path, "labels": sum(counts.values()), **dict(sorted(counts.items()))}
                  for path, counts in sorted(per_file.items())],
        "unlabelled": [{"file": path, "reason": reason} for path, reason in sorted(unlabelled)],
    }


def write_summary(program: str, found: ProgramLabels) -> dict:
    """Write <program>.ffcc-summary.json (removed when the build has neither labels nor
    unlabelled files); returns the summary."""
    summary = build_summary(program, found)
    if summary["labels"] or summary["unlabelled"]:
        write_atomic(abi.summary_path(program), json.dumps(summary, indent=2) + "\n")
    else:
        abi.summary_path(program).unlink(missing_ok=True)
    return summary
