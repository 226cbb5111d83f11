"""Distinct bugs found: ffuzz on a weak-mutation build against ffuzz and afl-fuzz on plain builds.

Issue 12's question: do labels pay for themselves where bugs hide at boundaries?  For each
program (samples/bugs and samples/boundaries) and each of

  ffuzz-wm       ffuzz on the `--wm` build (covered labels retire, ffuzz's default)
  ffuzz-2phase   ffuzz on the plain ffcc build, then on the `--wm` build (--labels-binary)
  ffuzz          ffuzz on the plain ffcc build
  afl-fuzz       afl-fuzz (AFL++) on the plain afl-clang-fast build

R campaigns of S seconds run in turn (the order rotates every round), and every saved crash and
hang is sorted into the program's bugs by replaying it on a plain gcc build: for boundaries, the
last record its trace names (BOUNDARIES_TRACE); for bugs, the first of its lines that crashes or
hangs alone, by its command word.  Printed: distinct bugs per campaign, median and min-max per
fuzzer, and the union over all rounds.

    python bench/bugs_bench.py [--seconds 60] [--runs 3] [--programs bugs,boundaries]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.fuzz_bench import ENV, WORK, campaign  # noqa: E402

FUZZERS = ("ffuzz-wm", "ffuzz-2phase", "ffuzz", "afl-fuzz")
REPLAY_SECONDS = 2.0


def build(program: str) -> dict[str, Path]:
    """The program's builds: ffcc plain, ffcc --wm, afl-clang-fast, gcc (for sorting)."""
    source = REPO / "samples" / program / f"{program}.c"
    out = WORK / f"bugs-{program}"
    out.mkdir(parents=True, exist_ok=True)
    builds = {"plain": out / "plain", "wm": out / "wm", "afl": out / "afl", "gcc": out / "gcc"}
    commands = {"plain": ["ffcc", "-O2"], "wm": ["ffcc", "--wm", "-O2"],
                "afl": ["afl-clang-fast", "-O2"], "gcc": ["gcc", "-O2"]}
    for name, command in commands.items():
        subprocess.run([*command, "-o", str(builds[name]), str(source)], check=True,
                       capture_output=True, env={**ENV, "AFL_QUIET": "1"})
    return builds


def fuzz(fuzzer: str, builds: dict[str, Path], seeds: Path, seconds: float, name: str) -> Path:
    """One campaign; returns its output directory's instance folder."""
    if fuzzer == "afl-fuzz":
        campaign("afl-fuzz", builds["afl"], seeds, seconds, name)
    elif fuzzer == "ffuzz-wm":
        campaign("ffuzz", builds["wm"], seeds, seconds, name)
    elif fuzzer == "ffuzz-2phase":
        campaign("ffuzz", builds["plain"], seeds, seconds, name,
                 extra=("--labels-binary", str(builds["wm"])))
    else:
        campaign("ffuzz", builds["plain"], seeds, seconds, name)
    return WORK / name / "default"


def replay(binary: Path, data: bytes, env: dict[str, str]) -> tuple[int | None, str]:
    """Exit status (None: still running after REPLAY_SECONDS) and stderr of one run."""
    try:
        done = subprocess.run([str(binary)], input=data, capture_output=True, env=env,
                              timeout=REPLAY_SECONDS)
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr.decode(errors="replace")


def failed(status: int | None) -> bool:
    return status is None or status < 0


def boundaries_bug(binary: Path, data: bytes) -> str | None:
    status, err = replay(binary, data, {**os.environ, "BOUNDARIES_TRACE": "1"})
    ops = [line for line in err.splitlines() if line.startswith("op ")]
    return ops[-1] if failed(status) and ops else None


def bugs_bug(binary: Path, data: bytes) -> str | None:
    for line in data.split(b"\n"):
        status, _ = replay(binary, line + b"\n", dict(os.environ))
        if failed(status):
            words = line.split()
            return words[0].decode(errors="replace") if words else "?"
    return None


SORTERS: dict[str, Callable[[Path, bytes], str | None]] = {
    "boundaries": boundaries_bug, "bugs": bugs_bug}


def bugs_found(instance: Path, sorter: Callable[[Path, bytes], str | None],
               binary: Path) -> set[str]:
    found = set()
    for folder in ("crashes", "hangs"):
        for case in sorted((instance / folder).glob("id:*")):
            bug = sorter(binary, case.read_bytes())
            if bug is not None:
                found.add(bug)
    return found


def bench(program: str, seconds: float, runs: int) -> dict[str, object]:
    builds = build(program)
    seeds = REPO / "samples" / program / "seeds"
    per_run: dict[str, list[int]] = {f: [] for f in FUZZERS}
    union: dict[str, set[str]] = {f: set() for f in FUZZERS}
    for round_number in range(runs):
        order = FUZZERS[round_number % len(FUZZERS):] + FUZZERS[:round_number % len(FUZZERS)]
        for fuzzer in order:
            instance = fuzz(fuzzer, builds, seeds, seconds, f"bugs-{program}-{fuzzer}")
            found = bugs_found(instance, SORTERS[program], builds["gcc"])
            per_run[fuzzer].append(len(found))
            union[fuzzer] |= found
            print(f"{program} round {round_number + 1} {fuzzer}: {len(found)} bugs "
                  f"{sorted(found)}", file=sys.stderr, flush=True)
    return {fuzzer: {"bugs_per_run": per_run[fuzzer],
                     "median": statistics.median(per_run[fuzzer]),
                     "min_max": f"{min(per_run[fuzzer])}-{max(per_run[fuzzer])}",
                     "union": sorted(union[fuzzer])} for fuzzer in FUZZERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", default="bugs,boundaries")
    args = parser.parse_args(argv)
    results = {program: bench(program, args.seconds, args.runs)
               for program in args.programs.split(",")}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
