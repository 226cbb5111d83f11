"""Compile one command's C sources with labels: annotate them, compile the annotated copies,
and fall back to the originals when the labelled code does not compile.

``LabelBuilder`` annotates the selected sources of a command into a private directory,
through ffcc.rewriters, with the preamble labels.py writes (what a label compiles to);
``compile_with_labels`` runs the backend command on those copies.  A unit that cannot have
labels (libclang cannot parse it, its labelled code does not compile) is built from its
original with a warning, or fails the command under ``--labels-required``; either way its
object records why (labels.unlabelled_record), for the build summary.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ffcc.runtime.abi import RETIRED

from . import zygote
from .annotation_cache import cached_annotation
from .command_line import CompilerCommand, Source
from .errors import say
from .invocation import Invocation
from .labels import UnitLabel, labeldb_asm, preamble, unit_db, unit_id, unlabelled_record
from .plan import assembler_flags, labelled_argv, parse_flags
from .selection import Selection

DB_FILE_SUFFIX = ".ffcc-labels"  # beside an annotated copy: its label records (labels.unit_db)

if TYPE_CHECKING:
    from ffcc.rewriters import LabelOptions
    from ffcc.rewriters.model import BoundedDecision, Label

    from .object_cache import KeptObject
    from .prune.pruner import Pruner


@dataclass(frozen=True)
class LabelSettings:
    """What every unit of one ffcc command line is labelled with: which labels (``options``,
    ``selection``, the parse's ``macros``), the form they compile to, which of them compile to
    nothing, and what becomes of a unit that cannot have them.  Fixed for the command, so one
    value is handed around instead of a builder's worth of flags."""

    options: LabelOptions
    selection: Selection
    macros: tuple[str, ...]  # predefined for the parse (toolchain.predefined_macros)
    branch_free: bool = True  # labels for ffcc's runtime, else branches for a foreign fuzzer
    clang_backend: bool = False  # the backend is clang (plan.assembler_flags)
    gates: bool = False  # --label-gates: retired sites skip their label code (branch-free only)
    labels_required: bool = False  # a unit that cannot have labels fails the command
    retired: frozenset[tuple[str, int]] = frozenset()  # (file, position): compiled to nothing
    keep_dir: str | None = None  # --keep-annotated: a copy of every annotated unit goes here
    verbose: bool = False
    invocation: Invocation | None = None  # a drop-in run: each unit records it (relink.py)

    @property
    def gated(self) -> bool:
        """Whether sites get gate bytes: gates only exist in the branch-free form."""
        return self.gates and self.branch_free

    def retired_in(self, source: str) -> frozenset[int]:
        """The positions of ``source``'s labels that compile to nothing."""
        path = os.path.abspath(source)
        return frozenset(index for file, index in self.retired if file == path)


@dataclass
class LabelledUnit:
    """One source compiled with labels: where its annotated copy is, what it holds."""

    source: str
    annotated: str
    label_count: int
    by_criterion: dict[str, int] = field(default_factory=dict)
    left_out: int = 0
    inputs: tuple[str, ...] = ()  # what it was made of: the source and its headers
    read_since: float = 0.0  # when the command began to read them (time.time())


@dataclass(frozen=True)
class UnlabelledUnit:
    """A source built without labels because its labelled code did not compile."""

    source: str
    reason: str  # the compiler's first error line


class LabelBuilder:
    """Annotates the selected C sources of one command into a private directory, and keeps
    what became of each (its labelled units, the units without labels and why)."""

    def __init__(self, settings: LabelSettings, pruner: Pruner | None = None) -> None:
        self.settings = settings
        self.pruner = pruner  # gives records a "pruned" verdict before the unit is written
        self.workdir = tempfile.mkdtemp(prefix="ffcc-labels-")
        self.units: list[LabelledUnit] = []
        self.unlabelled: list[UnlabelledUnit] = []  # built without labels, with the reason
        self.unparsed: dict[str, str] = {}  # source -> libclang's first error

    def annotate(self, source: Source, flags: list[str]) -> LabelledUnit | None:
        """Write the annotated copy of one source; None when it gets no labels.

        A file libclang cannot parse is compiled as it is, so the user sees the
        compiler's own diagnostics; so is a file that cannot be read (the compiler says why
        in one line).
        """
        from ffcc.rewriters import annotate
        from ffcc.rewriters.unit import ParseError

        settings = self.settings
        if source.language != "c" or source.path == "-" or not settings.selection.wants_file(source.path):
            return None
        if not os.access(source.path, os.R_OK):
            return None
        args = [*settings.macros, *flags]
        compiled_out = settings.retired_in(source.path)
        started = time.time()
        try:
            result = cached_annotation(
                source.path, args, settings.options, compiled_out,
                lambda preamble_dir: annotate(source.path, args, settings.options, compiled_out,
                                              preamble_dir))
        except ParseError as err:
            self.unparsed[source.path] = str(err).split("; ")[0]
            return None
        if result.bounded:
            _note_bounded(source.path, result.bounded)
        if not result.labels:
            return None
        records = self._records(source.path, result.text, result.labels, flags)
        uid = unit_id(source.path, result.text)
        annotated = self._write_copy(source.path,
                                     unit_db(uid, source.path, records, settings.invocation),
                                     lambda db_file: preamble(
                                         uid, source.path, records, db_file,
                                         settings.branch_free)
                                     + result.text)
        counts: dict[str, int] = {}
        for label in result.labels:
            counts[label.criterion] = counts.get(label.criterion, 0) + 1
        unit = LabelledUnit(source.path, annotated, len(result.labels), counts, result.left_out,
                            (os.path.abspath(source.path), *result.headers), started)
        self.units.append(unit)
        if settings.verbose:
            say(f"ffcc: {source.path}: {unit.label_count} labels "
                f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}), "
                f"{unit.left_out} left out")
        return unit

    def _records(self, source: str, text: str, labels: list[Label],
                 flags: list[str]) -> list[UnitLabel]:
        """The label records of one annotated unit (labels.preamble writes them into its
        object), ``pruned`` by the pruner's analysis and by ``--retired``."""
        records = [UnitLabel(label, self.settings.gated) for label in labels]
        if self.pruner is not None:
            records = self.pruner.mark(source, text, records, [*self.settings.macros, *flags])
        if self.settings.retired:
            retired = self.settings.retired_in(source)
            records = [replace(record, pruned=RETIRED) if record.label.index in retired
                       else record for record in records]
        return records

    def _write_copy(self, source: str, db: str, text: Callable[[str], str]) -> str:
        """Write the annotated text of ``source`` into the private directory, beside its label
        records ``db`` (``text(db_file)`` is the text that reads them from ``db_file``), and
        both into ``--keep-annotated``'s; the annotated copy's path."""
        subdir = tempfile.mkdtemp(dir=self.workdir)  # keeps the basename: -c without -o
        annotated = os.path.join(subdir, os.path.basename(source))
        _write_text(annotated + DB_FILE_SUFFIX, db)
        _write_text(annotated, text(annotated + DB_FILE_SUFFIX))
        _copy_times(source, annotated)
        if self.settings.keep_dir:
            kept = os.path.join(self.settings.keep_dir, os.path.abspath(source).lstrip(os.sep))
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            _write_text(kept + DB_FILE_SUFFIX, db)
            _write_text(kept, text(kept + DB_FILE_SUFFIX))
        return annotated

    def annotate_command(self, command: CompilerCommand) -> list[LabelledUnit]:
        """The labelled units of one command's sources (those that got labels)."""
        flags = parse_flags(command)
        units = (self.annotate(source, flags) for source in command.sources)
        return [unit for unit in units if unit is not None]

    def without_labels(self, units: list[LabelledUnit], reason: str) -> None:
        """Record that ``units`` were built from their original sources."""
        for unit in units:
            self.units.remove(unit)
            self.unlabelled.append(UnlabelledUnit(unit.source, reason))

    def recording_unlabelled(self, argv: list[str], reasons: dict[str, str]) -> list[str]:
        """``argv`` compiling its sources as they are, each of ``reasons`` (source -> why it
        has no labels) recorded in the object (``unlabelled_record``), so that the build
        summary of whatever links it names them."""
        if not reasons:
            return argv
        fd, header = tempfile.mkstemp(suffix=".h", dir=self.workdir)
        with os.fdopen(fd, "w") as out:
            out.write(labeldb_asm([unlabelled_record(source, reason).to_json()
                                   for source, reason in reasons.items()]))
        return [argv[0], "-include", header, *argv[1:]]

    def unparsed_in(self, command: CompilerCommand) -> list[str]:
        """The command's sources libclang could not parse (so they have no labels)."""
        return [source.path for source in command.sources if source.path in self.unparsed]

    def note_unparsed(self, paths: list[str]) -> None:
        """Record sources built without labels because libclang could not parse them (the
        backend could: e.g. gcc's _Decimal64); the build summary lists them."""
        for path in paths:
            reason = unparsed_reason(self.unparsed[path])
            self.unlabelled.append(UnlabelledUnit(path, reason))
            say(f"ffcc: warning: {path}: built without labels, as {reason} "
                "(--labels-required makes this an error)")

    def fix_dependency_files(self, paths: list[str]) -> None:
        """Make -MD output name the original sources, not the annotated copies."""
        for path in paths:
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    text = f.read()
            except OSError:
                continue
            for unit in self.units:
                text = text.replace(unit.annotated, unit.source)
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as out:
        out.write(text)


def _copy_times(source: str, copy: str) -> None:
    """Give ``copy`` the times of ``source``: __TIMESTAMP__ is the compiled file's mtime."""
    times = os.stat(source)
    os.utime(copy, ns=(times.st_atime_ns, times.st_mtime_ns))


def compile_with_labels(argv: list[str], command: CompilerCommand, builder: LabelBuilder,
                        verbose: bool, units: list[LabelledUnit] | None = None,
                        kept: KeptObject | None = None) -> int:
    """Run one backend command with annotated sources (``units``, when the builder has already
    annotated them: annotate_child.py), and keep its object for the unit's next compile
    (``kept``: object_cache.py).  If they do not compile, or libclang
    could not parse a source the backend compiles, the command fails with one line naming
    the first error (``--labels-required``), or is built without those labels with a warning,
    and the builder records which units have no labels."""
    if units is None:
        units = builder.annotate_command(command)
    unparsed = builder.unparsed_in(command)
    if unparsed and builder.settings.labels_required:
        first = unparsed[0]
        builder.unlabelled += [UnlabelledUnit(path, "libclang cannot parse it") for path in unparsed]
        say(f"ffcc: error: {first}: libclang cannot parse it, so it gets no labels "
            f"(--labels-required): {builder.unparsed[first]}")
        return 1
    argv = builder.recording_unlabelled(argv, {path: unparsed_reason(builder.unparsed[path])
                                               for path in unparsed})
    code = _compile(argv, command, units, builder, verbose, kept)
    if code == 0:
        builder.note_unparsed(unparsed)
    return code


def _compile(argv: list[str], command: CompilerCommand, units: list[LabelledUnit],
             builder: LabelBuilder, verbose: bool, kept: KeptObject | None) -> int:
    if not units:
        return zygote.run(argv).returncode
    keeping = None if kept is None else kept.keeping(units[0].inputs, units[0].read_since)
    extra = assembler_flags(command, sum(unit.label_count for unit in units)) \
        if builder.settings.clang_backend else ()
    labelled = labelled_argv(argv, {unit.source: unit.annotated for unit in units}, extra)
    if keeping is not None:  # a compile of one unit (object_cache.kept_object)
        labelled = keeping.argv(labelled)
    if verbose:
        say("ffcc: " + " ".join(labelled))
    trial = zygote.run(labelled, capture=True)
    if trial.returncode == 0:
        sys.stdout.buffer.write(trial.stdout)
        sys.stderr.buffer.write(trial.stderr)
        builder.fix_dependency_files(dependency_outputs(command))
        if keeping is not None:
            keeping.keep()
        return 0
    sources = ", ".join(unit.source for unit in units)
    reason = first_error(trial.stderr)
    if builder.settings.labels_required:
        builder.without_labels(units, reason)
        say(f"ffcc: error: {sources}: labelled code does not compile "
            f"(--labels-required): {reason}")
        return trial.returncode
    original = zygote.run(builder.recording_unlabelled(
        argv, {unit.source: labelled_code_reason(reason) for unit in units}), capture=True)
    sys.stdout.buffer.write(original.stdout)
    sys.stderr.buffer.write(original.stderr)
    if original.returncode == 0:
        builder.without_labels(units, reason)
        say(f"ffcc: warning: {sources}: built without labels, as "
            f"{labelled_code_reason(reason)} (--labels-required makes this an error)")
    return original.returncode


def unparsed_reason(error: str) -> str:
    """Why a unit libclang could not parse has no labels (``error``: libclang's first)."""
    return f"libclang cannot parse it: {error}"


def labelled_code_reason(error: str) -> str:
    """Why a unit whose labelled code failed to compile has no labels (``error``: the
    compiler's first)."""
    return f"the labelled code does not compile: {error}"


_ERROR = re.compile(r"\berror:")


def first_error(stderr: bytes) -> str:
    """The compiler's first error line (else its first line): why labelled code failed."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if _ERROR.search(line)]
    return (errors or lines or ["the compiler gave no message"])[0]


def _note_bounded(source: str, bounded: list[BoundedDecision]) -> None:
    """One line per file: its first decision whose MCC labels cover windows only."""
    first = bounded[0]
    more = f" (and {len(bounded) - 1} more in this file)" if len(bounded) > 1 else ""
    say(f"ffcc: note: {source}:{first.line}: decision with {first.atoms} conditions bounded "
        f"to windows of {first.window} (--mcc-max){more}")


def dependency_outputs(command: CompilerCommand) -> list[str]:
    """The .d files a -MD/-MMD compile writes."""
    if not command.dependency_file:
        return []
    args = command.args
    if "-MF" in args:
        return [args[args.index("-MF") + 1]]
    if command.output:
        return [os.path.splitext(command.output)[0] + ".d"]
    return [os.path.splitext(os.path.basename(s.path))[0] + ".d" for s in command.sources]
