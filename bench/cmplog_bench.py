"""Input-to-state: ffuzz -c against afl-fuzz -c, and what -c costs where it finds nothing.

    python bench/cmplog_bench.py magic    [--seconds 60] [--runs 3]
    python bench/cmplog_bench.py zlib     [--seconds 60] [--runs 3]
    python bench/cmplog_bench.py overhead [--seconds 60] [--runs 3]

magic:    samples/magic for --seconds, --runs times, ffuzz -c (ffcc and ffcc --cmplog
          builds) and afl-fuzz -c (an afl-clang-fast build and its AFL_LLVM_CMPLOG=1
          companion), alternating which goes first.  The rival is AFL++ built from its source
          (--aflpp, bench/rivals.py), checked first: Debian's packaged afl-fuzz 4.04c never
          runs its input-to-state stage, and earlier figures of this bench that used it
          compared ffuzz with a rival that could not solve a magic value.  Per run:
          crashes saved, seconds to the first one (from its file name's time:), and edges
          of the queue and crashes replayed on the ffcc build (both count the same build's
          edges).
zlib:     the same on Debian's zlib (bench/projects.py fetches its sources): a harness that
          inflates its input with gzip or zlib header detection (magic bytes, method,
          flags, header CRC, trailer CRC-32 and length); seeds made by Python's gzip and
          zlib modules.
overhead: executions per second of ffuzz -c / ffuzz, alternating, median ratio and spread,
          on two programs whose coverage keeps growing (so the cmplog stage runs on every
          new entry): "length" branches on the input's length only, so the stage finds
          nothing (colorization keeps the whole input at its first try, no operand is input
          bytes); "hashed" branches on hashes of byte pairs, where colorization's random
          bytes keep finding new hashes, so the stage is busy (and finds entries).

No fuzzer is bound to a CPU (AFL_NO_AFFINITY): on a shared machine afl-fuzz finds none free.
Work files go to bench/.work/.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import subprocess
import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench import rivals  # noqa: E402
from bench.fuzz_bench import (  # noqa: E402
    ENV,
    RIVAL_ENV,
    WORK,
    campaign,
    corpus_edges,
    execs_per_sec,
    spread,
)

MAGIC = REPO / "samples" / "magic"

# Branches on the input's length: its size class, and a loop over its 16-byte blocks.
LENGTH_C = r"""
#include <stdio.h>
int main(int argc, char **argv) {
  static unsigned char b[4096];
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  size_t n = fread(b, 1, sizeof b, f);
  volatile unsigned blocks = 0;
  for (size_t i = 0; i < n; i += 16) blocks++;
  switch (n / 32) {
#define C(k) case k: blocks += k; break;
    C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15)
    C(16) C(17) C(18) C(19) C(20) C(21) C(22) C(23) C(24) C(25) C(26) C(27) C(28) C(29)
    C(30) C(31)
  }
  return 0;
}
"""

# Thirty-two branches chosen by a hash of each pair of adjacent bytes: none of the compared
# values is ever bytes of the input, but random bytes reach new branches.
HASHED_C = r"""
#include <stdio.h>
int main(int argc, char **argv) {
  unsigned char b[256] = {0};
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  size_t n = fread(b, 1, sizeof b, f);
  volatile unsigned seen = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    unsigned h = ((b[i] * 131u + b[i + 1]) * 2654435761u) >> 27;
    switch (h) {
#define C(k) case k: seen |= 1u << k; break;
    C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15)
    C(16) C(17) C(18) C(19) C(20) C(21) C(22) C(23) C(24) C(25) C(26) C(27) C(28) C(29)
    C(30) C(31)
    }
  }
  return seen == 0xffffffffu;
}
"""


ZLIB_HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "zlib.h"
int main(int argc, char **argv) {
  static unsigned char in[65536], out[65536];
  FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!f) return 1;
  size_t n = fread(in, 1, sizeof in, f);
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inflateInit2(&s, 15 + 32) != Z_OK) return 1; /* gzip or zlib header */
  s.next_in = in;
  s.avail_in = (uInt)n;
  int rc;
  do {
    s.next_out = out;
    s.avail_out = sizeof out;
    rc = inflate(&s, Z_NO_FLUSH);
  } while (rc == Z_OK && (s.avail_in > 0 || s.avail_out == 0));
  inflateEnd(&s);
  return rc == Z_STREAM_END ? 0 : 3;
}
"""
ZLIB_SOURCES = ("adler32.c", "crc32.c", "inflate.c", "inftrees.c", "inffast.c", "zutil.c")


def build(command: list[str], sources: list[Path], output: Path, flags: tuple[str, ...] = (),
          env: dict[str, str] = ENV) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([*command, "-O2", *flags, "-o", str(output), *map(str, sources)],
                   check=True, capture_output=True, env={**env, "AFL_QUIET": "1"})
    return output


def rival_builds(sources: list[Path], out: Path, afl_env: dict[str, str],
                 flags: tuple[str, ...] = ()) -> dict[str, Path]:
    """ffcc and afl-clang-fast builds of a program, each also with comparison logging; the
    AFL++ that ``afl_env``'s PATH finds builds its own."""
    return {
        "ffcc": build(["ffcc"], sources, out / "ffcc", flags),
        "ffcc-cmplog": build(["ffcc", "--cmplog"], sources, out / "ffcc-cmplog", flags),
        "afl": build(["afl-clang-fast"], sources, out / "afl", flags, {**ENV, **afl_env}),
        "afl-cmplog": build(["afl-clang-fast"], sources, out / "afl-cmplog", flags,
                            {**ENV, **afl_env, "AFL_LLVM_CMPLOG": "1"}),
    }


def zlib_setup(afl_env: dict[str, str]) -> tuple[dict[str, Path], Path]:
    """zlib's inflate harness, built four ways, and its seeds."""
    from bench.projects import ZLIB, fetch

    tree = fetch(ZLIB)
    out = WORK / "cmplog-zlib"
    out.mkdir(parents=True, exist_ok=True)
    harness = out / "inflate_harness.c"
    harness.write_text(ZLIB_HARNESS)
    builds = rival_builds([harness, *(tree / name for name in ZLIB_SOURCES)], out, afl_env,
                          ("-I", str(tree)))
    seeds = out / "seeds"
    seeds.mkdir(exist_ok=True)
    text = b"magic numbers, checksums and lengths guard every compressed stream\n" * 3
    (seeds / "text.gz").write_bytes(gzip.compress(text, mtime=0))
    (seeds / "text.zlib").write_bytes(zlib.compress(text))
    (seeds / "short.gz").write_bytes(gzip.compress(b"ab", mtime=0))
    return builds, seeds


def first_crash_seconds(instance: Path) -> float | None:
    times = [int(match.group(1)) for path in (instance / "crashes").glob("id:*")
             if (match := re.search(r"time:(\d+)", path.name))]
    return min(times) / 1000 if times else None


def rival_run(fuzzer: str, builds: dict[str, Path], seeds: Path, seconds: float,
              name: str, afl_env: dict[str, str]) -> dict:
    if fuzzer == "ffuzz":
        stats = campaign("ffuzz", builds["ffcc"], seeds, seconds, name,
                         ("-c", str(builds["ffcc-cmplog"])), env=RIVAL_ENV)
    else:  # AFL++'s own usage: the plain build, its cmplog companion beside it
        stats = campaign("afl-fuzz", builds["afl"], seeds, seconds, name,
                         ("-c", str(builds["afl-cmplog"])),
                         env={**RIVAL_ENV, "PATH": afl_env["PATH"]})
    instance = WORK / name / "default"
    return {"crashes": int(stats["saved_crashes"]),
            "first_crash_s": first_crash_seconds(instance),
            "edges": corpus_edges(builds["ffcc"], [instance / "queue", instance / "crashes"]),
            "execs": int(stats["execs_done"])}


def bench_magic(seconds: float, runs: int, afl_env: dict[str, str]) -> dict[str, object]:
    builds = rival_builds([MAGIC / "magic.c"], WORK / "cmplog-magic", afl_env)
    return bench_rivals("magic", builds, MAGIC / "seeds", seconds, runs, afl_env)


def bench_zlib(seconds: float, runs: int, afl_env: dict[str, str]) -> dict[str, object]:
    builds, seeds = zlib_setup(afl_env)
    return bench_rivals("zlib", builds, seeds, seconds, runs, afl_env)


def bench_rivals(program: str, builds: dict[str, Path], seeds: Path, seconds: float,
                 runs: int, afl_env: dict[str, str]) -> dict[str, object]:
    """ffuzz -c and afl-fuzz -c, alternating which goes first."""
    results: dict[str, list[dict]] = {"ffuzz": [], "afl-fuzz": []}
    for r in range(runs):
        order = ["ffuzz", "afl-fuzz"] if r % 2 == 0 else ["afl-fuzz", "ffuzz"]
        for fuzzer in order:
            results[fuzzer].append(rival_run(fuzzer, builds, seeds, seconds,
                                             f"cmplog-{program}-{fuzzer}-{r}", afl_env))
    summary: dict[str, object] = {}
    for fuzzer, rows in results.items():
        firsts = [row["first_crash_s"] for row in rows if row["first_crash_s"] is not None]
        summary[fuzzer] = {
            "runs": rows,
            "runs_with_crash": sum(row["crashes"] > 0 for row in rows),
            "median_first_crash_s": statistics.median(firsts) if firsts else None,
            "edges": spread([float(row["edges"]) for row in rows]),
        }
    return summary


def bench_overhead(seconds: float, runs: int) -> dict[str, object]:
    return {name: overhead(name, source, seconds, runs)
            for name, source in (("length", LENGTH_C), ("hashed", HASHED_C))}


def overhead(name: str, program: str, seconds: float, runs: int) -> dict[str, object]:
    out = WORK / f"cmplog-{name}"
    out.mkdir(parents=True, exist_ok=True)
    source = out / f"{name}.c"
    source.write_text(program)
    plain = build(["ffcc"], [source], out / "plain")
    cmplog = build(["ffcc", "--cmplog"], [source], out / "cmplog")
    seeds = out / "seeds"
    seeds.mkdir(exist_ok=True)
    (seeds / "a").write_bytes(b"a seed of some length")
    with_c: list[float] = []
    without: list[float] = []
    finds: list[int] = []
    for r in range(runs):
        order = [True, False] if r % 2 == 0 else [False, True]
        for use_c in order:
            extra = ("-c", str(cmplog)) if use_c else ()
            stats = campaign("ffuzz", plain, seeds, seconds, f"overhead-{name}-{use_c}-{r}",
                             extra, env=RIVAL_ENV)
            (with_c if use_c else without).append(execs_per_sec(stats))
            if use_c:
                finds.append(int(stats["cmplog_finds"]))
    ratios = [a / b for a, b in zip(with_c, without, strict=True)]
    return {"with_c_execs_per_sec": with_c, "without_execs_per_sec": without,
            "cmplog_finds": finds, "ratio": spread(ratios)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("magic", "zlib", "overhead"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--aflpp", type=Path, default=rivals.DEFAULT,
                        help="the AFL++ tree bench/rivals.py built (afl-fuzz, afl-clang-fast)")
    args = parser.parse_args(argv)
    if args.mode == "overhead":
        result = bench_overhead(args.seconds, args.runs)
    else:
        bench = bench_magic if args.mode == "magic" else bench_zlib
        result = bench(args.seconds, args.runs, rivals.working_path(args.aflpp))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
