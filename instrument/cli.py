"""The ``ffcc`` command: a drop-in C compiler that instruments for fuzzing.

Drop-in form replaces the process with the backend compiler (same exit
status, same diagnostics); project form builds one program in a directory.

Build systems run the compiler hundreds of times (a configure script alone
does), so this entry point imports only what a plain compile needs: no
option-parsing framework (none can parse gcc's argv anyway, see options.py),
and the project, label and runtime-building machinery only when used.
"""

from __future__ import annotations

import os
import sys

from .command_line import parse_command
from .errors import FfccError
from .options import HELP, parse_options
from .plan import needs_runtime, plan_compile
from .toolchain import select_backend


def run(argv: list[str]) -> int:
    """Do what the command line asks; returns the exit status (or execs the compiler)."""
    opts = parse_options(argv)
    if opts.help:
        sys.stdout.write(HELP)
        return 0
    command = parse_command(opts.compiler_args)
    backend = select_backend(opts.cc)
    from .project import build_project, is_project_form
    if is_project_form(command):
        program = build_project(command, backend, opts.name, opts.verbose)
        print(f"ffcc: built {program} ({backend.kind} backend)", file=sys.stderr)
        return 0
    rt = None
    if needs_runtime(command, backend):
        from .runtime_cache import runtime_files
        rt = runtime_files(backend, command.arch_flags)
    backend_argv = plan_compile(command, backend, rt)
    if opts.verbose:
        print("ffcc: " + " ".join(backend_argv), file=sys.stderr)
    sys.stdout.flush()
    os.execv(backend_argv[0], backend_argv)
    return 127  # not reached


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one line on stderr and a non-zero exit for any FfccError."""
    try:
        sys.exit(run(sys.argv[1:] if argv is None else argv))
    except FfccError as err:
        print(str(err), file=sys.stderr)
        sys.exit(err.exit_code)
