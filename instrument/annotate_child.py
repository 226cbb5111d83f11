"""Annotate one command's sources in a short-lived child process.

libclang's parse of a unit with its headers, and the rewriters' work on it, take tens of MB
(more for a label-dense unit), and a process keeps most of that heap after the translation
unit is gone.  The driver then waits for the backend compiler, which is where a build's memory
peaks: a resident driver would add its parse to every compile of a ``make -j``.  So the
driver forks, the child loads libclang, parses and writes the annotated copies into the
builder's directory, sends back what the driver needs (the labelled units, libclang's
errors, the pruning analysis of each unit) and exits; the driver, which never loaded libclang,
runs the backend.  The child writes its notes and warnings to the driver's stderr itself.

Only for a single-threaded driver (the drop-in form): the project form annotates from a
thread pool, where forking is unsafe, and keeps annotating in-process.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import traceback

from .command_line import CompilerCommand
from .errors import FfccError
from .exiting import end_by_signal, flush_streams
from .labelled_compile import LabelBuilder, LabelledUnit


def annotate_in_child(builder: LabelBuilder, command: CompilerCommand) -> list[LabelledUnit]:
    """``builder.annotate_command(command)`` run in a child; the builder's state (its units,
    libclang's errors, the pruning report) is updated here as if it had run in this process.
    An FfccError in the child is raised here; any other failure has printed its traceback."""
    flush_streams()  # nothing buffered here may be written twice
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        _child(builder, command, writer)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        reply = pipe.read()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == -signal.SIGINT:
        raise KeyboardInterrupt
    if code != 0 or not reply:
        raise FfccError(f"ffcc: error: {_names(command)}: annotating "
                        f"{_ended(code)}", 1)
    outcome = pickle.loads(reply)
    if isinstance(outcome, BaseException):
        raise outcome
    units, unparsed, pruned_units = outcome
    builder.units += units
    builder.unparsed.update(unparsed)
    if builder.pruner is not None:
        for unit in pruned_units:
            builder.pruner.report.add(unit)
    return units


def _child(builder: LabelBuilder, command: CompilerCommand, writer: int) -> None:
    """Annotate, send the outcome through ``writer``, and leave without running anything the
    parent registered (atexit handlers, buffered output of the parent's).  Without the cyclic
    garbage collector: the child lives for one command, and the collections cost a few per cent
    of an annotation to keep little of its peak memory down."""
    gc.disable()
    code = 0
    pruned_before = len(builder.pruner.report.units) if builder.pruner is not None else 0
    try:
        units = builder.annotate_command(command)
        pruned = builder.pruner.report.units[pruned_before:] if builder.pruner is not None else []
        outcome: object = (units, builder.unparsed, pruned)
    except FfccError as err:
        outcome = err
    except KeyboardInterrupt:
        end_by_signal(signal.SIGINT)
        os._exit(1)
    except BaseException:  # noqa: BLE001  (as Python would report it, then a failed command)
        traceback.print_exc()
        outcome, code = None, 1
    try:
        if outcome is not None:
            with os.fdopen(writer, "wb") as pipe:
                pipe.write(pickle.dumps(outcome))
    except OSError:
        code = 1
    flush_streams()
    os._exit(code)


def _ended(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"was killed by {name}"
    return "failed"


def _names(command: CompilerCommand) -> str:
    return ", ".join(source.path for source in command.sources) or "input"
