"""Labels keep stack frames small enough that deep recursion the plain build completes also
completes labelled, at -O0 where every local has its own stack slot (issue 17 point 7).

The recursive function below has about 90 labels.  Under a 2 MiB stack, the plain build at -O0
recurses about 26,000 (gcc) or 18,000 (clang) levels deep; labelled, about 6,800 and 3,400.
A label that declared a variable of its own (8 bytes a label at -O0) brought that to about
2,000 and 1,500, below the depth asked here."""

from __future__ import annotations

import json
import resource
import subprocess

import pytest
from helpers import ffcc, have

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
STACK_LIMIT = 2 << 20
DEPTH = 2500
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


def run_with_small_stack(program: str) -> subprocess.CompletedProcess:
    def limit_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (STACK_LIMIT, STACK_LIMIT))

    return subprocess.run([program, str(DEPTH)], capture_output=True, timeout=30,
                          preexec_fn=limit_stack)


@pytest.mark.parametrize("backend", BACKENDS)
def test_deep_recursion_completes_labelled_at_O0(tmp_path, backend):
    (tmp_path / "recursion.c").write_text(RECURSION)
    outputs = []
    for labels in ((), ("--mcc", "--wm")):
        program = str(tmp_path / f"recursion{len(labels)}")
        ffcc(f"--cc={backend}", *labels, "-O0", "-o", program, "recursion.c", cwd=tmp_path)
        done = run_with_small_stack(program)
        assert done.returncode == 0, f"{labels or 'plain'}: ended {done.returncode}"
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    header = json.loads((tmp_path / "recursion2.labels.jsonl").read_text().splitlines()[0])
    assert header["labels"] > 80  # the labels are there: no unlabelled fallback
