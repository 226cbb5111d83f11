"""``ffcc --retired=FILE PROGRAM -o LEAN``: a drop-in build's program built again with the
labels FILE lists compiled to nothing, into LEAN, leaving the build tree as it was.

make runs ffcc once per file, so no one record says how the program was built.  Each labelled
unit's record holds the run that compiled it (invocation.py, labels.UnitRecord) and the link
leaves its own run beside the program (``write_link_record``).  A lean build compiles each
labelled unit again as it was compiled, into LEAN's private object directory, then runs the
link again with those objects in place of the build's: named on the link line, or members of
the build's own archives (named, or found through ``-L``/``-l`` as the linker finds them), of
which a copy with the members replaced is linked instead.  ffuzz --rebuild-retired uses it
for drop-in builds as it rebuilds project builds (fuzzer/engine/lean.py).
"""
from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

from ffcc.runtime import abi
from ffcc.runtime.files import write_atomic

from .archive import ArchiveError, Member, is_archive, read_members, write_archive
from .command_line import SEPARATE_VALUE, CompilerCommand, Mode, parse_command
from .errors import FfccError
from .invocation import Invocation
from .label_db import unit_records
from .labelled_compile import first_error
from .labels import UnitRecord

# Options that make a compile write dependency files into the build tree: a rebuild leaves
# them out (make's files would name the lean objects otherwise).
DEPENDENCY_FLAGS = frozenset({"-MD", "-MMD", "-MP"})
DEPENDENCY_VALUES = ("-MF", "-MT", "-MQ")
DEPENDENCY_PREFIXES = (*DEPENDENCY_VALUES, "-Wp,-MD,", "-Wp,-MMD,")


def write_link_record(program: str, link: Invocation, units: list[UnitRecord]) -> None:
    """After a drop-in link with labels: the link record beside ``program`` when each of its
    labelled ``units`` (their records, label_db.program_labels) recorded the run that compiled
    it, a compile of that unit alone or the link itself; otherwise none (a stale one would
    rebuild another program)."""
    runs = {unit.compiled for unit in units if unit.unlabelled is None}
    path = abi.link_record_path(program)
    if runs and all(run == link or (run is not None and _compiles_one_object(run))
                    for run in runs):
        write_atomic(path, json.dumps(link.to_dict(), indent=2) + "\n")
    else:
        path.unlink(missing_ok=True)


def relinked_program(retired: str | None, command: CompilerCommand) -> str | None:
    """The program ``ffcc --retired=FILE PROGRAM -o LEAN`` asks to build lean, or None when
    the command is not that."""
    if not retired or command.sources or len(command.linker_inputs) != 1 or not command.output:
        return None
    program = command.linker_inputs[0]
    return program if abi.link_record_path(program).is_file() else None


def lean_relink(program: str, retired: str, output: str) -> int:
    """Build ``program`` again into ``output`` with the labels ``retired`` lists compiled
    out.  Raises FfccError, in one line, when it cannot."""
    try:
        link = Invocation.from_dict(json.loads(abi.link_record_path(program).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise FfccError(f"ffcc: error: {abi.link_record_path(program)}: unreadable ({err})",
                        2) from None
    retired, output = os.path.abspath(retired), os.path.abspath(output)
    work = Path(output).parent / f".{Path(output).name}.objects"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        lean = _compile_units(program, link, retired, work)
        args = _LinkInputs(link, lean, work).link_args(output)
        done = link.run_with([*link.options, f"--retired={retired}"], args)
        if done.returncode != 0:
            raise FfccError(f"ffcc: error: {program}: its link again failed: "
                            f"{first_error(done.stderr)}", 1)
        # The lean build's runs name objects that go with ``work``: it is built from ``program``.
        abi.link_record_path(output).unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _compile_units(program: str, link: Invocation, retired: str,
                   work: Path) -> dict[int, Path]:
    """Each labelled unit of ``program`` compiled again with ``retired``, one compile per
    core at a time: unit id -> its lean object (units the link compiled itself are compiled
    by the link again)."""
    by_run: dict[Invocation, list[UnitRecord]] = defaultdict(list)
    for unit in unit_records(program):
        if unit.unlabelled is None and unit.compiled is not None and unit.compiled != link:
            by_run[unit.compiled].append(unit)

    def compile_again(number: int, run: Invocation) -> Path:
        obj = work / f"{number}.o"
        done = run.run_with([*run.options, f"--retired={retired}"], _lean_compile_args(run, obj))
        if done.returncode != 0 or not obj.is_file():
            raise FfccError(f"ffcc: error: {by_run[run][0].file}: cannot compile it again: "
                            f"{first_error(done.stderr)}", 1)
        return obj

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        objects = list(pool.map(compile_again, range(len(by_run)), by_run))
    return {unit.unit: obj for obj, units in zip(objects, by_run.values(), strict=True)
            for unit in units}


def _compiles_one_object(run: Invocation) -> bool:
    """Whether ``run`` compiles one source into one object (-c), which a rebuild can redo
    into an object of its own."""
    command = parse_command(list(run.args), cxx=run.driver.endswith("++"))
    return command.mode is Mode.COMPILE and len(command.sources) == 1


def _lean_compile_args(run: Invocation, obj: Path) -> list[str]:
    """The compiler arguments of ``run`` writing ``obj`` and no dependency file."""
    args: list[str] = []
    words = iter(run.args)
    for word in words:
        if word in ("-o", *DEPENDENCY_VALUES):
            next(words, None)
        elif not (word in DEPENDENCY_FLAGS or word.startswith(("-o", *DEPENDENCY_PREFIXES))):
            args.append(word)
    return [*args, "-o", str(obj)]


class _LinkInputs:
    """The link's arguments with the lean objects in place of the build's."""

    def __init__(self, link: Invocation, lean: dict[int, Path], work: Path) -> None:
        self.link, self.lean, self.work = link, lean, work
        self.replaced: set[int] = set()
        self.copies: dict[str, str | None] = {}  # archive -> its copy (None: nothing to replace)
        self.static = "-static" in link.args
        self.library_dirs = _library_dirs(link.args)

    def link_args(self, output: str) -> list[str]:
        args: list[str] = []
        words = iter(self.link.args)
        for word in words:
            option = next((o for o in ("-o", "-l") if word.startswith(o)), None)
            if option is not None:
                value = word[2:] or next(words, "")
                args += (["-o", output] if option == "-o"
                         else [self._library(value) or f"-l{value}"])
            elif word in SEPARATE_VALUE:
                args += [word, next(words, "")]
            elif word.startswith("-"):
                args.append(word)
            else:
                args.append(self._input(word))
        missing = set(self.lean) - self.replaced
        if missing:
            raise FfccError(f"ffcc: error: the link line names no object or archive holding "
                            f"{len(missing)} of the program's labelled units, so it cannot be "
                            "built again", 1)
        return args

    def _path(self, path: str) -> str:
        return os.path.join(self.link.cwd, path)

    def _library(self, name: str) -> str | None:
        """The rebuilt copy of the archive ``-lNAME`` links, if it holds labelled units."""
        names = [name[1:]] if name.startswith(":") else \
            ([] if self.static else [f"lib{name}.so"]) + [f"lib{name}.a"]
        for directory in self.library_dirs:
            for candidate in names:
                found = os.path.join(self._path(directory), candidate)
                if os.path.exists(found):
                    return self._archive(found) if is_archive(found) else None
        return None

    def _input(self, word: str) -> str:
        path = self._path(word)
        if is_archive(path):
            return self._archive(path) or word
        replacement = self._object(Path(path).read_bytes() if os.path.isfile(path) else b"", word)
        return str(replacement) if replacement is not None else word

    def _object(self, data: bytes, name: str) -> Path | None:
        """The lean object standing for an object file's ``data``, if it has labelled units."""
        if abi.LABELDB_SECTION.encode() not in data:
            return None
        units = {unit.unit for unit in unit_records(BytesIO(data)) if unit.unlabelled is None}
        objects = {self.lean.get(unit) for unit in units}
        if objects == {None}:
            return None
        if len(objects) != 1:
            raise FfccError(f"ffcc: error: {name} holds units of several compiles (ld -r?), "
                            "so it cannot be built again", 1)
        self.replaced |= units
        return objects.pop()

    def _archive(self, path: str) -> str | None:
        """A copy of the archive at ``path`` with its labelled members compiled again, or
        None when it has none; made once however often the link names the archive
        (coreutils names lib/libcoreutils.a twice)."""
        key = os.path.realpath(path)
        if key not in self.copies:
            self.copies[key] = self._copy(path)
        return self.copies[key]

    def _copy(self, path: str) -> str | None:
        try:
            members = read_members(path)
        except ArchiveError as err:
            raise FfccError(f"ffcc: error: {err}, so the program cannot be built again", 1) from None
        rebuilt, changed = [], False
        for member in members:
            lean = None if member.is_index else self._object(member.data,
                                                             f"{path}({member.name})")
            changed |= lean is not None
            rebuilt.append(member if lean is None else Member(member.header, lean.read_bytes()))
        if not changed:
            return None
        copy = self.work / f"{len(self.copies)}-{Path(path).name}"
        write_archive(copy, rebuilt)
        return str(copy)


def _library_dirs(args: tuple[str, ...]) -> list[str]:
    """The link's ``-L`` directories in order, joined (-Ldir) or separate (-L dir)."""
    dirs, words = [], iter(args)
    for word in words:
        if word.startswith("-L"):
            dirs.append(word[2:] or next(words, ""))
    return dirs
