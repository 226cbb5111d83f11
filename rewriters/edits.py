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

import bisect
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
    """Collects edits on one source buffer and applies them once, in a defined order.

    Conflict checks look only at edits near the new one (sorted offsets, bisect), so a file
    with thousands of edits costs n log n, not n squared.
    """

    def __init__(self, source: bytes) -> None:
        self.source = source
        self._replacements: list[Replacement] = []
        self._wraps: list[Wrap] = []
        self._by_start: list[tuple[int, int]] = []   # (wrap start, wrap seq), sorted
        self._by_end: list[tuple[int, int]] = []     # (wrap end, wrap seq), sorted
        self._rep_offsets: list[int] = []            # replacement offsets, sorted
        self._rep_at: dict[int, Replacement] = {}

    def __len__(self) -> int:
        return len(self._replacements) + len(self._wraps)

    def checkpoint(self) -> tuple[int, int]:
        """A mark to ``rollback`` to, e.g. when one site's edits turn out to conflict."""
        return len(self._replacements), len(self._wraps)

    def rollback(self, mark: tuple[int, int]) -> None:
        for rep in self._replacements[mark[0]:]:
            self._rep_offsets.remove(rep.offset)
            del self._rep_at[rep.offset]
        for wrap in self._wraps[mark[1]:]:
            self._by_start.remove((wrap.start, wrap.seq))
            self._by_end.remove((wrap.end, wrap.seq))
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
        for old in self._replacements_overlapping(new.offset, new.end):
            raise EditConflict(f"replacement {new} overlaps {old}")
        for index in (self._by_start, self._by_end):
            lo = bisect.bisect_right(index, (new.offset, len(self._wraps)))
            hi = bisect.bisect_left(index, (new.end, -1))
            for _, seq in index[lo:hi]:
                self._check_wrap_vs_replacement(self._wraps[seq], new)
        self._replacements.append(new)
        self._rep_at[new.offset] = new
        bisect.insort(self._rep_offsets, new.offset)

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
        # A crossing wrap starts strictly inside the new range and ends after it, or ends
        # strictly inside it and starts before it.
        inside_starts = self._by_start[bisect.bisect_right(self._by_start, (start, new.seq)):
                                       bisect.bisect_left(self._by_start, (end, -1))]
        inside_ends = self._by_end[bisect.bisect_right(self._by_end, (start, new.seq)):
                                   bisect.bisect_left(self._by_end, (end, -1))]
        for old in (self._wraps[seq] for _, seq in inside_starts + inside_ends):
            if old.start < start < old.end < end or start < old.start < end < old.end:
                raise EditConflict(f"wrap {start}..{end} crosses wrap {old.start}..{old.end}")
        for point in (start, end):
            for rep in self._replacements_overlapping(point, point):
                self._check_wrap_vs_replacement(new, rep)
        self._wraps.append(new)
        bisect.insort(self._by_start, (start, new.seq))
        bisect.insort(self._by_end, (end, new.seq))

    def apply(self) -> bytes:
        """Return the source with every edit spliced in."""
        opening: dict[int, list[Wrap]] = {}
        closing: dict[int, list[Wrap]] = {}
        for wrap in self._wraps:
            if wrap.prefix:
                opening.setdefault(wrap.start, []).append(wrap)
            if wrap.suffix:
                closing.setdefault(wrap.end, []).append(wrap)
        replacements = self._rep_at
        pieces: list[bytes] = []
        cursor = 0
        for offset in sorted(opening.keys() | closing.keys() | replacements.keys()):
            pieces.append(self.source[cursor:offset])
            cursor = offset
            pieces.append(_inserts(opening.get(offset, []), closing.get(offset, []))
                          .encode(errors="surrogateescape"))
            if offset in replacements:
                rep = replacements[offset]
                pieces.append(rep.text.encode(errors="surrogateescape"))
                cursor = rep.end
        pieces.append(self.source[cursor:])
        return b"".join(pieces)

    def _replacements_overlapping(self, start: int, end: int) -> list[Replacement]:
        """Replacements sharing a byte with [start, end), or strictly around a point."""
        hi = bisect.bisect_left(self._rep_offsets, max(end, start + 1))
        lo = max(0, bisect.bisect_left(self._rep_offsets, start) - 1)
        return [self._rep_at[offset] for offset in self._rep_offsets[lo:hi]
                if self._rep_at[offset].end > start]

    def _check_bounds(self, start: int, end: int) -> None:
        if start < 0 or end > len(self.source):
            raise EditConflict(f"edit {start}..{end} outside the source (0..{len(self.source)})")

    @staticmethod
    def _check_wrap_vs_replacement(wrap: Wrap, rep: Replacement) -> None:
        for point in (wrap.start, wrap.end):
            if rep.offset < point < rep.end:
                raise EditConflict(f"wrap {wrap.start}..{wrap.end} cuts replacement {rep}")


def _inserts(opening: list[Wrap], closing: list[Wrap]) -> str:
    """Text inserted at one offset: suffixes innermost first, then prefixes outermost first."""
    closing = sorted(closing, key=lambda w: (w.end - w.start, -w.seq))
    opening = sorted(opening, key=lambda w: (-(w.end - w.start), w.seq))
    return "".join(w.suffix for w in closing) + "".join(w.prefix for w in opening)


def _check_single_line(text: str) -> None:
    if "\n" in text or "\r" in text:
        raise EditConflict(f"inserted text would shift lines: {text!r}")
