"""The adversarial corpus: C that breaks source rewriters, built plain and with every label.

Each program in adversarial/ is self-contained, but for a header of its own in
adversarial/headers/ (its first comment says what it attacks). It is
built by ffcc without labels and with ``--mcc --wm=all``, by gcc and by clang, at -O0 and -O2, with
UBSan, and both builds must show the same stdout, stderr (UBSan reports included) and exit
status: labels never change what a program does.  A program that starts with a
``/* flags: ... */`` line is built with those options too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import Outcome, ffcc, have, run_program

from ffcc.rewriters.unit import asks_reassociation

CORPUS = Path(__file__).resolve().parent / "adversarial"
PROGRAMS = sorted(CORPUS.glob("*.c"))
BACKENDS = [cc for cc in ("gcc", "clang") if have(cc)]
LEVELS = ("-O0", "-O2")
# UBSan names the column of the faulting expression (its summary line, left out, too); labels
# insert text on the line before it, so only the file and line are compared.
_COLUMN = re.compile(rb"^(.*?:\d+):\d+: runtime error:", re.M)
_FLAGS = re.compile(r"\A/\* flags: (.*?) \*/")


def flags_of(source: Path) -> list[str]:
    """The options the program's first line asks for (``/* flags: -ffast-math */``)."""
    asked = _FLAGS.match(source.read_text())
    return asked.group(1).split() if asked else []


def build(source: Path, out: Path, cc: str, level: str, labels: list[str],
          sanitizer: tuple[str, ...] = ("-fsanitize=undefined",)) -> Path:
    binary = out / ("labelled" if labels else "plain")
    done = ffcc(*labels, f"--cc={cc}", level, "-g", *sanitizer, *flags_of(source),
                "-o", str(binary), str(source), "-lm")
    assert "without labels" not in done.stderr, done.stderr
    return binary


# mcc_huge_decisions takes about 8 s of CPU labelled at clang -O0 with UBSan (its decisions'
# windows, evaluated on every pass): room for a loaded machine, still far short of a hang.
RUN_TIMEOUT = 60


def observed(binary: Path) -> Outcome:
    outcome = run_program([str(binary)], timeout=RUN_TIMEOUT,
                          env={"UBSAN_OPTIONS": "print_stacktrace=0:halt_on_error=0:print_summary=0"})
    return Outcome(outcome.stdout, _COLUMN.sub(rb"\1: runtime error:", outcome.stderr),
                   outcome.status)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("cc", BACKENDS)
@pytest.mark.parametrize("source", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_labels_do_not_change_behaviour(source: Path, cc: str, level: str, tmp_path: Path):
    plain = observed(build(source, tmp_path, cc, level, []))
    labelled = observed(build(source, tmp_path, cc, level, ["--mcc", "--wm=all"]))
    assert labelled == plain


@pytest.mark.parametrize("program", ["fast_math_reduction", "fast_math_pragma",
                                     "fast_math_header_pragma"])
@pytest.mark.parametrize("cc", BACKENDS)
def test_fast_math_sums_are_the_plain_builds(cc: str, program: str, tmp_path: Path):
    """Without UBSan, whose checks keep clang from vectorising, the optimiser reassociates
    the programs' sums as it likes (asked on the command line, or by a pragma), and labels
    must leave it the plain build's choices."""
    source = CORPUS / f"{program}.c"
    plain = observed(build(source, tmp_path, cc, "-O2", [], sanitizer=()))
    labelled = observed(build(source, tmp_path, cc, "-O2", ["--mcc", "--wm=all"], sanitizer=()))
    assert labelled == plain


@pytest.mark.parametrize("text, asks", [
    (b"#pragma clang fp reassociate(on)", True),
    (b"#pragma clang fp reassociate ( on )", True),
    (b"#pragma clang fp reassociate(off)", False),
    (b"#pragma float_control(precise, off)", True),
    (b"#pragma float_control(precise, on)", False),
    (b'#pragma GCC optimize("Ofast")', True),
    (b'#pragma GCC optimize("O2")', False),
    (b'_Pragma("GCC optimize(\\"associative-math\\")")', True),
    (b'double f(double) __attribute__((optimize("fast-math")));', True),
    (b'__attribute__((__optimize__("-funsafe-math-optimizations"))) double g(void);', True),
    (b"int reassociate, float_control, optimize; /* no pragma */", False),
    ((CORPUS / "headers" / "reassociate_all.h").read_bytes(), True),
])
def test_each_spelling_that_asks_for_reassociation_is_found(text: bytes, asks: bool):
    """The words' search that passes most headers by (rewriters/unit.py) passes none of
    them."""
    assert asks_reassociation(text) is asks


def test_the_corpus_is_there():
    assert len(PROGRAMS) >= 1, f"no programs in {CORPUS}"
