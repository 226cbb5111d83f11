"""Labelled objects kept for the next compile of the same unit.

libtool compiles each library source twice, first as position-independent code for the shared
library (``-fPIC -DPIC``), then for the static one; zlib's Makefile the other way round.  The
annotation cache spares the second annotation (annotation_cache.py), but the second labelled
compile costs what the first did: two to three times a plain one.  Position-independent code
serves a static library and a program as well as a shared library (and programs are
position-independent already where the compiler defaults to ``-fPIE``, as Debian's do): clang's
PIC code is its PIE code but for GOT loads of global variables, which the linker relaxes in a
program.  So every labelled compile of one unit that does not ask for code that is not
position-independent is compiled as PIC (``-fPIC`` added when it asks for none or for PIE)
and its object kept beside the annotations; a later compile of the same unit that differs from
it only in its PIC options and its output gets a copy of it, and the dependency file the first
compile wrote.

An object is kept under a key of everything that makes it but those: this installation, the
working directory, the backend's command line, the environment variables the compiler reads,
the label settings.  It serves while the unit's inputs keep their modification times and sizes,
and the contents of those changed just before it was kept (the annotation cache's rule).  A
unit whose inputs spell a PIC macro name may be different code in each compile: xz's liblzma
gives its shared objects symbol versions under ``PIC`` in a header every unit includes,
though only five units use them.  So such a unit's object carries a digest of its preprocessed
text (the backend's ``-E``, tens of milliseconds where its labelled compile takes seconds),
and serves only a compile whose text has the same digest; it is compiled as PIC on
speculation only if that does not change its text either.  A compile
that asks for code that is not position-independent (``-fno-pic``, ``-fno-pie``), and a unit
whose inputs spell ``__DATE__`` or ``__TIME__`` (each compile has its own time), compile as
asked and keep nothing.
Compiles that write other files (split DWARF, coverage notes, saved temporaries, dumps) or to
standard output, or a dependency file whose targets follow the output's name, are neither kept
nor served, nor are the units of a pruned build (the pruner decides their records), nor
objects of PIC code whose global functions stay interposable (``-fsemantic-interposition``;
gcc's, which cli.py does not keep).
``FFCC_ANNOTATION_CACHE=0`` turns this off with the annotations.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ffcc.runtime.files import write_atomic

from . import zygote
from .annotation_cache import (
    PIC_MODEL,
    PIC_OPTION,
    PIC_WORDS,
    Stamp,
    cache_directory,
    canonical,
    entry_key,
    kept_inputs,
    load_entry,
    store_entry,
    unchanged,
)
from .command_line import CompilerCommand, Mode
from .invocation import RECORDED_ENV

# Options with which a compile writes files besides its object and dependency file, and the
# long spellings of the dependency options, which command_line does not read.
_SIDE_OUTPUT = re.compile(r"-gsplit-dwarf|--coverage|-ftest-coverage|-fprofile-arcs|"
                          r"-fstack-usage|-save-temps|-fdump-|-MJ|-ftime-trace|"
                          r"-fsave-optimization-record|-fcallgraph-info|-aux-info|-Wp,-M|-Wa,.*-a|"
                          r"--serialize-diagnostics|--(write-)?(user-)?dependencies")
# PIC code whose global functions may be replaced at load time, so never inlined: slower.
_INTERPOSABLE = "-fsemantic-interposition"
# The compiler's environment: a key part when set (RECORDED_ENV), or a file it writes.
_KEY_ENV = (*RECORDED_ENV, "GCC_EXEC_PREFIX", "COMPILER_PATH")
_WRITING_ENV = ("DEPENDENCIES_OUTPUT", "SUNPRO_DEPENDENCIES")
_ENTRY_PREFIX = "object-"
# The clock's macros, which each compile sets to its own time: their units keep nothing.
_CLOCK_WORDS = (b"__DATE__", b"__TIME__")
# What a unit's inputs are searched for: those, and the PIC macros the compiles set differently.
_WATCHED_WORDS = PIC_WORDS + _CLOCK_WORDS
# Options that name an output, dropped from a compile to preprocess its unit to stdout.
_OUTPUT_OPTION = frozenset({"-c", "-MD", "-MMD", "-MP"})
_OUTPUT_VALUE = ("-o", "-MF", "-MT", "-MQ")  # with their value, joined or next
# The preprocessor's line markers into its predefined macros and the command line's, which
# count the macros the PIC options define.
_PREDEFINES_MARKER = re.compile(rb'^# \d+ "<(?:built-in|command line)>".*\n', re.MULTILINE)

if TYPE_CHECKING:
    from .labelled_compile import LabelSettings


@dataclass
class _Kept:
    inputs: list[Stamp]
    data: bytes                # the object
    dependencies: str | None   # the dependency file, as the compile left it
    preprocessed: str | None   # its unit's preprocessed digest, when its inputs spell PIC


@dataclass(frozen=True)
class KeptObject:
    """One labelled compile's place among the kept objects."""

    where: str
    output: str
    dependency_file: str | None
    asks_pic: bool   # it asks for PIC code
    takes_pic: bool  # PIC code may stand for what it asks for: served, or compiled as PIC
    unit_argv: tuple[str, ...]  # the compile without its outputs: what preprocesses the unit

    def serve(self) -> bool:
        """Write the kept object (and dependency file) as this compile's; False when none
        serves."""
        if not self.takes_pic:
            return False
        kept = load_entry(self.where, _Kept)
        if kept is None or not unchanged(kept.inputs):
            return False
        if kept.preprocessed is not None and kept.preprocessed != self.preprocessed():
            return False
        if (kept.dependencies is None) != (self.dependency_file is None):
            return False
        try:
            write_atomic(self.output, kept.data)
            if self.dependency_file is not None and kept.dependencies is not None:
                write_atomic(self.dependency_file, kept.dependencies)
            os.utime(self.where)
        except OSError:
            return False  # the compile says why in its own words (a missing directory)
        return True

    def keeping(self, inputs: tuple[str, ...], since: float) -> Keeping | None:
        """How the compile keeps its object, when it may: PIC code stands for what it asks for,
        the unit's ``inputs`` (source and headers, which the command began to read at
        ``since``) spell no clock macro name, and if they spell a PIC macro name, compiling as
        PIC leaves its preprocessed text as it was."""
        if not self.takes_pic:
            return None
        stamped = kept_inputs(list(inputs), since, _WATCHED_WORDS)
        if stamped is None or not stamped[1].isdisjoint(_CLOCK_WORDS):
            return None
        preprocessed = None
        if stamped[1]:
            preprocessed = self.preprocessed()
            if preprocessed is None or (
                    not self.asks_pic and self.preprocessed(("-fPIC",)) != preprocessed):
                return None
        return Keeping(self, stamped[0], preprocessed)

    def preprocessed(self, extra: tuple[str, ...] = ()) -> str | None:
        """The digest of the unit's preprocessed text, compiled with ``extra`` options too;
        None when it does not preprocess.  Its line markers into the predefined macros are
        left out: they count the macros, which the PIC options change."""
        done = zygote.run([*self.unit_argv, *extra, "-E", "-w", "-o", "-"], capture=True)
        if done.returncode != 0:
            return None
        text = _PREDEFINES_MARKER.sub(b"", done.stdout)
        return hashlib.blake2b(text, digest_size=16).hexdigest()


@dataclass(frozen=True)
class Keeping:
    """A labelled compile whose object is kept: compiled as PIC, stored once it compiled."""

    place: KeptObject
    inputs: list[Stamp]  # as they were before the compile read them
    preprocessed: str | None  # the unit's preprocessed digest, when its inputs spell PIC

    def argv(self, argv: list[str]) -> list[str]:
        """The backend command ``argv`` compiling PIC code."""
        return argv if self.place.asks_pic else [*argv, "-fPIC"]

    def keep(self) -> None:
        """After the compile: keep its object and dependency file."""
        try:
            with open(self.place.output, "rb") as obj:
                data = obj.read()
            dependencies = None
            if self.place.dependency_file is not None:
                with open(self.place.dependency_file, encoding="utf-8",
                          errors="surrogateescape") as deps:
                    dependencies = deps.read()
        except OSError:
            return
        store_entry(self.place.where, _Kept(self.inputs, data, dependencies, self.preprocessed))


def kept_object(argv: list[str], command: CompilerCommand, settings: LabelSettings,
                dependency_files: list[str]) -> KeptObject | None:
    """The place of the labelled compile ``argv`` (the backend's command for ``command``,
    of one unit labelled with ``settings``) among the kept objects, or None when its object
    can neither be kept nor served.  ``dependency_files``: the ones the compile writes."""
    if (command.mode is not Mode.COMPILE or len(command.sources) != 1
            or command.output in (None, "", "-")
            or any(_SIDE_OUTPUT.match(arg) for arg in argv) or _INTERPOSABLE in argv
            or any(name in os.environ for name in _WRITING_ENV)
            or len(dependency_files) > 1
            or (dependency_files and not _names_its_targets(command.args))):
        return None
    directory = cache_directory()
    if directory is None:
        return None
    model = [arg for arg in argv if PIC_MODEL.match(arg)]
    made_of = (os.getcwd(), _without_pic_and_output(argv),
               [(name, os.environ.get(name)) for name in _KEY_ENV],
               canonical(dataclasses.replace(settings, invocation=None, verbose=False,
                                             keep_dir=None)))
    return KeptObject(os.path.join(directory, _ENTRY_PREFIX + entry_key(made_of)),
                      command.output, dependency_files[0] if dependency_files else None,
                      asks_pic=bool(model) and model[-1] in ("-fpic", "-fPIC"),
                      takes_pic=not any(arg.startswith("-fno-") for arg in model),
                      unit_argv=_without_outputs(argv))


def _names_its_targets(args: list[str]) -> bool:
    """Whether the dependency file's targets are named (-MT, -MQ) rather than taken from the
    output's name, which differs between the compiles."""
    return any(arg.startswith(("-MT", "-MQ")) for arg in args)


def _without_outputs(argv: list[str]) -> tuple[str, ...]:
    """``argv`` without the options that name its outputs or make it compile."""
    return tuple(_without(argv, _OUTPUT_VALUE, _OUTPUT_OPTION.__contains__))


def _without_pic_and_output(argv: list[str]) -> list[str]:
    return _without(argv, ("-o",), lambda word: bool(PIC_OPTION.match(word)))


def _without(argv: list[str], valued: tuple[str, ...], dropped: Callable[[str], bool]
             ) -> list[str]:
    """``argv`` without the options ``valued`` (with their value, joined or next) and the
    words ``dropped`` picks."""
    words, kept = iter(argv), []
    for word in words:
        if word in valued:
            next(words, None)
        elif not (word.startswith(valued) or dropped(word)):
            kept.append(word)
    return kept
