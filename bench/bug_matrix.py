"""The whole bug benchmark in one command: LAVA-M and Magma's libpng, every configuration.

Runs bench/lava_bench.py (LAVA-M's four programs) and then bench/magma_bench.py (Magma's
libpng through its oss-fuzz harness), each with its default configurations (ffuzz with and
without labels and input-to-state, AFL++ built from source with -c, the original FairFuzz,
libFuzzer on the harness), R campaigns of S seconds each, two at a time, into RESULTS/lava
and RESULTS/magma (results.json, table.md, the plots), and writes RESULTS/summary.md, both
tables one after the other.  The defaults fit a 2-core machine in about an hour and a half
(78 campaigns of 120 s); longer runs are the same command with --seconds and --runs.

    python bench/bug_matrix.py [--seconds 120] [--runs 3] [--results DIR] \\
        [--corpus LAVA_M_REPO] [--magma MAGMA_REPO] [--libpng LIBPNG_REPO]

The repositories default to the public ones (each bench's own default); a local mirror or
checkout saves the download.  Builds are cached under ~/.cache/ffcc-bench/ by each bench.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench import lava_bench, magma_bench  # noqa: E402
from bench.fuzz_bench import WORK  # noqa: E402
from ffcc.runtime.files import write_atomic  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="campaigns at once (one per core)")
    parser.add_argument("--results", type=Path,
                        default=WORK / "bug-matrix" / time.strftime("%Y%m%d-%H%M%S"))
    parser.add_argument("--corpus", default=lava_bench.DEFAULT_CORPUS,
                        help="LAVA-M's repository (URL or path)")
    parser.add_argument("--magma", default=magma_bench.DEFAULT_MAGMA)
    parser.add_argument("--libpng", default=magma_bench.DEFAULT_LIBPNG)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    common = ["--seconds", str(args.seconds), "--runs", str(args.runs), "--jobs", str(args.jobs)]
    parts = {"lava": (lava_bench.main, ["--corpus", args.corpus]),
             "magma": (magma_bench.main, ["--magma", args.magma, "--libpng", args.libpng])}
    status = 0
    for name, (bench, own) in parts.items():
        status |= bench([*own, *common, "--results", str(args.results / name)])
    tables = [args.results / name / "table.md" for name in parts]
    summary = "\n\n".join(t.read_text() for t in tables if t.exists())
    write_atomic(args.results / "summary.md", summary)
    print(f"bug_matrix: tables and plots in {args.results} (summary.md)")
    return status


if __name__ == "__main__":
    sys.exit(main())
