"""What a resumed campaign (-i -) continues from: ffuzz_state.json in the output directory.

afl-fuzz resumes by recalibrating its queue and reading a few counters back from
fuzzer_stats; that loses FairFuzz's branch hit counts, each entry's history
(fuzzed, deterministic stages done, depth, measurements), the queue walk and
the rarity cutoff.  ffuzz keeps them in one small versioned JSON file, replaced
atomically with fuzzer_stats at every stats interval and at exit, so a SIGKILL
loses at most the last interval's counts.  The queue files stay the truth: an
entry saved after the last state has no record and is calibrated as a new
find; a record whose file is gone is ignored.

    {"format": "ffuzz-state", "version": 4, "map_size": 65536,
     "totals": {"run_time": 25, "execs": 123456, ...},
     "scheduler": {"cursor": {"cycle": 3, "position": 7, ...}, "cutoff_shift": 0, ...},
     "entries": {"name": ["id:000000,time:0,execs:0,orig:seed", ...], "depth": [1, ...],
                 "passed_det": [true, ...], ...},
     "branch_hits": {"index": [12, 40], "count": [355688, 17]},
     "var_bytes": [40]}

Entries are stored by column: one list per field is several times faster to write than
an object per entry, which matters with tens of thousands of entries.

Version 2 added the FairFuzz target counters to "totals" (and the scheduler's per-entry
targets, which a scheduler's restore may ignore); a version 1 file reads as one whose
counters were zero.  Version 3 added "imported" (entries taken from peers in a sync
directory; their .synced/ files stay in the output directory).  Version 4 added "phase"
(2 once a two-phase campaign has moved to its labelled build, phases.py; else 1).  An older
ffuzz refuses a newer file rather than drop its counters.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.files import write_atomic

FILE_NAME = "ffuzz_state.json"
FORMAT = "ffuzz-state"
VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)


@dataclass
class Totals:
    """Counters that run on across sessions, as of the save."""

    run_time: int = 0          # seconds fuzzed
    execs: int = 0             # executions
    crashes: int = 0           # crashing executions, saved or not
    hangs: int = 0             # timeouts, saved or not
    last_find: int = 0         # unix seconds; 0: none yet
    last_crash: int = 0
    last_hang: int = 0
    last_crash_execs: int = 0  # executions done when the last crash was saved
    exec_timeout: int = 0      # ms; 0: not known
    targets_selected: int = 0  # FairFuzz selections with a target branch
    targets_labels: int = 0    # those whose target was a label slot
    imported: int = 0          # entries imported from peers (-M/-S)


class SavedEntry(Protocol):
    """What the state file keeps of a queue entry (the engine's QueueEntry is one): its file,
    and the attributes named like EntryRecord's fields, read and set by name (RECORD_FIELDS)."""

    path: Path


@dataclass(frozen=True)
class EntryRecord:
    """A queue entry's history and measurements; its bytes are its file, its edges are
    measured again on resume."""

    depth: int
    parent: int | None
    exec_us: int
    bitmap_size: int
    handicap: int
    variable: bool
    favoured: bool
    was_fuzzed: bool
    passed_det: bool
    trimmed: bool

    def apply(self, entry: SavedEntry) -> None:
        for name in RECORD_FIELDS:
            setattr(entry, name, getattr(self, name))


RECORD_FIELDS = tuple(f.name for f in fields(EntryRecord))


@dataclass
class CampaignState:
    totals: Totals = field(default_factory=Totals)
    scheduler: dict[str, Any] = field(default_factory=dict)  # Scheduler.state()
    entries: dict[str, EntryRecord] = field(default_factory=dict)  # read back, by file name
    map_size: int = 0                    # of the maps below; 0: none saved
    branch_hits: np.ndarray | None = None  # FairFuzz numHits, uint32 per map index
    var_bytes: np.ndarray | None = None    # uint8 per map index, 1 where calibration saw variation
    phase: int = 1                         # 2: a two-phase campaign is on its labelled build


def save(path: Path, state: CampaignState, queue: Sequence[SavedEntry]) -> None:
    """Write `state` with a record of each queue entry (state.entries is only what
    `load` reads back: records are taken from the live entries, column by column)."""
    entries = {"name": [entry.path.name for entry in queue],
               **{name: [getattr(entry, name) for entry in queue] for name in RECORD_FIELDS}}
    maps: dict[str, Any] = {}
    if state.branch_hits is not None:
        hit = np.flatnonzero(state.branch_hits)
        maps["branch_hits"] = {"index": hit.tolist(), "count": state.branch_hits[hit].tolist()}
    if state.var_bytes is not None:
        maps["var_bytes"] = np.flatnonzero(state.var_bytes).tolist()
    document = {"format": FORMAT, "version": VERSION, "map_size": state.map_size,
                "totals": asdict(state.totals), "scheduler": state.scheduler,
                "entries": entries, "phase": state.phase, **maps}
    write_atomic(path, json.dumps(document, separators=(",", ":")))


def load(path: Path) -> CampaignState | None:
    """The saved state, None when there is none; a one-line error when it is not one
    this version of ffuzz can read."""
    if not path.exists():
        return None
    problem = f"{path} is not an ffuzz state file of version " \
              f"{' or '.join(map(str, READABLE_VERSIONS))}; remove it to resume from the " \
              "queue alone"
    try:
        document = json.loads(path.read_text())
        if document.get("format") != FORMAT or document.get("version") not in READABLE_VERSIONS:
            raise FuzzerError(problem)
        size = int(document["map_size"])
        columns = document["entries"]
        names = columns["name"]
        if any(len(columns[name]) != len(names) for name in RECORD_FIELDS):
            raise FuzzerError(problem)
        records = {name: EntryRecord(*row)
                   for name, *row in zip(names, *(columns[name] for name in RECORD_FIELDS))}
        state = CampaignState(Totals(**document["totals"]), dict(document["scheduler"]),
                              records, size, phase=int(document.get("phase", 1)))
        if "branch_hits" in document:
            state.branch_hits = np.zeros(size, np.uint32)
            hits = document["branch_hits"]
            state.branch_hits[np.array(hits["index"], np.int64)] = hits["count"]
        if "var_bytes" in document:
            state.var_bytes = np.zeros(size, np.uint8)
            state.var_bytes[np.array(document["var_bytes"], np.int64)] = 1
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):
        raise FuzzerError(problem) from None
    return state


def from_fuzzer_stats(stats: dict[str, str]) -> CampaignState:
    """What an output directory without a state file (an older ffuzz's, AFL++'s) tells
    through its fuzzer_stats."""
    def number(key: str) -> int:
        value = stats.get(key, "0")
        return int(value) if value.isdigit() else 0

    totals = Totals(run_time=number("run_time"), execs=number("execs_done"),
                    last_find=number("last_find"), last_crash=number("last_crash"),
                    last_hang=number("last_hang"),
                    last_crash_execs=max(number("execs_done") - number("execs_since_crash"), 0)
                    if "execs_since_crash" in stats else 0,
                    exec_timeout=number("exec_timeout"),
                    targets_selected=number("targets_selected"),
                    targets_labels=number("targets_labels"),
                    imported=number("corpus_imported"))
    return CampaignState(totals, {"cursor": {"cycle": number("cycles_done")}})
