"""Static archives (ar's common format, as GNU ar and llvm-ar write it on Linux): read their
members, write a copy with some members' contents replaced.

relink.py rebuilds a drop-in program whose labelled objects sit in the build's own archives
(libtool's convenience libraries, coreutils' lib/libcoreutils.a); a copy with those members
compiled again keeps every member, name and order, so the linker picks the same ones.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"!<arch>\n"
HEADER_SIZE = 60
SIZE_FIELD = slice(48, 58)
# The symbol index, which a copy leaves to ``ar s`` to write again (its offsets change).
INDEX_NAMES = (b"/ ", b"/SYM64/ ")


class ArchiveError(Exception):
    """An archive this module cannot read (thin archives name their members' files)."""


@dataclass(frozen=True)
class Member:
    header: bytes  # its 60-byte header as the archive has it
    data: bytes

    @property
    def name(self) -> str:
        """Its name as the header spells it (a long name as its offset, ``/123``)."""
        name = self.header[:16].decode(errors="replace").rstrip()
        return name[:-1] if name.endswith("/") and name != "/" else name

    @property
    def is_index(self) -> bool:
        return self.header.startswith(INDEX_NAMES)


def is_archive(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def read_members(path: str | Path) -> list[Member]:
    """Every member of the archive at ``path``, its index and long-name table included."""
    data = Path(path).read_bytes()
    if not data.startswith(MAGIC):
        raise ArchiveError(f"{path} is no archive ar can read" if not data.startswith(b"!<thin>")
                           else f"{path} is a thin archive")
    members, offset = [], len(MAGIC)
    while offset + HEADER_SIZE <= len(data):
        header = data[offset:offset + HEADER_SIZE]
        if header[58:60] != b"`\n":
            raise ArchiveError(f"{path}: malformed member header at byte {offset}")
        size = int(header[SIZE_FIELD])
        start = offset + HEADER_SIZE
        members.append(Member(header, data[start:start + size]))
        offset = start + size + (size & 1)
    return members


def write_archive(path: str | Path, members: list[Member]) -> None:
    """An archive of ``members`` (each header's size made its data's) at ``path``, without
    the old symbol index, then indexed again by ``ar s``."""
    with open(path, "wb") as out:
        out.write(MAGIC)
        for member in members:
            if member.is_index:
                continue
            size = str(len(member.data)).encode().ljust(SIZE_FIELD.stop - SIZE_FIELD.start)
            out.write(member.header[:SIZE_FIELD.start] + size + member.header[SIZE_FIELD.stop:])
            out.write(member.data + (b"\n" if len(member.data) & 1 else b""))
    subprocess.run(["ar", "s", str(path)], check=True, capture_output=True)
