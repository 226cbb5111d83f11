"""The hub of `ffuzz cluster`: one Ray actor on the head that every instance reports to,
and the writer of the campaign's output directory.

Instances do not see each other's files: each sends the hub what is new in its output
directory (queue entries, crashes, hangs, the tail of plot_data, the files it replaces
whole, such as fuzzer_stats, ffuzz_state.json and .synced/PEER, and its FairFuzz hit
counts) and asks it for what is new among its peers, in AFL++'s topology: the main
instance gets every peer's queue entries, a secondary only main's.

The hub runs on the head's node and writes each report straight into `-o OUT/NAME/`, so
OUT is an AFL++ sync directory as the campaign goes.  What it keeps in memory is each
instance's queue file names (an entry is read back from OUT when it is delivered, at most
DELIVERY_BYTES of them per answer) and latest hit counts, not the entries.  OUT is also
what a resumed campaign starts from: a hub opened on it takes the queue names from the
queue directories and every instance's counts from its ffuzz_state.json, and `saved`
hands an instance its directory back.

Hit counts are merged here, once per report: the hub keeps the sum of every instance's
latest counts, so a report costs one subtraction and one addition over the map, and an
answer (everyone's sum less the asker's own) one subtraction, however many instances
there are.  The counters (messages, bytes, merges and their time) are what
bench/parallel_bench.py reports.

This module is plain Python; cluster.py makes a Ray actor of Hub.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from ffcc.fuzzer.output.outdir import (
    CMDLINE,
    CRASHES,
    FUZZER_SETUP,
    FUZZER_STATS,
    HANGS,
    PLOT_DATA,
    QUEUE,
    STATE_FILE,
    SYNCED,
    append_line,
    id_of,
)
from ffcc.fuzzer.output.state import load as load_state
from ffcc.fuzzer.parallel.sync import MAIN_MARK
from ffcc.runtime.files import write_atomic

MAIN = "main"
WHOLE_FILES = (FUZZER_STATS, CMDLINE, FUZZER_SETUP, STATE_FILE)  # replaced, not appended
DELIVERY_BYTES = 16 << 20  # entries' bytes per answer at most (the rest comes next time)
File = tuple[str, bytes]  # a file's name and contents


@dataclass
class Report:
    """What one instance has that the hub has not seen yet (or, from `saved`, everything
    the head kept of it)."""

    name: str
    queue: list[File] = field(default_factory=list)    # new queue entries, in id order
    crashes: list[File] = field(default_factory=list)  # new files of crashes/ (README.txt too)
    hangs: list[File] = field(default_factory=list)
    plot_tail: bytes = b""                             # plot_data lines added since
    files: dict[str, bytes] = field(default_factory=dict)  # WHOLE_FILES, .synced/PEER: latest
    hits: np.ndarray | None = None                     # its own counts, when they changed
    rewritten: list[File] = field(default_factory=list)  # queue entries sent before, trimmed

    def has_files(self) -> bool:
        return bool(self.queue or self.rewritten or self.crashes or self.hangs
                    or self.plot_tail or self.files)


@dataclass
class Delivery:
    """What an instance gets back: its peers' new entries and everyone else's counts."""

    entries: dict[str, list[File]]   # peer -> new entries of its queue
    cursors: dict[str, int]          # peer -> how many of its entries the asker now has
    peer_hits: np.ndarray | None     # the sum of every other instance's latest counts


@dataclass
class Metrics:
    reports: int = 0            # report messages received
    deliveries: int = 0         # delivery messages sent
    entries_in: int = 0         # queue entries received
    entries_out: int = 0        # queue entries delivered to peers
    entry_bytes_in: int = 0     # their names and contents
    entry_bytes_out: int = 0
    hits_bytes_in: int = 0      # hit-count arrays received
    hits_bytes_out: int = 0     # and sent
    other_bytes_in: int = 0     # stats, state, plot lines, crashes, hangs, trimmed entries
    merges: int = 0             # hit-count arrays folded into the sum
    merge_seconds: float = 0.0  # time spent folding them in
    answer_seconds: float = 0.0  # time spent making each delivery's sum of the others


def _size(files: list[File]) -> int:
    return sum(len(name) + len(data) for name, data in files)


def _relative(path: str) -> PurePosixPath:
    """A file name an instance sent, refused when it would leave the instance's directory."""
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError(f"not a file of an instance's directory: {path!r}")
    return relative


def queue_names(queue: Path) -> list[str]:
    """The entries of a queue directory, in id order."""
    found = [(number, p.name) for p in queue.iterdir()
             if p.is_file() and (number := id_of(p.name)) is not None]
    return [name for _, name in sorted(found)]


def _files(directory: Path) -> list[File]:
    if not directory.is_dir():
        return []
    return [(p.name, p.read_bytes()) for p in sorted(directory.iterdir())
            if p.is_file() and not p.name.startswith(".")]


@dataclass
class _Instance:
    queue: list[str] = field(default_factory=list)  # its queue files' names, in id order
    hits: np.ndarray | None = None                  # its latest counts, as it sent them


class Hub:
    """The campaign's meeting point.  `root` is the output directory it writes and, for a
    resumed campaign, reads back; a hub without one keeps no files (reports may then carry
    counts only: the merge benchmark)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self.instances: dict[str, _Instance] = {}
        self.total_hits: np.ndarray | None = None
        self.metrics = Metrics()
        if root is not None and root.is_dir():
            self._reopen(root)

    def _reopen(self, root: Path) -> None:
        """Every instance a previous session left in root: its queue names, and its counts
        as its last state file has them."""
        for directory in sorted(p for p in root.iterdir() if (p / QUEUE).is_dir()):
            instance = self.instances.setdefault(directory.name, _Instance())
            instance.queue = queue_names(directory / QUEUE)
            state = load_state(directory / STATE_FILE)
            if state is not None and state.branch_hits is not None:
                self._merge(instance, state.branch_hits)

    def _directory(self, name: str) -> Path:
        if self.root is None:
            raise ValueError("this hub keeps no files: it was made without an output directory")
        return self.root / _relative(name)

    def report(self, report: Report) -> None:
        instance = self.instances.setdefault(report.name, _Instance())
        if report.has_files():
            self._write(report)
        instance.queue += [name for name, _ in report.queue]
        m = self.metrics
        m.reports += 1
        m.entries_in += len(report.queue)
        m.entry_bytes_in += _size(report.queue)
        m.other_bytes_in += (_size(report.crashes) + _size(report.hangs) + _size(report.rewritten)
                             + len(report.plot_tail)
                             + sum(len(data) for data in report.files.values()))
        if report.hits is not None:
            m.hits_bytes_in += report.hits.nbytes
            self._merge(instance, report.hits)

    def _write(self, report: Report) -> None:
        """The report's files into OUT/NAME, as the instance has them."""
        directory = self._directory(report.name)
        for folder, files in ((QUEUE, report.queue + report.rewritten),
                              (CRASHES, report.crashes), (HANGS, report.hangs)):
            (directory / folder).mkdir(parents=True, exist_ok=True)
            for file_name, data in files:
                write_atomic(directory / folder / _relative(file_name), data)
        if report.name == MAIN and not (directory / MAIN_MARK).exists():
            write_atomic(directory / MAIN_MARK, b"")
        if report.plot_tail:
            append_line(directory / PLOT_DATA, report.plot_tail.decode())
        for path, data in report.files.items():
            target = directory / _relative(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)

    def _merge(self, instance: _Instance, hits: np.ndarray) -> None:
        started = time.perf_counter()
        if self.total_hits is None or self.total_hits.shape != hits.shape:
            self.total_hits = np.zeros(hits.shape, np.uint64)
            for other in self.instances.values():  # a new map size: sum again
                if other is not instance and other.hits is not None \
                        and other.hits.shape == hits.shape:
                    self.total_hits += other.hits
        elif instance.hits is not None and instance.hits.shape == hits.shape:
            self.total_hits -= instance.hits
        self.total_hits += hits
        instance.hits = hits
        self.metrics.merges += 1
        self.metrics.merge_seconds += time.perf_counter() - started

    def peers_of(self, name: str) -> list[str]:
        """The instances whose entries `name` imports: main every other, a secondary main."""
        if name == MAIN:
            return sorted(n for n in self.instances if n != name)
        return [MAIN] if MAIN in self.instances else []

    def deliver(self, name: str, cursors: dict[str, int]) -> Delivery:
        """The peers' entries past the asker's cursors (up to DELIVERY_BYTES of them, read
        back from OUT) and everyone else's counts."""
        entries: dict[str, list[File]] = {}
        new_cursors, room = {}, DELIVERY_BYTES
        for peer in self.peers_of(name):
            names = self.instances[peer].queue
            position = cursors.get(peer, 0)
            while position < len(names) and room > 0:
                data = self._entry(peer, names[position])
                if data is not None:
                    entries.setdefault(peer, []).append((names[position], data))
                    room -= len(data)
                position += 1
            new_cursors[peer] = position
        started = time.perf_counter()
        own = self.instances.get(name)
        peer_hits = None
        if self.total_hits is not None:
            peer_hits = self.total_hits.copy()
            if own is not None and own.hits is not None and own.hits.shape == peer_hits.shape:
                peer_hits -= own.hits
        m = self.metrics
        m.answer_seconds += time.perf_counter() - started
        m.deliveries += 1
        m.entries_out += sum(len(e) for e in entries.values())
        m.entry_bytes_out += sum(_size(e) for e in entries.values())
        m.hits_bytes_out += peer_hits.nbytes if peer_hits is not None else 0
        return Delivery(entries, new_cursors, peer_hits)

    def _entry(self, peer: str, file_name: str) -> bytes | None:
        """A queue entry as the hub wrote it (None when someone removed it since)."""
        try:
            return (self._directory(peer) / QUEUE / file_name).read_bytes()
        except FileNotFoundError:
            return None

    def saved(self, name: str) -> Report:
        """Everything OUT/NAME holds of an instance, for it to resume from."""
        directory = self._directory(name)
        files = {path: (directory / path).read_bytes() for path in WHOLE_FILES
                 if (directory / path).is_file()}
        files.update((f"{SYNCED}/{peer}", data) for peer, data in _files(directory / SYNCED))
        plot = directory / PLOT_DATA
        return Report(name, [(n, (directory / QUEUE / n).read_bytes())
                             for n in self.instances[name].queue],
                      _files(directory / CRASHES), _files(directory / HANGS),
                      plot.read_bytes() if plot.is_file() else b"", files)

    def counters(self) -> Metrics:
        return self.metrics
