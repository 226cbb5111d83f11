"""The binary's ABI: what an instrumented program, ffcc (instrument/) and ffuzz (fuzzer/) agree on.

This module is the one Python owner of that contract; both rooms import it and retype none
of it.

* Constants shared with C (section names, environment variables and signatures in
  ffcc_names.h; protocol words and map geometry in ffcc_protocol.h) are defined once, in
  those headers, and read here at import (headers.py): ``NAMES``, ``PROTOCOL``.
* Label slots: each labelled unit reserves ``UNIT_HEADER_SIZE + N`` bytes in
  ``LABEL_SECTION``, a header (``UNIT_MAGIC``, unit id, label count) and then one byte per
  label; a label's slot is its byte's offset from the section start, fixed at link time.  The
  unit records go, in the same order, into ``LABELDB_SECTION`` (instrument/labels.py writes
  both, instrument/label_db.py reads them back).  The C runtime never reads unit headers,
  so they are defined here rather than in a header.
* Map layout: [edge region][label region].  The label region mirrors ``LABEL_SECTION`` and is
  the last ``label_region_size(section size)`` bytes of the map (runtime/ffcc_map.c); label
  slot s is map index ``label_region_start(map size, region) + s``.
* Label database ``<program>.labels.jsonl`` (``db_path``): a header record
  ``{"format": "ffcc-labels", "version": 1, "label_region": bytes, "labels": count}``, then
  one JSON record per label in slot order, each a ``LabelRecord`` (its fields are the
  record's keys; "gate": the slot of the gate of the label's site, a byte of the label
  region that is no label, absent from databases written before gates: their sites are never
  skipped).  ffcc writes it after each link, ffuzz reads it; a reader refuses a
  format or version it does not know rather than guess where labels are.  Only this module
  handles the records as JSON: every other reader gets ``LabelRecord`` values.
* Comparison log (``ffcc --cmplog``, ``ffuzz -c``): the segment's layout is in
  ffcc_protocol.h; ``cmplog_records`` reads a segment into ``CmpRecord`` values.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import NAMES_HEADER, PROTOCOL_HEADER
from .files import write_atomic
from .headers import defines

PROTOCOL: dict[str, int] = {name: value for name, value in defines(PROTOCOL_HEADER).items()
                            if isinstance(value, int)}
NAMES: dict[str, str] = {name: value for name, value in defines(NAMES_HEADER).items()
                         if isinstance(value, str)}

LABEL_SECTION = NAMES["FFCC_LABEL_SECTION"]
LABELDB_SECTION = NAMES["FFCC_LABELDB_SECTION"]
MAP_ALIGN = PROTOCOL["FFCC_MAP_ALIGN"]
MAX_INPUT = PROTOCOL["FFCC_SHM_FUZZ_MAX"]  # largest test case, for every tool

UNIT_MAGIC = b"FFLB"
UNIT_HEADER = struct.Struct("<4sII")  # magic, unit id, label count
UNIT_HEADER_SIZE = UNIT_HEADER.size

DB_SUFFIX = ".labels.jsonl"
# What ffcc's project form writes beside its program: how it was built, for the rebuilds that
# prune it (ffcc --prune build/) or drop a campaign's retired labels (ffuzz --rebuild-retired).
BUILD_RECORD = "ffcc-build.json"
# What a drop-in link with labels writes beside the program or shared object: its labels per
# source file and the files built without labels, with the reason.
SUMMARY_SUFFIX = ".ffcc-summary.json"
# What a drop-in link with labels writes beside the program when every labelled unit in it
# recorded its compile: how ffcc linked it, for ffuzz's lean rebuilds of drop-in builds.
LINK_RECORD_SUFFIX = ".ffcc-link.json"
DB_FORMAT = "ffcc-labels"
DB_VERSION = 1


def unit_header(uid: int, count: int) -> bytes:
    """The bytes that open a unit's slots in LABEL_SECTION."""
    return UNIT_HEADER.pack(UNIT_MAGIC, uid, count)


def unit_headers(section: bytes) -> Iterator[tuple[int, int, int]]:
    """(offset, unit id, label count) of each unit header in a linked LABEL_SECTION, in order."""
    pos = section.find(UNIT_MAGIC)
    while pos != -1 and pos + UNIT_HEADER_SIZE <= len(section):
        _, uid, count = UNIT_HEADER.unpack_from(section, pos)
        yield pos, uid, count
        pos = section.find(UNIT_MAGIC, pos + UNIT_HEADER_SIZE + count)


def align_up(size: int) -> int:
    """``size`` rounded up to the map alignment (FFCC_ALIGN_UP in runtime/ffcc_rt.h)."""
    return (size + MAP_ALIGN - 1) // MAP_ALIGN * MAP_ALIGN


def label_region_size(section_size: int) -> int:
    """Bytes of the map's label region for a LABEL_SECTION of ``section_size`` bytes."""
    return align_up(section_size)


def label_region_start(map_size: int, label_region: int) -> int:
    """First map index of the label region (= end of the edge region)."""
    return map_size - label_region


CMPLOG_SITES = PROTOCOL["FFCC_CMPLOG_SITES"]
CMPLOG_RECORDS = PROTOCOL["FFCC_CMPLOG_RECORDS"]
CMPLOG_RECORDS_AT = PROTOCOL["FFCC_CMPLOG_RECORDS_AT"]
CMPLOG_SHM_SIZE = PROTOCOL["FFCC_CMPLOG_SHM_SIZE"]
CMPLOG_INT = PROTOCOL["FFCC_CMPLOG_INT"]
CMPLOG_RTN = PROTOCOL["FFCC_CMPLOG_RTN"]
CMPLOG_CONST0 = PROTOCOL["FFCC_CMPLOG_CONST0"]
# struct ffcc_cmplog_record: v0, v1, kind, len0, len1, flags, reserved
CMPLOG_RECORD = struct.Struct(f"<{PROTOCOL['FFCC_CMPLOG_OPERAND']}s"
                              f"{PROTOCOL['FFCC_CMPLOG_OPERAND']}sBBBB4x")
CMPLOG_HITS = struct.Struct(f"<{CMPLOG_SITES}I")


@dataclass(frozen=True)
class CmpRecord:
    """One logged comparison: its site, kind (CMPLOG_INT or CMPLOG_RTN) and both operands
    (an integer's little-endian bytes, a routine's first bytes); ``const0``: the first
    operand is a compile-time constant."""

    site: int
    kind: int
    v0: bytes
    v1: bytes
    const0: bool


def cmplog_records(segment: bytes | memoryview) -> list[CmpRecord]:
    """Every record a run logged into a comparison-log segment, site by site, oldest first
    (a site that logged more than CMPLOG_RECORDS calls keeps its last ones)."""
    records = []
    for site, hits in enumerate(CMPLOG_HITS.unpack_from(segment)):
        if not hits:
            continue
        kept = min(hits, CMPLOG_RECORDS)
        for n in range(hits - kept, hits):
            at = CMPLOG_RECORDS_AT + (site * CMPLOG_RECORDS + n % CMPLOG_RECORDS) \
                * CMPLOG_RECORD.size
            v0, v1, kind, len0, len1, flags = CMPLOG_RECORD.unpack_from(segment, at)
            records.append(CmpRecord(site, kind, v0[:len0], v1[:len1],
                                     bool(flags & CMPLOG_CONST0)))
    return records


# Labelled shared objects (ffcc_protocol.h, modules): the table of where each one's labels lie.
MODULES_SHM_SIZE = PROTOCOL["FFCC_MODULES_SHM_SIZE"]
MODULES_HEADER = struct.Struct("<4I")  # layout, count, region, used
MODULE_RECORD = struct.Struct(f"<QII{PROTOCOL['FFCC_MODULE_PATH']}s")  # id, base, size, path


@dataclass(frozen=True)
class Module:
    """A labelled shared object a target loaded: its file, and its labels' place in the module
    region (its slot s is at module region start + base + s)."""

    path: str
    base: int
    size: int


@dataclass(frozen=True)
class ModuleTable:
    region: int                   # bytes of the module region, right after the edges
    modules: tuple[Module, ...]   # in the order they were placed


def module_table(segment: bytes | memoryview) -> ModuleTable | None:
    """The module table a target's runtime wrote into ``segment``; None when it wrote none
    (no labelled shared object, or a runtime without modules)."""
    layout, count, region, _ = MODULES_HEADER.unpack_from(segment)
    if layout != PROTOCOL["FFCC_MODULES_LAYOUT"]:
        return None
    modules = []
    for n in range(min(count, PROTOCOL["FFCC_MODULES_MAX"])):
        _, base, size, path = MODULE_RECORD.unpack_from(segment, MODULES_HEADER.size
                                                        + n * MODULE_RECORD.size)
        modules.append(Module(os.fsdecode(path.split(b"\0")[0]), base, size))
    return ModuleTable(region, tuple(modules))


class LabelDbError(ValueError):
    """A label database that cannot be read; the message is one line naming the file."""


# Why a label's body compiled to nothing (LabelRecord.pruned): pruning (ffcc --prune) found it
# can never be covered, or covered by every run that reaches its site; or a campaign retired it
# (ffcc --retired).
INFEASIBLE = "infeasible"
TRIVIAL = "trivial"
RETIRED = "retired"


@dataclass(frozen=True)
class LabelRecord:
    """One label of a label database, as ffcc wrote it after linking (instrument/label_db.py).

    Field order is the order of the keys in the file.  ``also``, ``mutants``, ``pruned`` and
    ``gate`` are absent from records that have none (empty, None); the other fields are in
    every record ffcc writes, and default to empty (line and column 0, which no label has:
    lines and columns count from 1) for records that name only id and slot.  ``mutants``
    shows each weak-mutation operator of the label (its own, those in ``also``) as the
    original text that operator mutates, spaced alike (ffcc.rewriters owns C's operators;
    databases of an ffcc before it have none)."""

    id: int
    slot: int                  # byte of the label region (map index: label_region_start + slot)
    file: str = ""             # absolute path of the labelled source
    criterion: str = ""        # "mcc" | "wm"
    operator: str = ""         # operator id: "mcc", "wm.ror.lt_le" (ffcc.rewriters.operators)
    also: tuple[str, ...] = ()  # other operators whose objective the label is
    line: int = 0
    column: int = 0
    function: str = ""
    original: str = ""         # source text of the decision or expression
    predicate: str = ""        # what covers the label, over the operands' text
    # operator id -> its mutant's text, in ``original``'s place; a dict, left out of the hash
    mutants: dict[str, str] = field(default_factory=dict, hash=False)
    pruned: str | None = None  # INFEASIBLE, TRIVIAL or RETIRED: the label compiled to nothing
    gate: int | None = None    # slot of the gate of the label's site

    def __post_init__(self) -> None:
        if not all(isinstance(value, int) for value in (self.id, self.slot, self.gate or 0)):
            raise TypeError("id, slot and gate must be integers")

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> LabelRecord:
        """The label of a JSON object with the record's keys (others are ignored); raises
        KeyError without id or slot, TypeError for an id, slot or gate that is no integer."""
        values = {name: record[name] for name in _OPTIONAL_FIELDS if name in record}
        if "also" in values:
            values["also"] = tuple(values["also"])
        return cls(id=record["id"], slot=record["slot"], **values)

    @classmethod
    def from_json(cls, line: str) -> LabelRecord:
        """The label of one line of a label database (raises ValueError for bad JSON)."""
        return cls.from_dict(json.loads(line))

    def to_json(self, sort_keys: bool = False) -> str:
        """The record's line, without its newline (record_line)."""
        return record_line(vars(self), sort_keys)


_FIELD_NAMES = tuple(field.name for field in fields(LabelRecord))
_DEFAULTS = {field.name: field.default for field in fields(LabelRecord)
             if field.default is not MISSING}
_ABSENT: tuple[object, ...] = (None, (), [], {})  # values of fields a record leaves out
_OPTIONAL_FIELDS = _FIELD_NAMES[2:]  # all but id and slot


def record_line(values: Mapping[str, Any], sort_keys: bool = False) -> str:
    """A label's line of the database, without its newline, from its fields' ``values`` (a
    LabelRecord's, or a mapping with its field names: a linked program's labels, which
    label_db.py writes without making records of them): the keys in field order (or sorted,
    for a comparison that field order must not change), a field missing from ``values`` at its
    default, those that are None or empty left out."""
    return json.dumps({name: value for name in _FIELD_NAMES
                       if (value := values.get(name, _DEFAULTS.get(name))) not in _ABSENT},
                      sort_keys=sort_keys)


@dataclass(frozen=True)
class LabelDatabase:
    label_region: int                 # bytes of the map's label region
    labels: list[LabelRecord]         # one record per label, in slot order


def db_path(program: str | os.PathLike[str]) -> Path:
    """Where the label database of ``program`` lives: next to it."""
    return Path(os.fspath(program) + DB_SUFFIX)


def summary_path(program: str | os.PathLike[str]) -> Path:
    """Where the drop-in build summary of ``program`` lives: next to it."""
    return Path(os.fspath(program) + SUMMARY_SUFFIX)


def link_record_path(program: str | os.PathLike[str]) -> Path:
    """Where the link record of a drop-in ``program`` lives: next to it."""
    return Path(os.fspath(program) + LINK_RECORD_SUFFIX)


def write_label_db(program: str | os.PathLike[str], database: LabelDatabase) -> None:
    """Replace ``program``'s label database atomically: header record, then the labels."""
    write_label_lines(program, database.label_region, [vars(label) for label in database.labels])


def write_label_lines(program: str | os.PathLike[str], label_region: int,
                      labels: Sequence[Mapping[str, Any]]) -> None:
    """Replace ``program``'s label database atomically with ``labels``, each its fields'
    values in slot order (record_line)."""
    header = {"format": DB_FORMAT, "version": DB_VERSION, "label_region": label_region,
              "labels": len(labels)}
    lines = [json.dumps(header), *map(record_line, labels)]
    write_atomic(db_path(program), "".join(line + "\n" for line in lines))


def read_label_db(program: str | os.PathLike[str]) -> LabelDatabase | None:
    """``program``'s label database; None when it has none."""
    path = db_path(program)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    header = _header(path, lines[0] if lines else "")
    labels = [_label(path, number, line) for number, line in enumerate(lines[1:], 2)]
    if len(labels) != header["labels"]:
        raise LabelDbError(f"{path}: header announces {header['labels']} labels, "
                           f"the file holds {len(labels)}")
    region = header["label_region"]
    if region < 0 or region % MAP_ALIGN:
        raise LabelDbError(f"{path}: label region of {region} bytes is not a multiple of {MAP_ALIGN}")
    last_slot = max((max(label.slot, -1 if label.gate is None else label.gate)
                     for label in labels), default=-1)
    if region <= last_slot:
        raise LabelDbError(f"{path}: a label region of {region} bytes cannot hold slot {last_slot}")
    return LabelDatabase(region, labels)


def _header(path: Path, line: str) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != DB_FORMAT:
        raise LabelDbError(f"{path}:1: not an {DB_FORMAT} database (no header record)")
    if header.get("version") != DB_VERSION:
        raise LabelDbError(f"{path}: {DB_FORMAT} version {header.get('version')!r} is not "
                           f"supported (this ffcc reads version {DB_VERSION}): rebuild the program")
    if not all(isinstance(header.get(key), int) for key in ("label_region", "labels")):
        raise LabelDbError(f"{path}:1: header record without label_region and labels")
    return header


def _label(path: Path, number: int, line: str) -> LabelRecord:
    try:
        return LabelRecord.from_json(line)
    except (ValueError, KeyError, TypeError) as exc:
        raise LabelDbError(f"{path}:{number}: not a label record ({exc})") from None


# Retired-label list (``ffcc --retired=FILE``): the labels a campaign retired, which a rebuild
# of the same sources compiles to nothing (fuzzer/engine/lean.py writes it, instrument/labels.py
# reads it).  A header record ``{"format": "ffcc-retired", "version": 1}``, then one
# ``{"file": path, "index": position in its unit, "covered": bool}`` per label: ids and slots
# are fixed only at link time, while a label's file and position are what the rewriters give
# it again from the same text.
RETIRED_FORMAT = "ffcc-retired"
RETIRED_VERSION = 1


def label_positions(labels: list[LabelRecord]) -> list[tuple[str, int]]:
    """Each label's (file, position in its unit).  A unit's labels take consecutive slots from
    its first, so the position is the slot less the least slot of the file's labels: one unit
    per source file, as in a project build (a rebuild's label database shows whether it was)."""
    first: dict[str, int] = {}
    for label in labels:
        first[label.file] = min(first.get(label.file, label.slot), label.slot)
    return [(label.file, label.slot - first[label.file]) for label in labels]


def write_retired(path: str | os.PathLike[str], labels: list[LabelRecord],
                  retired: dict[int, bool]) -> None:
    """Write the retired-label list of ``labels`` (a label database's records): ``retired``
    maps the id of each label to compile out to whether it was covered (a rebuild marks it
    RETIRED)."""
    lines = [json.dumps({"format": RETIRED_FORMAT, "version": RETIRED_VERSION})]
    for label, (file, index) in zip(labels, label_positions(labels), strict=True):
        if label.id in retired:
            lines.append(json.dumps({"file": file, "index": index,
                                     "covered": retired[label.id]}))
    write_atomic(path, "".join(line + "\n" for line in lines))


def read_retired(path: str | os.PathLike[str]) -> dict[tuple[str, int], bool]:
    """A retired-label list: (file, position) -> covered.  Raises LabelDbError (one line) for a
    file that is not one."""
    try:
        lines = Path(path).read_text().splitlines()
        if not lines or not lines[0].startswith("{") or json.loads(lines[0]) != {
                "format": RETIRED_FORMAT, "version": RETIRED_VERSION}:
            raise ValueError(f"not an {RETIRED_FORMAT} version {RETIRED_VERSION} list")
        records = [json.loads(line) for line in lines[1:]]
        return {(str(r["file"]), int(r["index"])): bool(r["covered"]) for r in records}
    except OSError as exc:
        raise LabelDbError(f"{path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise LabelDbError(f"{path}: {exc}") from None
