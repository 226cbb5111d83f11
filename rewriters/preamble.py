"""A unit's preamble, the directives it begins with, precompiled once for the units that share it.

libclang spends most of a unit's parse on the headers its first lines include: each of mpfr's
units includes mpfr-impl.h, whose thousands of top-level nodes took 25 ms of a 55 ms
annotation.  The preamble is the run of ``#include``, ``#define``, ``#undef`` and balanced
conditional directives (comments and blank lines between them) before the unit's first other
text.  The second time a preamble is seen, with the same options in the same directory, it is
precompiled (libclang's PCH of a header holding those directives, in the unit's directory so
that quoted includes resolve as the unit's do); from then on a unit that begins with it is
parsed with ``-include-pch``, its preamble blanked in the text libclang reads (offsets and
lines stay), through an index that leaves the PCH's nodes out of the top level
(``excludeDecls``): the rewriters walk the main file's nodes only, and its others' on demand.

What the headers' top level gave them is kept beside the PCH: the files the preamble included
(the driver's annotation cache and the reassociation check read them) and the identifiers of
each of its macros' definitions (``Unit`` follows them to find macros that expand to
``__LINE__``).  clang checks each header's modification time and size as it loads a PCH; one
it refuses, or one gone, is dropped and the unit parsed as it is.  A preamble whose headers
were modified in the last two seconds (clang compares whole seconds) or that has errors is
not precompiled.  The annotations are the same either way (tested).

Files, in the directory the driver gives (its annotation cache's, which removes the unused):
``preamble-<key>.seen`` (seen once), ``.pch`` and ``.kept`` (headers and macros, pickled:
some 2,000 macros, which JSON took a tenth of a unit's annotation to read).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from clang import cindex

from .ops import MainFileExtents, macro_identifiers, macro_names

# One directive, or a comment or white space before the next.
_PIECE = re.compile(rb"\s+|/\*.*?\*/|//[^\n]*|\#[ \t]*(\w*)(?:[^\n\\]|\\.)*", re.S)
_KEPT_DIRECTIVES = {b"include", b"define", b"undef", b"if", b"ifdef", b"ifndef", b"elif",
                    b"else", b"endif"}
_OPENING, _CLOSING = {b"if", b"ifdef", b"ifndef"}, b"endif"
# Names whose value depends on where they are read: a directive other than a definition that
# spells one ends the preamble, as the precompiled header's lines are not the unit's.
_PLACE_NAMES = re.compile(rb"__(?:LINE|FILE|BASE_FILE|INCLUDE_LEVEL|COUNTER)__")
# A header modified this recently may change again without its modification time moving.
_SETTLED_SECONDS = 2.0
_PARSE_OPTIONS = cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD


def preamble_end(source: bytes) -> int:
    """Where the unit's preamble ends: after its last directive that leaves no conditional
    open, before the first text that is no kept directive (0: no preamble)."""
    position = depth = end = 0
    while (piece := _PIECE.match(source, position)) is not None and piece.end() > position:
        name = piece.group(1)
        if name is not None:
            if name not in _KEPT_DIRECTIVES or (
                    name not in (b"define", b"undef") and _PLACE_NAMES.search(piece.group())):
                break
            depth += (name in _OPENING) - (name == _CLOSING)
        position = piece.end()
        if name is not None and depth == 0:
            end = position
    return end


@dataclass(frozen=True)
class Precompiled:
    """A unit parsed with its preamble precompiled, and what the preamble's headers gave."""

    tu: cindex.TranslationUnit
    headers: list[str]                  # every file included, the preamble's first
    macros: dict[str, list[str]]        # the preamble's macros -> their definitions' identifiers


class Preambles:
    """The precompiled preambles kept in ``directory``."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def parse(self, path: str, args: list[str], source: bytes) -> Precompiled | None:
        """``path`` (whose text is ``source``) parsed with its preamble precompiled, or None
        when it is not (yet): the caller parses it as it is."""
        end = preamble_end(source)
        if end == 0:
            return None
        directives = b"\n".join(piece.group() for piece in _PIECE.finditer(source, 0, end)
                                if piece.group(1) is not None) + b"\n"
        base = os.path.join(self.directory, "preamble-" + _key(path, args, directives))
        kept = _load(base + ".kept")
        if kept is None:
            if not _due(base + ".seen"):
                return None
            kept = _precompile(path, args, directives, base)
        if not kept:
            return None
        blanked = bytes(c if c == 10 else 32 for c in source[:end]) + source[end:]
        try:
            tu = cindex.Index.create(excludeDecls=True).parse(
                path, [*args, "-include-pch", base + ".pch"], [(path, blanked)], _PARSE_OPTIONS)
        except cindex.TranslationUnitLoadError:
            tu = None
        if tu is None or _refused(tu):
            _remove(base + ".kept", base + ".pch")
            return None
        if _failed(tu):  # the unit's own errors, which its plain parse reports as they are
            return None
        os.utime(base + ".kept")  # recently used: the cache removes the unused first
        os.utime(base + ".pch")
        local = [inclusion.include.name for inclusion in tu.get_includes()]
        return Precompiled(tu, [*kept["headers"], *local], kept["macros"])


def _key(path: str, args: list[str], directives: bytes) -> str:
    where = (os.getcwd(), os.path.dirname(os.path.abspath(path)), _libclang())
    return hashlib.blake2b(repr((where, args, directives)).encode(errors="surrogateescape"),
                           digest_size=16).hexdigest()


@cache
def _libclang() -> tuple[str, int]:
    """The libclang that reads the PCH: only the one that wrote it can."""
    library = cindex.conf.get_filename()
    try:
        return library, os.stat(library).st_mtime_ns
    except OSError:
        return library, 0


def _due(marker: str) -> bool:
    """Whether the preamble is due to be precompiled: seen before (``marker`` exists), and not
    put off (its modification time is past).  Marks it seen."""
    try:
        return os.stat(marker).st_mtime <= time.time()
    except OSError:
        pass
    try:
        with open(marker, "wb"):
            pass
    except OSError:
        pass
    return False


def _precompile(path: str, args: list[str], directives: bytes, base: str) -> dict | None:
    """Precompile the preamble ``directives`` of ``path``'s unit into ``base``.pch, and keep
    what its top level gives in ``base``.kept; what was kept, or None when it cannot be (with
    errors ``{}`` is kept, so that it is not tried again; with headers modified in the last
    seconds it is put off until they have settled)."""
    # beside the unit, spelled as its path is, so that included files are named as its own are
    header = os.path.join(os.path.dirname(path), f".ffcc-preamble-{os.path.basename(base)}.h")
    started = time.time()
    try:
        tu = cindex.Index.create().parse(
            header, ["-x", "c-header", *args], [(header, directives)],
            _PARSE_OPTIONS | cindex.TranslationUnit.PARSE_INCOMPLETE)
    except cindex.TranslationUnitLoadError:
        return None
    headers = [inclusion.include.name for inclusion in tu.get_includes()]
    if _failed(tu):
        _write_kept(base + ".kept", {})
        return {}
    settled = _settled_at(headers)
    if settled is None or settled > started:
        _put_off(base + ".seen", started if settled is None else settled)
        return None
    kept = {"headers": headers, "macros": _macros(tu, header, len(directives))}
    if not _written(base + ".pch", tu.save):
        return None
    _write_kept(base + ".kept", kept)
    return kept


def _settled_at(headers: list[str]) -> float | None:
    """When the headers will have gone unmodified long enough to be trusted in a PCH (clang
    compares a header's modification time in whole seconds as it loads one); None when one is
    gone."""
    newest = 0.0
    for header in headers:
        try:
            newest = max(newest, os.stat(header).st_mtime)
        except OSError:
            return None
    return newest + _SETTLED_SECONDS


def _put_off(marker: str, until: float) -> None:
    try:
        os.utime(marker, (until, until))
    except OSError:
        pass


def _macros(tu: cindex.TranslationUnit, header: str, size: int) -> dict[str, list[str]]:
    """Every macro defined by the preamble -> the identifiers of its definitions."""
    main = cindex.File.from_name(tu, header)
    definitions = MainFileExtents(tu, main, size).top_level(tu.cursor, cindex.Cursor).definitions
    found: dict[str, set[str]] = {}
    for name, identifiers in zip(macro_names(definitions), macro_identifiers(tu, definitions)):
        found.setdefault(name, set()).update(identifiers)
    return {name: sorted(identifiers) for name, identifiers in found.items()}


def _refused(tu: cindex.TranslationUnit) -> bool:
    """Whether libclang could not use the PCH (a header changed, a file gone): a fatal error."""
    return any(d.severity >= cindex.Diagnostic.Fatal for d in tu.diagnostics)


def _failed(tu: cindex.TranslationUnit) -> bool:
    return any(d.severity >= cindex.Diagnostic.Error for d in tu.diagnostics)


def _load(path: str) -> dict | None:
    try:
        with open(path, "rb") as kept:
            found = pickle.load(kept)
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _write_kept(path: str, value: dict) -> None:
    def write(temporary: str) -> None:
        with open(temporary, "wb") as out:
            pickle.dump(value, out, pickle.HIGHEST_PROTOCOL)
    _written(path, write)


def _written(path: str, write: Callable[[str], object]) -> bool:
    """Whether ``write(temporary)`` wrote ``path`` whole (through a temporary of this
    process's, so that units compiled at once never read half a file)."""
    temporary = f"{path}.{os.getpid()}"
    try:
        write(temporary)
        os.replace(temporary, path)
    except (cindex.TranslationUnitSaveError, OSError):
        _remove(temporary)
        return False
    return True


def _remove(*paths: str) -> None:
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass
