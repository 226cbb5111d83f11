"""What the campaign needs of the other instances in a sync directory (-M/-S): their new
queue entries and their FairFuzz hit counts.  parallel/sync.py's SyncDir provides them; the
command line hands it to the campaign, so the engine never imports parallel/.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np


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
