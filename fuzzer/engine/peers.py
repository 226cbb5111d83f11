"""The campaign and the other instances of its sync directory (-M/-S): what it needs of them
(PeerSync: their new queue entries and FairFuzz hit counts) and its sync step (PeerImports).
parallel/sync.py's SyncDir is a PeerSync; the command line hands it to the campaign, so the
engine never imports parallel/.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ffcc.fuzzer.engine.executor import Executor
from ffcc.fuzzer.engine.progress import Progress


@dataclass(frozen=True)
class PeerEntry:
    """A queue file of another instance (or of a foreign fuzzer's directory, -F)."""

    peer: str      # the peer's instance name, or "foreign"
    source: int    # the id it had there (a foreign file's position)
    path: Path


class PeerSync(Protocol):
    """This instance's view of its peers, as the campaign's sync step uses it."""

    def due(self) -> bool:
        """Whether the sync interval is up (and the next one starts now)."""
        ...

    def peers(self) -> list[str]:
        """The names of the peers this instance imports from."""
        ...

    def new_entries(self, peer: str) -> list[PeerEntry]:
        """The peer's entries not looked at yet, in id order."""
        ...

    def done(self, peer: str, entries: list[PeerEntry]) -> None:
        """Remember that the peer's entries up to these are looked at."""
        ...

    def foreign_entries(self) -> list[PeerEntry]:
        """Files of the -F directories that are new or changed."""
        ...

    def share_hits(self, own: np.ndarray) -> None:
        """Offer this instance's branch hit counts to the peers."""
        ...

    def peer_hits(self, map_size: int) -> np.ndarray:
        """The peers' latest hit counts, summed, for a map of this size."""
        ...


class PeerImports:
    """The campaign's sync step: when the sync interval is up, between two entries, import
    what is new in the peers' queues and -F directories, then share this instance's hit
    counts and take the peers' latest, which FairFuzz's rarity adds to its own."""

    def __init__(self, sync: PeerSync | None, import_entry: Callable[[PeerEntry], None],
                 executor: Executor, progress: Progress) -> None:
        self.sync = sync  # None: a lone instance, which never syncs
        self.import_entry = import_entry  # the campaign's Findings.import_entry
        self.executor = executor
        self.progress = progress
        self.hits: np.ndarray | None = None  # the peers' summed counts, as of the last sync

    def step(self, stopping: Callable[[], bool]) -> None:
        """Sync if it is due.  A stop (signal, -V, -E) ends the imports; the next sync or a
        resumed one goes on from the first entry not run."""
        sync = self.sync
        if sync is None or not sync.due():
            return
        self.progress.stage = "sync"
        for peer in sync.peers():
            looked_at = []
            for entry in sync.new_entries(peer):
                if stopping():
                    break
                self.import_entry(entry)
                looked_at.append(entry)
            sync.done(peer, looked_at)
        for entry in sync.foreign_entries():
            if not stopping():
                self.import_entry(entry)
        sync.share_hits(self.executor.branch_hits())
        self.hits = sync.peer_hits(self.executor.map_size)

    def added_to(self, own: np.ndarray) -> np.ndarray:
        """This instance's hit counts plus its peers' as of the last sync."""
        return own if self.hits is None else own + self.hits
