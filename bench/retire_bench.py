"""Retirement benchmark: what labels cost a campaign once it has covered what it can.

For cJSON's libFuzzer harness (persistent, batches) and the boundaries sample (fork
server), from one run:
  1. a --cover-seconds campaign (default 120) on the `--mcc --wm` build covers labels;
  2. then, in turn and alternating for --rounds, --seconds campaigns from that queue on
     the unlabelled ffcc build, the labelled build with retirement (--retire first, the
     default) and without it (--retire never), with AFL's schedule (-p afl; FairFuzz aims
     at labels only where they count, which changes what runs, not what a run costs);
  3. execs/s of each labelled run / the unlabelled run of its round (target with
     retirement >= 0.9), median and spread over the rounds.

    python bench/retire_bench.py [--targets cjson,boundaries] [--rounds 3] [--seconds 30]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.fuzz_bench import ENV, WORK, build_cjson_harness, campaign, execs_per_sec  # noqa: E402

LABELS = ("--mcc", "--wm")
SETUPS = {"unlabelled": ("edges", ()), "retire": ("labelled", ("--retire", "first")),
          "no-retire": ("labelled", ("--retire", "never"))}


def sample_builds(name: str) -> tuple[dict[str, Path], Path]:
    """The sample built by ffcc with and without labels, and its seeds."""
    sources = sorted(str(p) for p in (REPO / "samples" / name).glob("*.c"))
    builds = {}
    for kind, flags in (("edges", ()), ("labelled", LABELS)):
        out = WORK / f"retire-{name}-{kind}"
        subprocess.run(["ffcc", *flags, "-O2", "-o", f"{out}/", *sources], check=True,
                       capture_output=True, env=ENV)
        builds[kind] = out / name
    return builds, REPO / "samples" / name / "seeds"


def cjson_builds() -> tuple[dict[str, Path], Path]:
    edges, seeds = build_cjson_harness((), "retire-cjson-edges")
    labelled, _ = build_cjson_harness(LABELS, "retire-cjson-labelled")
    return {"edges": edges, "labelled": labelled}, seeds


def bench(name: str, rounds: int, seconds: float, cover_seconds: float) -> dict[str, list[float]]:
    builds, seeds = cjson_builds() if name == "cjson" else sample_builds(name)
    cover = campaign("ffuzz", builds["labelled"], seeds, cover_seconds, f"retire-{name}-cover")
    corpus = WORK / f"retire-{name}-cover" / "default" / "queue"
    print(f"  {name}: cover campaign {cover['execs_done']} execs, {cover['corpus_count']} "
          f"entries, labels found {cover.get('labels_found', '?')}", flush=True)
    speeds: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    for r in range(rounds):
        added = {}
        for setup, (build, extra) in SETUPS.items():
            stats = campaign("ffuzz", builds[build], corpus, seconds, f"retire-{name}-{setup}",
                             ("-p", "afl", *extra))
            speeds[setup].append(execs_per_sec(stats))
            added[setup] = int(stats["corpus_count"]) - int(cover["corpus_count"])
        print(f"  {name} round {r + 1}: " + ", ".join(
            f"{setup} {speeds[setup][-1]:.0f}/s (+{added[setup]} entries)" for setup in SETUPS),
            flush=True)
    return speeds


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cjson,boundaries")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--cover-seconds", type=float, default=120)
    args = parser.parse_args()
    print("execs/s of the labelled build / the unlabelled build, from a covering campaign's "
          "queue (target with retirement >= 0.9)")
    for name in args.targets.split(","):
        speeds = bench(name, args.rounds, args.seconds, args.cover_seconds)
        base = speeds["unlabelled"]
        for setup in ("retire", "no-retire"):
            ratios = [s / b for s, b in zip(speeds[setup], base, strict=True)]
            print(f"    {name} {setup}: ratio {spread(ratios)}")


if __name__ == "__main__":
    main()
