"""Generative differential testing: random programs built plain and labelled must agree.

For each of N programs from a seed (Csmith's and bench/gen_c.py's, alternately), and each
axis of compiler options, the program is built by ffcc without label options (plain) and with
``--mcc --wm=all --labels-required`` (labelled), by gcc and clang, at -O0 and -O2, and every
build runs with a timeout.  Labels must never change what a program does: each labelled run is
compared (stdout, stderr, exit status) with the plain run of the same compiler and level.

A program is dropped from an axis as suspect of undefined behaviour when its plain runs
disagree among themselves (-O0 against -O2, gcc against clang), when a sanitizer reports on
a plain run, or when a plain run times out; it is skipped when the plain build fails (Csmith's
code under -pedantic-errors, say).  What is left can only differ through ffcc.

Failure classes, each kept under ``--out`` with the program, the outputs and ``repro.sh``:
``differ`` (a labelled run shows something else), ``fallback`` (the labelled build refused
by --labels-required: a file ffcc could not label, or whose labelled code did not compile),
``crash`` (a Python traceback from ffcc itself).  ``--spread`` puts each program on one axis,
the axes in turn, so that N programs cover every axis N / axes times; every judgement is
appended to ``--out``'s journal.jsonl, and ``--resume`` runs only what the journal lacks (a
long run goes on where a stopped one left off).  ``--reduce`` runs C-Reduce's successor
cvise on the first case of each class and axis, with an interestingness test (this script's
``check`` command) that keeps the class and the program free of undefined behaviour.

    nice python bench/gen_diff.py -n 40 --seed 1 --axes base,ubsan --out /tmp/gen_out
    python bench/gen_diff.py -n 200 --axes all --workers 2
    nice python bench/gen_diff.py -n 2000 --axes all --spread --resume --server --out ~/gen2000
    python bench/gen_diff.py check --case /tmp/gen_out/differ/gen-3-base-gcc-O2 prog.c

Build cost is CPU time (wait4's rusage of ffcc and its compilers) with ``FFCC_SERVER=0``, so
that every compile is a child of the measured ffcc; ``--server`` uses the compile server
instead (faster, and the build cost column then only shows the client's own CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.gen_c import Style, generate  # noqa: E402

CSMITH_INCLUDE = "/usr/include/csmith"
LABELS = ("--mcc", "--wm=all", "--labels-required")
COMPILERS = ("gcc", "clang")
LEVELS = ("-O0", "-O2")
AXES: dict[str, tuple[str, ...]] = {
    "base": (),
    "v3": ("-march=x86-64-v3",),
    "contract-fast": ("-ffp-contract=fast",),
    "contract-off": ("-ffp-contract=off",),
    "fast-math": ("-ffast-math",),
    "ubsan": ("-fsanitize=undefined,float-divide-by-zero", "-fno-sanitize-recover=all"),
    "asan": ("-fsanitize=address",),
    "trapv": ("-ftrapv",),
    "wrapv": ("-fwrapv",),
    "c89": ("-std=c89",),
    "c99": ("-std=c99",),
    "c11": ("-std=c11",),
    "c17": ("-std=c17",),
    "gnu2x": ("-std=gnu2x",),
    "pedantic": ("-pedantic-errors",),
    # gcc-only warnings too, which clang (and libclang, before ffcc dropped them from its
    # parse) does not know: -Wno-unknown-warning-option keeps clang's build going. What they
    # warn of in a generated program stays a warning, as gen_c does not write for them.
    "werror": ("-Wall", "-Wextra", "-Werror", "-Wno-unknown-warning-option", "-Wlogical-op",
               "-Wduplicated-cond", "-Wjump-misses-init", "-Wstack-usage=65536",
               "-Wno-error=logical-op", "-Wno-error=duplicated-cond",
               "-Wno-error=jump-misses-init"),
}
DEFAULT_AXES = ("base",)
SANITIZER_REPORT = re.compile(rb"runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer")
# UBSan names the column of the faulting expression; labels insert text before it.
UBSAN_COLUMN = re.compile(rb"^(.*?:\d+):\d+: runtime error:", re.M)
UNLABELLED = ("built without labels", "--labels-required")
RUN_TIMEOUT = 10.0
BUILD_TIMEOUT = 300.0


@dataclass(frozen=True)
class Program:
    """One generated program: its generator, seed and the text it stands for."""

    generator: str  # "csmith" or "gen"
    seed: int

    @property
    def name(self) -> str:
        return f"{self.generator}-{self.seed}"


@dataclass
class Measured:
    """A finished process: exit status (negative: signal; None: timed out), output, CPU."""

    status: int | None
    stdout: bytes
    stderr: bytes
    cpu: float

    def observed(self) -> tuple[int | None, bytes, bytes]:
        """What the outside world sees, UBSan's columns left out."""
        return self.status, self.stdout, UBSAN_COLUMN.sub(rb"\1: runtime error:", self.stderr)


@dataclass
class Cell:
    """One compiler and level of one program on one axis: its builds and runs."""

    cc: str
    level: str
    plain_build: Measured | None = None
    labelled_build: Measured | None = None
    plain_run: Measured | None = None
    labelled_run: Measured | None = None
    labels: int = 0


@dataclass
class Verdict:
    """What one program on one axis came to."""

    program: Program
    axis: str
    outcome: str  # "ok", "dropped:<why>", "skipped", or a failure class
    cells: list[Cell] = field(default_factory=list)
    failures: list[tuple[str, Cell]] = field(default_factory=list)
    labels: int = 0

    def record(self) -> dict[str, Any]:
        """What the journal keeps of it: enough for the table, without the outputs."""
        costs = [[0.0, 0.0], [0.0, 0.0]]  # build and run CPU: plain, labelled
        if self.outcome in ("ok", "differ"):
            for c in self.cells:
                if c.plain_build and c.labelled_build and c.plain_run and c.labelled_run:
                    costs[0][0] += c.plain_build.cpu
                    costs[0][1] += c.labelled_build.cpu
                    costs[1][0] += c.plain_run.cpu
                    costs[1][1] += c.labelled_run.cpu
        return {"program": self.program.name, "generator": self.program.generator,
                "seed": self.program.seed, "axis": self.axis, "outcome": self.outcome,
                "labels": self.labels, "build_cpu": costs[0], "run_cpu": costs[1],
                "failures": [f"{cls} {c.cc}{c.level}" for cls, c in self.failures]}


# -- processes -------------------------------------------------------------------------------


def measure(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> Measured:
    """Run ``argv`` and measure its CPU time and that of its waited-for children (wait4), so
    that two workers' processes are never counted in each other's figures."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        status, usage = wait_with_timeout(proc, timeout)
        out.seek(0)
        err.seek(0)
        return Measured(status, out.read(), err.read(), usage)


def wait_with_timeout(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, float]:
    """(exit status or None when killed at the deadline, CPU seconds)."""
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline and not timed_out:
            timed_out = True
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
        time.sleep(0.005)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (None if timed_out else proc.returncode), usage.ru_utime + usage.ru_stime


# -- programs --------------------------------------------------------------------------------


def source_of(program: Program, axis: str) -> str:
    """The program's text; gen_c's style follows the axis (ISO bit-fields under
    -pedantic-errors, nothing -Wall -Wextra warns about under -Werror)."""
    if program.generator == "gen":
        return generate(program.seed, Style(pedantic=axis == "pedantic", warn_clean=axis == "werror"))
    with tempfile.TemporaryDirectory() as scratch:  # csmith leaves platform.info where it runs
        done = subprocess.run(["csmith", "--seed", str(program.seed)], capture_output=True,
                              text=True, check=True, cwd=scratch)
    return done.stdout


def programs(count: int, seed: int, generators: list[str]) -> list[Program]:
    """``count`` programs, the generators taking turns, seeds counted up from ``seed``."""
    return [Program(generators[n % len(generators)], seed + n) for n in range(count)]


def extra_flags(program: Program, axis: str) -> list[str]:
    flags = list(AXES[axis])
    if program.generator == "csmith":
        flags += ["-I", CSMITH_INCLUDE]
        if axis != "werror":
            flags.append("-w")  # Csmith's code draws thousands of warnings
    return flags


def build_argv(ffcc: str, cc: str, level: str, flags: list[str], labelled: bool, out: str) -> list[str]:
    return [ffcc, *(LABELS if labelled else ()), f"--cc={cc}", level, *flags, "-o", out, "prog.c"]


def label_count(binary: Path) -> int:
    """The label count from the header record of the database ffcc writes beside a program."""
    try:
        with open(f"{binary}.labels.jsonl") as db:
            return int(json.loads(db.readline()).get("labels", 0))
    except (OSError, ValueError):
        return 0


# -- one program on one axis -----------------------------------------------------------------


@dataclass
class Settings:
    ffcc: str
    out: Path
    run_timeout: float
    server: bool


def build_and_run(cell: Cell, workdir: Path, flags: list[str], settings: Settings,
                  labelled: bool) -> None:
    """One build of one cell (plain or labelled), and its run if it built."""
    env = {} if settings.server else {"FFCC_SERVER": "0"}
    run_env = {"UBSAN_OPTIONS": "print_stacktrace=0:print_summary=0", "ASAN_OPTIONS": "detect_leaks=1"}
    binary = f"{'labelled' if labelled else 'plain'}-{cell.cc}{cell.level}"
    built = measure(build_argv(settings.ffcc, cell.cc, cell.level, flags, labelled, binary),
                    workdir, BUILD_TIMEOUT, env)
    ran = measure([f"./{binary}"], workdir, settings.run_timeout, run_env) \
        if built.status == 0 else None
    if labelled:
        cell.labelled_build, cell.labelled_run = built, ran
        cell.labels = label_count(workdir / binary)
    else:
        cell.plain_build, cell.plain_run = built, ran


def failure_of(cell: Cell) -> str | None:
    """The failure class of a cell whose plain build and run are sound, or None."""
    for built in (cell.plain_build, cell.labelled_build):
        if built and b"Traceback (most recent call last)" in built.stderr:
            return "crash"
    labelled = cell.labelled_build
    assert labelled is not None
    if labelled.status != 0 or any(m.encode() in labelled.stderr for m in UNLABELLED):
        return "fallback"
    assert cell.plain_run is not None and cell.labelled_run is not None
    if cell.labelled_run.observed() != cell.plain_run.observed():
        return "differ"
    return None


def suspect(cells: list[Cell]) -> str | None:
    """Why the plain builds make the program suspect of undefined behaviour, or None."""
    runs = [c.plain_run for c in cells if c.plain_run is not None]  # those that were built
    if any(r.status is None for r in runs):
        return "timeout"
    if any(SANITIZER_REPORT.search(r.stderr) for r in runs):
        return "sanitizer"
    seen = {r.observed() for r in runs}
    return "plain-builds-disagree" if len(seen) > 1 else None


def examine(program: Program, axis: str, settings: Settings) -> Verdict:
    """Build, run and judge one program on one axis, keeping what fails.  Every plain build
    runs first, and the labelled builds only when the plain ones leave something to compare:
    a plain run that times out or disagrees makes the labelled builds pointless."""
    with tempfile.TemporaryDirectory(prefix="gen_diff.") as tmp:
        workdir = Path(tmp)
        (workdir / "prog.c").write_text(source_of(program, axis))
        flags = extra_flags(program, axis)
        cells = [Cell(cc, level) for cc in COMPILERS for level in LEVELS]
        for cell in cells:
            build_and_run(cell, workdir, flags, settings, labelled=False)
            if cell.plain_run is None or cell.plain_run.status is None:
                break  # skipped or dropped whatever the other cells do
        verdict = judge(program, axis, cells)
        if verdict.outcome != "ok":
            return verdict
        for cell in cells:
            build_and_run(cell, workdir, flags, settings, labelled=True)
        verdict = judge(program, axis, cells)
        for cls, cell in verdict.failures:
            keep_case(verdict, cls, cell, workdir, flags, settings)
        return verdict


def judge(program: Program, axis: str, cells: list[Cell]) -> Verdict:
    verdict = Verdict(program, axis, "ok", cells, labels=max((c.labels for c in cells), default=0))
    crashes = [c for c in cells if c.plain_build and b"Traceback (most recent" in c.plain_build.stderr]
    if crashes:
        verdict.failures = [("crash", c) for c in crashes]
        verdict.outcome = "crash"
        return verdict
    if any(c.plain_build is not None and c.plain_build.status != 0 for c in cells):
        verdict.outcome = "skipped"
        return verdict
    why = suspect(cells)
    if why:
        verdict.outcome = f"dropped:{why}"
        return verdict
    verdict.failures = [(cls, c) for c in cells if c.labelled_build and (cls := failure_of(c))]
    if verdict.failures:
        verdict.outcome = min(cls for cls, _ in verdict.failures)  # crash < differ < fallback
    return verdict


# -- keeping and reducing cases --------------------------------------------------------------


def case_dir(verdict: Verdict, cls: str, cell: Cell, out: Path) -> Path:
    return out / cls / f"{verdict.program.name}-{verdict.axis}-{cell.cc}{cell.level}"


def keep_case(verdict: Verdict, cls: str, cell: Cell, workdir: Path, flags: list[str],
              settings: Settings) -> None:
    """Save the program, both builds' messages and runs' outputs, the commands that
    reproduce the failure, and the cvise interestingness test."""
    where = case_dir(verdict, cls, cell, settings.out)
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(workdir / "prog.c", where / "prog.c")
    for tag, measured in (("plain-build", cell.plain_build), ("labelled-build", cell.labelled_build),
                          ("plain-run", cell.plain_run), ("labelled-run", cell.labelled_run)):
        if measured is not None:
            (where / f"{tag}.stdout").write_bytes(measured.stdout[:200_000])
            (where / f"{tag}.stderr").write_bytes(measured.stderr[:200_000])
            (where / f"{tag}.status").write_text(f"{measured.status}\n")
    case = {"class": cls, "cc": cell.cc, "level": cell.level, "flags": flags,
            "axis": verdict.axis, "program": verdict.program.name, "ffcc": settings.ffcc,
            "run_timeout": settings.run_timeout}
    (where / "case.json").write_text(json.dumps(case, indent=1) + "\n")
    (where / "repro.sh").write_text(repro_script(case))
    interesting = where / "interesting.sh"
    interesting.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                           f"{shlex.quote(str(Path(__file__).resolve()))} check "
                           f"--case {shlex.quote(str(where))} prog.c\n")
    (where / "repro.sh").chmod(0o755)
    interesting.chmod(0o755)


def repro_script(case: dict) -> str:
    flags = " ".join(shlex.quote(f) for f in case["flags"])
    common = f"--cc={case['cc']} {case['level']} {flags}"
    return (f"#!/bin/sh\n# {case['class']}: {case['program']} on axis {case['axis']}\n"
            f"cd \"$(dirname \"$0\")\"\n"
            f"{case['ffcc']} {common} -o plain prog.c && ./plain > plain.out 2>&1; echo \"plain: $?\"\n"
            f"{case['ffcc']} {' '.join(LABELS)} {common} -o labelled prog.c"
            f" && ./labelled > labelled.out 2>&1; echo \"labelled: $?\"\n"
            "diff plain.out labelled.out\n")


def check(case_path: Path, source: Path) -> bool:
    """The interestingness test: ``source`` (in the current directory) still shows the case's
    failure class, and its plain builds still agree and stay clean under UBSan and ASan."""
    case = json.loads((case_path / "case.json").read_text())
    settings = Settings(case["ffcc"], case_path, case["run_timeout"], server=True)
    workdir = source.resolve().parent
    if source.name != "prog.c":
        shutil.copy(source, workdir / "prog.c")
    if case["class"] != "crash" and not sound(workdir, case["flags"], case["run_timeout"]):
        return False
    cell = Cell(case["cc"], case["level"])
    for labelled in (False, True):
        build_and_run(cell, workdir, case["flags"], settings, labelled)
    if cell.plain_build is None or cell.plain_build.status != 0 and case["class"] != "crash":
        return False
    if case["class"] == "crash":
        return any(m and b"Traceback (most recent" in m.stderr
                   for m in (cell.plain_build, cell.labelled_build))
    if cell.plain_run is None or cell.plain_run.status is None:
        return False
    return failure_of(cell) == case["class"]


SOUND_FLAGS = ("-w", "-Werror=implicit-function-declaration", "-Werror=return-type",
               "-Werror=int-conversion", "-Werror=incompatible-pointer-types",
               "-Werror=uninitialized")


def sound(workdir: Path, flags: list[str], timeout: float) -> bool:
    """Whether a reduced program is still free of the undefined behaviour reduction likes to
    introduce: plain gcc and clang builds under UBSan and ASan agree and report nothing."""
    seen = set()
    include = [f for f in flags if f.startswith("-I") or f == CSMITH_INCLUDE]
    for cc in COMPILERS:
        for sanitizer in ("undefined,float-divide-by-zero", "address"):
            binary = workdir / f"sound-{cc}-{sanitizer[:4]}"
            built = subprocess.run([cc, "-O0", *SOUND_FLAGS, *include, f"-fsanitize={sanitizer}",
                                    "-fno-sanitize-recover=all", "-o", str(binary), "prog.c"],
                                   cwd=workdir, capture_output=True)
            if built.returncode != 0:
                return False
            ran = measure([str(binary)], workdir, timeout)
            if ran.status is None or SANITIZER_REPORT.search(ran.stderr):
                return False
            seen.add((ran.status, ran.stdout))
    return len(seen) == 1


def reduce(case_path: Path, timeout: float) -> Path | None:
    """cvise the case's program in a copy, keeping its failure class; the reduced program
    lands beside the original as ``reduced.c``."""
    if not shutil.which("cvise"):
        print("cvise is not installed (apt-get install cvise)", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory(prefix="gen_reduce.") as tmp:
        shutil.copy(case_path / "prog.c", Path(tmp) / "prog.c")
        try:
            subprocess.run(["cvise", "--n", "1", "--timeout", "120", str(case_path / "interesting.sh"),
                            "prog.c"], cwd=tmp, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pass  # what cvise wrote so far is still smaller
        shutil.copy(Path(tmp) / "prog.c", case_path / "reduced.c")
    return case_path / "reduced.c"


# -- the table -------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts and costs of one axis (or generator)."""

    programs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    labels: list[int] = field(default_factory=list)
    build_cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])  # plain, labelled
    run_cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def add(self, record: dict[str, Any]) -> None:
        """One journal record (Verdict.record)."""
        self.programs += 1
        outcome = record["outcome"]
        self.outcomes[outcome.split(":")[0]] += 1
        if outcome.startswith("dropped"):
            self.outcomes[outcome] += 1
        if record["labels"]:
            self.labels.append(record["labels"])
        for total, pair in ((self.build_cpu, record["build_cpu"]), (self.run_cpu, record["run_cpu"])):
            total[0] += pair[0]
            total[1] += pair[1]


def ratio(pair: list[float]) -> str:
    return f"{pair[1] / pair[0]:.2f}" if pair[0] > 0 else "-"


COLUMNS = ("axis", "programs", "ok", "dropped", "skipped", "differ", "fallback", "crash",
           "labels/prog", "build l/p", "run l/p")


def table(tallies: dict[str, Tally], first: str = "axis") -> str:
    rows: list[tuple[str, ...]] = [(first, *COLUMNS[1:])]
    for axis, t in tallies.items():
        mean = f"{sum(t.labels) / len(t.labels):.0f}" if t.labels else "-"
        rows.append((axis, str(t.programs), *(str(t.outcomes[k]) for k in COLUMNS[2:8]),
                     mean, ratio(t.build_cpu), ratio(t.run_cpu)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    drops = Counter[str]()
    for t in tallies.values():
        drops.update({k: v for k, v in t.outcomes.items() if k.startswith("dropped:")})
    if drops:
        lines.append("dropped as UB suspects: " + ", ".join(f"{k[8:]} {v}" for k, v in sorted(drops.items())))
    return "\n".join(lines)


# -- driver ----------------------------------------------------------------------------------


def jobs(progs: list[Program], axes: list[str], spread: bool) -> list[tuple[Program, str]]:
    """Every program on every axis, or (``spread``) each program on one axis, in turn."""
    if spread:
        return [(program, axes[n % len(axes)]) for n, program in enumerate(progs)]
    return [(program, axis) for program in progs for axis in axes]


class Journal:
    """journal.jsonl under --out: one record per program and axis judged, appended as each
    finishes, so that a run stopped (Ctrl-C, a machine that goes away) resumes where it was
    with --resume and its table counts every record."""

    def __init__(self, out: Path, resume: bool) -> None:
        self.path = out / "journal.jsonl"
        if not resume:
            self.path.unlink(missing_ok=True)
        self.records: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    self.records.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short when the run was killed: that job runs again
        self.done = {(r["program"], r["axis"]) for r in self.records}
        self.lock = threading.Lock()

    def add(self, record: dict[str, Any]) -> None:
        with self.lock, open(self.path, "a") as journal:
            journal.write(json.dumps(record) + "\n")
            self.records.append(record)


def run_all(todo: list[tuple[Program, str]], settings: Settings, workers: int,
            journal: Journal) -> list[Verdict]:
    """The jobs not in the journal yet, ``workers`` at a time; prints each as it comes and
    returns those that failed."""
    failed: list[Verdict] = []
    pool = ThreadPoolExecutor(max_workers=workers)
    left = [job for job in todo if (job[0].name, job[1]) not in journal.done]
    try:
        for verdict in pool.map(lambda job: examine(job[0], job[1], settings), left):
            journal.add(verdict.record())
            print(f"[{len(journal.records)}/{len(todo)}] {verdict.outcome}: "
                  f"{verdict.program.name} on {verdict.axis}"
                  + "".join(f", {cls} {c.cc}{c.level}" for cls, c in verdict.failures), flush=True)
            if verdict.failures:
                failed.append(verdict)
    except KeyboardInterrupt:  # Ctrl-C or SIGINT: the table of what finished
        print("interrupted", flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return failed


def tallies(records: list[dict[str, Any]], key: str) -> dict[str, Tally]:
    """The records counted per ``key`` ("axis" or "generator")."""
    counted: dict[str, Tally] = defaultdict(Tally)
    for record in records:
        counted[record[key]].add(record)
    return dict(counted)


def reduce_failures(failed: list[Verdict], out: Path, timeout: float) -> None:
    """One reduction per failure class and axis: the first case found."""
    done: set[tuple[str, str]] = set()
    for verdict in failed:
        for cls, cell in verdict.failures:
            if (cls, verdict.axis) in done:
                continue
            done.add((cls, verdict.axis))
            reduced = reduce(case_dir(verdict, cls, cell, out), timeout)
            if reduced:
                print(f"reduced {cls} on {verdict.axis}: {reduced} ({len(reduced.read_bytes())} bytes)")


def parse_axes(text: str) -> list[str]:
    axes = list(AXES) if text == "all" else text.split(",")
    unknown = [a for a in axes if a not in AXES]
    if unknown:
        raise SystemExit(f"unknown axes {unknown}; known: {', '.join(AXES)}")
    return axes


def available_generators(wanted: list[str]) -> list[str]:
    if "csmith" in wanted and not shutil.which("csmith"):
        print("csmith is not installed: its programs are left out", file=sys.stderr)
        wanted = [g for g in wanted if g != "csmith"]
    return wanted


def main_run(args: argparse.Namespace) -> int:
    settings = Settings(args.ffcc, Path(args.out).resolve(), args.run_timeout, args.server)
    settings.out.mkdir(parents=True, exist_ok=True)
    progs = programs(args.n, args.seed, available_generators(args.generators.split(",")))
    todo = jobs(progs, parse_axes(args.axes), args.spread)
    journal = Journal(settings.out, args.resume)
    started = time.monotonic()
    failed = run_all(todo, settings, args.workers, journal)
    wanted = {(program.name, axis) for program, axis in todo}
    records = [r for r in journal.records if (r["program"], r["axis"]) in wanted]
    print(f"\n{len(records)} of {len(todo)} programs x axes, {time.monotonic() - started:.0f} s "
          f"this run; cases in {settings.out}")
    print(table(tallies(records, "axis")))
    print("\nby generator:\n" + table(tallies(records, "generator"), "generator"))
    if args.reduce:
        reduce_failures(failed, settings.out, args.reduce_timeout)
    return 1 if any(r["failures"] for r in records) else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        checker = argparse.ArgumentParser(prog="gen_diff.py check")
        checker.add_argument("--case", required=True)
        checker.add_argument("source")
        args = checker.parse_args(argv[1:])
        return 0 if check(Path(args.case), Path(args.source)) else 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="programs (default 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--axes", default=",".join(DEFAULT_AXES),
                        help=f"comma-separated, or all: {', '.join(AXES)}")
    parser.add_argument("--generators", default="csmith,gen")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--spread", action="store_true",
                        help="each program on one axis, the axes in turn (default: every axis)")
    parser.add_argument("--resume", action="store_true",
                        help="keep --out's journal and run only what it does not hold")
    parser.add_argument("--out", default="gen_diff_out")
    parser.add_argument("--ffcc", default="ffcc")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT)
    parser.add_argument("--server", action="store_true", help="use ffcc's compile server")
    parser.add_argument("--reduce", action="store_true", help="cvise one case per class and axis")
    parser.add_argument("--reduce-timeout", type=float, default=1800)
    return main_run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
