"""The ``ffcc`` command: a drop-in C compiler that instruments for fuzzing.

Drop-in form replaces the process with the backend compiler (same exit
status, same diagnostics); project form builds one program in a directory.
"""

from __future__ import annotations

import os
import sys

import click

from .command_line import parse_command
from .errors import FfccError
from .options import HELP, parse_options
from .plan import needs_runtime, plan_compile
from .project import build_project, is_project_form
from .runtime_cache import runtime_files
from .toolchain import select_backend


def run(argv: list[str]) -> int:
    """Do what the command line asks; returns the exit status (or execs the compiler)."""
    opts = parse_options(argv)
    if opts.help:
        click.echo(HELP, nl=False)
        return 0
    command = parse_command(opts.compiler_args)
    backend = select_backend(opts.cc)
    if is_project_form(command):
        program = build_project(command, backend, opts.name, opts.verbose)
        click.echo(f"ffcc: built {program} ({backend.kind} backend)", err=True)
        return 0
    rt = runtime_files(backend, command.arch_flags) if needs_runtime(command, backend) else None
    backend_argv = plan_compile(command, backend, rt)
    if opts.verbose:
        click.echo("ffcc: " + " ".join(backend_argv), err=True)
    sys.stdout.flush()
    os.execv(backend_argv[0], backend_argv)
    return 127  # not reached


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def main(argv: tuple[str, ...]) -> None:
    """ffcc: compile C with coverage and fine-grained labels (ffcc --help)."""
    try:
        sys.exit(run(list(argv)))
    except FfccError as err:
        click.echo(str(err), err=True)
        sys.exit(err.exit_code)
