"""Driver benchmark: what ffcc costs at build time and at fuzzing time.

Prints, from one run:
  (a) jq's build (make) time with CC=ffcc / with CC=gcc          (target <= 1.3),
      and the same for configure, which runs ~300 tiny compiles and so mostly
      measures process start-up (Python's, and clang's against gcc's)
  (b) afl-fuzz execs/s on the ffcc binary / on the same program
      built with afl-clang-fast, both campaigns havoc-only from one warmed-up
      corpus with the same RNG seed                              (target >= 0.9)
  (c) the same comparison on a fixed workload: afl-showmap runs both binaries
      through their forkservers on the same 3,000 inputs (campaigns still find
      different things; this workload does not change)
Both sides run alternately in the same run on the same machine, so the figures
are ratios, never absolute times.

    python bench/driver_bench.py [--fuzz-seconds 20] [--rounds 2] [--skip-build]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.projects import JQ, fresh_copy, run_step  # noqa: E402

AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_NO_AFFINITY": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "PATH": "/usr/bin:/bin"}
FUZZ_TARGETS = ("keywords", "bugs")


def ffcc_executable() -> str:
    """The installed script itself, not a version manager's shim in front of it."""
    beside_python = Path(sys.executable).parent / "ffcc"
    return str(beside_python) if beside_python.exists() else "ffcc"


def build_seconds(cc: str, workdir: Path) -> tuple[float, float]:
    """(configure, make) seconds for jq built with this CC."""
    tree = fresh_copy(JQ, workdir / Path(cc).name)
    configure, _ = run_step(JQ.configure.format(cc=cc), tree)
    make, _ = run_step(JQ.build, tree)
    return configure, make


def build_ratios(rounds: int) -> tuple[float, float]:
    """Median (make, configure) time ratios, ffcc over gcc, rounds alternating."""
    make_ratios, configure_ratios = [], []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            gcc_conf, gcc_make = build_seconds("gcc", Path(tmp))
            ffcc_conf, ffcc_make = build_seconds(ffcc_executable(), Path(tmp))
        print(f"  jq round {r + 1}: make gcc {gcc_make:.1f}s ffcc {ffcc_make:.1f}s; "
              f"configure gcc {gcc_conf:.1f}s ffcc {ffcc_conf:.1f}s")
        make_ratios.append(ffcc_make / gcc_make)
        configure_ratios.append(ffcc_conf / gcc_conf)
    return statistics.median(make_ratios), statistics.median(configure_ratios)


def build_pair(target: str, work: Path) -> tuple[Path, Path]:
    """The sample built by ffcc and by afl-clang-fast, both -O2."""
    sources = sorted(str(p) for p in (REPO / "samples" / target).glob("*.c"))
    subprocess.run([ffcc_executable(), "-O2", "-o", f"{work}/ffcc/", *sources], check=True,
                   capture_output=True)
    (work / "afl").mkdir()
    subprocess.run(["afl-clang-fast", "-O2", *sources, "-o", str(work / "afl" / target)],
                   check=True, capture_output=True, env={**AFL_ENV, "AFL_QUIET": "1"})
    return work / "ffcc" / target, work / "afl" / target


def afl_fuzz(binary: Path, seeds: Path, seconds: int, out: Path, *flags: str) -> dict[str, str]:
    subprocess.run(["afl-fuzz", "-V", str(seconds), *flags, "-i", str(seeds), "-o", str(out), "--",
                    str(binary), "@@"], env=AFL_ENV, capture_output=True, check=True)
    lines = (out / "default" / "fuzzer_stats").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def speed_ratio(target: str, seconds: int, rounds: int) -> float:
    """afl-fuzz execs/s on each binary, from the same warmed-up corpus with the same RNG seed,
    havoc only, so that both campaigns do nearly the same work (fresh campaigns diverge)."""
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours_bin, theirs_bin = build_pair(target, work)
        afl_fuzz(theirs_bin, REPO / "samples" / target / "seeds", seconds, work / "warmup")
        corpus = work / "corpus"
        corpus.mkdir()
        for entry in (work / "warmup" / "default" / "queue").iterdir():
            if entry.is_file():
                shutil.copy(entry, corpus / entry.name.replace(":", "_"))
        binaries = [("ffcc", ours_bin), ("afl", theirs_bin)]
        for r in range(rounds):
            speed = {}
            for name, binary in binaries[::1 if r % 2 == 0 else -1]:  # alternate who goes first
                stats = afl_fuzz(binary, corpus, seconds, work / f"{name}{r}", "-d", "-s", "1")
                speed[name] = int(stats["execs_done"]) / max(int(stats["run_time"]), 1)
            print(f"  {target} round {r + 1}: ffcc {speed['ffcc']:.0f}/s, afl-clang-fast "
                  f"{speed['afl']:.0f}/s, ratio {speed['ffcc'] / speed['afl']:.2f}")
            ratios.append(speed["ffcc"] / speed["afl"])
    return statistics.median(ratios)


def fixed_workload_ratio(target: str, rounds: int, copies: int = 1000) -> float:
    """Median of (afl-clang-fast time / ffcc time) over the same inputs, i.e. speed ratio."""
    seeds = sorted((REPO / "samples" / target / "seeds").iterdir())
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = work / "inputs"
        inputs.mkdir()
        for n in range(copies):
            for seed in seeds:
                (inputs / f"{n}-{seed.name}").write_bytes(seed.read_bytes())
        binaries = list(zip(("ffcc", "afl"), build_pair(target, work)))
        for r in range(rounds):
            seconds = {}
            for name, binary in binaries[::1 if r % 2 == 0 else -1]:  # alternate who goes first
                shutil.rmtree(work / "maps", ignore_errors=True)
                start = time.monotonic()
                subprocess.run(["afl-showmap", "-q", "-i", str(inputs), "-o", str(work / "maps"),
                                "--", str(binary), "@@"], env={**AFL_ENV, "AFL_QUIET": "1"},
                               capture_output=True)
                seconds[name] = time.monotonic() - start
            print(f"  {target} round {r + 1}: ffcc {seconds['ffcc']:.2f}s, afl-clang-fast "
                  f"{seconds['afl']:.2f}s for {copies * len(seeds)} runs, "
                  f"ratio {seconds['afl'] / seconds['ffcc']:.2f}")
            ratios.append(seconds["afl"] / seconds["ffcc"])
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz-seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--skip-campaigns", action="store_true", help="skip (b)")
    args = parser.parse_args()
    if not args.skip_build:
        print("(a) jq build time, CC=ffcc / CC=gcc")
        make_ratio, configure_ratio = build_ratios(args.rounds)
        print(f"    make: median ratio {make_ratio:.2f} (target <= 1.3)")
        print(f"    configure: median ratio {configure_ratio:.2f} (process start-up bound)")
    if not args.skip_campaigns:
        print("(b) afl-fuzz execs/s, ffcc binary / afl-clang-fast binary (target >= 0.9)")
    for target in FUZZ_TARGETS if not args.skip_campaigns else ():
        print(f"    {target}: median ratio {speed_ratio(target, args.fuzz_seconds, args.rounds):.2f}")
    print("(c) executions per second on a fixed workload, ffcc / afl-clang-fast (target >= 0.9)")
    for target in FUZZ_TARGETS:
        print(f"    {target}: median ratio {fixed_workload_ratio(target, args.rounds):.2f}")


if __name__ == "__main__":
    main()
