"""Where labels go (à la carte): files and functions the user selected, and never in a build
system's probes of the compiler (``configure_probe``).

Accepts ``--only`` glob patterns, ``--only-func`` names and AFL++'s allowlist
format (``AFL_LLVM_ALLOWLIST``): one entry per line, ``src: glob`` or
``fun: name`` (a bare entry is a source), ``#`` comments, and an entry matches
a path by suffix, so ``src: parser.c`` selects ``lib/parser.c``.
"""

from __future__ import annotations

import fnmatch
import os
import re
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


# What build systems compile only to learn about the compiler and the system, and then delete:
# autoconf's conftest.c (its program conftest), zlib's configure's ztest<pid>.c, CMake's
# compiler identification and try_compile projects, Meson's sanity checks.
_PROBE_SOURCE = re.compile(r"(^|/)(conftest\.c|ztest\d+\.c)$"
                           r"|/CMakeFiles/(CMakeTmp|CMakeScratch|[0-9.]+/CompilerIdC)/"
                           r"|/meson-private/")
_PROBE_PROGRAM = re.compile(r"(^|/)(conftest(\.exe)?|ztest\d+)$")


def configure_probe(sources: list[str], output: str | None) -> bool:
    """Whether a command builds a build system's probe, which gets no labels: a configure
    script compiles hundreds (jq's: a labelled probe cost 0.14 s of CPU, an unlabelled one
    0.09, gcc's 0.04), runs some of them once and deletes them all. Its C ``sources`` are all
    probes, or it has none and links a probe program ``output``."""
    if sources:
        return all(_PROBE_SOURCE.search(os.path.abspath(path)) for path in sources)
    return output is not None and _PROBE_PROGRAM.search(output) is not None


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
