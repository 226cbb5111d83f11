"""ffuzz against afl-fuzz on the same binary, seeds and time budget.

    python bench/fuzz_bench.py speed  [--seconds 30] [--runs 3]
    python bench/fuzz_bench.py edges  [--minutes 5] [--runs 3] [--fuzzers ffuzz,afl-fuzz]
    python bench/fuzz_bench.py shadow [--seconds 60]
    python bench/fuzz_bench.py speed --against libfuzzer [--harness cjson,fixed]
    python bench/fuzz_bench.py edges --against libfuzzer --minutes 3 [--runs 1]

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

--against libfuzzer (speed and edges modes) compares on libFuzzer harnesses
(LLVMFuzzerTestOneInput), each built three ways: clang -fsanitize=fuzzer for
libFuzzer, ffcc for ffuzz (ffcc's harness main, batches), afl-clang-fast
-fsanitize=fuzzer for afl-fuzz (AFL++'s driver: persistent, shared-memory test
cases).  --harness picks cjson (cJSON's harness; its seeds are cJSON's fuzzing
inputs in the harness's format: four '0'/'1' option bytes, the JSON, a NUL) and
fixed (bench/fixed_work_fuzzer.c: the same hash work for every input).  speed:
all three havoc-only (libFuzzer as it comes, -p afl, -d) for --seconds each,
alternating, execs/s and the ratios ffuzz/libFuzzer and afl-fuzz/libFuzzer per
round (median, min-max); each of the three runs on the same one CPU (taskset).
edges: each fuzzer's corpus after --minutes (its queue or corpus directory and
its crashes), replayed on the ffcc build by ffuzz's replay, so that all three
are counted as the same build's edges.
Work files go to bench/.work/.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ffcc import runtime
from ffcc.fuzzer.engine.shadow import LOG_NAME, summarize
from ffcc.runtime.abi import BUILD_RECORD

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench" / ".work"
# Both fuzzers bind to a free CPU, as they do by default (fuzzer/parallel/affinity.py).
ENV = {**{k: v for k, v in os.environ.items() if k != "AFL_NO_AFFINITY"},
       "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1",
       "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_ALLOW_TMP": "1"}
# Against libFuzzer, which binds to no CPU, none of the three binds itself: rival_pin()
# gives each the same one CPU instead.
RIVAL_ENV = {**ENV, "AFL_NO_AFFINITY": "1"}


def rival_pin() -> tuple[str, ...]:
    """The command prefix that runs a fuzzer on one CPU, the same for all three rivals: the
    highest CPU no other process is bound to.  Each rival gets one core, as a user running
    one instance per core gives it; left free to roam, ffuzz's and afl-fuzz's two processes
    (fuzzer and target) hand each batch or execution over between cores, which on a virtual
    machine costs an inter-processor interrupt each time, while libFuzzer's one process does
    not."""
    from ffcc.fuzzer.parallel.affinity import pinned_cpus

    allowed = os.sched_getaffinity(0)
    free = sorted(allowed - pinned_cpus()) or sorted(allowed)
    return ("taskset", "-c", str(free[-1]))


def build(source: Path) -> Path:
    out = WORK / source.stem
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["afl-clang-fast", "-O2", "-o", str(out), str(source)], check=True,
                   capture_output=True, env={**ENV, "AFL_QUIET": "1"})
    return out


@dataclass(frozen=True)
class Harness:
    """A libFuzzer harness (LLVMFuzzerTestOneInput), what it compiles with, and its seeds."""

    name: str
    sources: tuple[Path, ...]
    flags: tuple[str, ...]
    seeds: Path
    libs: tuple[str, ...] = ()  # linked after the sources (-lz ...)


# How each fuzzer's build of a libFuzzer harness is compiled.
HARNESS_COMPILERS = {"libfuzzer": ("clang", "-fsanitize=fuzzer"), "ffuzz": ("ffcc",),
                     "afl-fuzz": ("afl-clang-fast", "-fsanitize=fuzzer")}


def cjson_seeds(tree: Path) -> Path:
    """cJSON's fuzzing inputs (afl.c's format: two mode letters, then JSON) in the format of
    its libFuzzer harness, whose first check rejects anything else: four '0'/'1' option bytes
    (minify, require_termination, formatted, buffered), the JSON, a closing NUL.  The options
    go through their 16 combinations over the files."""
    out = WORK / "cjson-seeds"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for number, path in enumerate(sorted((tree / "fuzzing" / "inputs").iterdir())):
        options = format(number % 16, "04b").encode()
        (out / path.name).write_bytes(options + path.read_bytes()[2:] + b"\0")
    return out


def fixed_work_seeds() -> Path:
    out = WORK / "fixed-seeds"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name, data in (("text", b"hello, fuzzer\n"), ("binary", bytes(range(64))), ("one", b"F")):
        (out / name).write_bytes(data)
    return out


EXPAT_CONFIG = """#define XML_DTD 1
#define XML_NS 1
#define XML_GE 1
#define XML_CONTEXT_BYTES 1024
#define BYTEORDER 1234
#define XML_DEV_URANDOM 1
#define HAVE_GETRANDOM 1
#define HAVE_SYSCALL_GETRANDOM 1
"""
EXPAT_SEEDS = (b'<?xml version="1.0"?><a b="c">text<d/></a>',
               b'<!DOCTYPE r [<!ENTITY e "v"><!ELEMENT r (#PCDATA)><!ATTLIST r x CDATA "1">]><r>&e;</r>',
               b'<n:r xmlns:n="urn:x" n:a="1"><![CDATA[<x>]]><?pi data?><!-- c --></n:r>',
               b'<?xml version="1.0" encoding="ISO-8859-1"?><p q=\'&#65;&#x42;\'>\xe9</p>')


def expat_harness() -> Harness:
    """expat's own libFuzzer harness (fuzz/xml_parse_fuzzer.c, UTF-8) over its three library
    units, with the configuration header its configure would write for this machine, and a
    few documents as seeds: a held-out target (no label option was tuned on it)."""
    sys.path.insert(0, str(REPO))
    from bench.projects import EXPAT, fetch

    tree = fetch(EXPAT) / "expat"
    config = WORK / "expat-config"
    seeds = WORK / "expat-seeds"
    for directory in (config, seeds):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    (config / "expat_config.h").write_text(EXPAT_CONFIG)
    for number, document in enumerate(EXPAT_SEEDS):
        (seeds / f"doc{number}.xml").write_bytes(document)
    lib = tree / "lib"
    return Harness("expat", (lib / "xmlparse.c", lib / "xmlrole.c", lib / "xmltok.c",
                             tree / "fuzz" / "xml_parse_fuzzer.c"),
                   (f"-I{config}", f"-I{lib}", "-DENCODING_FOR_FUZZING=UTF-8"), seeds)


def harness(name: str) -> Harness:
    if name == "fixed":
        return Harness(name, (REPO / "bench" / "fixed_work_fuzzer.c",), (), fixed_work_seeds())
    if name == "expat":
        return expat_harness()
    sys.path.insert(0, str(REPO))
    from bench.projects import CJSON, fetch

    tree = fetch(CJSON)
    return Harness(name, (tree / "cJSON.c", tree / "fuzzing" / "cjson_read_fuzzer.c"),
                   (f"-I{tree}",), cjson_seeds(tree))


def build_harness(h: Harness, fuzzer: str, flags: tuple[str, ...] = (),
                  name: str | None = None) -> Path:
    """``h`` built for ``fuzzer`` (a HARNESS_COMPILERS key), with ``flags``, as WORK/name;
    for ffuzz in ffcc's project form, as the README builds (WORK/name/ holds the program
    and the build record that lean rebuilds need)."""
    out = WORK / (name or f"{h.name}-{fuzzer}")
    WORK.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    out.unlink(missing_ok=True)  # a build of the other form
    project = fuzzer == "ffuzz"
    subprocess.run([*HARNESS_COMPILERS[fuzzer], *flags, "-O2", *h.flags, *map(str, h.sources),
                    *h.libs, "-o", f"{out}/" if project else str(out)],
                   check=True, capture_output=True, env={**ENV, "AFL_QUIET": "1"})
    if project:
        return out / json.loads((out / BUILD_RECORD).read_text())["program"]
    return out


def build_cjson_harness(flags: tuple[str, ...] = (),
                        name: str = "cjson_read_fuzzer") -> tuple[Path, Path]:
    """cJSON's fuzzing harness built by ffcc (with ``flags``: label options), as WORK/name,
    and seeds that pass its format check."""
    h = harness("cjson")
    return build_harness(h, "ffuzz", flags, name), h.seeds


def ffcc_digest() -> str:
    """A digest of ffcc's runtime sources and of the code that writes labels (instrument/,
    rewriters/), for the recipes of cached ffcc builds: a build linked with another runtime
    (another batch layout, say) would run without batches, or not as this ffcc's does, and
    one labelled by other code has other labels, so either change builds again."""
    files = sorted(p for p in runtime.RUNTIME_DIR.iterdir() if p.suffix in (".c", ".h"))
    files += sorted(p for room in ("instrument", "rewriters") for p in (REPO / room).rglob("*.py"))
    return hashlib.sha1(b"".join(str(p.relative_to(p.parents[1])).encode() + b"\0" + p.read_bytes()
                                 for p in files)).hexdigest()[:12]


def read_stats(out: Path) -> dict[str, str]:
    lines = (out / "default" / "fuzzer_stats").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def campaign(fuzzer: str, binary: Path, seeds: Path, seconds: float, name: str,
             extra: tuple[str, ...] = (), args: tuple[str, ...] = ("@@",),
             env: dict[str, str] = ENV, pin: tuple[str, ...] = ()) -> dict[str, str]:
    """One timed campaign of ffuzz or afl-fuzz (run under the ``pin`` prefix); returns its
    final fuzzer_stats."""
    out = WORK / name
    shutil.rmtree(out, ignore_errors=True)
    if fuzzer == "afl-fuzz":
        cmd = ["afl-fuzz", "-i", str(seeds), "-o", str(out), "-V", str(int(seconds)), "-d", *extra]
    else:
        cmd = ["ffuzz", "-i", str(seeds), "-o", str(out), "-V", str(seconds), *extra]
    done = subprocess.run([*pin, *cmd, "--", str(binary), *args], env=env, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=seconds + 120)
    if done.returncode != 0:
        raise CampaignFailed(done.returncode, cmd, stderr=done.stderr)
    return read_stats(out)


class CampaignFailed(subprocess.CalledProcessError):
    """A fuzzer that exited with an error, and what it said (the end of its stderr)."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{(self.stderr or '')[-2000:]}"


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


def libfuzzer_campaign(binary: Path, seeds: Path, seconds: float, name: str) -> dict[str, int]:
    """One timed libFuzzer run on a copy of the seeds (WORK/name/corpus, where it adds its
    finds; crashes go to WORK/name/artifacts); returns its final stat:: lines."""
    out = WORK / name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(seeds, out / "corpus")
    (out / "artifacts").mkdir()
    done = subprocess.run([*rival_pin(), str(binary), f"-max_total_time={int(seconds)}",
                           "-print_final_stats=1",
                           f"-artifact_prefix={out / 'artifacts'}/", str(out / "corpus")],
                          env=RIVAL_ENV, capture_output=True, text=True, timeout=seconds + 120)
    stats = {key: int(value) for key, value in re.findall(r"^stat::(\w+):\s*(\d+)$",
                                                           done.stderr, re.M)}
    if "number_of_executed_units" not in stats:
        raise RuntimeError(f"libFuzzer printed no final stats:\n{done.stderr[-2000:]}")
    return stats


def rival_campaign(fuzzer: str, binary: Path, seeds: Path, seconds: float, name: str,
                   extra: tuple[str, ...] = ()) -> tuple[float, list[Path]]:
    """One timed run of libfuzzer, ffuzz or afl-fuzz on its build of a harness: its own
    executions per second, and the folders that hold its corpus and crashes."""
    if fuzzer == "libfuzzer":
        stats = libfuzzer_campaign(binary, seeds, seconds, name)
        return float(stats["average_exec_per_sec"]), [WORK / name / "corpus",
                                                     WORK / name / "artifacts"]
    found = campaign(fuzzer, binary, seeds, seconds, name, extra, args=(), env=RIVAL_ENV,
                     pin=rival_pin())
    return execs_per_sec(found), [WORK / name / "default" / kind for kind in ("queue", "crashes")]


def corpus_edges(binary: Path, folders: list[Path]) -> int:
    """Map indices lit by replaying every file of ``folders`` on ``binary`` (an ffcc build)."""
    import numpy as np

    from ffcc.fuzzer.engine.executor import TargetCommand
    from ffcc.fuzzer.reports.replay import ReplayExecutor

    files = [path for folder in folders if folder.is_dir() for path in sorted(folder.iterdir())
             if path.is_file() and not path.name.startswith(".") and path.name != "README.txt"]
    executor = ReplayExecutor(TargetCommand((str(binary),)), WORK / ".edges_input", 1000, seed=0)
    try:
        lit = np.zeros(executor.map_size, dtype=bool)
        for trace in executor.traces([path.read_bytes() for path in files]):
            lit[trace.indices] = True
    finally:
        executor.close()
    return int(lit.sum())


# Havoc only for all three: libFuzzer has no deterministic stages.
SPEED_RIVALS = {"libfuzzer": (), "ffuzz": ("-p", "afl"), "afl-fuzz": ()}


def spread(values: list[float]) -> dict[str, object]:
    return {"runs": values, "median": statistics.median(values),
            "min_max": f"{min(values):.2f}-{max(values):.2f}"}


def bench_speed_libfuzzer(h: Harness, seconds: float, runs: int) -> dict[str, object]:
    """execs/s of the three fuzzers on builds of one harness, run in turn (the order reversed
    every other round), with the ratios to libFuzzer per round."""
    binaries = {fuzzer: build_harness(h, fuzzer) for fuzzer in SPEED_RIVALS}
    rates: dict[str, list[float]] = {fuzzer: [] for fuzzer in SPEED_RIVALS}
    for r in range(runs):
        order = list(SPEED_RIVALS) if r % 2 == 0 else list(reversed(SPEED_RIVALS))
        for fuzzer in order:
            rate, _ = rival_campaign(fuzzer, binaries[fuzzer], h.seeds, seconds,
                                     f"{h.name}-speed-{fuzzer}-{r}", SPEED_RIVALS[fuzzer])
            rates[fuzzer].append(rate)
    base = rates["libfuzzer"]
    return {**{f"{fuzzer}_execs_per_sec": spread(v) for fuzzer, v in rates.items()},
            **{f"{fuzzer}_per_libfuzzer": spread([a / b for a, b in zip(rates[fuzzer], base,
                                                                        strict=True)])
               for fuzzer in ("ffuzz", "afl-fuzz")}}


def bench_edges_libfuzzer(h: Harness, seconds: float, runs: int) -> dict[str, object]:
    """Edges of each fuzzer's corpus after the budget, all replayed on the ffcc build."""
    binaries = {fuzzer: build_harness(h, fuzzer) for fuzzer in SPEED_RIVALS}
    edges: dict[str, list[int]] = {fuzzer: [] for fuzzer in SPEED_RIVALS}
    for r in range(runs):
        for fuzzer in SPEED_RIVALS:
            _, folders = rival_campaign(fuzzer, binaries[fuzzer], h.seeds, seconds,
                                        f"{h.name}-edges-{fuzzer}-{r}")
            edges[fuzzer].append(corpus_edges(binaries["ffuzz"], folders))
    return {f"{fuzzer}_edges": {"runs": v, "median": statistics.median(v)}
            for fuzzer, v in edges.items()}


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
    parser.add_argument("--against", choices=["afl-fuzz", "libfuzzer"], default="afl-fuzz",
                        help="libfuzzer: speed or edges of libFuzzer, ffuzz and afl-fuzz on "
                             "libFuzzer harnesses (--harness)")
    parser.add_argument("--harness", default="cjson,fixed",
                        help="--against libfuzzer: which of cjson, fixed")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not shutil.which("afl-clang-fast") or not shutil.which("afl-fuzz"):
        print("fuzz_bench: AFL++ (afl-clang-fast, afl-fuzz) is needed", file=sys.stderr)
        return 1
    seconds = args.minutes * 60 if args.minutes else args.seconds
    if args.against == "libfuzzer":
        if args.mode == "shadow":
            parser.error("--against libfuzzer compares speed or edges")
        bench = bench_speed_libfuzzer if args.mode == "speed" else bench_edges_libfuzzer
        tables = {name: bench(harness(name), seconds, args.runs)
                  for name in args.harness.split(",")}
        print(json.dumps(tables, indent=2) if args.json
              else "\n".join(f"{name}\n{show(table)}" for name, table in tables.items()))
        return 0
    if args.target == "cjson":
        binary, args.seeds = build_cjson_harness()
    else:
        binary = build(args.source)
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
