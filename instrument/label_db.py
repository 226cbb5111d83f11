"""The label database of a linked program, read back from the program itself.

Every labelled unit left a header in section ``__ffcc_labels`` and its records
in ``.ffcc_labeldb`` (labels.py).  After linking, a label's map slot is the
offset of its byte in ``__ffcc_labels``; this module pairs records with
headers by unit id (the linker may order the two sections differently under
LTO or section sorting) and writes ``<program>.labels.jsonl``: one JSON line
per label with id, slot, criterion, operator, file, line, column, function,
original and predicate, and "pruned" with the reason when ``--prune`` removed
the label's body (prune.py).  The label region of the map is the last
ALIGN64(max slot + 1) bytes (runtime/ffcc_protocol.h).
"""

from __future__ import annotations

import json
import os
import struct
from collections import defaultdict, deque

from .labels import HEADER_SIZE, MAGIC

SLOT_SECTION = "__ffcc_labels"
DB_SECTION = ".ffcc_labeldb"
FIELDS = ("criterion", "operator", "file", "line", "column", "function", "original", "predicate",
          "pruned")  # "pruned": "infeasible" | "trivial", only on labels pruning removed


def db_path(program: str) -> str:
    return program + ".labels.jsonl"


def _sections(program: str) -> tuple[bytes, bytes]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(program, "rb") as f:
            elf = ELFFile(f)
            slots, db = elf.get_section_by_name(SLOT_SECTION), elf.get_section_by_name(DB_SECTION)
            return (slots.data() if slots else b""), (db.data() if db else b"")
    except (OSError, ELFError):
        return b"", b""


def _unit_offsets(slots: bytes) -> dict[tuple[int, int], deque[int]]:
    """(unit id, label count) -> section offsets of that unit's headers, in order."""
    found: dict[tuple[int, int], deque[int]] = defaultdict(deque)
    pos = slots.find(MAGIC)
    while pos != -1 and pos + HEADER_SIZE <= len(slots):
        uid, count = struct.unpack_from("<II", slots, pos + 4)
        found[uid, count].append(pos)
        pos = slots.find(MAGIC, pos + HEADER_SIZE + count)
    return found


def read_labels(program: str) -> list[dict]:
    """The program's labels in slot order, each with its global id and map slot."""
    slots, db = _sections(program)
    if not slots or not db:
        return []
    offsets = _unit_offsets(slots)
    labels = []
    lines = iter(db.decode("ascii", errors="replace").splitlines())
    for line in lines:
        header = json.loads(line)
        records = [json.loads(next(lines)) for _ in range(header["count"])]
        places = offsets.get((header["unit"], header["count"]))
        if not places:
            continue  # the linker dropped this unit's slots (e.g. --gc-sections)
        base = places.popleft() + HEADER_SIZE
        for record in records:
            labels.append({"slot": base + record["index"], "file": header["file"],
                           **{k: record[k] for k in FIELDS if k in record}})
    labels.sort(key=lambda label: label["slot"])
    return [{"id": number, **label} for number, label in enumerate(labels)]


def write_label_db(program: str) -> int:
    """Write <program>.labels.jsonl atomically; returns the number of labels."""
    labels = read_labels(program)
    target = db_path(program)
    if not labels:
        if os.path.exists(target):
            os.unlink(target)  # a stale database would describe another build
        return 0
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        for label in labels:
            out.write(json.dumps(label) + "\n")
    os.replace(tmp, target)
    return len(labels)
