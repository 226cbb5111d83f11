"""One instance of `ffuzz cluster`, on whichever node Ray placed it (a Ray actor, one core).

The instance is an ordinary `ffuzz -M main` or `-S secK` process over a sync directory on
the node's local disk, so its output is afl-fuzz's, byte for byte.  Its peers exist there
only as mirrors the worker keeps: SYNC/PEER/queue holds the peer entries the hub delivered
(under the peer's own file names, so imports are named `sync:PEER,src:ID` as in one shared
sync directory), and SYNC/cluster/ffuzz_hits.npy holds everyone else's summed FairFuzz
hit counts, which ffuzz adds to its own as it does with local peers.  At each sync
interval the worker sends the hub what is new in the instance's directory and takes what
is new for it (cluster_hub.py).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ffcc.fuzzer.cluster_hub import MAIN, Delivery, File, Report
from ffcc.fuzzer.launcher import LOG_NAME, last_line, spawn_ffuzz
from ffcc.fuzzer.outdir import id_of
from ffcc.fuzzer.sync import HITS_FILE, MAIN_MARK
from ffcc.runtime.files import write_atomic

HITS_DIR = "cluster"         # the pseudo-peer holding everyone else's counts
SETUP_FILES = ("cmdline", "fuzzer_setup")
STOP_GRACE = 30.0
TICK = 0.2


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
        self.sent: dict[str, set[str]] = {"crashes": set(), "hangs": set()}
        self.setup_sent: set[str] = set()
        self.plot_offset = 0
        self.hits_mtime = 0
        self.cursors: dict[str, int] = {}  # peer -> entries of it received

    def report(self) -> Report:
        """Everything new in the instance's directory."""
        queue = []
        for number, path in sorted((n, p) for p in self._files("queue")
                                   if (n := id_of(p.name)) is not None and n >= self.next_id):
            queue.append((path.name, path.read_bytes()))
            self.next_id = number + 1
        report = Report(self.name, queue, self._new("crashes"), self._new("hangs"),
                        self._plot_tail(), self._stats_files(), self._hits())
        return report

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
            with open(self.root / "plot_data", "rb") as plot:
                plot.seek(self.plot_offset)
                data = plot.read()
        except FileNotFoundError:
            return b""
        data = data[:data.rfind(b"\n") + 1]
        self.plot_offset += len(data)
        return data

    def _stats_files(self) -> dict[str, bytes]:
        files = {}
        names = ["fuzzer_stats", *(n for n in SETUP_FILES if n not in self.setup_sent)]
        for name in names:
            try:
                files[name] = (self.root / name).read_bytes()
            except FileNotFoundError:
                continue
            if name in SETUP_FILES:
                self.setup_sent.add(name)
        return files

    def _hits(self) -> np.ndarray | None:
        path = self.root / HITS_FILE
        try:
            mtime = path.stat().st_mtime_ns
            if mtime == self.hits_mtime:
                return None
            counts = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        self.hits_mtime = mtime
        return counts

    def receive(self, delivery: Delivery) -> None:
        """Mirror the peers' new entries and write everyone else's counts."""
        for peer, entries in delivery.entries.items():
            queue = self.sync_dir / peer / "queue"
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


class Worker:
    """Runs one instance and keeps it in touch with the hub until it ends."""

    def __init__(self, name: str, call: Callable[..., Any]) -> None:
        self.name = name
        self.call = call  # call(method, *args): a Hub method run by the hub, its result
        self.stop_event = threading.Event()
        self.base = Path(tempfile.mkdtemp(prefix=f"ffuzz-cluster-{name}-"))

    def stop(self) -> None:
        self.stop_event.set()

    def run(self, seeds: list[File], argv: list[str], cpu: int | None,
            env: dict[str, str], sync_seconds: float) -> Ended:
        """Fuzz with these seeds and ffuzz arguments until ffuzz ends (-V, -E) or stop()."""
        seed_dir, sync_dir = self.base / "seeds", self.base / "sync"
        seed_dir.mkdir()
        for file_name, data in seeds:
            (seed_dir / file_name).write_bytes(data)
        (sync_dir / self.name).mkdir(parents=True)
        exchange = Exchange(sync_dir, self.name)
        log_path = sync_dir / self.name / LOG_NAME
        with open(log_path, "ab") as log:
            process = spawn_ffuzz(["-i", str(seed_dir), "-o", str(sync_dir), *argv], cpu, log,
                                  env)
        try:
            self._follow(process, exchange, sync_seconds)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.sync(exchange)
        ended = Ended(self.name, process.returncode, last_line(log_path))
        shutil.rmtree(self.base, ignore_errors=True)
        return ended

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

    def sync(self, exchange: Exchange) -> None:
        self.call("report", exchange.report())
        exchange.receive(self.call("deliver", self.name, dict(exchange.cursors)))


def node_cpu(slot: int, cores: Sequence[int], environ: Mapping[str, str]) -> int | None:
    """The core for the instance in this slot of its node, among the node's cores: they
    are the campaign's (Ray gave each instance one), so slot k takes the k-th; None with
    AFL_NO_AFFINITY or more instances than cores."""
    if environ.get("AFL_NO_AFFINITY"):
        return None
    return cores[slot] if slot < len(cores) else None


def node_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
