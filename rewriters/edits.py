"""Edit engine: (offset, length, text) edits on the original bytes, applied once.

Rewriters never print the AST back; they describe what to change in the original source and the
engine splices it in one pass. Two kinds of edits exist:

* a *replacement* swaps ``length > 0`` original bytes for new text (an operator token, say);
* a *wrap* inserts a prefix before and a suffix after a byte range; a point insert is a wrap of
  an empty range with no suffix.

Order at one offset is defined without caller bookkeeping: suffixes close before prefixes open;
among suffixes the innermost (shortest range, then the latest added) comes first; among prefixes
the outermost (longest range, then the earliest added) comes first. Hence nested wraps always
nest properly, and of two wraps over the same range the one added first ends up outside.

Refused (``EditConflict``): two replacements that overlap, a wrap that crosses another wrap or
cuts through a replacement, any edit outside the source, and new text holding a line break.
Line structure is part of the contract (the driver maps diagnostics and labels back with ``#line``),
so a replacement that removes line breaks gets them back at its end.
"""

from __future__ import annotations

from dataclasses import dataclass


class EditConflict(ValueError):
    """Raised when a new edit cannot coexist with the edits already collected."""


@dataclass(frozen=True)
class Replacement:
    """Replace ``length`` bytes at ``offset`` with ``text``."""

    offset: int
    length: int
    text: str

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True)
class Wrap:
    """Insert ``prefix`` at ``start`` and ``suffix`` at ``end`` (``start <= end``)."""

    start: int
    end: int
    prefix: str
    suffix: str
    seq: int


class EditSet:
    """Collects edits on one source buffer and applies them once, in a defined order."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self._replacements: list[Replacement] = []
        self._wraps: list[Wrap] = []

    def __len__(self) -> int:
        return len(self._replacements) + len(self._wraps)

    def checkpoint(self) -> tuple[int, int]:
        """A mark to ``rollback`` to, e.g. when one site's edits turn out to conflict."""
        return len(self._replacements), len(self._wraps)

    def rollback(self, mark: tuple[int, int]) -> None:
        del self._replacements[mark[0]:]
        del self._wraps[mark[1]:]

    def replace(self, offset: int, length: int, text: str) -> None:
        """Replace ``source[offset:offset+length]`` (``length > 0``) with ``text``."""
        if length <= 0:
            raise EditConflict("a replacement must cover at least one byte; use insert()")
        self._check_bounds(offset, offset + length)
        _check_single_line(text)
        removed_breaks = self.source.count(b"\n", offset, offset + length)
        new = Replacement(offset, length, text + "\n" * removed_breaks)
        for old in self._replacements:
            if new.offset < old.end and old.offset < new.end:
                raise EditConflict(f"replacement {new} overlaps {old}")
        for wrap in self._wraps:
            self._check_wrap_vs_replacement(wrap, new)
        self._replacements.append(new)

    def insert(self, offset: int, text: str) -> None:
        """Insert ``text`` at ``offset``; it goes after every prefix opening there."""
        self.wrap(offset, offset, text, "")

    def wrap(self, start: int, end: int, prefix: str, suffix: str) -> None:
        """Surround ``source[start:end]`` with ``prefix`` and ``suffix``."""
        if start > end:
            raise EditConflict(f"wrap range {start}..{end} is reversed")
        self._check_bounds(start, end)
        _check_single_line(prefix + suffix)
        new = Wrap(start, end, prefix, suffix, len(self._wraps))
        for old in self._wraps:
            crosses = (old.start < new.start < old.end < new.end) or (
                new.start < old.start < new.end < old.end
            )
            if crosses:
                raise EditConflict(f"wrap {start}..{end} crosses wrap {old.start}..{old.end}")
        for rep in self._replacements:
            self._check_wrap_vs_replacement(new, rep)
        self._wraps.append(new)

    def apply(self) -> bytes:
        """Return the source with every edit spliced in."""
        pieces: list[bytes] = []
        cursor = 0
        replacements = {rep.offset: rep for rep in self._replacements}
        for offset in sorted(self._insert_offsets() | set(replacements)):
            pieces.append(self.source[cursor:offset])
            cursor = offset
            pieces.append(self._inserts_at(offset).encode(errors="surrogateescape"))
            if offset in replacements:
                rep = replacements[offset]
                pieces.append(rep.text.encode(errors="surrogateescape"))
                cursor = rep.end
        pieces.append(self.source[cursor:])
        return b"".join(pieces)

    def _insert_offsets(self) -> set[int]:
        return {w.start for w in self._wraps} | {w.end for w in self._wraps}

    def _inserts_at(self, offset: int) -> str:
        closing = [w for w in self._wraps if w.end == offset and w.suffix]
        closing.sort(key=lambda w: (w.end - w.start, -w.seq))
        opening = [w for w in self._wraps if w.start == offset and w.prefix]
        opening.sort(key=lambda w: (-(w.end - w.start), w.seq))
        return "".join(w.suffix for w in closing) + "".join(w.prefix for w in opening)

    def _check_bounds(self, start: int, end: int) -> None:
        if start < 0 or end > len(self.source):
            raise EditConflict(f"edit {start}..{end} outside the source (0..{len(self.source)})")

    @staticmethod
    def _check_wrap_vs_replacement(wrap: Wrap, rep: Replacement) -> None:
        for point in (wrap.start, wrap.end):
            if rep.offset < point < rep.end:
                raise EditConflict(f"wrap {wrap.start}..{wrap.end} cuts replacement {rep}")


def _check_single_line(text: str) -> None:
    if "\n" in text or "\r" in text:
        raise EditConflict(f"inserted text would shift lines: {text!r}")
