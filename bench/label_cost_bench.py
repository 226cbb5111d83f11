"""What labels cost a default campaign over time: labelled / plain executions per second.

For each target, the plain ffcc build and the ``--mcc --wm`` build are fuzzed with ffuzz's
defaults (no option but ``-V`` and ``--seed``), in turn (plain, labelled, plain, ...), for
``--runs`` rounds of ``--seconds`` each.  The rate in each quarter of a campaign comes from
its plot_data (total executions against run time); printed per target: both builds' median
rates per quarter, their ratio, and the ratio after warm-up (the campaign's second half),
with the spread over rounds.

Targets: fork-server programs reading a file (the temperature and boundaries samples) and
persistent libFuzzer harnesses of real libraries (cJSON's ``cjson_read_fuzzer`` and expat's
``xml_parse_fuzzer``, Debian's sources), whose ffcc builds run batches.  Every build is a
project build, so the labelled campaigns get ffuzz's default lean rebuilds.

    python bench/label_cost_bench.py [--seconds 60] [--runs 3] [--targets temperature,cjson]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.fuzz_bench import WORK, build_harness, campaign, harness  # noqa: E402

LABELS = ("--mcc", "--wm")
QUARTERS = 4
SAMPLES = ("temperature", "boundaries", "bugs", "keywords")
HARNESSES = ("cjson", "expat")


def sample_builds(sample: str) -> tuple[Path, Path, Path, tuple[str, ...]]:
    """The sample's plain and labelled project builds, its seeds, its arguments."""
    source = REPO / "samples" / sample / f"{sample}.c"
    builds = []
    for name, flags in (("plain", ()), ("labelled", LABELS)):
        out = WORK / f"cost-{sample}-{name}"
        subprocess.run(["ffcc", *flags, "-O2", "-o", f"{out}/", str(source)], check=True,
                       capture_output=True)
        builds.append(out / sample)
    return builds[0], builds[1], REPO / "samples" / sample / "seeds", ("@@",)


def harness_builds(name: str) -> tuple[Path, Path, Path, tuple[str, ...]]:
    """A libFuzzer harness's plain and labelled project builds, its seeds, no arguments."""
    h = harness(name)
    return (build_harness(h, "ffuzz", (), f"cost-{name}-plain"),
            build_harness(h, "ffuzz", LABELS, f"cost-{name}-labelled"), h.seeds, ())


def quarter_rates(out: Path) -> list[float]:
    """Executions per second in each quarter of a campaign, from its plot_data rows."""
    rows = [line.split(", ") for line in (out / "default" / "plot_data").read_text().splitlines()
            if not line.startswith("#")]
    points = [(float(row[0]), int(row[11])) for row in rows]
    end = points[-1][0]
    rates = []
    for quarter in range(QUARTERS):
        start, stop = end * quarter / QUARTERS, end * (quarter + 1) / QUARTERS
        inside = [p for p in points if start <= p[0] <= stop] or [points[-1]]
        first = max((p for p in points if p[0] <= start), default=(0.0, 0))
        last = inside[-1]
        rates.append((last[1] - first[1]) / max(last[0] - first[0], 1e-9))
    return rates


def measure(target: str, seconds: float, runs: int) -> dict[str, list[list[float]]]:
    """Quarter rates of every run of each build, the builds alternating."""
    plain, labelled, seeds, args = (harness_builds(target) if target in HARNESSES
                                    else sample_builds(target))
    rates: dict[str, list[list[float]]] = {"plain": [], "labelled": []}
    for run in range(runs):
        order = [("plain", plain), ("labelled", labelled)]
        if run % 2:
            order.reverse()  # each build goes first as often as the other
        for name, binary in order:
            label = f"cost-{target}-{name}-{run}"
            campaign("ffuzz", binary, seeds, seconds, label, extra=("--seed", str(run + 1)),
                     args=args)
            rates[name].append(quarter_rates(WORK / label))
    return rates


def report(target: str, rates: dict[str, list[list[float]]]) -> str:
    lines = [f"{target}: execs/s per quarter of a campaign (median over {len(rates['plain'])} runs)"]
    for quarter in range(QUARTERS):
        plain = statistics.median(r[quarter] for r in rates["plain"])
        labelled = statistics.median(r[quarter] for r in rates["labelled"])
        lines.append(f"  Q{quarter + 1}: plain {plain:10.0f}  labelled {labelled:10.0f}  "
                     f"ratio {labelled / plain:.2f}")
    late = sorted((sum(lab[2:]) / sum(pl[2:]))
                  for lab, pl in zip(rates["labelled"], rates["plain"]))
    lines.append(f"  after warm-up (second half), labelled / plain: median "
                 f"{statistics.median(late):.2f}, runs {', '.join(f'{r:.2f}' for r in late)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="temperature,boundaries,cjson",
                        help=f"comma-separated, from {', '.join((*SAMPLES, *HARNESSES))}")
    args = parser.parse_args()
    for target in args.targets.split(","):
        print(report(target, measure(target, args.seconds, args.runs)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
