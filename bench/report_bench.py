"""How long `ffuzz report` takes next to the campaign whose queue it replays.

    python bench/report_bench.py [--seconds 600] [--json]

cJSON's libFuzzer harness is built twice by ffcc, with --mcc --wm and without labels; one
ffuzz campaign of --seconds runs on the labelled build; then `ffuzz report` runs three times
on its output directory: cold (every saved input replayed), warm (all cached: the summary and
files only), and cold with --edges-binary (each input replayed on both builds).  Reported:
saved inputs, campaign seconds, each report's wall and CPU seconds (ffuzz and its targets) and
the replay's own, the cold report's share of the campaign's time, and the replay's cost per
input.  Work files go to bench/.work/.
"""
from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fuzz_bench import ENV, WORK, build_cjson_harness, campaign, show  # noqa: E402


@dataclass(frozen=True)
class Timing:
    wall: float    # seconds the command took
    cpu: float     # CPU seconds of ffuzz and the targets it ran
    replay: float  # wall seconds of the replay alone, as the summary gives them


def timed_report(out: Path, *extra: str) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(["ffuzz", "report", str(out), *extra], check=True, env=ENV,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    replayed = re.search(r"^replayed .* in ([\d.]+) s$", done.stdout, re.M)
    assert replayed, done.stdout
    return Timing(wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                  float(replayed.group(1)))


def bench_report(seconds: float) -> dict[str, object]:
    labelled, seeds = build_cjson_harness(("--mcc", "--wm"), "cjson_read_fuzzer_labels")
    plain, _ = build_cjson_harness()
    stats = campaign("ffuzz", labelled, seeds, seconds, "report-campaign")
    out = WORK / "report-campaign"
    saved = sum(1 for kind in ("queue", "crashes", "hangs")
                for _ in (out / "default" / kind).glob("id:*"))
    cold = timed_report(out)
    warm = timed_report(out)
    shutil.rmtree(out / "default" / "report")
    both = timed_report(out, "--edges-binary", str(plain))
    run_time = int(stats["run_time"])
    return {"saved_inputs": saved, "campaign_seconds": run_time,
            "labels": f"{stats['labels_found']}/{stats['labels_total']}",
            "report_cold": asdict(cold), "report_cold_share_percent": 100 * cold.wall / run_time,
            "report_warm": asdict(warm), "report_with_edges_binary": asdict(both),
            "replay_ms_per_input": 1000 * cold.replay / max(saved, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    result = bench_report(args.seconds)
    print(json.dumps(result, indent=2) if args.json else show(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
