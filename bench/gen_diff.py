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
``crash`` (a Python traceback from ffcc itself).  ``--reduce`` runs C-Reduce's successor
cvise on the first case of each class and axis, with an interestingness test (this script's
``check`` command) that keeps the class and the program free of undefined behaviour.

    nice python bench/gen_diff.py -n 40 --seed 1 --axes base,ubsan --out /tmp/gen_out
    python bench/gen_diff.py -n 200 --axes all --workers 2
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
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

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
    "werror": ("-Wall", "-Wextra", "-Werror"),
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


def build_and_run(cell: Cell, workdir: Path, flags: list[str], settings: Settings) -> None:
    """Both builds of one cell, and the runs of those that built."""
    env = {} if settings.server else {"FFCC_SERVER": "0"}
    run_env = {"UBSAN_OPTIONS": "print_stacktrace=0:print_summary=0", "ASAN_OPTIONS": "detect_leaks=1"}
    for labelled in (False, True):
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
            if built.status != 0:
                return  # nothing to compare the labelled build with


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
    runs = [c.plain_run for c in cells]
    if any(r is None for r in runs):
        return None  # a plain build failed: the caller skips the axis
    if any(r.status is None for r in runs if r):
        return "timeout"
    if any(SANITIZER_REPORT.search(r.stderr) for r in runs if r):
        return "sanitizer"
    seen = {r.observed() for r in runs if r}
    return "plain-builds-disagree" if len(seen) > 1 else None


def examine(program: Program, axis: str, settings: Settings) -> Verdict:
    """Build, run and judge one program on one axis, keeping what fails."""
    with tempfile.TemporaryDirectory(prefix="gen_diff.") as tmp:
        workdir = Path(tmp)
        (workdir / "prog.c").write_text(source_of(program, axis))
        flags = extra_flags(program, axis)
        cells = [Cell(cc, level) for cc in COMPILERS for level in LEVELS]
        for cell in cells:
            build_and_run(cell, workdir, flags, settings)
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
    if any(c.plain_build is None or c.plain_build.status != 0 for c in cells):
        verdict.outcome = "skipped"
        return verdict
    why = suspect(cells)
    if why:
        verdict.outcome = f"dropped:{why}"
        return verdict
    verdict.failures = [(cls, c) for c in cells if (cls := failure_of(c))]
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
    build_and_run(cell, workdir, case["flags"], settings)
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
    """Counts and costs of one axis."""

    programs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    labels: list[int] = field(default_factory=list)
    build_cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])  # plain, labelled
    run_cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def add(self, verdict: Verdict) -> None:
        self.programs += 1
        self.outcomes[verdict.outcome.split(":")[0]] += 1
        if verdict.outcome.startswith("dropped"):
            self.outcomes[verdict.outcome] += 1
        if verdict.labels:
            self.labels.append(verdict.labels)
        if verdict.outcome in ("ok", "differ"):
            self.add_costs(verdict.cells)

    def add_costs(self, cells: list[Cell]) -> None:
        for c in cells:
            if c.plain_build and c.labelled_build and c.plain_run and c.labelled_run:
                self.build_cpu[0] += c.plain_build.cpu
                self.build_cpu[1] += c.labelled_build.cpu
                self.run_cpu[0] += c.plain_run.cpu
                self.run_cpu[1] += c.labelled_run.cpu


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


def jobs(progs: list[Program], axes: list[str]) -> Iterator[tuple[Program, str]]:
    for program in progs:
        for axis in axes:
            yield program, axis


def run_all(progs: list[Program], axes: list[str], settings: Settings, workers: int,
            by_generator: dict[str, Tally]) -> tuple[dict[str, Tally], list[Verdict]]:
    """Every program on every axis, ``workers`` at a time; prints each failure as it comes."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    failed: list[Verdict] = []
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for verdict in pool.map(lambda job: examine(job[0], job[1], settings), jobs(progs, axes)):
            tallies[verdict.axis].add(verdict)
            by_generator[verdict.program.generator].add(verdict)
            print(f"{verdict.outcome}: {verdict.program.name} on {verdict.axis}"
                  + "".join(f", {cls} {c.cc}{c.level}" for cls, c in verdict.failures), flush=True)
            if verdict.failures:
                failed.append(verdict)
    except KeyboardInterrupt:  # Ctrl-C or SIGINT: the table of what finished
        print("interrupted", flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return dict(tallies), failed


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
    started = time.monotonic()
    by_generator: dict[str, Tally] = defaultdict(Tally)
    tallies, failed = run_all(progs, parse_axes(args.axes), settings, args.workers, by_generator)
    print(f"\n{len(progs)} programs, {time.monotonic() - started:.0f} s; cases in {settings.out}")
    print(table(tallies))
    print("\nby generator:\n" + table(dict(by_generator), "generator"))
    if args.reduce:
        reduce_failures(failed, settings.out, args.reduce_timeout)
    return 1 if failed else 0


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
    parser.add_argument("--out", default="gen_diff_out")
    parser.add_argument("--ffcc", default="ffcc")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT)
    parser.add_argument("--server", action="store_true", help="use ffcc's compile server")
    parser.add_argument("--reduce", action="store_true", help="cvise one case per class and axis")
    parser.add_argument("--reduce-timeout", type=float, default=1800)
    return main_run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
