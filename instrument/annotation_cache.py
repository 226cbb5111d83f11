"""Annotations kept for the next compile of the same unit.

libtool compiles each source of a library twice, for the shared library (``-fPIC -DPIC``) and
for the static one, and zlib's and bzip2's Makefiles do the same.  Annotating a unit costs
about as much as compiling its labelled code, and the second compile's annotation is the
first's: the rewriters read nothing but the source, the headers it includes and the options
that decide the code (``plan.parse_flags``).  So each annotation is kept, compressed, in the
private directory of this user's compile servers (client.socket_dir), under a key of
everything it was made from but its inputs' contents: this installation's code, the source's
path, those options, the label options and the labels compiled out.  An entry serves while
every input keeps its modification time and size (what make trusts too), and is removed once
unused for ``KEEP_SECONDS``.  A modification time only moves with the kernel's clock tick, so
an input changed in the last two seconds (configure's config.h when make starts) is kept with
a digest of its contents too, compared on every use; one changed while the command read it, or
just before, is not kept.

Position-independent code is left out of the key, so that both compiles of a library source
share one entry: ``-fPIC`` only defines ``__PIC__`` and ``__pic__`` (``-fPIE`` ``__PIE__``
and ``__pie__``), libtool's ``-DPIC`` only ``PIC``.  An entry whose inputs spell none of those
names serves either compile; one whose inputs do serves only the same PIC options.

``FFCC_ANNOTATION_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
import re
import string
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ffcc.runtime.files import write_atomic

from .client import installation_id, private_dir, socket_dir

if TYPE_CHECKING:
    from ffcc.rewriters import Annotation, LabelOptions

ENABLED_ENV = "FFCC_ANNOTATION_CACHE"
# A library's two compiles of a unit are seconds apart, zlib's a whole make apart; entries
# unused for longer are removed when the next one is stored.
KEEP_SECONDS = 600.0
# An input modified this recently is not trusted to change its time when it changes again: a
# file's modification time only moves with the kernel's clock tick, and a build may rewrite a
# generated file within one (ccache's direct mode has the same rule).  Its contents' digest
# is kept too.
TOO_RECENT_SECONDS = 2.0
# An input modified less than this before a command began to read it may have changed while
# it was read (a clock tick is a few milliseconds): it is not kept.
READ_MARGIN_SECONDS = 0.1
# At most this many bytes of entries (XDG_RUNTIME_DIR is a small tmpfs): the least recently
# used go first.
KEEP_BYTES = 256 << 20
# The options that choose position-independent code; the last one decides.
PIC_MODEL = re.compile(r"-f(no-)?(pic|PIC|pie|PIE)$")
# Those and libtool's -DPIC: what the two compiles of a library source differ in.
PIC_OPTION = re.compile(PIC_MODEL.pattern + r"|-[DU]PIC(=.*)?$")
# The macro names the PIC options define: a unit that spells one may be other code as PIC.
PIC_WORDS = (b"PIC", b"__PIC__", b"__pic__", b"__PIE__", b"__pie__")
_IDENTIFIER_BYTES = frozenset((string.ascii_letters + string.digits + "_").encode())
_ENTRY_PREFIX = "annotations-"
_Kind = TypeVar("_Kind")


# (path, modification time in ns, size, digest of its contents if modified TOO_RECENT_SECONDS
# before it was kept)
Stamp = tuple[str, int, int, bytes | None]


@dataclass
class _Entry:
    inputs: list[Stamp]
    pic_options: tuple[str, ...] | None  # the PIC options it needs; None: any
    annotation: Annotation


def cached_annotation(path: str, args: list[str], options: LabelOptions,
                      compiled_out: frozenset[int],
                      make: Callable[[str | None], Annotation]) -> Annotation:
    """``make(directory)``'s annotation of ``path``, or the one kept from a compile of the same
    unit.  ``directory`` is where the rewriters may keep precompiled preambles (None: the cache
    is off), removed when unused as the entries are."""
    directory = cache_directory()
    if directory is None:
        return make(None)
    started = time.time()
    pic = tuple(arg for arg in args if PIC_OPTION.match(arg))
    key = _key(path, [arg for arg in args if not PIC_OPTION.match(arg)], options, compiled_out)
    where = os.path.join(directory, key)
    entry = load_entry(where, _Entry)
    if entry is not None and _serves(entry, pic):
        os.utime(where)
        return entry.annotation
    annotation = make(directory)
    inputs = kept_inputs([os.path.abspath(path), *annotation.headers], started)
    if inputs is not None:
        stamps, pic_words = inputs
        store_entry(where, _Entry(stamps, pic if pic_words else None, annotation))
    return annotation


def cache_directory() -> str | None:
    """This installation's entries, in the servers' private directory; None when off."""
    if os.environ.get(ENABLED_ENV, "1") == "0":
        return None
    parent = socket_dir()
    if not private_dir(parent):
        return None
    directory = os.path.join(parent, _ENTRY_PREFIX + _installation())
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return directory


@functools.cache
def _installation() -> str:
    return installation_id()  # once per process: it reads every source file's status


def _key(path: str, args: list[str], options: LabelOptions, compiled_out: frozenset[int]) -> str:
    return entry_key((os.path.abspath(path), args, canonical(options), sorted(compiled_out)))


def entry_key(made_of: object) -> str:
    """The name of the entry made of ``made_of`` (canonical values: its repr is its identity)."""
    return hashlib.blake2b(repr(made_of).encode(errors="surrogateescape"),
                           digest_size=16).hexdigest()


def canonical(value: object) -> object:
    """``value`` as something whose repr is the same in every process: sets sorted, a
    function by its name (its repr holds its address)."""
    if isinstance(value, (frozenset, set)):
        return sorted(canonical(v) for v in value)  # type: ignore[type-var]
    if isinstance(value, functools.partial):
        return (canonical(value.func), [canonical(a) for a in value.args],
                sorted(value.keywords.items()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value)]
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', value)}"
    return value


def load_entry(where: str, kind: type[_Kind]) -> _Kind | None:
    """The entry kept at ``where``, if there is one of that kind."""
    try:
        with open(where, "rb") as stored:
            entry = pickle.loads(zlib.decompress(stored.read()))
    except (OSError, zlib.error, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    return entry if isinstance(entry, kind) else None


def _serves(entry: _Entry, pic: tuple[str, ...]) -> bool:
    if entry.pic_options is not None and entry.pic_options != pic:
        return False
    return unchanged(entry.inputs)


def unchanged(inputs: list[Stamp]) -> bool:
    """Whether every input still has the modification time, size (and contents, where a
    digest was kept) it was kept with."""
    for path, mtime, size, digest in inputs:
        if _status(path) != (mtime, size):
            return False
        if digest is not None and ((text := _read(path)) is None or _digest(text) != digest):
            return False
    return True


def _status(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).digest()


def kept_inputs(paths: list[str], since: float, words: tuple[bytes, ...] = PIC_WORDS
                ) -> tuple[list[Stamp], frozenset[bytes]] | None:
    """The stamps of a unit's inputs and which of ``words`` (by default the PIC macro names)
    they spell, or None when one is gone or was modified after, or just before, ``since``
    (when the command began to read them: time.time())."""
    recent = (time.time() - TOO_RECENT_SECONDS) * 1e9
    read = (since - READ_MARGIN_SECONDS) * 1e9
    stamps: list[Stamp] = []
    texts = []
    for path in paths:
        status, text = _status(path), _read(path)
        if status is None or text is None or status[0] > read:
            return None
        stamps.append((path, *status, _digest(text) if status[0] > recent else None))
        texts.append(text)
    return stamps, frozenset(word for word in words if any(spells(text, word) for text in texts))


def spells(text: bytes, word: bytes) -> bool:
    """Whether ``text`` has ``word`` as a whole identifier.  A search for each word
    (bytes.find) rather than one regular expression, which tries every position: a unit's
    headers are some 600 kB, searched twice a compile (here and object_cache.py)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or text[at - 1] not in _IDENTIFIER_BYTES) and (
                end == len(text) or text[end] not in _IDENTIFIER_BYTES):
            return True
        at = text.find(word, at + 1)
    return False


def store_entry(where: str, entry: object) -> None:
    """Keep ``entry`` at ``where`` (written whole or not at all), and remove entries unused
    for long."""
    try:
        write_atomic(where, zlib.compress(pickle.dumps(entry, pickle.HIGHEST_PROTOCOL), 1))
    except OSError:
        return
    _remove_unused(os.path.dirname(where))


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as source:
            return source.read()
    except OSError:
        return None


def _remove_unused(directory: str) -> None:
    """Remove this installation's entries unused for ``KEEP_SECONDS`` or past ``KEEP_BYTES``,
    and other installations' directories unused for ``KEEP_SECONDS``."""
    oldest = time.time() - KEEP_SECONDS
    kept = 0
    for mtime, size, path in sorted(_statuses(directory), reverse=True):
        kept += size
        if mtime < oldest or kept > KEEP_BYTES:
            _remove(path)
    parent = os.path.dirname(directory)
    for other in _listing(parent):
        if (other.name.startswith(_ENTRY_PREFIX) and other.path != directory
                and _mtime(other.path) < oldest):
            for entry in _listing(other.path):
                _remove(entry.path)
            try:
                os.rmdir(other.path)
            except OSError:
                pass


def _statuses(directory: str) -> list[tuple[float, int, str]]:
    """(modification time, size, path) of each file in ``directory``, one stat each."""
    found = []
    for entry in _listing(directory):
        try:
            info = entry.stat()
        except OSError:
            continue
        found.append((info.st_mtime, info.st_size, entry.path))
    return found


def _listing(directory: str) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(directory))
    except OSError:
        return []


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return float("inf")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
