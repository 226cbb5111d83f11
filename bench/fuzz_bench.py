"""ffuzz against afl-fuzz on the same binary, seeds and time budget.

    python bench/fuzz_bench.py speed  [--seconds 30] [--runs 3]
    python bench/fuzz_bench.py edges  [--minutes 5] [--runs 3] [--fuzzers ffuzz,afl-fuzz]
    python bench/fuzz_bench.py shadow [--seconds 60]

speed:  executions per second, both havoc-only (afl-fuzz -d; ffuzz -p afl,
        whose deterministic stages are off by default); runs alternate between
        the fuzzers and the median ratio ffuzz/afl-fuzz is reported, and the
        same for ffuzz --no-batch (one child per request, as afl-fuzz: the
        engine alone; batches only apply to ffcc-built persistent targets).
edges:  edges_found after the time budget, median of R runs, for ffuzz
        (FairFuzz), ffuzz -p afl (ffuzz-afl) and afl-fuzz (--fuzzers picks).
shadow: an ffuzz -s -D campaign; its shadow_mode.csv summarised like the
        FairFuzz paper's Table 2 (average % of children hitting the target).

The target defaults to samples/keywords built with afl-clang-fast; --source
and --seeds pick another program (one C file reading the file named by its
first argument); --target cjson takes cJSON's own libFuzzer harness
(fuzzing/cjson_read_fuzzer.c, Debian's cjson sources) built with ffcc, whose
harness main runs persistent with shared-memory test cases under both fuzzers.
Work files go to bench/.work/.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from ffcc.fuzzer.shadow import LOG_NAME, summarize

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench" / ".work"
# Both fuzzers bind to a free CPU, as they do by default (fuzzer/affinity.py).
ENV = {**{k: v for k, v in os.environ.items() if k != "AFL_NO_AFFINITY"},
       "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1",
       "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_ALLOW_TMP": "1"}


def build(source: Path) -> Path:
    out = WORK / source.stem
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["afl-clang-fast", "-O2", "-o", str(out), str(source)], check=True,
                   capture_output=True, env={**ENV, "AFL_QUIET": "1"})
    return out


def build_cjson_harness(flags: tuple[str, ...] = (),
                        name: str = "cjson_read_fuzzer") -> tuple[Path, Path]:
    """cJSON's fuzzing harness built by ffcc (with ``flags``: label options), as WORK/name,
    and cJSON's own fuzzing seeds."""
    sys.path.insert(0, str(REPO))
    from bench.projects import CJSON, fetch

    tree = fetch(CJSON)
    out = WORK / name
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["ffcc", *flags, "-O2", f"-I{tree}", str(tree / "cJSON.c"),
                    str(tree / "fuzzing" / "cjson_read_fuzzer.c"), "-o", str(out)],
                   check=True, capture_output=True)
    return out, tree / "fuzzing" / "inputs"


def read_stats(out: Path) -> dict[str, str]:
    lines = (out / "default" / "fuzzer_stats").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def campaign(fuzzer: str, binary: Path, seeds: Path, seconds: float, name: str,
             extra: tuple[str, ...] = ()) -> dict[str, str]:
    """One timed campaign; returns its final fuzzer_stats."""
    out = WORK / name
    shutil.rmtree(out, ignore_errors=True)
    if fuzzer == "afl-fuzz":
        cmd = ["afl-fuzz", "-i", str(seeds), "-o", str(out), "-V", str(int(seconds)), "-d", *extra]
    else:
        cmd = ["ffuzz", "-i", str(seeds), "-o", str(out), "-V", str(seconds), *extra]
    subprocess.run([*cmd, "--", str(binary), "@@"], check=True, env=ENV,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 120)
    return read_stats(out)


def execs_per_sec(stats: dict[str, str]) -> float:
    return int(stats["execs_done"]) / max(int(stats["run_time"]), 1)


def bench_speed(binary: Path, seeds: Path, seconds: float, runs: int) -> dict[str, object]:
    ours, single, theirs = [], [], []
    for r in range(runs):
        ours.append(execs_per_sec(campaign("ffuzz", binary, seeds, seconds, f"speed-ffuzz-{r}",
                                           ("-p", "afl"))))
        single.append(execs_per_sec(campaign("ffuzz", binary, seeds, seconds,
                                             f"speed-ffuzz-single-{r}", ("-p", "afl", "--no-batch"))))
        theirs.append(execs_per_sec(campaign("afl-fuzz", binary, seeds, seconds, f"speed-afl-{r}")))
    return {"ffuzz_execs_per_sec": ours, "ffuzz_no_batch_execs_per_sec": single,
            "afl_fuzz_execs_per_sec": theirs,
            "median_ratio": statistics.median(o / t for o, t in zip(ours, theirs, strict=True)),
            "median_ratio_no_batch": statistics.median(
                o / t for o, t in zip(single, theirs, strict=True))}


EDGE_SETUPS = {"ffuzz": ("ffuzz", ()), "ffuzz-afl": ("ffuzz", ("-p", "afl")),
               "afl-fuzz": ("afl-fuzz", ())}


def bench_edges(binary: Path, seeds: Path, seconds: float, runs: int,
                names: list[str]) -> dict[str, object]:
    setups = {name: EDGE_SETUPS[name] for name in names}
    found: dict[str, list[int]] = {name: [] for name in setups}
    for r in range(runs):
        for name, (fuzzer, extra) in setups.items():
            stats = campaign(fuzzer, binary, seeds, seconds, f"edges-{name}-{r}", extra)
            found[name].append(int(stats["edges_found"]))
    return {name: {"runs": v, "median": statistics.median(v)} for name, v in found.items()}


def bench_shadow(binary: Path, seeds: Path, seconds: float) -> dict[str, object]:
    campaign("ffuzz", binary, seeds, seconds, "shadow", ("-s", "-D"))
    table = summarize(WORK / "shadow" / "default" / LOG_NAME)
    return table.__dict__


def show(result: dict[str, object]) -> str:
    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.2f}"
        if isinstance(v, list):
            return ", ".join(fmt(x) for x in v)
        if v is None:
            return "n/a"
        return str(v)
    def line(v: object) -> str:
        if isinstance(v, dict):
            return "  ".join(f"{k} {fmt(x)}" for k, x in v.items())
        return fmt(v)
    width = max(map(len, result))
    return "\n".join(f"{k:>{width}}: {line(v)}" for k, v in result.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["speed", "edges", "shadow"])
    parser.add_argument("--target", choices=["source", "cjson"], default="source",
                        help="source: --source/--seeds; cjson: cJSON's libFuzzer harness")
    parser.add_argument("--source", type=Path, default=REPO / "samples/keywords/keywords.c")
    parser.add_argument("--seeds", type=Path, default=REPO / "samples/keywords/seeds")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--minutes", type=float, help="edges mode: budget per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fuzzers", default="ffuzz,ffuzz-afl,afl-fuzz",
                        help="edges mode: which of ffuzz (FairFuzz), ffuzz-afl, afl-fuzz")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not shutil.which("afl-clang-fast") or not shutil.which("afl-fuzz"):
        print("fuzz_bench: AFL++ (afl-clang-fast, afl-fuzz) is needed", file=sys.stderr)
        return 1
    if args.target == "cjson":
        binary, args.seeds = build_cjson_harness()
    else:
        binary = build(args.source)
    seconds = args.minutes * 60 if args.minutes else args.seconds
    if args.mode == "speed":
        result = bench_speed(binary, args.seeds, seconds, args.runs)
    elif args.mode == "edges":
        result = bench_edges(binary, args.seeds, seconds, args.runs, args.fuzzers.split(","))
    else:
        result = bench_shadow(binary, args.seeds, seconds)
    print(json.dumps(result, indent=2) if args.json else show(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
