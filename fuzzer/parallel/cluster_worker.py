"""One instance of `ffuzz cluster`, on whichever node Ray placed it (a Ray actor, one core).

The instance is an ordinary `ffuzz -M main` or `-S secK` process over a sync directory on
the node's local disk, so its output is afl-fuzz's, byte for byte.  Its peers exist there
only as mirrors the worker keeps: SYNC/PEER/queue holds the peer entries the hub delivered
(under the peer's own file names, so imports are named `sync:PEER,src:ID` as in one shared
sync directory), and SYNC/cluster/ffuzz_hits.npy holds everyone else's summed FairFuzz
hit counts, which ffuzz adds to its own as it does with local peers.  At each sync
interval the worker sends the hub what is new in the instance's directory and takes what
is new for it (cluster_hub.py).

A resumed instance (`ffuzz cluster -i -`) gets from the hub what the head kept of its
directory, lays it out on the node and runs `ffuzz -i -` over it: its queue, crashes,
hangs, plot_data and state file (FairFuzz's hit counts, each entry's history) go on; what
it had taken from its peers is in its .synced/PEER files, so the peers' entries come again
from the first one it had not looked at.

This module is plain Python; cluster.py makes a Ray actor of Worker.
"""
from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ffcc.fuzzer.engine.config import SyncSettings
from ffcc.fuzzer.output.outdir import CRASHES, HANGS, PLOT_DATA, QUEUE, SYNCED, OutputDir, id_of
from ffcc.fuzzer.parallel.cluster_hub import (
    MAIN,
    WHOLE_FILES,
    Delivery,
    File,
    Report,
)
from ffcc.fuzzer.parallel.launcher import LOG_NAME, last_line, spawn_ffuzz
from ffcc.fuzzer.parallel.sync import HITS_FILE, MAIN_MARK, SyncDir
from ffcc.runtime.files import write_atomic

HITS_DIR = "cluster"         # the pseudo-peer holding everyone else's counts
STOP_GRACE = 30.0
TICK = 0.2
Version = tuple[int, int, int]  # a file's inode, mtime and size: replaced files get new ones


def version_of(path: Path) -> Version | None:
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


@dataclass(frozen=True)
class Ended:
    name: str
    returncode: int
    last_line: str


class Exchange:
    """This instance's side of the hub: what it has sent, what it has received."""

    def __init__(self, sync_dir: Path, name: str) -> None:
        self.sync_dir = sync_dir
        self.name = name
        self.root = sync_dir / name
        self.next_id = 0                 # first own queue id not sent yet
        self.entry_versions: dict[str, Version] = {}  # queue entry -> its version when sent
        self.sent: dict[str, set[str]] = {CRASHES: set(), HANGS: set()}
        self.plot_offset = 0
        self.versions: dict[str, Version] = {}  # whole file -> its version when sent
        self.hits_version: Version | None = None
        self.cursors: dict[str, int] = {}  # peer -> entries of it received

    def report(self, everything: bool = False) -> Report:
        """Everything new in the instance's directory; with `everything` (the last
        report), every whole file too, changed or not."""
        queue, rewritten = self._queue()
        return Report(self.name, queue, self._new(CRASHES), self._new(HANGS),
                      self._plot_tail(), self._whole_files(everything), self._hits(),
                      rewritten)

    def _queue(self) -> tuple[list[File], list[File]]:
        """The queue entries not sent yet, in id order, and those sent before whose file
        was replaced since (trimmed): the head keeps the queue as the instance has it."""
        new, rewritten = [], []
        for number, path in sorted((n, p) for p in self._files(QUEUE)
                                   if (n := id_of(p.name)) is not None):
            version = version_of(path)
            if version is None or version == self.entry_versions.get(path.name):
                continue
            try:
                entry = (path.name, path.read_bytes())
            except FileNotFoundError:
                continue
            if number >= self.next_id:
                new.append(entry)
                self.next_id = number + 1
            else:
                rewritten.append(entry)
            self.entry_versions[path.name] = version
        return new, rewritten

    def _files(self, folder: str) -> list[Path]:
        directory = self.root / folder
        if not directory.is_dir():
            return []
        return [p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")]

    def _new(self, folder: str) -> list[File]:
        fresh = sorted(p for p in self._files(folder) if p.name not in self.sent[folder])
        self.sent[folder].update(p.name for p in fresh)
        return [(p.name, p.read_bytes()) for p in fresh]

    def _plot_tail(self) -> bytes:
        """Whole lines of plot_data added since the last report."""
        try:
            with open(self.root / PLOT_DATA, "rb") as plot:
                plot.seek(self.plot_offset)
                data = plot.read()
        except FileNotFoundError:
            return b""
        data = data[:data.rfind(b"\n") + 1]
        self.plot_offset += len(data)
        return data

    def _whole_paths(self) -> list[str]:
        synced = self.root / SYNCED
        peers = sorted(p.name for p in synced.iterdir()) if synced.is_dir() else []
        return [*WHOLE_FILES, *(f"{SYNCED}/{peer}" for peer in peers)]

    def _whole_files(self, everything: bool) -> dict[str, bytes]:
        """The files replaced whole (fuzzer_stats, the state file, .synced/PEER, ...) that
        changed since they were last sent.  The state file goes with every exchange, so
        that a head killed outright loses no more of it than of the entries."""
        files = {}
        for path in self._whole_paths():
            version = version_of(self.root / path)
            if version is None or (version == self.versions.get(path) and not everything):
                continue
            try:
                files[path] = (self.root / path).read_bytes()
            except FileNotFoundError:
                continue
            self.versions[path] = version
        return files

    def _hits(self) -> np.ndarray | None:
        path = self.root / HITS_FILE
        version = version_of(path)
        if version is None or version == self.hits_version:
            return None
        try:
            counts = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        self.hits_version = version
        return counts

    def receive(self, delivery: Delivery) -> None:
        """Mirror the peers' new entries and write everyone else's counts."""
        for peer, entries in delivery.entries.items():
            queue = self.sync_dir / peer / QUEUE
            queue.mkdir(parents=True, exist_ok=True)
            if peer == MAIN:
                write_atomic(self.sync_dir / peer / MAIN_MARK, b"")
            for file_name, data in entries:
                write_atomic(queue / file_name, data)
        self.cursors.update(delivery.cursors)
        if delivery.peer_hits is not None:
            buffer = io.BytesIO()
            np.save(buffer, delivery.peer_hits)
            (self.sync_dir / HITS_DIR).mkdir(exist_ok=True)
            write_atomic(self.sync_dir / HITS_DIR / HITS_FILE, buffer.getvalue())

    def restore(self, saved: Report) -> None:
        """Lay out what the head kept of this instance as its directory, its entries,
        crashes, hangs and plot lines noted as sent, and take each peer's entries from
        where .synced/PEER says the instance stopped looking (the hub's list of a peer's
        entries is its queue in id order)."""
        for folder, files in ((QUEUE, saved.queue), (CRASHES, saved.crashes),
                              (HANGS, saved.hangs)):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
            for file_name, data in files:
                write_atomic(self.root / folder / file_name, data)
        self.entry_versions = {name: version for name, _ in saved.queue
                               if (version := version_of(self.root / QUEUE / name))}
        self.next_id = max((n + 1 for name, _ in saved.queue if (n := id_of(name)) is not None),
                           default=0)
        self.sent[CRASHES].update(name for name, _ in saved.crashes)
        self.sent[HANGS].update(name for name, _ in saved.hangs)
        if saved.plot_tail:  # else ffuzz starts the file with its header
            write_atomic(self.root / PLOT_DATA, saved.plot_tail)
        self.plot_offset = len(saved.plot_tail)
        for path, data in saved.files.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.root / path, data)
        looking = SyncDir(OutputDir(self.sync_dir, self.name),
                          SyncSettings(self.name, self.name == MAIN, 0.0))
        self.cursors = {peer.name: looking.next_id(peer.name)
                        for peer in (self.root / SYNCED).glob("*")}


class Worker:
    """Runs one instance and keeps it in touch with the hub until it ends."""

    def __init__(self, name: str, call: Callable[..., Any]) -> None:
        self.name = name
        self.call = call  # call(method, *args): a Hub method run by the hub, its result
        self.stop_event = threading.Event()
        self.base = Path(tempfile.mkdtemp(prefix=f"ffuzz-cluster-{name}-"))

    def stop(self) -> None:
        self.stop_event.set()

    def run(self, seeds: list[File] | None, argv: list[str], cpu: int | None,
            env: dict[str, str], sync_seconds: float) -> Ended:
        """Fuzz with these seeds (None: resume what the head kept of this instance) and
        ffuzz arguments until ffuzz ends (-V, -E) or stop()."""
        sync_dir = self.base / "sync"
        (sync_dir / self.name).mkdir(parents=True)
        exchange = Exchange(sync_dir, self.name)
        if seeds is None:
            exchange.restore(self.call("saved", self.name))
            inputs = "-"
        else:
            inputs = str(self._write_seeds(seeds))
        log_path = sync_dir / self.name / LOG_NAME
        with open(log_path, "ab") as log:
            process = spawn_ffuzz(["-i", inputs, "-o", str(sync_dir), *argv], cpu, log, env)
        try:
            self._follow(process, exchange, sync_seconds)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.sync(exchange, last=True)
        ended = Ended(self.name, process.returncode, last_line(log_path))
        shutil.rmtree(self.base, ignore_errors=True)
        return ended

    def _write_seeds(self, seeds: list[File]) -> Path:
        seed_dir = self.base / "seeds"
        seed_dir.mkdir()
        for file_name, data in seeds:
            (seed_dir / file_name).write_bytes(data)
        return seed_dir

    def _follow(self, process: subprocess.Popen[bytes], exchange: Exchange,
                sync_seconds: float) -> None:
        next_sync, stop_sent = 0.0, None
        while process.poll() is None:
            now = time.monotonic()
            if now >= next_sync:
                self.sync(exchange)
                next_sync = now + sync_seconds
            if self.stop_event.is_set() and stop_sent is None:
                process.send_signal(signal.SIGINT)
                stop_sent = now
            if stop_sent is not None and now - stop_sent > STOP_GRACE:
                process.kill()
            self.stop_event.wait(TICK)

    def sync(self, exchange: Exchange, last: bool = False) -> None:
        """Report what is new; unless ffuzz has ended, take what is new for it."""
        self.call("report", exchange.report(everything=last))
        if not last:
            exchange.receive(self.call("deliver", self.name, dict(exchange.cursors)))


def node_cpu(slot: int, cores: Sequence[int], no_affinity: bool) -> int | None:
    """The core for the instance in this slot of its node, among the node's cores: they
    are the campaign's (Ray gave each instance one), so slot k takes the k-th; None with
    no_affinity (AFL_NO_AFFINITY) or more instances than cores."""
    if no_affinity:
        return None
    return cores[slot] if slot < len(cores) else None


def node_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
