"""What labels cost a default campaign over time: labelled / plain executions per second.

For each target, the plain ffcc build and the ``--mcc --wm`` build are fuzzed with ffuzz's
defaults (no option but ``-V`` and ``--seed``), in turn (plain, labelled, plain, ...), for
``--runs`` rounds of ``--seconds`` each.  The rate in each quarter of a campaign comes from
its plot_data (total executions against run time, interpolated between rows); printed per
target: both builds' median rates per quarter, their ratio, and the ratio after warm-up (the
campaign's second half), with the spread over rounds; and each labelled campaign's share of
FairFuzz's selections aimed at labels (``targets_labels`` / ``targets_selected``) and labels
found.

A campaign's rate also follows the inputs it keeps: labels lead it to other inputs, which may
cost more or less to run whatever the build (LAVA-M's md5sum: 1.11-1.19 times as much on the
plain build, bench/RESULTS.md).  So after each round, the plain campaign's queue (inputs no
label chose) is run again, natively, on the plain build and on the build the labelled campaign
ended on (its last lean build, else the full one, with the labels that campaign covered
retired, as they were by its end), alternating, 3 times each: the target's CPU
per execution (the forkserver's and its children's, reaped as the replay ends), whose ratio
is what the labels themselves cost the target per execution once the campaign has warmed up.

Targets: fork-server programs reading a file (the samples temperature, boundaries, bugs and
keywords; ``zlib``: zlib's own ``minigzip -d -c FILE`` over zlib's units, Debian's sources,
seeds a few gzip files written here) and persistent libFuzzer harnesses of real libraries,
whose ffcc builds run batches (``cjson``: cJSON's ``cjson_read_fuzzer``, ``expat``: expat's
``xml_parse_fuzzer``, both Debian's sources; ``libpng``: libpng's oss-fuzz
``libpng_read_fuzzer.cc``, C++, over libpng at Magma's commit with no patch, from
LIBPNG_MIRROR when that exists, seeds a few pngsuite images).  expat, libpng and zlib are
held out: no label option was tuned on them.  Every build is a project build, so the
labelled campaigns get ffuzz's default lean rebuilds.

With ``--together`` each round's two campaigns run at once, each pinned to a core of its own
(the cores swapped every round), so that the machine's noise falls on both alike: on a shared
VM, one build's campaigns alone moved 2x between rounds. The labelled campaign's lean
rebuilds then run on either core, as they would beside other fuzzers.

    python bench/label_cost_bench.py [--seconds 60] [--runs 3] [--targets temperature,cjson]
        [--together]
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench import magma_bench  # noqa: E402
from bench.fuzz_bench import WORK, Harness, build_harness, campaign, harness, read_stats  # noqa: E402
from bench.projects import ZLIB, fetch  # noqa: E402
from ffcc.fuzzer.engine.executor import TargetCommand  # noqa: E402
from ffcc.fuzzer.engine.labels import LabelMap  # noqa: E402
from ffcc.fuzzer.engine.shm import SharedSegment  # noqa: E402
from ffcc.fuzzer.reports.replay import ReplayExecutor  # noqa: E402
from ffcc.runtime.abi import BUILD_RECORD, NAMES, label_region_start  # noqa: E402

LABELS = ("--mcc", "--wm")
QUARTERS = 4
SAMPLES = ("temperature", "boundaries", "bugs", "keywords")
HARNESSES = ("cjson", "expat", "libpng")
PROGRAMS = ("zlib",)
# Plain build, labelled build, seeds, the program's arguments.
Builds = tuple[Path, Path, Path, tuple[str, ...]]

# libpng's repository: this local mirror when it exists, else magma_bench's default (GitHub).
LIBPNG_MIRROR = Path("/work/.mirror/glennrp+libpng/repo")
# Small pngsuite images: grey 1 and 4 bits (the latter with tRNS and bKGD), RGB, palette,
# grey+alpha, RGBA, and an interlaced grey.
LIBPNG_SEEDS = ("basn0g01.png", "ftbbn0g04.png", "basn2c08.png", "basn3p04.png",
                "basn4a08.png", "basn6a08.png", "ibasn0g08.png")
# zlib's library units, as its Makefile's OBJZ and OBJG list them.
ZLIB_UNITS = ("adler32.c", "crc32.c", "deflate.c", "infback.c", "inffast.c", "inflate.c",
              "inftrees.c", "trees.c", "zutil.c", "compress.c", "uncompr.c", "gzclose.c",
              "gzlib.c", "gzread.c", "gzwrite.c")


def project_builds(name: str, sources: list[Path],
                   flags: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A program's plain and labelled ffcc project builds (WORK/cost-NAME-plain/ and
    -labelled/), fresh, each the program its build record names."""
    WORK.mkdir(parents=True, exist_ok=True)
    builds = []
    for kind, labels in (("plain", ()), ("labelled", LABELS)):
        out = WORK / f"cost-{name}-{kind}"
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(["ffcc", *labels, "-O2", *flags, *map(str, sources), "-o", f"{out}/"],
                       check=True, capture_output=True)
        builds.append(out / json.loads((out / BUILD_RECORD).read_text())["program"])
    return builds[0], builds[1]


def sample_builds(sample: str) -> Builds:
    """The sample's plain and labelled project builds, its seeds, its arguments."""
    folder = REPO / "samples" / sample
    return (*project_builds(sample, [folder / f"{sample}.c"]), folder / "seeds", ("@@",))


def zlib_seeds() -> Path:
    """A few gzip files: text at levels 9 and 1, bytes stored (level 0), a header that names
    a file, two members in one file, an empty member."""
    out = WORK / "zlib-seeds"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    text = b"zlib held out: " + b"the quick brown fox jumps over the lazy dog\n" * 8
    (out / "text9.gz").write_bytes(gzip.compress(text, 9, mtime=0))
    (out / "text1.gz").write_bytes(gzip.compress(text, 1, mtime=0))
    (out / "stored.gz").write_bytes(gzip.compress(bytes(range(256)), 0, mtime=0))
    with gzip.GzipFile("named.txt", "wb", 6, (out / "named.gz").open("wb"), mtime=0) as named:
        named.write(b"a member with FNAME\n")
    (out / "two.gz").write_bytes(gzip.compress(b"one\n", mtime=0) + gzip.compress(b"two\n", mtime=0))
    (out / "empty.gz").write_bytes(gzip.compress(b"", mtime=0))
    return out


def zlib_builds() -> Builds:
    """zlib's minigzip (test/minigzip.c) over zlib's units, Debian's sources, run as
    ``minigzip -d -c FILE``: it decompresses FILE to standard output (ffuzz's /dev/null;
    without -c it would write the output next to FILE and delete FILE); gzip seeds."""
    tree = fetch(ZLIB)
    sources = [tree / "test" / "minigzip.c", *(tree / unit for unit in ZLIB_UNITS)]
    return (*project_builds("zlib", sources, (f"-I{tree}",)), zlib_seeds(), ("-d", "-c", "@@"))


def libpng_harness() -> Harness:
    """libpng's oss-fuzz harness over libpng as magma_bench builds it with ffcc, but plain
    (magma_bench.plain_tree: no Magma patch, no canary), and a few pngsuite images as seeds."""
    source = str(LIBPNG_MIRROR) if LIBPNG_MIRROR.exists() else magma_bench.DEFAULT_LIBPNG
    tree = magma_bench.plain_tree(source)
    seeds = WORK / "libpng-seeds"
    shutil.rmtree(seeds, ignore_errors=True)
    seeds.mkdir(parents=True)
    for name in LIBPNG_SEEDS:
        shutil.copyfile(tree / "contrib" / "pngsuite" / name, seeds / name)
    # The harness calls malloc and free without <stdlib.h> (Magma's setup patch adds it);
    # every libpng unit includes it anyway.
    return Harness("libpng", tuple(magma_bench.ffcc_sources(tree)),
                   (f"-I{tree}", "-include", "stdlib.h"), seeds, magma_bench.FFCC_LIBS)


def harness_builds(name: str) -> Builds:
    """A libFuzzer harness's plain and labelled project builds, its seeds, no arguments."""
    h = libpng_harness() if name == "libpng" else harness(name)
    return (build_harness(h, "ffuzz", (), f"cost-{name}-plain"),
            build_harness(h, "ffuzz", LABELS, f"cost-{name}-labelled"), h.seeds, ())


def target_builds(target: str) -> Builds:
    """The target's builds, seeds and arguments (a sample, a harness or a program)."""
    if target in HARNESSES:
        return harness_builds(target)
    if target == "zlib":
        return zlib_builds()
    return sample_builds(target)


def quarter_rates(out: Path) -> list[float]:
    """Executions per second in each quarter of a campaign, from its plot_data rows (one
    every few seconds and one at exit): total executions at the quarters' ends interpolated
    between rows, so that a campaign of only a few rows has a rate in every quarter."""
    rows = [line.split(", ") for line in (out / "default" / "plot_data").read_text().splitlines()
            if not line.startswith("#")]
    times, totals = [float(row[0]) for row in rows], [int(row[11]) for row in rows]
    ends = [times[-1] * quarter / QUARTERS for quarter in range(QUARTERS + 1)]
    execs = numpy.interp(ends, times, totals)
    return [float(execs[q + 1] - execs[q]) / max(ends[q + 1] - ends[q], 1e-9)
            for q in range(QUARTERS)]


REPLAY_SECONDS = 2.0  # each replay of a queue: whole passes until this much time went by
REPLAYS = 3          # replays of each build, alternating


def ended_on(labelled: Path, out: Path) -> Path:
    """The build a labelled campaign in ``out`` ended on: its last verified lean build, else
    the full one."""
    leans = [d for d in (out / "default" / "lean").glob("*") if d.name.isdigit()]
    return max(leans, key=lambda d: int(d.name)) / labelled.name if leans else labelled


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` (with its reaped children) and of its live children:
    a forkserver, its reaped runs and the persistent child running now."""
    total = 0
    for member in (pid, *_children(pid)):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def target_cpu_us(binary: Path, args: tuple[str, ...], inputs: list[bytes]) -> float:
    """The target's CPU per execution, in microseconds, running ``inputs`` natively on
    ``binary``, pass after pass for REPLAY_SECONDS after one pass to warm up (/proc counts
    CPU in clock ticks: a fast target needs many executions to a tick)."""
    executor = ReplayExecutor(TargetCommand((str(binary), *args)), WORK / "replay-input", 1000,
                              seed=1)
    try:
        executor.traces(inputs)
        (forkserver,) = _children(os.getpid())
        before, started, passes = _tree_cpu(forkserver), time.monotonic(), 0
        while not passes or time.monotonic() - started < REPLAY_SECONDS:
            executor.traces(inputs)
            passes += 1
        return (_tree_cpu(forkserver) - before) / (passes * len(inputs)) * 1e6
    finally:
        executor.close()


@contextlib.contextmanager
def retired_as_covered(binary: Path, out: Path) -> Iterator[None]:
    """While open, a target started inherits a retirement segment in which every label the
    campaign in ``out`` covered is retired (its ``ffuzz_state.json``: the queue's branches in
    the label region of ``binary``, the build it ended on), as the campaign had them retired by
    its end: without it every label of the build would count in every case, where the
    campaign's covered labels had stopped counting."""
    labels = LabelMap.load(binary)
    region = labels.region_size if labels is not None else 0
    state = json.loads((out / "default" / "ffuzz_state.json").read_text())
    start = label_region_start(state["map_size"], region)
    segment = SharedSegment(max(region, 1), "retirement segment")
    covered = [index - start for index in state["branch_hits"]["index"] if index >= start]
    numpy.frombuffer(segment.view, dtype=numpy.uint8)[covered] = 1
    name = NAMES["FFCC_ENV_RETIRE_SHM_ID"]
    os.environ[name] = str(segment.shm_id)
    try:
        yield
    finally:
        del os.environ[name]
        segment.close()


def same_inputs_ratio(plain: Path, running: Path, args: tuple[str, ...], queue: Path,
                      labelled_out: Path) -> float:
    """Target CPU per execution of ``running`` / of ``plain`` on the inputs in ``queue``,
    ``running``'s labels retired as the campaign in ``labelled_out`` left them."""
    inputs = [p.read_bytes() for p in sorted(queue.glob("id:*"))]
    costs: dict[Path, list[float]] = {plain: [], running: []}
    for _ in range(REPLAYS):
        costs[plain].append(target_cpu_us(plain, args, inputs))
        with retired_as_covered(running, labelled_out):
            costs[running].append(target_cpu_us(running, args, inputs))
    return statistics.median(costs[running]) / statistics.median(costs[plain])


@dataclass
class Measured:
    rates: dict[str, list[list[float]]]  # "plain", "labelled": each run's quarter rates
    same_inputs: list[float]             # each run's same_inputs_ratio
    labelled_stats: list[dict[str, str]]  # each labelled campaign's final fuzzer_stats


def measure(target: str, seconds: float, runs: int, together: bool = False) -> Measured:
    """Quarter rates of every run of each build, the builds alternating (``together``: both
    at once, each pinned to a core of its own, the cores swapped every round), and after each
    round the same-input ratio of the build the labelled campaign ended on."""
    plain, labelled, seeds, args = target_builds(target)
    rates: dict[str, list[list[float]]] = {"plain": [], "labelled": []}
    same: list[float] = []
    stats: list[dict[str, str]] = []
    for run in range(runs):
        order = [("plain", plain), ("labelled", labelled)]
        if run % 2:
            order.reverse()  # each build goes first (or gets the first core) as often
        with ThreadPoolExecutor(2 if together else 1) as pool:
            runs_now = [pool.submit(campaign, "ffuzz", binary, seeds, seconds,
                                    f"cost-{target}-{name}-{run}", extra=("--seed", str(run + 1)),
                                    args=args, pin=("taskset", "-c", str(place)) if together else ())
                        for place, (name, binary) in enumerate(order)]
        for done in runs_now:
            done.result()  # a campaign's failure, raised here
        for name in rates:
            rates[name].append(quarter_rates(WORK / f"cost-{target}-{name}-{run}"))
        labelled_out = WORK / f"cost-{target}-labelled-{run}"
        stats.append(read_stats(labelled_out))
        same.append(same_inputs_ratio(plain, ended_on(labelled, labelled_out), args,
                                      WORK / f"cost-{target}-plain-{run}" / "default" / "queue",
                                      labelled_out))
    return Measured(rates, same, stats)


def report(target: str, measured: Measured) -> str:
    rates = measured.rates
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
    same = sorted(measured.same_inputs)
    lines.append(f"  same inputs (the plain campaign's queue), target CPU per execution, the "
                 f"build the labelled campaign ended on / plain: median "
                 f"{statistics.median(same):.2f}, runs {', '.join(f'{r:.2f}' for r in same)}")
    shares = ", ".join(f"{int(s['targets_labels']) / max(int(s['targets_selected']), 1):.1%}"
                       for s in measured.labelled_stats)
    found = ", ".join(s["labels_found"] for s in measured.labelled_stats)
    lines.append(f"  labelled campaigns: label targets of FairFuzz's selections {shares}; "
                 f"labels found {found}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="temperature,boundaries,cjson",
                        help="comma-separated, from "
                             f"{', '.join((*SAMPLES, *HARNESSES, *PROGRAMS))}")
    parser.add_argument("--together", action="store_true",
                        help="run each round's two campaigns at once, one core each (needs "
                             "two cores): the machine's noise then falls on both alike")
    args = parser.parse_args()
    unknown = set(args.targets.split(",")) - {*SAMPLES, *HARNESSES, *PROGRAMS}
    if unknown:
        parser.error(f"unknown target: {', '.join(sorted(unknown))}")
    for target in args.targets.split(","):
        print(report(target, measure(target, args.seconds, args.runs, args.together)),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
