"""The drop-in driver parses with libclang in a short-lived child, so that while the backend
compiles, the driver holds no libclang and none of its parse (a build's memory peaks there).
What the child found reaches the driver: its units and libclang's errors, an FfccError as it
was raised, a child that was killed as a one-line error."""

from __future__ import annotations

import os
import signal

import pytest
from helpers import ffcc, have

from ffcc.instrument.annotate_child import annotate_in_child
from ffcc.instrument.command_line import parse_command
from ffcc.instrument.errors import FfccError
from ffcc.instrument.labelled_compile import LabelledUnit
from ffcc.runtime.abi import LABELDB_SECTION

SPY = '#!/bin/sh\ngrep -c libclang "/proc/$PPID/maps" >> "$SPY_OUT"\nexec gcc "$@"\n'
SOURCE = "int check(int a, int b) {\n  return a > 1 && b < 2;\n}\n"


@pytest.mark.skipif(not have("gcc"), reason="needs gcc")
def test_the_driver_has_no_libclang_while_the_backend_compiles(tmp_path):
    spy = tmp_path / "gcc-spy"  # a gcc by its name, so ffcc passes gcc's flags
    spy.write_text(SPY)
    spy.chmod(0o755)
    (tmp_path / "check.c").write_text(SOURCE)
    seen = tmp_path / "libclang-mappings"
    ffcc(f"--cc={spy}", "--mcc", "--wm", "-c", "check.c", "-o", "check.o", cwd=tmp_path,
         env={"FFCC_SERVER": "0", "SPY_OUT": str(seen), "PATH": os.environ["PATH"]})
    assert LABELDB_SECTION.encode() in (tmp_path / "check.o").read_bytes()  # labelled
    assert seen.read_text().split() == ["0"]  # one backend run, its parent without libclang


class FakeBuilder:
    """What annotate_in_child uses of a LabelBuilder; ``annotate_command`` runs in the child."""

    def __init__(self, annotate) -> None:
        self.annotate = annotate
        self.units: list = []
        self.unparsed: dict[str, str] = {}
        self.pruner = None

    def annotate_command(self, command):
        return self.annotate(self, command)


def test_the_childs_units_and_errors_reach_the_driver():
    def annotate(builder, command):
        unit = LabelledUnit("a.c", "/tmp/a.c", 3, {"mcc": 3})
        builder.units.append(unit)
        builder.unparsed["b.c"] = "b.c:1:1: error: unknown type"
        return [unit]

    builder = FakeBuilder(annotate)
    command = parse_command(["-c", "a.c", "b.c"])
    units = annotate_in_child(builder, command)  # type: ignore[arg-type]
    assert [u.source for u in units] == [u.source for u in builder.units] == ["a.c"]
    assert builder.unparsed == {"b.c": "b.c:1:1: error: unknown type"}


def test_a_failing_child_is_one_line_error():
    def refuse(builder, command):
        raise FfccError("ffcc: error: a.c: refused", 3)

    def die(builder, command):
        os.kill(os.getpid(), signal.SIGKILL)

    command = parse_command(["-c", "a.c"])
    with pytest.raises(FfccError) as refused:
        annotate_in_child(FakeBuilder(refuse), command)  # type: ignore[arg-type]
    assert (str(refused.value), refused.value.exit_code) == ("ffcc: error: a.c: refused", 3)
    with pytest.raises(FfccError) as killed:
        annotate_in_child(FakeBuilder(die), command)  # type: ignore[arg-type]
    assert str(killed.value) == "ffcc: error: a.c: annotating was killed by SIGKILL"
