"""Labels keep stack frames small enough that deep recursion the plain build completes also
completes labelled, at -O0 where every local has its own stack slot (issue 17 point 7), and at
-O2, where gcc and clang turn the recursion below into a loop (tail recursion with an
accumulator) and labels must leave it one (sites.py, ``unlabelled``).

The recursive function below has 75 labels (its last return's are left out, below). Its
labelled -O0 frame is bounded against its plain one, and the depth asked here is within what a
2 MiB stack allows the labelled builds, but beyond what it allowed clang's when each site
declared its own temporaries (rewriters/frame.py says why they no longer do). The frames and
depths measured: bench/RESULTS.md, "Stack frames"."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest
from helpers import ffcc, have

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
STACK_LIMIT = 2 << 20
DEPTH = 5000
RECURSION = """#include <stdio.h>
#include <stdlib.h>
static long depth(long n, long a, long b) {
  if (n <= 0 || (a > 3 && b < 7)) return a + b;
  long r = depth(n - 1, a * 2 + 1 > 5 ? a - 1 : a + 1, b ^ n);
  return r + (n % 3 == 0 ? 1 : 0);
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  printf("%ld\\n", depth(n, 1, 2));
  return 0;
}
"""


# Far deeper than a 2 MiB stack holds frames of depth(): only a loop gets there.
LOOP_DEPTH = 60000


def run_with_small_stack(program: str, depth: int) -> subprocess.CompletedProcess:
    def limit_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (STACK_LIMIT, STACK_LIMIT))

    return subprocess.run([program, str(depth)], capture_output=True, timeout=30,
                          preexec_fn=limit_stack)


# -O0 keeps every call (and each frame's label temporaries); -O2 makes the recursion a loop,
# which labels must leave one.
DEPTHS = {"-O0": DEPTH, "-O2": LOOP_DEPTH}


@pytest.mark.parametrize("level", DEPTHS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_deep_recursion_completes_labelled(tmp_path, backend, level):
    (tmp_path / "recursion.c").write_text(RECURSION)
    outputs = []
    for labels in ((), ("--mcc", "--wm")):
        program = str(tmp_path / f"recursion{len(labels)}")
        ffcc(f"--cc={backend}", *labels, level, "-o", program, "recursion.c", cwd=tmp_path)
        done = run_with_small_stack(program, DEPTHS[level])
        assert done.returncode == 0, f"{labels or 'plain'}: ended {done.returncode}"
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    header = json.loads((tmp_path / "recursion2.labels.jsonl").read_text().splitlines()[0])
    assert header["labels"] > 70  # the labels are there: no unlabelled fallback


def frame_sizes(tmp_path: Path, backend: str, labels: tuple[str, ...], source: str,
                opt: str = "-O0") -> dict[str, int]:
    """-fstack-usage's frame size of each function of ``source`` (in tmp_path)."""
    stem = f"{Path(source).stem}_{backend}{opt}{len(labels)}"
    ffcc(f"--cc={backend}", *labels, "--labels-required", opt, "-fstack-usage", "-c", source,
         "-o", f"{stem}.o", cwd=tmp_path)
    sizes = {}
    for line in (tmp_path / f"{stem}.su").read_text().splitlines():
        place, size, _ = line.split("\t")
        sizes[place.split(":")[-1]] = int(size)
    return sizes


# Per backend: labelled -O0 frame of depth() at most this many times its plain frame, with room
# over what was measured (bench/RESULTS.md, "Stack frames").
FRAME_FACTOR = {"gcc": 2.0, "clang": 3.2}


@pytest.mark.parametrize("backend", BACKENDS)
def test_label_dense_frame_stays_near_plain(tmp_path, backend):
    (tmp_path / "recursion.c").write_text(RECURSION)
    plain = frame_sizes(tmp_path, backend, (), "recursion.c")["depth"]
    labelled = frame_sizes(tmp_path, backend, ("--mcc", "--wm"), "recursion.c")["depth"]
    assert labelled <= FRAME_FACTOR[backend] * plain, (plain, labelled)
    optimised = [sum(frame_sizes(tmp_path, backend, labels, "recursion.c", "-O2").values())
                 for labels in ((), ("--mcc", "--wm"))]
    assert optimised[1] <= optimised[0] + 32, optimised


STATEMENT = "  if ((v[{i}] > 3 && v[{j}] < 7) || v[{i}] * 3 + 1 == v[{j}] - 2) n += v[{i}] % 5 + 1;\n"
# Labels whose predicates have no branch of their own (AOR's guard its divisions: at -O0 clang
# gives each value kept across a branch a stack slot of its own, for the whole function).
BRANCH_FREE = ("--mcc", "--wm=ROR,COR,ABS,UOD")


def statements(count: int) -> str:
    body = "".join(STATEMENT.format(i=i % 8, j=(i + 3) % 8) for i in range(count))
    return f"int many(const int *v) {{\n  int n = 0;\n{body}  return n;\n}}\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_frame_grows_with_a_full_expression_not_with_the_function(tmp_path, backend):
    """A function's label temporaries are shared by its full expressions (rewriters/frame.py):
    thirty labelled statements take the frame that two take."""
    grown = []
    for count in (2, 30):
        (tmp_path / f"many{count}.c").write_text(statements(count))
        plain = frame_sizes(tmp_path, backend, (), f"many{count}.c")["many"]
        labelled = frame_sizes(tmp_path, backend, BRANCH_FREE, f"many{count}.c")["many"]
        grown.append(labelled - plain)
    assert grown[0] > 0, "no labels"
    assert grown[1] <= grown[0] + 16, grown
