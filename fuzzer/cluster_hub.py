"""The hub of `ffuzz cluster`: one Ray actor on the head that every instance reports to.

Instances do not see each other's files: each sends the hub what is new in its output
directory (queue entries, crashes, hangs, the tail of plot_data, its fuzzer_stats and its
FairFuzz hit counts) and asks it for what is new among its peers, in AFL++'s topology: the
main instance gets every peer's queue entries, a secondary only main's.  The head's
writer (cluster.py) takes everything from here into the AFL-compatible `-o` directory.

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

import numpy as np

MAIN = "main"
File = tuple[str, bytes]  # a file's name and contents


@dataclass
class Report:
    """What one instance has that the hub has not seen yet."""

    name: str
    queue: list[File] = field(default_factory=list)    # new queue entries, in id order
    crashes: list[File] = field(default_factory=list)  # new files of crashes/ (README.txt too)
    hangs: list[File] = field(default_factory=list)
    plot_tail: bytes = b""                             # plot_data lines added since
    files: dict[str, bytes] = field(default_factory=dict)  # fuzzer_stats etc., latest
    hits: np.ndarray | None = None                     # its own counts, when they changed


@dataclass
class Delivery:
    """What an instance gets back: its peers' new entries and everyone else's counts."""

    entries: dict[str, list[File]]   # peer -> new entries of its queue
    cursors: dict[str, int]          # peer -> how many of its entries the asker now has
    peer_hits: np.ndarray | None     # the sum of every other instance's latest counts


@dataclass
class Gathered:
    """New files of every instance, for the head's output directory."""

    reports: dict[str, Report]
    cursors: dict[str, tuple[int, int, int, int]]  # name -> queue, crashes, hangs, plot


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
    other_bytes_in: int = 0     # stats files, plot lines, crashes and hangs
    merges: int = 0             # hit-count arrays folded into the sum
    merge_seconds: float = 0.0  # time spent folding them in
    answer_seconds: float = 0.0  # time spent making each delivery's sum of the others


def _size(files: list[File]) -> int:
    return sum(len(name) + len(data) for name, data in files)


@dataclass
class _Instance:
    queue: list[File] = field(default_factory=list)
    crashes: list[File] = field(default_factory=list)
    hangs: list[File] = field(default_factory=list)
    plot: list[bytes] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    hits: np.ndarray | None = None


class Hub:
    def __init__(self) -> None:
        self.instances: dict[str, _Instance] = {}
        self.total_hits: np.ndarray | None = None
        self.metrics = Metrics()
        self._slots: dict[str, int] = {}

    def slot(self, node: str) -> int:
        """The next free core index on a node: instances starting at once on one node
        each take their own core."""
        self._slots[node] = self._slots.get(node, -1) + 1
        return self._slots[node]

    def report(self, report: Report) -> None:
        instance = self.instances.setdefault(report.name, _Instance())
        instance.queue += report.queue
        instance.crashes += report.crashes
        instance.hangs += report.hangs
        if report.plot_tail:
            instance.plot.append(report.plot_tail)
        instance.files.update(report.files)
        m = self.metrics
        m.reports += 1
        m.entries_in += len(report.queue)
        m.entry_bytes_in += _size(report.queue)
        m.other_bytes_in += (_size(report.crashes) + _size(report.hangs) + len(report.plot_tail)
                             + sum(len(data) for data in report.files.values()))
        if report.hits is not None:
            m.hits_bytes_in += report.hits.nbytes
            self._merge(instance, report.hits)

    def _merge(self, instance: _Instance, hits: np.ndarray) -> None:
        started = time.perf_counter()
        counts = hits.astype(np.uint64)
        if self.total_hits is None or self.total_hits.shape != counts.shape:
            self.total_hits = np.zeros_like(counts)
            for other in self.instances.values():  # a new map size: sum again
                if other is not instance and other.hits is not None \
                        and other.hits.shape == counts.shape:
                    self.total_hits += other.hits
        elif instance.hits is not None and instance.hits.shape == counts.shape:
            self.total_hits -= instance.hits
        self.total_hits += counts
        instance.hits = counts
        self.metrics.merges += 1
        self.metrics.merge_seconds += time.perf_counter() - started

    def peers_of(self, name: str) -> list[str]:
        """The instances whose entries `name` imports: main every other, a secondary main."""
        if name == MAIN:
            return sorted(n for n in self.instances if n != name)
        return [MAIN] if MAIN in self.instances else []

    def deliver(self, name: str, cursors: dict[str, int]) -> Delivery:
        entries, new_cursors = {}, {}
        for peer in self.peers_of(name):
            queue = self.instances[peer].queue
            start = cursors.get(peer, 0)
            if start < len(queue):
                entries[peer] = queue[start:]
            new_cursors[peer] = len(queue)
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

    def gather(self, cursors: dict[str, tuple[int, int, int, int]]) -> Gathered:
        """Every instance's files past these cursors (and its latest stats files)."""
        reports, new = {}, {}
        for name, instance in self.instances.items():
            q, c, h, p = cursors.get(name, (0, 0, 0, 0))
            reports[name] = Report(name, instance.queue[q:], instance.crashes[c:],
                                   instance.hangs[h:], b"".join(instance.plot[p:]),
                                   dict(instance.files))
            new[name] = (len(instance.queue), len(instance.crashes), len(instance.hangs),
                         len(instance.plot))
        return Gathered(reports, new)

    def counters(self) -> Metrics:
        return self.metrics
