"""Where labels go (à la carte): files and functions the user selected.

Accepts ``--only`` glob patterns, ``--only-func`` names and AFL++'s allowlist
format (``AFL_LLVM_ALLOWLIST``): one entry per line, ``src: glob`` or
``fun: name`` (a bare entry is a source), ``#`` comments, and an entry matches
a path by suffix, so ``src: parser.c`` selects ``lib/parser.c``.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

from .errors import FfccError


@dataclass(frozen=True)
class Selection:
    """Selected files (empty: all) and functions (empty: all)."""

    file_patterns: tuple[str, ...] = ()
    functions: frozenset[str] = frozenset()

    def wants_file(self, path: str) -> bool:
        if not self.file_patterns:
            return True
        candidates = {path, os.path.abspath(path)}
        return any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, "*/" + pattern)
                   for c in candidates for pattern in self.file_patterns)


def read_allowlist(path: str) -> tuple[list[str], list[str]]:
    """(source patterns, function names) of an AFL++-style allowlist file."""
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as err:
        raise FfccError(f"ffcc: error: cannot read allowlist {path}: {err.strerror}", 2) from err
    sources, functions = [], []
    for line in lines:
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        kind, sep, value = entry.partition(":")
        kind, value = (kind.strip().lower(), value.strip()) if sep else ("src", entry)
        if kind in ("src", "source"):
            sources.append(value)
        elif kind in ("fun", "function"):
            functions.append(value)
        else:
            raise FfccError(f"ffcc: error: {path}: unknown allowlist entry '{line.strip()}'", 2)
    return sources, functions


def make_selection(only_files: tuple[str, ...], only_funcs: tuple[str, ...],
                   allowlist: str | None) -> Selection:
    files, funcs = list(only_files), list(only_funcs)
    if allowlist:
        listed_files, listed_funcs = read_allowlist(allowlist)
        files += listed_files
        funcs += listed_funcs
    return Selection(tuple(files), frozenset(funcs))
