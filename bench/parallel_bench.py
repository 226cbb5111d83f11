"""Parallel campaigns: `ffuzz -j 2` against one instance, and a Ray cluster's sync costs.

    python bench/parallel_bench.py jobs  [--minutes 3] [--runs 3] [--targets keywords,cjson]
                                         [--sync-seconds 20]
    python bench/parallel_bench.py scale [--actors 16] [--seconds 120] [--target keywords]
                                         [--sync-seconds 5]

jobs:   the same wall time for one ffuzz and for `ffuzz -j 2`, runs alternating (one, two,
        one, two, ...); per target the median of the runs' total executions and edges, and
        the median and spread of the per-pair ratios.  Edges of -j 2 are the most any
        instance found (the main node imports every peer's finds, so that is nearly their
        union).  Recorded with each run: the load average before it (how busy the machine
        was) and the CPU time the campaign got per second of wall time (1 for one instance
        with a core to itself, 2 for two: how much of the machine the instances really had).
scale:  `ffuzz cluster -j N` on a Ray head started here (`ray start --head --num-cpus N`,
        stopped after) for a fixed time; the hub's counters give the sync traffic per queue
        entry (messages and bytes through Ray) and the cost of each merge of the FairFuzz
        hit counts, and the hub alone is timed on larger maps (64 Ki to 8 Mi slots).

Targets: samples/keywords built by ffcc (a file-reading program, one child per execution)
and cJSON's libFuzzer harness built by ffcc (persistent, batches).  Work files go to
bench/.work/parallel/; results are printed and saved as JSON there.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from bench.fuzz_bench import ENV, WORK, build_cjson_harness  # noqa: E402
from ffcc.fuzzer.parallel.cluster import METRICS_FILE  # noqa: E402
from ffcc.fuzzer.parallel.cluster_hub import Hub, Report  # noqa: E402

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
    """One campaign of `seconds`: its total executions, edges, the load before it and the
    CPU time it had (fuzzers and targets: a contended core shows as less than 1 per
    instance)."""
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    parallel = ["-j", str(jobs), "--sync-seconds", str(sync_seconds)] if jobs > 1 else []
    started = time.monotonic()
    subprocess.run(["ffuzz", *parallel, "-V", str(seconds), "-i", str(seeds), "-o", str(out),
                    "--", str(binary), "@@"], check=True, capture_output=True, env=ENV)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stats = [read_stats(out / name / "fuzzer_stats")
             for name in (INSTANCES if jobs > 1 else ("default",))]
    return {"execs": sum(int(s["execs_done"]) for s in stats),
            "edges": max(int(s["edges_found"]) for s in stats),
            "imported": sum(int(s.get("corpus_imported", 0)) for s in stats),
            "wall": round(wall, 1), "cpus_used": round(cpu / wall, 2), "load_before": load}


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
            "cpus_used_median": [statistics.median(r["cpus_used"] for r in rs)
                                 for rs in (single, double)],
            "edges_ratio_spread": spread(edges_ratio)}
    return results


RAY_PORT = 6390


def bench_scale(actors: int, seconds: float, target: str,
                sync_seconds: float) -> dict[str, dict[str, object]]:
    """`ffuzz cluster -j actors` on a Ray head started here with that many CPUs."""
    binary, seeds = TARGETS[target]()
    out = HERE / f"scale-{actors}"
    shutil.rmtree(out, ignore_errors=True)
    ray = shutil.which("ray") or "ray"
    subprocess.run([ray, "start", "--head", f"--num-cpus={actors}", f"--port={RAY_PORT}",
                    "--include-dashboard=false", "--disable-usage-stats"], check=True,
                   capture_output=True)
    try:
        done = subprocess.run(
            ["ffuzz", "cluster", "--address", "auto", "-j", str(actors),
             "-V", str(seconds), "--sync-seconds", str(sync_seconds), "-i", str(seeds), "-o",
             str(out), "--", str(binary), "@@"],
            capture_output=True, text=True, env={**ENV, "AFL_NO_AFFINITY": "1"})
    finally:
        subprocess.run([ray, "stop"], capture_output=True)
    if not (out / METRICS_FILE).exists():
        raise RuntimeError(f"ffuzz cluster failed: {done.stderr[-2000:]}")
    m = json.loads((out / METRICS_FILE).read_text())
    stats = [read_stats(path) for path in sorted(out.glob("*/fuzzer_stats"))]
    entries = max(m["entries_in"], 1)
    map_size = m["hits_bytes_in"] // max(m["merges"], 1) // 4  # ffuzz_hits.npy holds uint32
    return {"run": {
        "instances": actors, "seconds": seconds, "sync_seconds": sync_seconds,
        "instances_ended_ok": done.returncode == 0, "map_size": map_size,
        "total_execs": sum(int(s["execs_done"]) for s in stats),
        "edges_max": max(int(s["edges_found"]) for s in stats),
        "entries_reported": m["entries_in"], "entries_delivered": m["entries_out"],
        "fan_out": round(m["entries_out"] / entries, 2),
        "entry_bytes_mean": round(m["entry_bytes_in"] / entries, 1),
        "entry_bytes_per_entry": round((m["entry_bytes_in"] + m["entry_bytes_out"]) / entries, 1),
        "messages": m["reports"] + m["deliveries"],
        "messages_per_entry": round((m["reports"] + m["deliveries"]) / entries, 2),
        "messages_per_instance_minute": round((m["reports"] + m["deliveries"]) / actors
                                              / (seconds / 60), 1),
        "hits_bytes_per_exchange": round((m["hits_bytes_in"] + m["hits_bytes_out"])
                                         / max(m["deliveries"], 1)),
        "merge_us": round(1e6 * m["merge_seconds"] / max(m["merges"], 1), 1),
        "answer_us": round(1e6 * m["answer_seconds"] / max(m["deliveries"], 1), 1),
        "other_bytes_in": m["other_bytes_in"]},
        "merge_cost_by_map_size": merge_costs(actors)}


def merge_costs(instances: int, sizes: tuple[int, ...] = (1 << 16, 1 << 20, 1 << 23),
                rounds: int = 20) -> dict[str, object]:
    """The hub's cost per report (merge) and per delivery (answer) for bigger maps, in
    microseconds: what one exchange costs the hub with a large program's map."""
    costs: dict[str, object] = {}
    rng = np.random.default_rng(1)
    for size in sizes:
        hub = Hub()
        for _ in range(rounds):
            for k in range(instances):
                name = "main" if k == 0 else f"sec{k}"
                hub.report(Report(name, hits=rng.integers(0, 1 << 20, size, dtype=np.uint32)))
                hub.deliver(name, {})
        m = hub.metrics
        costs[str(size)] = {"merge_us": round(1e6 * m.merge_seconds / m.merges),
                            "answer_us": round(1e6 * m.answer_seconds / m.deliveries)}
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    jobs = sub.add_parser("jobs")
    jobs.add_argument("--minutes", type=float, default=3.0)
    jobs.add_argument("--runs", type=int, default=3)
    jobs.add_argument("--targets", default="keywords,cjson")
    jobs.add_argument("--sync-seconds", type=float, default=20.0)
    scale = sub.add_parser("scale")
    scale.add_argument("--actors", type=int, default=16)
    scale.add_argument("--seconds", type=float, default=120.0)
    scale.add_argument("--target", default="keywords")
    scale.add_argument("--sync-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    HERE.mkdir(parents=True, exist_ok=True)
    if args.mode == "jobs":
        result = bench_jobs(args.targets.split(","), args.minutes * 60, args.runs,
                            args.sync_seconds)
    else:
        result = bench_scale(args.actors, args.seconds, args.target, args.sync_seconds)
    (HERE / f"{args.mode}.json").write_text(json.dumps(result, indent=1))
    for name, figures in result.items():
        summary = {k: v for k, v in figures.items() if k not in ("single", "jobs2")}
        print(name, json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
