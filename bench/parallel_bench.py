"""Parallel campaigns: `ffuzz -j 2` against one instance, and a Ray cluster's sync costs.

    python bench/parallel_bench.py jobs  [--minutes 3] [--runs 3] [--targets keywords,cjson]
                                         [--sync-seconds 20]
    python bench/parallel_bench.py scale [--actors 16] [--seconds 120] [--target keywords]

jobs:   the same wall time for one ffuzz and for `ffuzz -j 2`, runs alternating (one, two,
        one, two, ...); per target the median of the runs' total executions and edges, and
        the median and spread of the per-pair ratios.  Edges of -j 2 are the most any
        instance found (the main node imports every peer's finds, so that is nearly their
        union).  The load average before each run is recorded: on a shared machine it says
        how much of a core the instances really had.
scale:  `ffuzz cluster` with N actors on a local Ray instance for a fixed time; the hub's
        counters give the sync traffic per queue entry (messages and bytes through Ray) and
        the cost of each merge of the FairFuzz hit counts.

Targets: samples/keywords built by ffcc (a file-reading program, one child per execution)
and cJSON's libFuzzer harness built by ffcc (persistent, batches).  Work files go to
bench/.work/parallel/; results are printed and saved as JSON there.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fuzz_bench import ENV, WORK, build_cjson_harness  # noqa: E402

HERE = WORK / "parallel"
INSTANCES = ("main", "sec1")


def build_keywords() -> tuple[Path, Path]:
    HERE.mkdir(parents=True, exist_ok=True)
    binary = HERE / "keywords"
    subprocess.run(["ffcc", "-O2", "-o", str(binary), str(REPO / "samples/keywords/keywords.c")],
                   check=True, capture_output=True)
    return binary, REPO / "samples" / "keywords" / "seeds"


TARGETS = {"keywords": build_keywords,
           "cjson": lambda: build_cjson_harness(name="cjson_read_fuzzer_parallel")}


def read_stats(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def run_campaign(jobs: int, binary: Path, seeds: Path, seconds: float, out: Path,
                 sync_seconds: float) -> dict[str, float]:
    """One campaign of `seconds`; its total executions, edges and the load before it."""
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    parallel = ["-j", str(jobs), "--sync-seconds", str(sync_seconds)] if jobs > 1 else []
    started = time.monotonic()
    subprocess.run(["ffuzz", *parallel, "-V", str(seconds), "-i", str(seeds), "-o", str(out),
                    "--", str(binary), "@@"], check=True, capture_output=True, env=ENV)
    wall = time.monotonic() - started
    stats = [read_stats(out / name / "fuzzer_stats")
             for name in (INSTANCES if jobs > 1 else ("default",))]
    return {"execs": sum(int(s["execs_done"]) for s in stats),
            "edges": max(int(s["edges_found"]) for s in stats),
            "imported": sum(int(s.get("corpus_imported", 0)) for s in stats),
            "wall": round(wall, 1), "load_before": load}


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def bench_jobs(targets: list[str], seconds: float, runs: int,
               sync_seconds: float) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name in targets:
        binary, seeds = TARGETS[name]()
        single, double = [], []
        for run in range(runs):
            single.append(run_campaign(1, binary, seeds, seconds, HERE / f"{name}-one-{run}",
                                       sync_seconds))
            double.append(run_campaign(2, binary, seeds, seconds, HERE / f"{name}-two-{run}",
                                       sync_seconds))
            print(name, run, "one", single[-1], "two", double[-1], flush=True)
        execs_ratio = [d["execs"] / s["execs"] for s, d in zip(single, double)]
        edges_ratio = [d["edges"] / s["edges"] for s, d in zip(single, double)]
        results[name] = {
            "single": single, "jobs2": double,
            "median_execs": [statistics.median(r["execs"] for r in rs) for rs in (single, double)],
            "median_edges": [statistics.median(r["edges"] for r in rs) for rs in (single, double)],
            "execs_ratio_median": round(statistics.median(execs_ratio), 3),
            "execs_ratio_spread": spread(execs_ratio),
            "edges_ratio_median": round(statistics.median(edges_ratio), 3),
            "edges_ratio_spread": spread(edges_ratio)}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    jobs = sub.add_parser("jobs")
    jobs.add_argument("--minutes", type=float, default=3.0)
    jobs.add_argument("--runs", type=int, default=3)
    jobs.add_argument("--targets", default="keywords,cjson")
    jobs.add_argument("--sync-seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    HERE.mkdir(parents=True, exist_ok=True)
    result = bench_jobs(args.targets.split(","), args.minutes * 60, args.runs, args.sync_seconds)
    (HERE / f"{args.mode}.json").write_text(json.dumps(result, indent=1))
    for name, figures in result.items():
        summary = {k: v for k, v in figures.items() if k not in ("single", "jobs2")}
        print(name, json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
