"""Parallel campaigns in one sync directory, as AFL++ 4.04c lays them out (-M/-S NAME -o SYNCDIR).

Each instance owns SYNCDIR/NAME (queue/, crashes/, fuzzer_stats, ...).  At every
sync interval an instance looks at its peers' queues and runs each entry it has
not seen yet; only those that give it new coverage join its queue, as
`id:NNNNNN,sync:PEER,src:ID`.  `.synced/PEER` holds the next peer id to look at
(a native-endian u32, as afl-fuzz writes it), so a restarted or resumed
instance does not look at the same entries again.  As in afl-fuzz, a main node
(-M, which leaves an `is_main_node` file) imports from every peer and syncs at
half the interval, a secondary (-S) imports only from main nodes; -F DIR
(main only) imports the files of a foreign fuzzer's queue that changed since
the last look.

FairFuzz's rarity is shared through the same directory: each ffuzz instance
writes its own branch hit counts to NAME/ffuzz_hits.npy at its sync and sums
its peers' latest files, so a peer's counts are at most one of its sync
intervals old.  afl-fuzz peers write no such file: their entries come in, their
counts do not.
"""
from __future__ import annotations

import io
import struct
import time
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.config import SyncSettings
from ffcc.fuzzer.engine.peers import PeerEntry
from ffcc.fuzzer.output.outdir import QUEUE, SYNCED, OutputDir, id_of
from ffcc.runtime.files import write_atomic

MAIN_MARK = "is_main_node"
HITS_FILE = "ffuzz_hits.npy"
FOREIGN = "foreign"      # the peer name afl-fuzz gives entries from -F directories
_NEXT_ID = struct.Struct("=I")


class SyncDir:
    """This instance's view of the sync directory: what is new in its peers' queues and
    what its peers counted (the engine's PeerSync)."""

    def __init__(self, outdir: OutputDir, settings: SyncSettings) -> None:
        self.outdir = outdir
        self.settings = settings
        self.sync_dir = outdir.root.parent
        self.synced = outdir.root / SYNCED
        self._foreign_seen: dict[Path, float] = {}  # file -> mtime when imported
        self._next_sync = 0.0
        if settings.main:
            write_atomic(outdir.root / MAIN_MARK, b"")

    def due(self) -> bool:
        """Whether the interval is up (a main node syncs twice as often, as in afl-fuzz)."""
        now = time.monotonic()
        if now < self._next_sync:
            return False
        interval = self.settings.interval / (2 if self.settings.main else 1)
        self._next_sync = now + interval
        return True

    def peers(self) -> list[str]:
        """Peer instance names this one imports from, in name order."""
        names = []
        for path in sorted(self.sync_dir.iterdir()):
            if path.name.startswith(".") or path.name == self.settings.name:
                continue
            if not (path / QUEUE).is_dir():
                continue
            if self.settings.main or (path / MAIN_MARK).exists():
                names.append(path.name)
        return names

    def next_id(self, peer: str) -> int:
        """The first id of the peer not looked at yet."""
        try:
            data = (self.synced / peer).read_bytes()
        except FileNotFoundError:
            return 0
        return _NEXT_ID.unpack(data)[0] if len(data) == _NEXT_ID.size else 0

    def new_entries(self, peer: str) -> list[PeerEntry]:
        """The peer's queue entries from its .synced id on, in id order."""
        first = self.next_id(peer)
        found = []
        for path in (self.sync_dir / peer / QUEUE).iterdir():
            number = id_of(path.name)
            if number is not None and number >= first and path.is_file():
                found.append(PeerEntry(peer, number, path))
        return sorted(found, key=lambda e: e.source)

    def done(self, peer: str, entries: list[PeerEntry]) -> None:
        """Remember that the peer's entries up to these are looked at."""
        if entries:
            write_atomic(self.synced / peer, _NEXT_ID.pack(entries[-1].source + 1))

    def foreign_entries(self) -> list[PeerEntry]:
        """Files in the -F directories that are new or changed since the last look."""
        found = []
        for directory in self.settings.foreign:
            for position, path in enumerate(sorted(directory.iterdir())):
                if path.name.startswith(".") or not path.is_file():
                    continue
                mtime = path.stat().st_mtime
                if self._foreign_seen.get(path) != mtime and path.stat().st_size > 0:
                    self._foreign_seen[path] = mtime
                    found.append(PeerEntry(FOREIGN, position, path))
        return found

    # -- FairFuzz hit counts -------------------------------------------------

    def share_hits(self, own: np.ndarray) -> None:
        """Write this instance's own branch hit counts for its peers."""
        buffer = io.BytesIO()
        np.save(buffer, own)
        write_atomic(self.outdir.root / HITS_FILE, buffer.getvalue())

    def peer_hits(self, map_size: int) -> np.ndarray:
        """The sum of every peer's latest hit counts for a map of this size (a peer with
        another map size, or whose file cannot be read yet, adds nothing)."""
        total = np.zeros(map_size, np.uint64)
        for path in self.sync_dir.iterdir():
            if path.name == self.settings.name or path.name.startswith("."):
                continue
            counts = _read_hits(path / HITS_FILE)
            if counts is not None and counts.shape == (map_size,):
                total += counts
        return total


def _read_hits(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
