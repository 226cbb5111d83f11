"""Retirement benchmark: what labels cost a campaign once it has covered what it can.

For cJSON's libFuzzer harness (persistent, batches) and the boundaries sample (fork
server), from one run:
  1. a covering campaign on the `--mcc --wm` build, bounded by executions (COVER_EXECS:
     what 2 minutes of ffuzz run on an idle machine; a loaded machine only makes it slower);
  2. every labelled variant (VARIANTS: gates, pruning) runs that queue once with every label
     counting, and gets the retirement state ffuzz --retire first reaches from it
     (fuzzer/engine/retire.py: each covered label's byte, and the gate byte of each site whose
     live labels are all covered); and each is rebuilt without the labels it retired, as
     ffuzz --rebuild-retired rebuilds it (fuzzer/engine/lean.py: "VARIANT lean");
  3. then, alternating for --rounds, each build replays the queue through its forkserver
     (about --inputs inputs: whole passes), as ffuzz runs it (batches over shared memory
     where the target takes them, a fork per input elsewhere), in these setups:
     "retire" with that state in a retirement segment, "never" with no segment (every label
     counts, as with --retire never), and for gated builds "closed" with every label and
     gate retired (what the label code costs once nothing of it runs: the ceiling);
     the figure is the CPU time (user + sys) of the target's processes per input, which a
     loaded machine, stretching wall time, leaves alone;
  4. speed relative to the unlabelled build (its CPU time per input / the setup's) in each
     round, median and spread over the rounds (target with retirement >= 0.9).

The target's processes are counted whole: the bench makes itself their child subreaper, so a
persistent child the forkserver leaves behind when it is killed is reaped here with its CPU
time.  The fuzzer's own work per execution (mutation, map analysis) is not counted; it
would add the same time to every build and bring every ratio closer to 1.

    python bench/retire_bench.py [--targets cjson,boundaries] [--variants labelled,gates]
        [--rounds 5] [--inputs 30000] [--cover-execs N (0: reuse the last covering queue)]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.fuzz_bench import ENV, WORK, campaign, harness  # noqa: E402
from ffcc.fuzzer.engine.executor import TargetCommand  # noqa: E402
from ffcc.fuzzer.engine.labels import LabelMap  # noqa: E402
from ffcc.fuzzer.engine.lean import labels_to_drop, rebuild_command  # noqa: E402
from ffcc.fuzzer.engine.retire import ENV_NAME, Retirement  # noqa: E402
from ffcc.fuzzer.errors import FuzzerError  # noqa: E402
from ffcc.fuzzer.reports.replay import ReplayExecutor  # noqa: E402
from ffcc.runtime.abi import read_label_db  # noqa: E402

LABELS = ("--mcc", "--wm")
# Labelled builds measured against the unlabelled one ("labelled" runs the covering campaign).
VARIANTS = {"labelled": LABELS, "gates": (*LABELS, "--label-gates"),
            "prune": (*LABELS, "--prune"), "prune-gates": (*LABELS, "--prune", "--label-gates"),
            "gccdiff-gates": (*LABELS, "--prune=gccdiff", "--label-gates")}
TIMEOUT_MS = 10_000  # per input; generous, as a loaded machine may stall a run
ATTEMPTS = 3
PR_SET_CHILD_SUBREAPER = 36
# Executions of the covering campaign: what 2 minutes of ffuzz on the labelled build run on
# an idle machine (cJSON's harness about 55,000 execs/s, the boundaries sample 3,300).
COVER_EXECS = {"cjson": 6_500_000, "boundaries": 400_000}
COVER_LIMIT_SECONDS = 4 * 3600.0  # -V as well, only as a safety net


def sample_builds(name: str, variants: dict[str, tuple[str, ...]],
                  reuse: bool) -> tuple[dict[str, Path], Path]:
    """The sample built by ffcc without labels and as each variant (``reuse``: as the last
    run built it), and its seeds."""
    sources = sorted(str(p) for p in (REPO / "samples" / name).glob("*.c"))
    builds = {}
    for kind, flags in {"unlabelled": (), **variants}.items():
        out = WORK / f"retire-{name}-build-{kind}"
        if not reuse:
            subprocess.run(["ffcc", *flags, "-O2", "-o", f"{out}/", *sources], check=True,
                           capture_output=True, env=ENV)
        builds[kind] = out / name
    return builds, REPO / "samples" / name / "seeds"


def cjson_builds(variants: dict[str, tuple[str, ...]],
                 reuse: bool) -> tuple[dict[str, Path], Path]:
    """cJSON's harness built by ffcc in project form (which a lean rebuild needs) without
    labels and as each variant, and its seeds."""
    h = harness("cjson")
    builds = {}
    for kind, flags in {"unlabelled": (), **variants}.items():
        out = WORK / f"retire-cjson-build-{kind}"
        if not reuse:
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(["ffcc", *flags, "-O2", *h.flags, "--name=cjson_read_fuzzer",
                            "-o", f"{out}/", *map(str, h.sources)], check=True,
                           capture_output=True, env=ENV)
        builds[kind] = out / "cjson_read_fuzzer"
    return builds, h.seeds


def lean_build(binary: Path, cov: Coverage, reuse: bool) -> Path:
    """``binary`` rebuilt without the labels the covering queue retired, as ffuzz
    --rebuild-retired rebuilds it (fuzzer/engine/lean.py)."""
    directory = binary.parent.with_name(binary.parent.name + "-lean")
    if not reuse:
        database = read_label_db(binary)
        assert database is not None
        retired = cov.retirement.retired_ids()
        shutil.rmtree(directory, ignore_errors=True)
        subprocess.run(rebuild_command(binary, directory, database,
                                       labels_to_drop(database, retired, retired)),
                       # in-process: a compile server started now would be the bench's child
                       check=True, capture_output=True, env={**ENV, "FFCC_SERVER": "0"})
    return directory / binary.name


def executor(binary: Path, retire_shm: int | None) -> ReplayExecutor:
    extra = {ENV_NAME: str(retire_shm)} if retire_shm is not None else {}
    return ReplayExecutor(TargetCommand((str(binary), "@@")), binary.with_name(".cur_input"),
                          TIMEOUT_MS, seed=0, extra_env=extra)


@dataclass
class Coverage:
    """What the covering queue reaches on one labelled build."""

    retirement: Retirement
    ceiling: Retirement | None  # every label and gate retired (gated builds)
    labels: int
    pruned: int
    covered: int
    gates: int
    closed: int


def coverage(binary: Path, queue: list[bytes]) -> Coverage:
    """Run the queue with every label counting; the retirement state ffuzz reaches from it."""
    labels, database = LabelMap.load(binary), read_label_db(binary)
    assert labels is not None and database is not None, f"{binary} has no label database"
    run = executor(binary, None)
    try:
        virgin = np.full(run.map_size, 0xFF, dtype=np.uint8)
        for trace in run.traces(queue):
            virgin[trace.indices] = 0
    finally:
        run.close()
        reap_orphans()  # not to be counted in the first measurement
    retirement = Retirement(labels)
    retirement.retire_covered(virgin)
    ceiling = None
    if len(retirement.gate_slots):
        ceiling = Retirement(labels)
        ceiling.retire_covered(np.zeros_like(virgin))
    pruned = len([label for label in database.labels if label.pruned])
    return Coverage(retirement, ceiling, labels.count, pruned, int(retirement.retired.sum()),
                    len(retirement.gate_slots), int(retirement.closed.sum()))


def subreaper(on: bool) -> None:
    """Make this process the subreaper of its descendants, or stop being it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def reap_orphans() -> None:
    """Wait for every child left (a persistent child reparented here when its forkserver
    was killed), so that its CPU time is counted."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def replay(binary: Path, retire_shm: int | None, queue: list[bytes], passes: int) -> None:
    run = executor(binary, retire_shm)
    try:
        for _ in range(passes):
            run.traces(queue)
    finally:
        run.close()


def cpu_per_input(binary: Path, retire_shm: int | None, queue: list[bytes], passes: int) -> float:
    """CPU seconds (user + sys) the target's processes spend per input replaying the queue
    ``passes`` times, with the retirement segment ``retire_shm`` (None: every label counts).
    A forkserver that a loaded machine starves past the engine's deadlines is started again
    and the measurement repeated."""
    for _ in range(ATTEMPTS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            replay(binary, retire_shm, queue, passes)
        except FuzzerError as error:
            print(f"    {binary.name}: {error}; again", flush=True)
            continue
        finally:
            reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return cpu / (passes * len(queue))
    raise FuzzerError(f"{binary}: no measurement in {ATTEMPTS} attempts")


def setups(covered: dict[str, Coverage]) -> dict[str, tuple[str, int | None]]:
    """Each measured setup: its build and retirement segment."""
    found: dict[str, tuple[str, int | None]] = {"unlabelled": ("unlabelled", None)}
    for variant, cov in covered.items():
        found[f"{variant} retire"] = (variant, cov.retirement.shm_id)
        if variant.endswith(" lean"):
            continue  # after a lean rebuild the campaign retires as before: no "never"
        found[f"{variant} never"] = (variant, None)
        if cov.ceiling is not None:
            found[f"{variant} closed"] = (variant, cov.ceiling.shm_id)
    return found


def covering_queue(name: str, binary: Path, seeds: Path, cover_execs: int) -> list[bytes]:
    """The queue of a ``cover_execs`` campaign on ``binary`` (0: the last run's queue)."""
    out = WORK / f"retire-{name}-cover"
    if cover_execs > 0:
        stats = campaign("ffuzz", binary, seeds, COVER_LIMIT_SECONDS, out.name,
                         ("-E", str(cover_execs)))
        print(f"  {name}: cover campaign {stats['execs_done']} execs in {stats['run_time']} s, "
              f"{stats['corpus_count']} entries, {stats['labels_found']} labels", flush=True)
    queue = out / "default" / "queue"
    return [p.read_bytes() for p in sorted(queue.iterdir()) if p.is_file()]


def bench(name: str, variants: dict[str, tuple[str, ...]], rounds: int, inputs: int,
          cover_execs: int, reuse: bool) -> dict[str, list[float]]:
    """CPU seconds per input of each setup, by round."""
    builds, seeds = (cjson_builds(variants, reuse) if name == "cjson"
                     else sample_builds(name, variants, reuse))
    queue = covering_queue(name, builds["labelled"], seeds, cover_execs)
    passes = max(1, inputs // len(queue))
    print(f"  {name}: {len(queue)} queue entries, {passes} passes per measurement", flush=True)
    # Only while measuring: not during builds, whose compile server would be reparented here.
    subreaper(True)
    covered = {variant: coverage(builds[variant], queue) for variant in variants}
    for variant, cov in covered.items():
        print(f"    {variant}: {cov.covered} of {cov.labels} labels covered ({cov.pruned} "
              f"pruned), {cov.closed} of {cov.gates} gates closed", flush=True)
    for variant in variants:  # the lean rebuild of each, its own variant
        builds[f"{variant} lean"] = lean_build(builds[variant], covered[variant], reuse)
    covered.update({f"{variant} lean": coverage(builds[f"{variant} lean"], queue)
                    for variant in variants})
    measured = setups(covered)
    cpu: dict[str, list[float]] = {setup: [] for setup in measured}
    try:
        for r in range(rounds):
            order = list(measured) if r % 2 == 0 else list(reversed(measured))
            for setup in order:
                build, shm = measured[setup]
                cpu[setup].append(cpu_per_input(builds[build], shm, queue, passes))
            print(f"  {name} round {r + 1}: " + ", ".join(
                f"{setup} {cpu[setup][-1] * 1e6:.2f}" for setup in measured) + " us/input",
                flush=True)
    finally:
        subreaper(False)
        for cov in covered.values():
            cov.retirement.close()
            if cov.ceiling is not None:
                cov.ceiling.close()
    return cpu


def ratios(cpu: dict[str, list[float]]) -> dict[str, str]:
    """Each labelled setup's speed relative to the unlabelled build: median and spread of the
    rounds' ratios, and the ratio of the least CPU times (the load only ever adds to them)."""
    base = cpu["unlabelled"]
    return {setup: f"{spread([b / v for b, v in zip(base, values, strict=True)])}, "
                   f"of the least {min(base) / min(values):.2f}"
            for setup, values in cpu.items() if setup != "unlabelled"}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cjson,boundaries")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="labelled builds to measure (of %(default)s)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inputs", type=int, default=30_000,
                        help="inputs per measurement (whole passes over the queue)")
    parser.add_argument("--cover-execs", type=int, default=None,
                        help="executions of the covering campaign (default: COVER_EXECS; 0: "
                        "reuse the last one's queue)")
    parser.add_argument("--reuse-builds", action="store_true",
                        help="measure the builds of the last run (a gccdiff build takes long)")
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in args.variants.split(",")}
    variants.setdefault("labelled", LABELS)
    print("speed of the labelled build / the unlabelled build: the target's CPU time per "
          "input over a covering campaign's queue (target with retirement >= 0.9)")
    for name in args.targets.split(","):
        cover_execs = COVER_EXECS[name] if args.cover_execs is None else args.cover_execs
        cpu = bench(name, variants, args.rounds, args.inputs, cover_execs, args.reuse_builds)
        for setup, figure in ratios(cpu).items():
            print(f"    {name} {setup}: {figure}", flush=True)


if __name__ == "__main__":
    main()
