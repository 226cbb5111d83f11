"""The AFL-compatible output directory: out/default/{queue,crashes,hangs,...}.

Every file is written atomically (ffcc.runtime.files), so a campaign killed at
any instant leaves only complete files (and perhaps a stray temporary, removed
when the directory is opened again).  The directory is flock()ed like AFL++
does, so two fuzzers never share it.  Resuming (-i -) reads back what an
earlier campaign left: its last stats and its saved cases.

queue/.state/ is filled as afl-fuzz fills it, for tools that read it: one
empty file per entry in deterministic_done/ (its deterministic stages are
done) and redundant_edges/ (not favoured), one symlink to the entry in
variable_behavior/ (its map varies between runs).
"""
from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.state import FILE_NAME
from ffcc.runtime.files import TMP_PREFIX, write_atomic

# The names in an instance's directory, AFL++'s where AFL++ has them; every module that
# looks into an output directory takes them from here.
DEFAULT_INSTANCE = "default"   # OUT/default: the one instance of a campaign without -M/-S
QUEUE, CRASHES, HANGS = "queue", "crashes", "hangs"
INPUT_KINDS = (QUEUE, CRASHES, HANGS)  # the folders of saved inputs, queue first
QUEUE_STATE = ".state"         # queue/.state/, afl-fuzz's marks on the entries
CUR_INPUT = ".cur_input"       # the input the target reads
FUZZER_STATS = "fuzzer_stats"
PLOT_DATA = "plot_data"
CMDLINE = "cmdline"            # the target's argv, one per line
FUZZER_SETUP = "fuzzer_setup"  # the AFL_* variables and the fuzzer's own command line
SYNCED = ".synced"             # .synced/PEER: the next id of PEER's queue to look at
STATE_FILE = FILE_NAME         # what -i - resumes from (its format: output/state.py)
_ID = re.compile(r"^id:(\d{6,})")
_SRC = re.compile(r",src:(\d{6,})")
STATE_MARKS = ("deterministic_done", "redundant_edges", "variable_behavior")

CRASH_README = """Command line used to find this crash:

{command}

If you can't reproduce a bug outside of ffuzz, be sure to set the same
memory limit. The limit used for this fuzzing session was {memory}.

Crashes here are de-duplicated by coverage: one file per crash whose
hit/not-hit edge pattern had not been seen in an earlier crash.
"""


def append_line(path: Path, line: str) -> None:
    """Append with one write() on an O_APPEND fd: lines never interleave or tear."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def id_of(name: str) -> int | None:
    match = _ID.match(name)
    return int(match.group(1)) if match else None


def parent_id(name: str) -> int | None:
    """The id of the entry a queue file was made from (src:, the first of a splice); None
    for an entry imported from a peer (its src: is the peer's id)."""
    match = None if ",sync:" in name else _SRC.search(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class SavedCase:
    id: int
    path: Path


def _cases(directory: Path) -> list[SavedCase]:
    """The id:NNNNNN files of a queue, crashes or hangs directory, in id order."""
    cases = [SavedCase(i, p) for p in directory.iterdir()
             if p.is_file() and (i := id_of(p.name)) is not None]
    return sorted(cases, key=lambda c: c.id)


@dataclass(frozen=True)
class QueueFile:
    saved_as: str  # the file name the earlier campaign gave it
    path: Path     # where it is now (renamed when ids had gaps)


@dataclass(frozen=True)
class Resumed:
    """What an earlier campaign left in the output directory."""

    stats: dict[str, str]     # its last fuzzer_stats, key -> value (empty if none)
    queue: list[QueueFile]    # entries in id order; entry i is id:i (renamed if need be)
    crashes: list[SavedCase]  # in id order, ids as saved
    hangs: list[SavedCase]

    @property
    def next_crash_id(self) -> int:
        return max((case.id + 1 for case in self.crashes), default=0)

    @property
    def next_hang_id(self) -> int:
        return max((case.id + 1 for case in self.hangs), default=0)


class OutputDir:
    """OUT/NAME of one campaign: NAME is default, or the -M/-S name in a sync directory."""

    def __init__(self, root: Path, name: str = DEFAULT_INSTANCE) -> None:
        self.root = root / name
        self.queue = self.root / QUEUE
        self.crashes = self.root / CRASHES
        self.hangs = self.root / HANGS
        self.cur_input = self.root / CUR_INPUT
        self.fuzzer_stats = self.root / FUZZER_STATS
        self.plot_data = self.root / PLOT_DATA
        self.state_file = self.root / STATE_FILE
        self.queue_state = self.queue / QUEUE_STATE
        self._lock_fd: int | None = None
        self._marked: dict[str, set[str]] = {kind: set() for kind in STATE_MARKS}

    def has_campaign(self) -> bool:
        return self.queue.is_dir() and any(id_of(p.name) is not None for p in self.queue.iterdir())

    def open(self, resume: bool) -> None:
        """Create or reopen the layout, taking the lock first."""
        if self.root.parent.exists() and not self.root.parent.is_dir():
            raise FuzzerError(f"output path is not a directory: {self.root.parent}")
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock()
        if resume and not self.has_campaign():
            raise FuzzerError(f"nothing to resume: {self.queue} holds no queue entries")
        if not resume and self.has_campaign():
            raise FuzzerError(f"{self.root.parent} holds a previous campaign: resume it with "
                              "-i - (or AFL_AUTORESUME=1), or choose another output directory")
        for d in (self.queue, self.queue_state, self.crashes, self.hangs, self.root / SYNCED,
                  *(self.queue_state / kind for kind in (*STATE_MARKS, "auto_extras"))):
            d.mkdir(exist_ok=True)
        for d in (self.queue, self.crashes, self.hangs, self.root):
            for stale in d.glob(TMP_PREFIX + "*"):
                stale.unlink()
        for kind, names in self._marked.items():
            names.update(p.name for p in (self.queue_state / kind).iterdir())

    def _lock(self) -> None:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FuzzerError(f"output directory {self.root} is in use by another fuzzer") from None
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- saving --------------------------------------------------------------

    def save_queue_entry(self, entry_id: int, description: str, data: bytes) -> Path:
        path = self.queue / f"id:{entry_id:06d},{description}"
        write_atomic(path, data)
        return path

    def save_crash(self, crash_id: int, signal: int, description: str, data: bytes,
                   readme: str) -> Path:
        if not (self.crashes / "README.txt").exists():
            write_atomic(self.crashes / "README.txt", readme.encode())
        path = self.crashes / f"id:{crash_id:06d},sig:{signal:02d},{description}"
        write_atomic(path, data)
        return path

    def save_hang(self, hang_id: int, description: str, data: bytes) -> Path:
        path = self.hangs / f"id:{hang_id:06d},{description}"
        write_atomic(path, data)
        return path

    def mark(self, kind: str, names: set[str]) -> None:
        """Make queue/.state/<kind>/ hold a mark for exactly these queue entries, touching
        only the marks that change."""
        directory, marked = self.queue_state / kind, self._marked[kind]
        for name in marked - names:
            (directory / name).unlink(missing_ok=True)
        for name in names - marked:
            if kind == "variable_behavior":
                (directory / name).symlink_to(Path("../..") / name)
            else:
                (directory / name).touch()
        self._marked[kind] = set(names)

    # -- resuming ------------------------------------------------------------

    def resume(self) -> Resumed:
        """The earlier campaign's stats and saved cases, its queue ids made dense again."""
        return Resumed(self.previous_stats(), self._renumber_queue(), _cases(self.crashes),
                       _cases(self.hangs))

    def _renumber_queue(self) -> list[QueueFile]:
        """Queue entries in id order, renamed where ids have gaps (a user deleted a file):
        the queue's ids are its positions."""
        files = []
        for position, case in enumerate(_cases(self.queue)):
            path = case.path
            if case.id != position:
                path = path.rename(path.with_name(
                    f"id:{position:06d}" + path.name[len(f"id:{case.id:06d}"):]))
            files.append(QueueFile(case.path.name, path))
        return files

    def has_mark(self, kind: str, saved_as: str) -> bool:
        """Whether queue/.state/<kind>/ marks the entry saved under this name."""
        return saved_as in self._marked[kind]

    def previous_stats(self) -> dict[str, str]:
        """The last fuzzer_stats as key -> value (empty if none)."""
        if not self.fuzzer_stats.exists():
            return {}
        stats = {}
        for line in self.fuzzer_stats.read_text().splitlines():
            key, sep, value = line.partition(":")
            if sep:
                stats[key.strip()] = value.strip()
        return stats
