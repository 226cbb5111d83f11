"""The label shape the driver compiles for ffcc's runtime (branch-free, instrument/labels.py)
lights exactly the labels whose predicates hold, as often as they hold, at every -O level
with gcc and clang: the same slots and counts as the reference build (the annotated text
under the test preamble, plain C), and a label its retirement byte retires stays 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from forkserver_client import ForkServer, SharedMap, hello_map_size
from helpers import REPO, ffcc, sample_inputs, sample_sources
from rewriter_harness import build, run

from ffcc.rewriters import LabelOptions, annotate
from ffcc.rewriters.operators import WM_GROUPS
from ffcc.runtime.abi import NAMES, label_region_start, read_label_db

COMPILERS = [cc for cc in ("gcc", "clang") if shutil.which(cc)]
LEVELS = ("-O0", "-O1", "-O2", "-O3")
SAMPLE = "boundaries"  # labels in loops, at boundaries, some reached only by crashing inputs


def build_sample(tmp_path: Path, cc: str, level: str) -> Path:
    out = tmp_path / f"{cc}{level}"
    ffcc(f"--cc={cc}", "--mcc", "--wm", level, "-o", f"{out}/", *sample_sources(SAMPLE), cwd=REPO)
    return out / SAMPLE


def label_counts(program: Path, inputs: list[Path], retire: dict[int, int] | None = None
                 ) -> list[dict[int, int]]:
    """Per input, label id -> its slot's count; ``retire``: slot -> retirement byte."""
    database = read_label_db(program)
    case = program.parent / "input"
    env, region = {}, None
    if retire is not None:
        region = SharedMap(database.label_region)
        for slot, value in retire.items():
            region.view[slot] = value
        env[NAMES["FFCC_ENV_RETIRE_SHM_ID"]] = str(region.shm_id)
    server = ForkServer([str(program), str(case)], env=env)
    try:
        start = label_region_start(hello_map_size(server.hello), database.label_region)
        counts = []
        for path in inputs:
            case.write_bytes(path.read_bytes())
            trace = server.run().map
            counts.append({label.id: trace[start + label.slot] for label in database.labels
                           if trace[start + label.slot]})
        return counts
    finally:
        server.close()
        if region is not None:
            region.close()


def reference_labels(tmp_path: Path, inputs: list[Path]) -> list[set[int] | None]:
    """Per input, the labels the annotated text lights under the test preamble (gcc -O0);
    None for an input that crashes (the test preamble writes its hits at exit)."""
    (source,) = sample_sources(SAMPLE)
    annotation = annotate(str(REPO / source), [], LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS)))
    assert "__FFCC_COUNTS(" in annotation.text and "__FFCC_COMPARE(" in annotation.text
    binary = build(tmp_path, annotation.text, COMPILERS[0], "-O0", "reference")
    lit = []
    for path in inputs:
        copy = tmp_path / "reference-input"
        copy.write_bytes(path.read_bytes())
        done = run(binary, [str(copy)])
        lit.append(done.hits if done.status == 0 else None)
    return lit


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> tuple[list[Path], list[dict[int, int]]]:
    tmp_path = tmp_path_factory.mktemp("forms")
    inputs = sample_inputs(SAMPLE)
    counts = label_counts(build_sample(tmp_path, COMPILERS[0], "-O0"), inputs)
    reference = reference_labels(tmp_path, inputs)
    assert sum(lit is not None for lit in reference) >= 3
    assert [set(c) if lit is not None else None for c, lit in zip(counts, reference)] == \
        reference, "the branch-free labels light what the predicates say"
    assert any(count > 1 for c in counts for count in c.values()), "labels in loops count up"
    return inputs, counts


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("level", LEVELS)
def test_labels_light_exactly_their_slots(cc, level, expected, tmp_path):
    inputs, counts = expected
    assert label_counts(build_sample(tmp_path, cc, level), inputs) == counts


def test_a_retired_label_is_no_longer_written(expected, tmp_path):
    inputs, counts = expected
    program = build_sample(tmp_path, COMPILERS[-1], "-O2")
    slots = {label.id: label.slot for label in read_label_db(program).labels}
    lit = sorted(set().union(*counts))
    retired = set(lit[::2])
    got = label_counts(program, inputs, {slots[label]: 1 for label in retired})
    assert got == [{k: v for k, v in c.items() if k not in retired} for c in counts]
    assert label_counts(program, inputs, {}) == counts, "an all-zero region retires nothing"


# Comparisons of every integer kind with every other and with constants, so that the driver's
# one-asm form of a site's comparisons (instrument/labels.py GROUP_FORM) meets signed and
# unsigned jumps, 32- and 64-bit operands, immediates and registers: it must light what
# the predicates, as C compares, say.
MIXED = r"""
#include <stdio.h>
#include <stdlib.h>
enum colour { RED, GREEN = 7 };
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "r");
  long long v[5] = {0};
  for (int i = 0; i < 5 && f && fscanf(f, "%lld", &v[i]) == 1; i++) {}
  int i = (int)v[0];
  unsigned u = (unsigned)v[1];
  long l = (long)v[2];
  unsigned char c = (unsigned char)v[3];
  unsigned long long w = (unsigned long long)v[4];
  short s = (short)v[0];
  enum colour e = (enum colour)(v[1] & 7);
  _Bool b = v[2] != 0;
  int n = 0;
  n += i < u;
  n += u > l;
  n += l <= c;
  n += w >= i;
  n += s == c;
  n += e != i;
  n += b < s;
  n += i > -5;
  n += u < 4000000000u;
  n += w > 0x123456789ull;
  n += l < -3000000000l;
  n += c >= 200;
  n += i * 3 < l;
  printf("%d\n", n);
  return 0;
}
"""
MIXED_INPUTS = ("-5 3 -7 9 1", "0 0 300 200 0", "7 4294967295 9 9 18446744073709551615",
                "-1 -1 -3000000001 255 4886718345", "40000 100000 0 0 4886718346")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, list[Path], list[set[int]]]:
    tmp_path = tmp_path_factory.mktemp("mixed")
    source = tmp_path / "mixed.c"
    source.write_text(MIXED)
    inputs = []
    for number, text in enumerate(MIXED_INPUTS):
        inputs.append(tmp_path / f"input{number}")
        inputs[-1].write_text(text)
    annotation = annotate(str(source), [], LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS)))
    assert "__FFCC_COMPARE(" in annotation.text
    binary = build(tmp_path, annotation.text, COMPILERS[0], "-O0", "reference")
    lit = [run(binary, [str(path)]).hits for path in inputs]
    assert len(set(map(frozenset, lit))) == len(inputs), "each input lights other labels"
    return source, inputs, lit


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_comparisons_of_mixed_integer_types_light_what_c_says(cc, level, mixed, tmp_path):
    source, inputs, lit = mixed
    ffcc(f"--cc={cc}", "--mcc", "--wm=all", level, "-o", f"{tmp_path}/", str(source))
    counts = label_counts(tmp_path / "mixed", inputs)
    assert [set(c) for c in counts] == lit


# Arithmetic of each integer kind the driver computes itself (instrument/labels.py, an AOR
# group: 32- and 64-bit, signed and unsigned, mixed kinds), with divisors of 0 and -1 among
# the inputs: every mutant's label must light where the C predicate says.
ARITHMETIC = r"""
#include <stdio.h>
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "r");
  long long v[4] = {0};
  for (int k = 0; k < 4 && f && fscanf(f, "%lld", &v[k]) == 1; k++) {}
  int i = (int)v[0], j = (int)v[1];
  unsigned u = (unsigned)v[0], w = (unsigned)v[1];
  long l = (long)v[2], m = (long)v[3];
  unsigned long p = (unsigned long)v[2], q = (unsigned long)v[3];
  unsigned char c = (unsigned char)v[0];
  long n = 0;
  n += i + j; n += i - j; n += i * j;
  n += u + w; n += u - w; n += u * w;
  n += l + m; n += l - m; n += l * m;
  n += p + q; n += p - q; n += p * q;
  n += c * j; n += l + j; n += u - l;
  if (j != 0) { n += i / j; n += i % j; n += c / j; }
  if (w != 0) { n += u / w; n += u % w; }
  if (m != 0) { n += l / m; n += l % m; n += j % m; }
  if (q != 0) { n += p / q; n += p % q; }
  printf("%ld\n", n);
  return 0;
}
"""
ARITHMETIC_INPUTS = ("7 0 9 0", "-7 -1 -9 -1", "-5 1 3000000000 1", "100 7 123456789012 -5",
                     "2 2 2 2", "0 5 0 5", "-3 2 -3 2", "-2147483647 3 -9223372036854775807 3")


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_arithmetic_groups_light_what_c_says(cc, level, tmp_path):
    source = tmp_path / "arithmetic.c"
    source.write_text(ARITHMETIC)
    inputs = []
    for number, text in enumerate(ARITHMETIC_INPUTS):
        inputs.append(tmp_path / f"input{number}")
        inputs[-1].write_text(text)
    annotation = annotate(str(source), [], LabelOptions(mcc=False, wm_ops=frozenset({"AOR"})))
    assert annotation.text.count("__FFCC_ARITH(") >= 20
    reference = build(tmp_path, annotation.text, COMPILERS[0], "-O0", "reference")
    lit = [run(reference, [str(path)]).hits for path in inputs]
    assert len(set(map(frozenset, lit))) == len(inputs), "each input lights other labels"
    ffcc(f"--cc={cc}", "--wm=AOR", level, "-o", f"{tmp_path}/", str(source))
    assert [set(c) for c in label_counts(tmp_path / "arithmetic", inputs)] == lit


DIVIDING = """
long arithmetic(long a, long b, unsigned u, unsigned v, int i, int j) {
  long r = a / b + a % b + (a + b) * (a - b);
  r += u / v + u % v + (u - v) + (u << v) + (i >> j);
  i /= j;
  i %= j;
  u <<= v;
  return r + i + u;
}
"""


def coverage_guards(obj: Path) -> int:
    """How many trace-pc-guard slots an object has: one per instrumented block."""
    with obj.open("rb") as f:
        return sum(section.data_size // 4 for section in ELFFile(f).iter_sections()
                   if section.name == "__sancov_guards")


@pytest.mark.skipif("clang" not in COMPILERS, reason="trace-pc-guard is clang's")
@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_arithmetic_and_shift_labels_add_no_block(level, tmp_path):
    """A kill condition that divides (a divisor that may be 0 or -1) or shifts by a variable
    amount is computed without a branch: no block, so no coverage edge, of the label's own."""
    source = tmp_path / "dividing.c"
    source.write_text(DIVIDING)
    operators = frozenset({"AOR", "ASR", "BOR"})
    annotation = annotate(str(source), [], LabelOptions(mcc=False, wm_ops=operators))
    assert len(annotation.labels) >= 20
    assert {"wm.bor.shl_shr", "wm.bor.shr_shl"} <= {label.operator for label in annotation.labels}
    objects = {}
    for name, flags in (("plain", ()), ("labelled", ("--wm=AOR,ASR,BOR",))):
        objects[name] = tmp_path / f"{name}.o"
        ffcc("--cc=clang", *flags, level, "-c", "-o", str(objects[name]), str(source))
    assert coverage_guards(objects["labelled"]) == coverage_guards(objects["plain"]) > 0
