"""Bugs found on LAVA-M, side by side with working rivals (issue 34).

One command builds LAVA-M's four programs (base64, md5sum, uniq, who: coreutils 8.24 with
injected bugs) once per fuzzer configuration, runs R campaigns of S seconds of every
configuration on every program, two at a time, sorts every saved crash and hang into LAVA bug
ids on an oracle build, and writes a results folder: results.json (every run), table.md
(bugs, validated bugs, execs/s, queue, edges, labels per program and configuration, and
ffuzz-wm-c against ffuzz-c and the best rival with Mann-Whitney U p-values) and
bugs-<program>.png (distinct bugs over time).

    python bench/lava_bench.py --corpus /work/.mirror/bernardnongpoh+lava-m-exp/repo \\
        [--programs base64,md5sum,uniq,who] [--configs ffuzz,ffuzz-c,ffuzz-wm-c,afl-fuzz-c,afl-rb] \\
        [--seconds 120] [--runs 3] [--jobs 2] [--results DIR]
    python bench/lava_bench.py --corpus ... --build-only        # builds and their checks only
    python bench/lava_bench.py --report DIR                     # table and plots again

A first run builds 4-6 variants per program, 12-70 s each after one 37-40 s gcc configure
(--lint: see LINT); a second run builds nothing.

Configurations (--configs):

  ffuzz         ffuzz on the ffcc build (edges only)
  ffuzz-c       ffuzz -c 0 on an ffcc --cmplog build
  ffuzz-wm-c    ffuzz -c 0 on an ffcc --cmplog --wm build
  ffuzz-wm      ffuzz on an ffcc --wm build; ffuzz-mcc-wm: on ffcc --mcc --wm
  ffuzz-2phase  ffuzz on the ffcc build, then on the --wm build (--labels-binary)
  afl-fuzz-c    AFL++ built from source (bench/rivals.py) with -c on its AFL_LLVM_CMPLOG build
  afl-fuzz      the same AFL++ without -c
  afl-rb        the original FairFuzz (afl-rb, AFL 2.52b; bench/rivals.py build-fairfuzz) with
                its defaults and -m none, on its afl-gcc build (no -c: it has none)
  libfuzzer     bench/magma_bench.py only: LAVA-M's programs are not libFuzzer harnesses

The corpus (--corpus: a git repository, URL or path, holding vanilla/lava_corpus/LAVA-M) is
exported once into ~/.cache/ffcc-bench/lava-m/, where each program's builds are cached too: a
second run rebuilds nothing (--rebuild does).  Every build is a drop-in build of coreutils
(CC=ffcc with FFCC_FLAGS, CC=afl-clang-fast, afl-rb's CC=afl-gcc, gcc for the oracle) of the
one program, patched for today's glibc, in a tree configured once with gcc.  The oracle is
a gcc build in which who's "Successfully triggered bug N" print is enabled (LAVA-M ships it
inside #if 0); the other three print it live.  A saved input's bug is the last id its replay
on the oracle prints; "validated" means the id is in the program's validated_bugs.  Before
the matrix every validated trigger input is replayed on the oracle, and table.md says how
many fire here (not all do on today's glibc: uniq 20 of 28), and each fuzzed build runs the
clean input.  Edges are those of each campaign's queue and crashes replayed by AFL++'s
afl-showmap on the one afl-clang-fast build, so that all configurations count the same
build's edges; labels are those `ffuzz report` counts on the labelled build (labelled
configurations only).

Every fuzzer's campaign ends in one layout (RUNNERS, Outcome): default/queue, crashes and hangs
under its folder, every file named id:N,time:MS,...; a fuzzer that writes no time: field
(afl-rb, libFuzzer) gets one from its files' modification times (stamp()).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench import bugstats, rivals  # noqa: E402
from bench.fuzz_bench import ENV, WORK, campaign, execs_per_sec, ffcc_digest  # noqa: E402
from bench.projects import COREUTILS, COREUTILS_PROGRAMS, run_step  # noqa: E402
from ffcc.runtime.files import write_atomic  # noqa: E402

CACHE = rivals.CACHE.parent / "lava-m"
DEFAULT_CORPUS = "https://github.com/bernardnongpoh/lava-m-exp"
SUBDIR = "vanilla/lava_corpus/LAVA-M"
PROGRAMS = ("base64", "md5sum", "uniq", "who")
AFLPP = rivals.CACHE / "aflpp-v4.21c"
FOLDERS = ("queue", "crashes", "hangs")  # of a campaign's instance (Outcome)
REPLAY_SECONDS = 5.0   # an oracle replay longer than this is a hang: its prints so far count
STAGGER_SECONDS = 3.0  # between the first campaigns, so each binds to a CPU the other has not
TRIGGERED = re.compile(rb"Successfully triggered bug (\d+)")


class BenchError(Exception):
    """Bad input or a missing tool: main() prints it as one line."""


# --- the corpus ---------------------------------------------------------------------------

def corpus_dir(source: str) -> Path:
    """Where ``source``'s LAVA-M tree is cached: one folder per source, named by its hash."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    return CACHE / "corpus" / digest


def git(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """A git command whose failure becomes a one-line BenchError with git's last words."""
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True)
    if done.returncode != 0:
        words = done.stderr.decode(errors="replace").strip().splitlines() or ["(no message)"]
        raise BenchError(f"git {argv[0]} failed: {words[-1]}")
    return done


def is_bare(source: str) -> bool:
    """Whether ``source`` is a local bare repository (a mirror), which git archive can read
    without a clone."""
    if not Path(source).is_dir():
        return False
    done = subprocess.run(["git", "--git-dir", source, "rev-parse", "--is-bare-repository"],
                          capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == "true"


def export(git_dir: str, dest: Path) -> None:
    """SUBDIR of ``git_dir``'s HEAD written under ``dest`` (git archive: only the vanilla
    tree, never coverage_criteria/'s rewritten sources)."""
    archive = git("--git-dir", git_dir, "archive", "HEAD", SUBDIR)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def fetch_corpus(source: str) -> Path:
    """The LAVA-M folder (one folder per program) of ``source``, exported on first use: a
    bare repository is archived in place, anything else cloned (depth 1) first."""
    root = corpus_dir(source)
    if (root / ".complete").exists():
        return root / SUBDIR
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent, prefix=".fetch-") as work:
        tree = Path(work) / "tree"
        tree.mkdir()
        if is_bare(source):
            export(source, tree)
        else:
            print(f"lava_bench: cloning {source}", file=sys.stderr, flush=True)
            git("clone", "--quiet", "--bare", "--depth", "1", source, str(Path(work) / "repo.git"))
            export(str(Path(work) / "repo.git"), tree)
        if not (tree / SUBDIR).is_dir():
            raise BenchError(f"{source} has no {SUBDIR}")
        (tree / ".complete").write_text(source + "\n")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tree, root)
    return root / SUBDIR


@dataclass(frozen=True)
class Program:
    """One LAVA-M program: where it is, how validate.sh runs it, what it validated."""

    name: str
    root: Path                # LAVA-M/<name>
    options: tuple[str, ...]  # before the input file (base64 -d, md5sum -c)
    trigger: str              # printf pattern of a bug's trigger input, relative to root
    clean: str                # the input no bug fires on
    validated: frozenset[str]

    @property
    def seeds(self) -> Path:
        return self.root / "fuzzer_input"

    def args(self, path: str = "@@") -> tuple[str, ...]:
        """The program's arguments with the input file ``path`` (@@ for the fuzzers)."""
        return (*self.options, path)


def program(corpus: Path, name: str) -> Program:
    """``name``'s Program, read from its validate.sh (PROGOPT, INPUT_PATTERN, INPUT_CLEAN)
    and validated_bugs, so the options are LAVA's own."""
    root = corpus / name
    if not (root / "validate.sh").exists():
        raise BenchError(f"{root} is not a LAVA-M program (no validate.sh)")
    script = (root / "validate.sh").read_text()
    fields = dict(re.findall(r'^(PROGOPT|INPUT_PATTERN|INPUT_CLEAN)="(.*)"$', script, re.M))
    validated = frozenset((root / "validated_bugs").read_text().split())
    return Program(name, root, tuple(fields.get("PROGOPT", "").split()),
                   fields["INPUT_PATTERN"], fields["INPUT_CLEAN"], validated)


# --- builds -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Build:
    """One way to compile a program: the compiler (from the rival's ``tree``, a Trees key,
    when it has one; from PATH otherwise) and its environment (FFCC_FLAGS holds ffcc's label
    options, as in docs/DROPIN.md)."""

    cc: str
    env: tuple[tuple[str, str], ...] = ()
    oracle: bool = False
    tree: str | None = None


BUILDS = {
    "oracle": Build("gcc", oracle=True),
    "plain": Build("ffcc"),
    "cmplog": Build("ffcc", (("FFCC_FLAGS", "--cmplog"),)),
    "wm-cmplog": Build("ffcc", (("FFCC_FLAGS", "--cmplog --wm"),)),
    "wm": Build("ffcc", (("FFCC_FLAGS", "--wm"),)),
    "mcc-wm": Build("ffcc", (("FFCC_FLAGS", "--mcc --wm"),)),
    "afl": Build("afl-clang-fast", tree="aflpp"),
    "afl-cmplog": Build("afl-clang-fast", (("AFL_LLVM_CMPLOG", "1"),), tree="aflpp"),
    "afl-rb": Build("afl-gcc", tree="afl-rb"),
}
# LAVA-M's coreutils 8.24 on today's glibc: gnulib's stdio internals and major()/minor().
GLIBC_PATCHES = ("sed -i 's/IO_ftrylockfile/IO_EOF_SEEN/' lib/*.c",
                 "echo '#define _IO_IN_BACKUP 0x100' >> lib/stdio-impl.h",
                 "sed -i '1i #include <sys/sysmacros.h>' lib/mountlist.c")
# --lint: md5sum's LAVA code reads hex_digest before coreutils sets it (IF_LINT(= NULL) leaves
# it uninitialised); AFL++'s AFL_LLVM_CMPLOG build then crashes on the clean input, which
# starves afl-fuzz -c's cmplog stage, while -Dlint costs 4 of md5sum's 57 validated bugs
# (their triggers depend on that stack garbage).  Off by default: LAVA's code as it is.
LINT = "-Dlint"
# who's print of the bug it triggers, which LAVA-M ships disabled.
ORACLE_GUARD = "#if 0\n#define SWAP_UINT32"


def has_libacl() -> bool:
    """Whether -lacl links (libacl1-dev): LAVA-M's validate.sh configures with LIBS=-lacl."""
    return any(Path(d, "libacl.so").exists() for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib",
                                                          "/usr/lib64"))


def configure_command() -> str:
    """bench/projects.py's configure of coreutils (with gcc), and LIBS=-lacl as LAVA's own
    build when libacl is there."""
    return COREUTILS.configure.format(cc="gcc") + (" LIBS=-lacl" if has_libacl() else "")


def make_command(name: str, cc: str, lint: bool) -> str:
    """bench/projects.py's coreutils build (generated headers first) of the one program,
    with ``cc``: a tree configured with gcc builds with any compiler this way.  ``lint``
    compiles with -Dlint (coreutils' IF_LINT initialisations, see LINT)."""
    flags = " CFLAGS='-O2 -Dlint'" if lint else ""
    return (COREUTILS.build.removesuffix(" ".join(COREUTILS_PROGRAMS)).replace(
        "make -j2 ", f"make -j2 CC='{cc}' ") + f"src/{name}" + flags)


def configured(prog: Program, cache: Path) -> Path:
    """``prog``'s coreutils tree, patched for glibc and configured with gcc, built once per
    corpus and program: every build copies it."""
    tree = cache / "configured"
    if (tree / ".configured").exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(prog.root / "coreutils-8.24-lava-safe", tree, symlinks=True)
    for step in GLIBC_PATCHES:
        run_step(step, tree)
    seconds, _ = run_step(configure_command(), tree)
    (tree / ".configured").write_text(f"{seconds:.1f}\n")
    return tree


Trees = dict[str, Path]  # the rivals' trees bench/rivals.py built: "aflpp", "afl-rb"


def compiler(build: Build, trees: Trees) -> str:
    """The build's compiler command: a rival's from its tree, others from PATH."""
    return str(trees[build.tree] / build.cc) if build.tree else build.cc


def build_program(prog: Program, name: str, cache: Path, trees: Trees, lint: bool) -> Path:
    """``prog`` built the ``name`` way (a BUILDS key) in its own copy of the configured tree,
    cached: the stamp records the compiler and environment, and a different one rebuilds."""
    build = BUILDS[name]
    tree = cache / name
    cc = compiler(build, trees)
    recipe: dict[str, object] = {"cc": cc, "env": dict(build.env), "oracle": build.oracle}
    if lint:
        recipe["lint"] = True
    if build.cc == "ffcc":
        recipe["ffcc"] = ffcc_digest()
    stamp = tree / ".ffcc-lava-build.json"
    if stamp.exists() and json.loads(stamp.read_text())["recipe"] == recipe:
        return tree / "src" / prog.name
    base = configured(prog, cache)
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(base, tree, symlinks=True)
    if build.oracle and prog.name == "who":
        source = tree / "src" / "who.c"
        text = source.read_text(errors="surrogateescape")
        if ORACLE_GUARD not in text:
            raise BenchError(f"{source}: no '#if 0' around the bug print to enable")
        source.write_text(text.replace(ORACLE_GUARD, ORACLE_GUARD.replace("#if 0", "#if 1"), 1),
                          errors="surrogateescape")
    env = {**ENV, "AFL_QUIET": "1", **dict(build.env)}
    seconds, _ = run_step(make_command(prog.name, cc, lint), tree, env)
    stamp.write_text(json.dumps({"recipe": recipe, "seconds": round(seconds, 1)}))
    return tree / "src" / prog.name


def build_seconds(cache: Path) -> dict[str, float]:
    """Seconds each cached build of one program took (configure: the shared gcc configure)."""
    found = {p.parent.name: json.loads(p.read_text())["seconds"]
             for p in cache.glob("*/.ffcc-lava-build.json")}
    marker = cache / "configured" / ".configured"
    if marker.exists():
        found["configure"] = float(marker.read_text())
    return found


# --- configurations -----------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """A fuzzer, the build it fuzzes, its extra options ("{build}" stands for that build's
    binary) and the build whose labels `ffuzz report` counts (labelled ones only)."""

    fuzzer: str
    build: str
    extra: tuple[str, ...] = ()
    labels: str | None = None

    def builds(self) -> set[str]:
        return {self.build, *(x[1:-1] for x in self.extra if x.startswith("{"))}


CONFIGS = {
    "ffuzz": Config("ffuzz", "plain"),
    "ffuzz-c": Config("ffuzz", "cmplog", ("-c", "0")),
    "ffuzz-wm-c": Config("ffuzz", "wm-cmplog", ("-c", "0"), labels="wm-cmplog"),
    "ffuzz-wm": Config("ffuzz", "wm", labels="wm"),
    "ffuzz-mcc-wm": Config("ffuzz", "mcc-wm", labels="mcc-wm"),
    "ffuzz-2phase": Config("ffuzz", "plain", ("--labels-binary", "{wm}"), labels="wm"),
    "afl-fuzz-c": Config("afl-fuzz", "afl", ("-c", "{afl-cmplog}")),
    "afl-fuzz": Config("afl-fuzz", "afl"),
    "afl-rb": Config("afl-rb", "afl-rb"),
    "libfuzzer": Config("libfuzzer", "libfuzzer", ("-use_cmp=1",)),
}
DEFAULT_CONFIGS = ("ffuzz", "ffuzz-c", "ffuzz-wm-c", "afl-fuzz-c", "afl-rb")
RIVALS = ("afl-fuzz-c", "afl-fuzz", "afl-rb", "libfuzzer")
# What table.md compares: (ours, theirs), theirs one configuration or the best of several.
COMPARISONS: tuple[tuple[str, str | tuple[str, ...]], ...] = (
    ("ffuzz-wm-c", "ffuzz-c"), ("ffuzz-wm-c", RIVALS))


# --- running a campaign, whichever fuzzer -------------------------------------------------

@dataclass(frozen=True)
class Launch:
    """One campaign to run: the build, the seeds, the budget, the output folder, the options
    of the configuration and the target's arguments (@@ for the input file)."""

    binary: Path
    seeds: Path
    seconds: float
    out: Path
    extra: tuple[str, ...]
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """A finished campaign in the one layout the benches read, whichever fuzzer ran it:
    ``instance`` holds FOLDERS, each file named id:NNNNNN,time:MS,... (ms from the campaign's
    start); and the figures of its end."""

    instance: Path
    execs_per_sec: float
    queue: int
    crashes: int
    hangs: int


def run_afl_style(fuzzer: str, env: dict[str, str], launch: Launch) -> Outcome:
    """ffuzz or afl-fuzz (bench/fuzz_bench.py's campaign, from ``env``'s PATH), whose
    default/ instance is the layout as it is."""
    # campaign() runs in WORK/name; an absolute name (pathlib) puts it in the results.
    stats = campaign(fuzzer, launch.binary, launch.seeds, launch.seconds, str(launch.out),
                     launch.extra, launch.args, env)
    return Outcome(launch.out / "default", execs_per_sec(stats), int(stats["corpus_count"]),
                   int(stats.get("saved_crashes", 0)), int(stats.get("saved_hangs", 0)))


def run_ffuzz(launch: Launch, trees: Trees) -> Outcome:
    """ffuzz from PATH: the one under test, never from a rival's tree."""
    return run_afl_style("ffuzz", ENV, launch)


def run_aflpp(launch: Launch, trees: Trees) -> Outcome:
    """AFL++'s afl-fuzz -d (fuzz_bench's campaign) from the AFL++ tree."""
    return run_afl_style("afl-fuzz", {**ENV, "PATH": f"{trees['aflpp']}:{ENV['PATH']}"}, launch)


def stamp(files: list[Path], start: float, folder: Path) -> int:
    """``files`` (one folder's, in the order they were found) linked into ``folder`` as
    id:NNNNNN,time:MS,<the rest of the name>; how many.  A file's time is the earliest
    modification time of it and every later one, from ``start``: a find cannot come after a
    later one, while its own file may have been rewritten since (AFL 2.52b rewrites a queue
    entry it trims).  Seeds (AFL's orig:, libFuzzer's copies, older than the campaign) are
    at 0."""
    folder.mkdir(parents=True, exist_ok=True)
    times = [max(path.stat().st_mtime - start, 0.0) for path in files]
    for i in range(len(times) - 2, -1, -1):
        times[i] = min(times[i], times[i + 1])
    for number, (path, at) in enumerate(zip(files, times)):
        rest = path.name.split(",", 1)[1] if path.name.startswith("id:") else path.name
        ms = 0 if "orig:" in rest else int(at * 1000)
        os.link(path, folder / f"id:{number:06d},time:{ms},{rest}")
    return len(files)


def run_aflrb(launch: Launch, trees: Trees) -> Outcome:
    """afl-rb's afl-fuzz with FairFuzz's defaults (rare-branch queueing, the branch mask,
    deterministic stages on; bench/rivals.py adds -m none): AFL 2.52b writes its folders under
    -o itself, with no time: in the names, and stamp() gives them one in default/."""
    stats = rivals.fairfuzz_campaign(trees["afl-rb"] / "afl-fuzz", launch.seeds, launch.out,
                                     launch.seconds, launch.extra,
                                     (str(launch.binary), *launch.args), ENV)
    start = float(stats["start_time"])
    instance = launch.out / "default"
    count = {folder: stamp(sorted((launch.out / folder).glob("id:*")), start, instance / folder)
             for folder in FOLDERS}
    run_time = max(int(stats["last_update"]) - int(stats["start_time"]), 1)
    return Outcome(instance, int(stats["execs_done"]) / run_time, count["queue"],
                   count["crashes"], count["hangs"])


# Fork mode keeps a campaign going past a crash (a canary's abort ends a plain libFuzzer
# run): each job is a child process, and one that crashes, times out or runs out of memory is
# replaced.  -timeout=1: an execution gets a second, as AFL++'s default gives it (libFuzzer's
# own default, 1200 s, would let one hang take a whole campaign).
LIBFUZZER_OPTIONS = ("-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1",
                     "-timeout=1")
LIBFUZZER_ARTIFACTS = {"crashes": ("crash-*", "oom-*"), "hangs": ("timeout-*",)}
LIBFUZZER_RUNS = re.compile(rb"^#(\d+): ", re.M)  # fork mode's progress lines: #runs: ...
LIBFUZZER_JOB_SECONDS = 300  # the longest a fork-mode job runs: min(300, its number) seconds


def by_mtime(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: (p.stat().st_mtime, p.name))


def stop_at_budget(proc: subprocess.Popen[bytes], tmp: Path, seconds: float) -> None:
    """Wait for a fork-mode libFuzzer (its TMPDIR ``tmp``) to finish, ending the job it runs at
    ``seconds``: its parent checks -max_total_time only between jobs, and a job runs for up to
    LIBFUZZER_JOB_SECONDS, so left alone a campaign would overrun its budget by as much.  The
    stop file the parent hands its jobs (-stop_file: STOP in its temp dir) ends the job within
    a second; the parent then merges the job's finds into the corpus and exits."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for temp in tmp.glob("libFuzzerTemp.FuzzWithFork*.dir"):
            (temp / "STOP").write_text("STOP")  # an empty stop file stops nothing
    try:
        proc.wait(timeout=LIBFUZZER_JOB_SECONDS + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def run_libfuzzer(launch: Launch, trees: Trees) -> Outcome:
    """A libFuzzer harness (clang's -fsanitize=fuzzer) in fork mode (LIBFUZZER_OPTIONS) on a
    copy of the seeds in corpus/, where it adds its finds, its artifacts in artifacts/, stopped
    at the budget (stop_at_budget); stamp() puts them in default/ in the order of their
    modification times.  Its executions per second: the last progress line's count over the
    campaign's wall time (fork mode's own exec/s field stays 0 while its jobs end in
    crashes)."""
    out = launch.out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(launch.seeds, out / "corpus")
    for folder in ("artifacts", "tmp"):
        (out / folder).mkdir()
    argv = [str(launch.binary), *launch.extra, f"-max_total_time={int(launch.seconds)}",
            *LIBFUZZER_OPTIONS, f"-artifact_prefix={out / 'artifacts'}/", str(out / "corpus")]
    log = out / "libfuzzer.log"
    start = time.time()
    with log.open("wb") as sink, subprocess.Popen(
            argv, env={**ENV, "TMPDIR": str(out / "tmp")}, stdout=sink,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) as proc:
        stop_at_budget(proc, out / "tmp", launch.seconds)
    took = time.time() - start
    said = log.read_bytes()
    runs = LIBFUZZER_RUNS.findall(said)
    if b"INFO: exiting:" not in said or not runs:
        raise rivals.RivalFailed(f"{' '.join(argv)} did not finish:\n"
                                 + said.decode(errors="replace")[-2000:])
    instance = out / "default"
    queue = stamp(by_mtime([p for p in (out / "corpus").iterdir() if p.is_file()]), start,
                  instance / "queue")
    count = {folder: stamp(by_mtime([p for pattern in patterns
                                     for p in (out / "artifacts").glob(pattern)]),
                           start, instance / folder)
             for folder, patterns in LIBFUZZER_ARTIFACTS.items()}
    return Outcome(instance, int(runs[-1]) / max(took, 1.0), queue, count["crashes"],
                   count["hangs"])


def campaign_figures(outcome: Outcome) -> dict[str, float | None]:
    """The figures of a run that come from its fuzzer (results.json's names)."""
    return {"execs_per_sec": round(outcome.execs_per_sec, 1), "queue": outcome.queue,
            "saved_crashes": outcome.crashes, "saved_hangs": outcome.hangs}


# What each configuration's fuzzer (Config.fuzzer) runs as, and how its results are read.
RUNNERS: dict[str, Callable[[Launch, Trees], Outcome]] = {
    "ffuzz": run_ffuzz, "afl-fuzz": run_aflpp, "afl-rb": run_aflrb, "libfuzzer": run_libfuzzer}


# --- sorting findings into bugs -----------------------------------------------------------

def oracle_bug(oracle: Path, prog: Program, case: Path) -> str | None:
    """The bug ``case`` triggers: the last id the oracle prints on it (the one it crashes on;
    who's oracle exits at its first), or None when it prints none."""
    try:
        done = subprocess.run([str(oracle), *prog.args(str(case))], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=REPLAY_SECONDS)
        out = done.stdout
    except subprocess.TimeoutExpired as hung:
        out = hung.stdout if isinstance(hung.stdout, bytes) else b""
    ids = TRIGGERED.findall(out)
    return ids[-1].decode() if ids else None


def found_at(case: Path) -> float:
    """Seconds from the campaign's start to ``case``: its name's time: field (ms), which every
    Outcome's files carry."""
    match = re.search(r"time:(\d+)", case.name)
    if match is None:
        raise ValueError(f"{case}: no time: field in its name")
    return int(match[1]) / 1000


def sort_findings(instance: Path, oracle: Path,
                  prog: Program) -> tuple[dict[str, float], dict[str, int]]:
    """Every saved crash and hang of ``instance`` replayed on the oracle: the first time each
    bug id was found, and how many crashes and hangs there were and how many printed no id."""
    bugs: dict[str, float] = {}
    tally = {"crashes": 0, "hangs": 0, "unsorted": 0}
    for folder in ("crashes", "hangs"):
        for case in sorted((instance / folder).glob("id:*")):
            tally[folder] += 1
            bug = oracle_bug(oracle, prog, case)
            if bug is None:
                tally["unsorted"] += 1
                continue
            bugs[bug] = min(bugs.get(bug, float("inf")), found_at(case))
    return bugs, tally


# --- the other figures of a campaign ------------------------------------------------------

def saved_inputs(instance: Path) -> list[Path]:
    """The queue entries and crashes of an instance (what edges are counted on)."""
    return [p for folder in ("queue", "crashes") for p in sorted((instance / folder).glob("id:*"))
            if p.is_file()]


def showmap_edges(instance: Path, binary: Path, prog: Program, aflpp: Path) -> int | None:
    """Edges of the instance's queue and crashes on ``binary`` (the one afl-clang-fast build
    every configuration is measured on), by AFL++'s afl-showmap in collect mode (-C)."""
    files = saved_inputs(instance)
    if not files:
        return 0
    with tempfile.TemporaryDirectory(prefix="ffcc-lava-edges-") as work:
        listing, union = Path(work) / "inputs", Path(work) / "edges"
        listing.write_text("".join(f"{p}\n" for p in files))
        done = subprocess.run([str(aflpp / "afl-showmap"), "-C", "-q", "-t", "2000", "-I",
                               str(listing), "-o", str(union), "--", str(binary), *prog.args()],
                              env={**ENV, "AFL_CMIN_ALLOW_ANY": "1", "AFL_QUIET": "1"},
                              capture_output=True, timeout=600)
        if not union.exists():
            print(f"lava_bench: afl-showmap wrote no map for {instance} (exit "
                  f"{done.returncode})", file=sys.stderr)
            return None
        return sum(1 for line in union.read_text().splitlines() if line.strip())


def labels_covered(out: Path, binary: Path, prog: Program) -> tuple[int, int] | None:
    """Labels covered and labels (pruned ones left out) of the campaign's saved inputs on the
    labelled ``binary``: `ffuzz report`'s lcov tracefile, BRH and BRF summed over files."""
    report = out / "labels-report"
    done = subprocess.run(["ffuzz", "report", str(out), "-o", str(report), "--", str(binary),
                           *prog.args()], env=ENV, capture_output=True, text=True, timeout=1800)
    info = report / "labels.info"
    if done.returncode != 0 or not info.exists():
        print(f"lava_bench: ffuzz report failed on {out}: "
              f"{(done.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
        return None
    text = info.read_text()
    return (sum(int(n) for n in re.findall(r"^BRH:(\d+)$", text, re.M)),
            sum(int(n) for n in re.findall(r"^BRF:(\d+)$", text, re.M)))


# --- the matrix ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One campaign of the matrix."""

    program: str
    config: str
    run: int


def tasks(programs: list[str], configs: list[str], runs: int) -> list[Task]:
    """Round by round, every program, the configurations in an order that rotates by one each
    round, so that none always runs first or beside the same neighbour."""
    return [Task(p, c, r) for r in range(runs) for p in programs
            for c in configs[r % len(configs):] + configs[:r % len(configs)]]


@dataclass
class Matrix:
    """Everything a campaign needs: the programs, their builds, where results go."""

    progs: dict[str, Program]
    binaries: dict[str, dict[str, Path]]  # program -> build name -> binary
    seconds: float
    results: Path
    aflpp: Path | None  # for the edges on its "afl" build: None when no AFL++ is built
    trees: Trees

    def resolve(self, program: str, item: str) -> str:
        """An extra option, "{build}" replaced by that build's binary."""
        return str(self.binaries[program][item[1:-1]]) if item.startswith("{") else item


def fuzz(matrix: Matrix, task: Task) -> bugstats.Run:
    """Run one campaign and measure it; a failed campaign is a Run with its error."""
    prog, config = matrix.progs[task.program], CONFIGS[task.config]
    binaries = matrix.binaries[task.program]
    out = matrix.results / "campaigns" / f"{task.program}-{task.config}-{task.run}"
    extra = tuple(matrix.resolve(task.program, x) for x in config.extra)
    run = bugstats.Run(task.program, task.config, task.run, matrix.seconds)
    launch = Launch(binaries[config.build], prog.seeds, matrix.seconds, out, extra, prog.args())
    try:
        outcome = RUNNERS[config.fuzzer](launch, matrix.trees)
    except (subprocess.SubprocessError, OSError) as failed:
        run.error = f"{type(failed).__name__}: {failed}"
        return run
    instance = outcome.instance
    run.bugs, tally = sort_findings(instance, binaries["oracle"], prog)
    run.validated = sorted(b for b in run.bugs if b in prog.validated)
    labels = (labels_covered(out, binaries[config.labels], prog) if config.labels else None)
    run.figures = {
        **campaign_figures(outcome),
        "edges": (showmap_edges(instance, binaries["afl"], prog, matrix.aflpp)
                  if matrix.aflpp and "afl" in binaries else None),
        "labels_covered": labels[0] if labels else None,
        "labels_total": labels[1] if labels else None, **tally}
    return run


class Recorder:
    """results.json, rewritten atomically after every run so that a long matrix that stops
    keeps what it did."""

    def __init__(self, results: Path, meta: dict[str, object]) -> None:
        self.path = results / "results.json"
        self.meta = meta
        self.runs: list[bugstats.Run] = []
        self.lock = threading.Lock()

    def add(self, run: bugstats.Run) -> None:
        with self.lock:
            self.runs.append(run)
            self.write()

    def write(self) -> None:
        runs = sorted(self.runs, key=lambda r: (r.program, r.config, r.run))
        write_atomic(self.path, json.dumps({"meta": self.meta,
                                            "runs": [asdict(r) for r in runs]}, indent=1))


def describe(run: bugstats.Run) -> str:
    """The progress line of one finished campaign."""
    head = f"{run.program} run {run.run + 1} {run.config}:"
    if run.error:
        return f"{head} FAILED {run.error}"
    f = run.figures
    ids = sorted(run.bugs, key=int)
    shown = " ".join(ids[:12]) + (" ..." if len(ids) > 12 else "")
    return (f"{head} {len(run.bugs)} bugs ({len(run.validated)} validated) [{shown}], "
            f"{f['execs_per_sec']} execs/s, queue {f['queue']}, "
            f"edges {f['edges']}, labels {f['labels_covered']}")


def run_matrix(fuzz_one: Callable[[Task], bugstats.Run],
               describe_run: Callable[[bugstats.Run], str], todo: list[Task], jobs: int,
               recorder: Recorder) -> None:
    """The campaigns (``fuzz_one`` runs and measures one, ``describe_run`` says what it
    found), ``jobs`` at a time (each fuzzer binds itself to a free CPU, as in fuzz_bench);
    the first ones start a few seconds apart so that they see each other's CPU taken."""
    def one(index: int, task: Task) -> None:
        if index < jobs:
            time.sleep(index * STAGGER_SECONDS)
        run = fuzz_one(task)
        recorder.add(run)
        print(f"[{len(recorder.runs)}/{len(todo)}] {describe_run(run)}", file=sys.stderr,
              flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(one, i, t) for i, t in enumerate(todo)]:
            future.result()


# --- checks before the matrix -------------------------------------------------------------

def triggers(prog: Program, oracle: Path) -> list[str]:
    """The validated bugs whose trigger input does not make the oracle name them.  Some do
    not fire on today's glibc and compilers (uniq's in lib/linebuffer.c's realloc path, which
    LAVA's NOTES say has an unintentional use-after-free): no fuzzer can find those here."""
    return [bug for bug in sorted(prog.validated, key=int)
            if oracle_bug(oracle, prog, prog.root / (prog.trigger % bug)) != bug]


def firing(prog: Program, silent: list[str]) -> str:
    """How many validated triggers fire here, as the log and table.md say it."""
    return (f"{len(prog.validated) - len(silent)} of {len(prog.validated)} validated trigger "
            "inputs make the oracle name their bug" + (f" (not {', '.join(silent)})"
                                                        if silent else ""))


def sanity(prog: Program, binaries: dict[str, Path]) -> list[str]:
    """Problems with ``prog``'s builds: a fuzzed build that fails on the clean input (LAVA's
    validate.sh wants an exit status below 128)."""
    problems = []
    clean = prog.root / prog.clean
    for name, binary in binaries.items():
        if name == "oracle":
            continue
        done = subprocess.run([str(binary), *prog.args(str(clean))], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=30)
        if not 0 <= done.returncode < 128:
            problems.append(f"{prog.name} {name}: exit {done.returncode} on {prog.clean}")
    return problems


def check_rival(aflpp: Path) -> bool:
    """bench/rivals.py's check that this AFL++'s cmplog stage works: afl-fuzz-c means
    nothing otherwise."""
    works = rivals.check(aflpp / "afl-fuzz", aflpp / "afl-clang-fast", 60.0)
    if not works:
        print("\n" + "!" * 78 + f"\nlava_bench: {aflpp}/afl-fuzz -c found nothing on the magic "
              "sample: its input-to-state stage does NOT work, afl-fuzz-c is no rival\n"
              + "!" * 78 + "\n", file=sys.stderr)
    return works


def version(argv: list[str]) -> str:
    """The first line a tool prints about its version (for results.json), without the colours
    AFL 2.52b's banner has."""
    done = subprocess.run(argv, capture_output=True, text=True)
    said = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr).strip()
    return said.splitlines()[0] if said else "?"


def rival_trees(args: argparse.Namespace, configs: list[Config]) -> Trees:
    """The rivals' trees (--aflpp, --afl-rb), once afl-rb's is built if a configuration runs
    it (AFL++'s is checked apart: without it, no edges are counted either)."""
    if any(c.fuzzer == "afl-rb" for c in configs) and not all(
            (args.afl_rb / tool).exists() for tool in rivals.FAIRFUZZ_TOOLS):
        raise BenchError(f"no afl-rb build in {args.afl_rb}: build one with `python "
                         "bench/rivals.py build-fairfuzz <afl-rb source>` (or leave afl-rb out)")
    return {"aflpp": args.aflpp, "afl-rb": args.afl_rb}


def rival_meta(configs: list[str], trees: Trees) -> dict[str, object]:
    """What results.json says about the rivals beyond AFL++: afl-rb's tree and version, the
    clang whose libFuzzer runs (for the configurations that use them)."""
    fuzzers = {CONFIGS[c].fuzzer for c in configs}
    found: dict[str, object] = {}
    if "afl-rb" in fuzzers:
        found["afl_rb"] = f"{trees['afl-rb']} ({version([str(trees['afl-rb'] / 'afl-fuzz')])})"
    if "libfuzzer" in fuzzers:
        found["libfuzzer"] = version(["clang", "--version"])
    return found


def meta(args: argparse.Namespace, aflpp: Path | None) -> dict[str, object]:
    """What results.json says about how its runs were made."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"date": datetime.now().isoformat(timespec="seconds"), "ffcc_commit": commit,
            "ffuzz": version(["ffuzz", "--version"]), "corpus": args.corpus,
            "aflpp": str(aflpp) if aflpp else None, "seconds": args.seconds, "runs": args.runs,
            "jobs": args.jobs, "programs": args.programs.split(","),
            "configs": args.configs.split(","), "cpus": os.cpu_count(),
            "libacl": has_libacl()}


# --- results ------------------------------------------------------------------------------

def program_of(info: dict[str, Any], name: str) -> Program:
    """The Program of results.json's corpus (for its validated bugs), from the cache."""
    return program(corpus_dir(info["corpus"]) / SUBDIR, name)


def write_tables(results: Path) -> Path:
    """table.md and bugs-<program>.png from results.json."""
    data = json.loads((results / "results.json").read_text())
    runs = [bugstats.Run(**r) for r in data["runs"]]
    programs, configs = data["meta"]["programs"], data["meta"]["configs"]
    title = (f"LAVA-M, {data['meta']['runs']} runs of {data['meta']['seconds']:g} s "
             f"({data['meta']['date']}, ffcc {data['meta']['ffcc_commit']})")
    info = data["meta"]
    notes = {prog: [f"Checks: {firing(program_of(info, prog), info['triggers_not_firing'][prog])}"
                    + ("." if info["sanity"][prog] == "ok"
                       else "; FAILED: " + "; ".join(info["sanity"][prog]) + ".")]
             for prog in programs if prog in info.get("triggers_not_firing", {})}
    text = bugstats.markdown(runs, programs, configs, COMPARISONS, title, notes)
    if data["meta"].get("rival_cmplog_works") is False:
        text += "\n**AFL++'s cmplog stage failed bench/rivals.py's check: afl-fuzz-c is no rival.**\n"
    write_atomic(results / "table.md", text)
    for prog in programs:
        bugstats.plot(runs, prog, configs, results / f"bugs-{prog}.png")
    return results / "table.md"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS,
                        help="git repository (URL or path) holding " + SUBDIR)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                        help="of " + ",".join(CONFIGS))
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="campaigns at once (one per core)")
    parser.add_argument("--results", type=Path,
                        help="results folder (default bench/.work/lava-results/<timestamp>)")
    parser.add_argument("--aflpp", type=Path, default=AFLPP,
                        help="AFL++ tree built by bench/rivals.py (afl-fuzz, afl-clang-fast)")
    parser.add_argument("--afl-rb", type=Path, default=rivals.AFLRB,
                        help="afl-rb tree built by bench/rivals.py build-fairfuzz")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached builds")
    parser.add_argument("--lint", action="store_true",
                        help="build with -Dlint: initialises what LAVA's md5sum code reads "
                             "uninitialised (AFL++'s cmplog build of md5sum then works; 4 of "
                             "its validated bugs no longer fire)")
    parser.add_argument("--build-only", action="store_true",
                        help="build and check the builds, run no campaign")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="write DIR's table.md and plots again from its results.json")
    args = parser.parse_args(argv)
    unknown = (set(args.programs.split(",")) - set(PROGRAMS)) | (set(args.configs.split(","))
                                                                 - set(CONFIGS))
    if unknown:
        parser.error(f"unknown program or configuration: {', '.join(sorted(unknown))}")
    harnessed = [c for c in args.configs.split(",") if not CONFIGS[c].builds() <= BUILDS.keys()]
    if harnessed:
        parser.error(f"{', '.join(harnessed)}: for libFuzzer harnesses (bench/magma_bench.py); "
                     "LAVA-M's programs are not")
    return args


def prepare(args: argparse.Namespace) -> tuple[Matrix, dict[str, object]]:
    """The corpus, the rivals' trees, every build the configurations need, and their
    checks."""
    configs = [CONFIGS[c] for c in args.configs.split(",")]
    trees = rival_trees(args, configs)
    wants_afl = any(c.fuzzer == "afl-fuzz" for c in configs)
    aflpp: Path | None = args.aflpp
    if not all((args.aflpp / tool).exists() for tool in ("afl-fuzz", "afl-clang-fast",
                                                           "afl-showmap")):
        if wants_afl:
            raise BenchError(f"no AFL++ build in {args.aflpp}: build one with `python "
                             "bench/rivals.py build <AFL++ v4.21c source> --name v4.21c` "
                             "(or leave the afl-fuzz configurations out)")
        aflpp = None  # no edges on a common build either
    if not has_libacl():
        print("lava_bench: libacl's development files are missing (apt-get install -y "
              "libacl1-dev): configuring without LIBS=-lacl, unlike LAVA's validate.sh",
              file=sys.stderr)
    corpus = fetch_corpus(args.corpus)
    builds = {"oracle", *(b for c in configs for b in c.builds()), *(("afl",) if aflpp else ())}
    info: dict[str, object] = {"build_seconds": {}, "sanity": {}, "triggers_not_firing": {},
                               "lint": args.lint}
    progs: dict[str, Program] = {}
    binaries: dict[str, dict[str, Path]] = {}
    for name in args.programs.split(","):
        progs[name] = program(corpus, name)
        cache = CACHE / "builds" / corpus_dir(args.corpus).name / name
        if args.rebuild:
            shutil.rmtree(cache, ignore_errors=True)
        binaries[name] = {}
        for build in sorted(builds):
            print(f"lava_bench: {name}: {build} build", file=sys.stderr, flush=True)
            binaries[name][build] = build_program(progs[name], build, cache, trees, args.lint)
        info["build_seconds"][name] = build_seconds(cache)  # type: ignore[index]
        problems = sanity(progs[name], binaries[name])
        info["sanity"][name] = problems or "ok"  # type: ignore[index]
        for problem in problems:
            print(f"lava_bench: CHECK FAILED: {problem}", file=sys.stderr)
        silent = triggers(progs[name], binaries[name]["oracle"])
        info["triggers_not_firing"][name] = silent  # type: ignore[index]
        print(f"lava_bench: {name}: {firing(progs[name], silent)}", file=sys.stderr)
        if len(silent) > len(progs[name].validated) // 2:
            problems.append(f"{name} oracle: most validated triggers name no bug")
            info["sanity"][name] = problems  # type: ignore[index]
    if wants_afl and aflpp:
        info["rival_cmplog_works"] = check_rival(aflpp)
    results = args.results or WORK / "lava-results" / datetime.now().strftime("%Y%m%d-%H%M%S")
    return Matrix(progs, binaries, args.seconds, results.resolve(), aflpp, trees), info


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.report:
        print(write_tables(args.report))
        return 0
    try:
        matrix, info = prepare(args)
    except BenchError as error:
        print(f"lava_bench: {error}", file=sys.stderr)
        return 1
    print(json.dumps(info, indent=1), file=sys.stderr)
    if args.build_only:
        return 0 if all(v == "ok" for v in info["sanity"].values()) else 1  # type: ignore[attr-defined]
    matrix.results.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(matrix.results, {**meta(args, matrix.aflpp),
                                         **rival_meta(args.configs.split(","), matrix.trees),
                                         **info})
    recorder.write()
    run_matrix(partial(fuzz, matrix), describe,
               tasks(args.programs.split(","), args.configs.split(","), args.runs),
               args.jobs, recorder)
    table = write_tables(matrix.results)
    print(table.read_text())
    print(f"results in {matrix.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
