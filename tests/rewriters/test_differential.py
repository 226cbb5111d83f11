"""A labelled program behaves exactly like the original: same stdout, stderr and exit status on
many generated inputs, at -O0 and -O2, with gcc and clang; under UBSan, no report the original
does not have (reports compared by line and message: labels share the original's lines)."""

from __future__ import annotations

import random
import re

import pytest
from rewriter_harness import ALL_WM, PROGRAMS, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions, annotate

EDGE = [0, 1, -1, 2, 3, 7, 100, -100, 2147483647, -2147483648]
UBSAN_REPORT = re.compile(rb"^\S+?:(\d+):\d+: runtime error: (.*)$", re.M)


def generated_inputs(count: int, seed: int = 4) -> list[bytes]:
    rng = random.Random(seed)
    inputs = []
    for _ in range(count):
        a, b, c = (rng.choice(EDGE) if rng.random() < 0.3 else rng.randint(-20, 20)
                   for _ in range(3))
        u = rng.randint(0, 64)
        d = rng.choice([0.0, 0.5, 1.0, -1.0, 1.9, 2.0, 3.5])
        text = "".join(rng.choice("0123456789-ab") for _ in range(rng.randint(1, 12)))
        inputs.append(f"{a} {b} {c} {u} {d} {text}\n".encode())
    return inputs


def guard_inputs(count: int, seed: int = 5) -> list[bytes]:
    """Inputs that make the skipped atoms of programs/guards.c fault if evaluated naively."""
    rng = random.Random(seed)
    edges = [0, -1, 1, 2, 31, 32, 40, -3, 2147483647, -2147483648, 1001]
    return [" ".join(str(rng.choice(edges)) for _ in range(3)).encode()
            + f" {rng.randint(0, 1)} {rng.randint(0, 2)}\n".encode() for _ in range(count)]


def ubsan_reports(stderr: bytes) -> set[tuple[bytes, bytes]]:
    return set(UBSAN_REPORT.findall(stderr))


PROGRAM_INPUTS = {"mixed": generated_inputs, "guards": guard_inputs}


@pytest.fixture(scope="module", params=sorted(PROGRAM_INPUTS))
def program(request, tmp_path_factory):
    """(name, original text, labelled text (all criteria), scratch directory)."""
    source = PROGRAMS / f"{request.param}.c"
    annotation = annotate(str(source), [], LabelOptions(mcc=True, wm_ops=ALL_WM))
    assert len(annotation.labels) > 100
    return request.param, source.read_text(), annotation.text, tmp_path_factory.mktemp("diff")


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_same_behaviour(program, cc, opt):
    name, original, labelled, tmp = program
    plain = build(tmp, original, cc, opt, "orig")
    instrumented = build(tmp, labelled, cc, opt, "labelled")
    any_label_hit = False
    for stdin in PROGRAM_INPUTS[name](40):
        expected, got = run(plain, stdin=stdin), run(instrumented, stdin=stdin)
        assert (got.stdout, got.stderr, got.status) == (expected.stdout, expected.stderr,
                                                        expected.status), stdin
        any_label_hit |= bool(got.hits)
    assert any_label_hit


def test_no_new_ubsan_reports(program, cc):
    name, original, labelled, tmp = program
    flags = ("-fsanitize=undefined", "-fno-sanitize-recover=undefined")
    plain = build(tmp, original, cc, "-O1", "orig-ubsan", flags)
    instrumented = build(tmp, labelled, cc, "-O1", "labelled-ubsan", flags)
    for stdin in PROGRAM_INPUTS[name](40, seed=11):
        expected, got = run(plain, stdin=stdin), run(instrumented, stdin=stdin)
        assert ubsan_reports(got.stderr) <= ubsan_reports(expected.stderr), stdin
        assert got.status == expected.status, stdin
