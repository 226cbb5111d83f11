"""The ``ffcc`` command: a drop-in C compiler that instruments for fuzzing.

Drop-in form replaces the process with the backend compiler when nothing is
left to do afterwards (same exit status, same diagnostics); with labels it
compiles annotated copies and, when it links a program, writes the program's
label database.  Project form builds one program in a directory.

Build systems run the compiler hundreds of times (a configure script alone
does), so this entry point imports only what a plain compile needs: no
option-parsing framework (none can parse gcc's argv anyway, see options.py),
and the project, label and runtime-building machinery only when used.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from ffcc.runtime.abi import SUMMARY_SUFFIX

from . import zygote
from .command_line import CompilerCommand, Mode, parse_command
from .errors import FfccError, say
from .exiting import end_by_signal
from .invocation import Invocation
from .options import FfccOptions, help_text, parse_options
from .plan import needs_runtime, parse_flags, plan_compile, preprocess_argv
from .selection import configure_probe
from .toolchain import C_DRIVER, Backend, BackendKind, driver_of, predefined_macros, select_backend

if TYPE_CHECKING:
    from .labelled_compile import LabelBuilder, LabelSettings


def label_settings(opts: FfccOptions, backend: Backend) -> LabelSettings:
    """What the options ask every unit to be labelled with (their macros expanded with
    ``backend``), for a build and for ``--estimate`` alike."""
    from ffcc.rewriters import LabelOptions

    from .labelled_compile import LabelSettings
    from .selection import make_selection

    selection = make_selection(opts.only_files, opts.only_funcs, opts.allowlist)
    preprocessor = partial(preprocess_argv, backend.path) if opts.in_macros else None
    label_options = LabelOptions(mcc=opts.mcc, mcc_max=opts.mcc_bound, wm_ops=opts.wm_ops,
                                 only_funcs=selection.functions, in_macros=opts.in_macros,
                                 macro_preprocessor=preprocessor)
    retired: frozenset[tuple[str, int]] = frozenset()
    if opts.retired:
        from ffcc.runtime.abi import LabelDbError, read_retired
        try:
            retired = frozenset(read_retired(opts.retired))
        except LabelDbError as err:
            raise FfccError(f"ffcc: error: --retired: {err}", 2) from None
    return LabelSettings(
        label_options, selection, tuple(predefined_macros()), branch_free=backend.links_ffcc_runtime,
        clang_backend=backend.kind is BackendKind.CLANG, gates=opts.label_gates,
        labels_required=opts.labels_required, retired=retired,
        keep_dir=opts.keep_annotated, verbose=opts.verbose)


def label_builder(opts: FfccOptions, backend: Backend,
                  invocation: Invocation | None = None) -> LabelBuilder | None:
    """A LabelBuilder for the labels the options ask for (pruned with ``backend``), or None;
    each unit records ``invocation``, the drop-in run that compiles it."""
    if not opts.wants_labels:
        return None
    from .labelled_compile import LabelBuilder

    pruner = None
    if opts.prune:
        from .prune.pruner import Pruner, default_jobs
        pruner = Pruner(opts.prune, backend.path, opts.jobs or default_jobs(), verbose=opts.verbose)
    return LabelBuilder(replace(label_settings(opts, backend), invocation=invocation), pruner)


def rebuild_build_dir(opts: FfccOptions, command) -> int | None:
    """``ffcc --prune build/`` or ``ffcc --retired=FILE build/``: rebuild an existing project
    build with fewer labels; None when the command is not that."""
    fewer = ([f"--prune={opts.prune}"] if opts.prune else []) \
        + ([f"--retired={os.path.abspath(opts.retired)}"] if opts.retired else [])
    if not (fewer and not command.sources and len(command.linker_inputs) == 1):
        return None
    from .prune.rebuild import BuildRecord, rebuild_argv
    record = BuildRecord.read(command.linker_inputs[0])
    if record is None:
        return None
    cwd, argv = rebuild_argv(command.linker_inputs[0], record, fewer)
    if opts.jobs:
        argv.insert(0, f"--jobs={opts.jobs}")
    if opts.verbose:
        argv.insert(0, "--ffcc-verbose")
    os.chdir(cwd)
    return run(argv)


def estimate(command: CompilerCommand, opts: FfccOptions, backend: Backend) -> int:
    """Print, per C source, the labels a build with these options gets: the labeller runs on
    each file with the command's flags, as in a build, and nothing is compiled (pruning, which
    needs compiles, is not applied).  With neither --mcc nor --wm, every operator group's.
    A file that cannot be read or parsed is named with the reason, and the status is then 1."""
    from ffcc.rewriters import annotate, lines_of_code
    from ffcc.rewriters.operators import WM_GROUPS
    from ffcc.rewriters.unit import ParseError

    if not opts.wants_labels:
        opts = replace(opts, mcc=True, wm_ops=frozenset(WM_GROUPS))
    settings = label_settings(opts, backend)
    flags = [*settings.macros, *parse_flags(command)]
    print(f"{'file':40} {'lines':>7} {'mcc':>7} {'wm':>7} {'left out':>9} {'labels/line':>12}")
    failed = 0
    for source in command.c_sources:
        if not settings.selection.wants_file(source.path):
            continue
        try:
            result = annotate(source.path, flags, settings.options)
            lines = lines_of_code(source.path)
        except (OSError, ParseError) as err:
            reason = err.strerror if isinstance(err, OSError) else str(err).split("; ")[0]
            print(f"ffcc: error: {source.path}: cannot estimate: {reason}", file=sys.stderr)
            failed += 1
            continue
        mcc = sum(label.criterion == "mcc" for label in result.labels)
        wm = len(result.labels) - mcc
        print(f"{source.path:40} {lines:7} {mcc:7} {wm:7} {result.left_out:9} "
              f"{len(result.labels) / max(lines, 1):12.2f}")
    return 1 if failed else 0


def run(argv: list[str], driver: str = C_DRIVER) -> int:
    """Do what the command line asks of ``driver`` (ffcc, or ffcc++ for C++); returns the exit
    status (or execs the compiler)."""
    opts = parse_options(argv, driver=driver)
    if opts.help:
        sys.stdout.write(help_text(driver))
        return 0
    if opts.compiler_args == ["--version"]:
        return print_version(driver, select_backend(opts.cc, opts.cmplog, opts.cxx_driver, opts.cxx))
    command = parse_command(opts.compiler_args, cxx=opts.cxx_driver)
    rebuilt = rebuild_build_dir(opts, command)
    if rebuilt is not None:
        return rebuilt
    if opts.retired:
        from .relink import lean_relink, relinked_program
        if (full := relinked_program(opts.retired, command)) is not None:
            assert command.output is not None
            return lean_relink(full, opts.retired, command.output)
    for option, given, spelled in (("--prune", opts.prune, "--prune"),
                                   ("--retired", opts.retired, "--retired=FILE")):
        if given and not opts.wants_labels:
            raise FfccError(f"ffcc: error: {option} needs labels (--mcc, --wm) or a build "
                            f"directory (ffcc {spelled} build/)", 2)
    backend = select_backend(opts.cc, opts.cmplog, opts.cxx_driver, opts.cxx)
    if opts.estimate:
        return estimate(command, opts, backend)
    labelled = opts.wants_labels and command.mode is not Mode.PREPROCESS and not configure_probe(
        [source.path for source in command.c_sources], command.output)
    # A link alone needs no rewriters: their import would be most of a link's own cost.
    invocation = None if command.project_form or not labelled else Invocation.current(opts)
    builder = (label_builder(opts, backend, invocation)
               if labelled and (command.c_sources or command.project_form) else None)
    try:
        return _compile(command, opts, backend, builder, invocation, labelled)
    finally:
        if builder is not None:
            builder.cleanup()


def _compile(command: CompilerCommand, opts: FfccOptions, backend: Backend,
             builder: LabelBuilder | None, invocation: Invocation | None, labelled: bool) -> int:
    """The compile, link or project build ``command`` asks for, with labels through
    ``builder`` (whose directory the caller removes, whatever happens here)."""
    if command.project_form:
        from .project import build_project
        from .prune.rebuild import label_words
        program = build_project(command, backend, builder, opts.name, opts.verbose,
                                label_words(opts))
        print(f"ffcc: built {program} ({backend.kind} backend)", file=sys.stderr)
        return 0
    rt = None
    if needs_runtime(command, backend):
        from .runtime_cache import runtime_files
        rt = runtime_files(backend, command.arch_flags)
    backend_argv = plan_compile(command, backend, rt, labelled=builder is not None)
    if builder is None:
        if opts.verbose:
            print("ffcc: " + " ".join(backend_argv), file=sys.stderr)
        if not (labelled and command.builds_loadable):  # no label database to write
            return zygote.replace_with(backend_argv)
        status = zygote.run(backend_argv).returncode
    else:
        status = _labelled_compile(backend_argv, command, builder, backend, opts.verbose)
        if builder.pruner is not None and builder.pruner.report.units:
            builder.pruner.report.print()
    if status == 0 and invocation is not None and command.builds_loadable:
        record_link(command.output or "a.out", invocation)
    return status


def _labelled_compile(backend_argv: list[str], command: CompilerCommand, builder: LabelBuilder,
                      backend: Backend, verbose: bool) -> int:
    """A drop-in compile with labels: the object kept from the unit's other compile when one
    serves (object_cache.py), else the sources annotated in a child and compiled (as PIC, and
    kept, where it may).  Only clang's objects are kept: its PIC code is its other code but
    for the GOT, where gcc's calls every global function through the PLT, never inlined
    (semantic interposition)."""
    from .annotate_child import annotate_in_child
    from .labelled_compile import compile_with_labels, dependency_outputs
    from .object_cache import kept_object

    wanted = builder.pruner is None and backend.kind is BackendKind.CLANG
    kept = None if not wanted else kept_object(
        backend_argv, command, builder.settings, dependency_outputs(command))
    if kept is not None and kept.serve():
        if verbose:
            say(f"ffcc: {command.output}: the labelled object kept from the unit's earlier compile")
        return 0
    units = annotate_in_child(builder, command)
    return compile_with_labels(backend_argv, command, builder, verbose, units, kept)


def print_version(driver: str, backend: Backend) -> int:
    """``ffcc --version``: ffcc's release and backend, then the backend's own --version, which
    build systems read to tell which compiler they have."""
    from importlib.metadata import version

    print(f"{driver} (ffcc) {version('ffcc')}, compiling with {backend.path} ({backend.kind})",
          flush=True)
    return zygote.run([backend.path, "--version"]).returncode


def record_link(program: str, link: Invocation) -> None:
    """After a drop-in link with labels (of a program or a shared object, which carries its
    labels as a program does): the label database, the build summary and the record of the
    ``link`` (relink.py) beside ``program``, and one line of what they hold when stderr is a
    terminal.  Off a terminal
    the line is left out, as afl-cc leaves out its banner: configure scripts keep a compiler's
    stderr, and some probes fail on any text there."""
    from .label_db import write_label_db, write_summary
    from .relink import write_link_record

    found = write_label_db(program)
    summary = write_summary(program, found)
    write_link_record(program, link, found.units)
    if not os.isatty(2) or not (summary["labels"] or summary["unlabelled"]):
        return
    unlabelled = len(summary["unlabelled"])
    without = f"; {_files(unlabelled)} without labels" if unlabelled else ""
    print(f"ffcc: {program}: {summary['labels']} labels in {_files(len(summary['files']))}"
          f"{without} (see {program}{SUMMARY_SUFFIX})", file=sys.stderr)


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def main(argv: list[str] | None = None) -> None:
    """Console entry point (``argv`` as in sys.argv: its first word, the name run, tells
    ffcc++ from ffcc): one line on stderr and a non-zero exit for any FfccError."""
    argv = sys.argv if argv is None else argv
    driver = driver_of(argv[0])
    try:
        status = run(argv[1:], driver)
        if status < 0:  # the backend command ended by that signal: so does ffcc
            end_by_signal(-status)
        sys.exit(status)
    except FfccError as err:
        print(err.reported_by(driver), file=sys.stderr)
        sys.exit(err.exit_code)
    except subprocess.SubprocessError as err:
        print(f"{driver}: error: {err}", file=sys.stderr)
        sys.exit(1)
