"""What a label's count costs where its predicate holds, against AFL's edge count.

A label in a hot loop counts on every turn, so its count (instrument/labels.py COUNT_FORM:
the retirement check, the saturating add, the flag that tells the runtime to scan the label
region) is part of what labels cost a loop.  This builds one program with COUNT_FORM as a
labelled unit gets it and a loop of 16 counts whose predicates hold, and beside it the same
loop with AFL's classic edge count (one ``incb`` of the slot's byte) as the yardstick; the two
loops run in turn, ``--rounds`` times, and the nanoseconds per count of each and their ratio are
printed (medians, and the ratios' spread), for each compiler given.

    python bench/count_bench.py [--compilers clang,gcc] [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ffcc.instrument.labels import COUNT_FORM, LABELS_WRITTEN, UNIT_HEADER_SIZE  # noqa: E402

LABELS = 16  # counts a turn of the loop
TURNS = 20_000_000
TURN_BODY = " ".join(f"COUNT({i}, k >= 0);" for i in range(LABELS))

PROGRAM = f"""#include <stdint.h>
#include <stdio.h>
#include <time.h>
unsigned char __ffcc_unit_slots[{UNIT_HEADER_SIZE} + {LABELS}], counts[sizeof __ffcc_unit_slots],
    retired[sizeof __ffcc_unit_slots], edges[{LABELS}], {LABELS_WRITTEN};
uintptr_t __ffcc_label_delta, __ffcc_retire_delta;
{COUNT_FORM}
#define EDGE(i, p) __asm__ volatile("testb %[hit], %[hit]\\n\\tjz 1f\\n\\tincb %c[slot](%%rip)\\n1:" \\
    : : [hit] "q"((unsigned char)!!(p)), [slot] "i"(&edges[i]))
#define TURN(COUNT) for (long k = 0; k < {TURNS}; k++) {{ {TURN_BODY} }}
__attribute__((noinline)) static void labels(void) {{ TURN(__FFCC_COUNT) }}
__attribute__((noinline)) static void afl(void) {{ TURN(EDGE) }}
static double seconds(void (*loop)(void)) {{
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  loop();
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}}
int main(void) {{
  __ffcc_label_delta = (uintptr_t)counts - (uintptr_t)__ffcc_unit_slots;
  __ffcc_retire_delta = (uintptr_t)retired - (uintptr_t)__ffcc_unit_slots;
  double label_s = seconds(labels), edge_s = seconds(afl);
  printf("%.4f %.4f %d\\n", label_s * 1e9 / {TURNS} / {LABELS}, edge_s * 1e9 / {TURNS} / {LABELS},
         counts[{UNIT_HEADER_SIZE}]);
  return 0;
}}
"""


def build(compiler: str, workdir: Path) -> Path:
    source = workdir / "count.c"
    source.write_text(PROGRAM)
    program = workdir / f"count-{compiler}"
    subprocess.run([compiler, "-O2", str(source), "-o", str(program)], check=True)
    return program


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compilers", default="clang,gcc")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        programs = {compiler: build(compiler, Path(tmp)) for compiler in args.compilers.split(",")}
        found: dict[str, list[tuple[float, float]]] = {compiler: [] for compiler in programs}
        for _ in range(args.rounds):
            for compiler, program in programs.items():
                label_ns, edge_ns, count = subprocess.run(
                    [str(program)], capture_output=True, text=True, check=True).stdout.split()
                if count != "255":
                    raise RuntimeError(f"{compiler}: a held label counted {count}, not 255")
                found[compiler].append((float(label_ns), float(edge_ns)))
    print(f"{'compiler':10} {'label ns':>9} {'AFL edge ns':>12} {'ratio':>6}  (min-max)")
    for compiler, pairs in found.items():
        ratios = [label / edge for label, edge in pairs]
        print(f"{compiler:10} {statistics.median(p[0] for p in pairs):9.2f} "
              f"{statistics.median(p[1] for p in pairs):12.2f} {statistics.median(ratios):6.2f}"
              f"  ({min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
