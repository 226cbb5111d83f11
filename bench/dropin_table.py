"""Real projects built three ways, side by side: their own test suites, labels kept, outputs.

Each project of bench/projects.py named on the command line (the cheap ones by default) is
copied fresh, configured, built, checked (its own ``make check`` / ``make test`` / ctest)
three ways:

- ``gcc``: the plain compilers (``CC=gcc CXX=g++``; ``--cc clang``: clang, clang++);
- ``ffcc``: ``CC=ffcc CXX=ffcc++`` with ``FFCC_CC``/``FFCC_CXX`` naming those same compilers,
  so that the comparison with the plain build is like for like (edge coverage only);
- ``ffcc-labels``: the same with ``FFCC_FLAGS="--mcc --wm"`` (``--labels``).

and the ways must agree: the same pass/fail/skip counts (per project parser), no file built
without labels unless libclang cannot parse it (the warning's reason says which), and the
same bytes out of the project's data round trip (bzip2 and zlib compress and decompress a
file; the .bz2 and .gz bytes must be identical).  CPU is the user+system time of the
build's and the check's process trees (``FFCC_SERVER=0``, so that every ffcc runs in that
tree and counts, and not in the compile server; automake compiles its check programs in the
check), configure not counted.  The script runs under nice -n 19,
and builds with -j2 at most.

    python bench/dropin_table.py                      # the default projects, markdown table
    python bench/dropin_table.py --json out.json zlib bzip2 expat
    python bench/dropin_table.py --cc clang zlib      # clang, clang++ and FFCC_CC=clang
    python bench/dropin_table.py --show a.json b.json # the table of earlier runs, merged

The exit status is 0 when every project's ways agree.
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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.projects import PROJECTS, Counts, Project, fresh_copy  # noqa: E402

DEFAULT_PROJECTS = ("zlib", "bzip2", "libyaml", "cjson", "cjson-strict", "expat", "jq",
                    "libpng1.6", "lcms2", "xz-utils", "jansson", "lzo2")
CXX_OF = {"gcc": "g++", "clang": "clang++"}
# ffcc's warning for a unit built without labels: in drop-in form ("..., as REASON
# (--labels-required ...)") and in a project build's summary ("...: REASON").
UNLABELLED = re.compile(r"ffcc: warning: (\S+?): built without labels(?:, as |: )(.*?)"
                        r"(?: \(--labels-required makes this an error\))?$", re.M)
STEP_TIMEOUT = 3600  # seconds: a hung check must not hold the table forever


@dataclass(frozen=True)
class Way:
    """One of the three ways a project is built: compilers and ffcc's environment."""

    name: str
    cc: str
    cxx: str
    env: dict[str, str]


@dataclass
class Step:
    """A shell step's end: exit status, seconds, CPU seconds of its tree, output."""

    rc: int
    wall: float
    cpu: float
    output: str = field(repr=False)


@dataclass
class Result:
    """What one way of one project came to."""

    way: str
    cxx: str
    failed_step: str = ""        # configure, build or check: where it stopped; "" if none
    error: str = ""              # the failed step's last lines
    build_cpu: float = 0.0
    build_wall: float = 0.0
    check_cpu: float | None = None  # automake's check_PROGRAMS are compiled here
    check_rc: int | None = None
    counts: Counts = field(default_factory=dict)
    unlabelled: dict[str, str] = field(default_factory=dict)   # file -> reason
    roundtrip_rc: int | None = None
    roundtrip: dict[str, str] = field(default_factory=dict)    # file -> sha256


def ways(backend: str, labels: str) -> list[Way]:
    """The plain build and ffcc's two, all on ``backend``.  ffcc++ where it is installed;
    without it, C++ units are compiled by the plain C++ compiler (the row says so)."""
    cxx = CXX_OF.get(backend, backend + "++")
    ffcc_cxx = "ffcc++" if shutil.which("ffcc++") else cxx
    ffcc_env = {"FFCC_CC": backend, "FFCC_CXX": cxx}
    return [Way("gcc" if backend == "gcc" else backend, backend, cxx, {}),
            Way("ffcc", "ffcc", ffcc_cxx, ffcc_env),
            Way("ffcc-labels", "ffcc", ffcc_cxx, {**ffcc_env, "FFCC_FLAGS": labels})]


def run(command: str, tree: Path, env: dict[str, str]) -> Step:
    """Run one shell step in ``tree``; its CPU is that of every process it waited for.  Its
    output is kept beside the tree (``<tree>.<n>.log``, in the order of the steps), where
    a difference's exact error can be read."""
    start = time.monotonic()
    number = len(list(tree.parent.glob(f"{tree.name}.*.log")))
    with open(tree.parent / f"{tree.name}.{number}.log", "w+") as log:
        log.write(f"$ {command}\n")
        log.flush()
        proc = subprocess.Popen(command, shell=True, cwd=tree, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, **env},
                                start_new_session=True)
        deadline = start + STEP_TIMEOUT
        while (waited := os.wait4(proc.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)  # the step's own session: nothing else
            time.sleep(0.2)
        _, status, usage = waited
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        return Step(proc.returncode, time.monotonic() - start,
                    usage.ru_utime + usage.ru_stime, log.read())


def unlabelled_files(output: str) -> dict[str, str]:
    """Files ffcc built without labels, each with the reason its warning gives."""
    return {path: reason.strip() for path, reason in UNLABELLED.findall(output)}


def digests(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def failed(result: Result, step: str, outcome: Step) -> Result:
    result.failed_step, result.error = step, "\n".join(outcome.output.splitlines()[-30:])
    print(f"  {result.way}: {step} failed (rc {outcome.rc}):\n{result.error}", flush=True)
    return result


def build_way(project: Project, way: Way, workdir: Path) -> Result:
    """Configure, build, check and round-trip one fresh copy of ``project`` built ``way``."""
    result = Result(way.name, way.cxx)
    tree = fresh_copy(project, workdir / way.name)
    env = {**way.env, "CC": way.cc, "CXX": way.cxx}
    configure = run(project.configure.format(cc=way.cc), tree, env)  # compile server on
    if configure.rc != 0:
        return failed(result, "configure", configure)
    measured_env = {**env, "FFCC_SERVER": "0"}
    build = run(project.build, tree, measured_env)
    result.build_cpu, result.build_wall = build.cpu, build.wall
    result.unlabelled = unlabelled_files(build.output)
    if build.rc != 0:
        return failed(result, "build", build)
    check = run(project.check, tree, measured_env)
    result.check_rc, result.counts = check.rc, project.counts(tree, check.output)
    result.check_cpu = check.cpu
    result.unlabelled.update(unlabelled_files(check.output))  # check programs are built there
    print(f"  {way.name}: build {build.wall:.0f} s ({build.cpu:.0f} s CPU), check rc {check.rc}"
          f" {result.counts}, {len(result.unlabelled)} unlabelled", flush=True)
    if check.rc != 0:
        print("\n".join(check.output.splitlines()[-40:]), flush=True)
    if project.roundtrip:
        trip = run(project.roundtrip, tree, env)
        result.roundtrip_rc, result.roundtrip = trip.rc, digests(tree / "roundtrip")
        if trip.rc != 0:
            print(f"  {way.name}: round trip rc {trip.rc}:\n{trip.output[-2000:]}", flush=True)
    return result


def differences(results: list[Result]) -> list[str]:
    """How the ffcc ways differ from the plain one, in words; empty when they agree."""
    plain, found = results[0], []
    for other in results:
        name = other.way
        if other.failed_step:
            found.append(f"{name}: {other.failed_step} failed")
            continue
        if other is not plain and (other.counts, other.check_rc) != (plain.counts, plain.check_rc):
            found.append(f"{name}: tests {tests_text(other)}, {plain.way} {tests_text(plain)}")
        lost = [f for f, why in other.unlabelled.items() if "libclang cannot parse" not in why]
        if lost:
            found.append(f"{name}: built without labels: {', '.join(lost)}")
        if other.roundtrip_rc:
            found.append(f"{name}: round trip failed (rc {other.roundtrip_rc})")
        if other is not plain and other.roundtrip != plain.roundtrip:
            changed = sorted(k for k in {*other.roundtrip, *plain.roundtrip}
                             if other.roundtrip.get(k) != plain.roundtrip.get(k))
            found.append(f"{name}: round-trip bytes differ: {', '.join(changed)}")
    return found


def tests_text(result: Result) -> str:
    """pass/fail/skip, inner cases where the project has them, and a failing check's status."""
    if result.failed_step:
        return f"{result.failed_step} FAILED"
    c = result.counts
    text = f"{c.get('pass', 0)}/{c.get('fail', 0) + c.get('error', 0)}/{c.get('skip', 0)}"
    if "cases" in c:
        text += f" (cases {c['cases'] - c.get('cases_fail', 0)}/{c.get('cases_fail', 0)})"
    return text + ("" if result.check_rc == 0 else f" rc={result.check_rc}")


def unlabelled_text(result: Result) -> str:
    if not result.unlabelled:
        return "0"
    reasons = sorted({("libclang cannot parse" if "libclang cannot parse" in why
                       else why[:80]) for why in result.unlabelled.values()})
    files = ", ".join(sorted(Path(f).name for f in result.unlabelled))
    return f"{len(result.unlabelled)}: {files} ({'; '.join(reasons)})"


def roundtrip_text(result: Result, plain: Result) -> str:
    if result.roundtrip_rc is None:
        return "-"
    if result.roundtrip_rc:
        return f"FAILED rc={result.roundtrip_rc}"
    same = "same bytes" if result.roundtrip == plain.roundtrip else "BYTES DIFFER"
    return f"ok, {len(result.roundtrip)} files, {same}" if result is not plain else \
        f"ok, {len(result.roundtrip)} files"


def cpu_text(result: Result) -> str:
    """Build and check CPU seconds ("-" for a check not measured: a record of an older run)."""
    check = "-" if result.check_cpu is None else f"{result.check_cpu:.0f}"
    return f"{result.build_cpu:.0f}, {check}"


def table(rows: dict[str, list[Result]]) -> str:
    """The markdown table: one row per project and way, and each project's verdict."""
    head = ("project", "way", "CXX", "tests pass/fail/skip", "built without labels",
            "round trip", "CPU s build, check", "verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, results in rows.items():
        verdict = "; ".join(differences(results)) or "agree"
        for number, r in enumerate(results):
            lines.append("| " + " | ".join((
                name if number == 0 else "", r.way, r.cxx, tests_text(r),
                unlabelled_text(r) if r.way != results[0].way else "-",
                roundtrip_text(r, results[0]), cpu_text(r),
                verdict if number == 0 else "")) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", default=list(DEFAULT_PROJECTS), metavar="PROJECT",
                        help=f"of {', '.join(PROJECTS)}")
    parser.add_argument("--cc", default="gcc", choices=("gcc", "clang"),
                        help="the plain compilers and ffcc's backend (default gcc)")
    parser.add_argument("--labels", default="--mcc --wm", help="FFCC_FLAGS of the labelled way")
    parser.add_argument("--workdir", type=Path, help="keep the build trees here")
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--show", type=Path, nargs="+", metavar="JSON",
                        help="build nothing: the table of these --json files, merged")
    args = parser.parse_args()
    rows = shown(args.show) if args.show else built(args)
    print(table(rows))
    return 0 if not any(differences(r) for r in rows.values()) else 1


def shown(paths: list[Path]) -> dict[str, list[Result]]:
    """The results of earlier runs' --json files; a later file's project replaces an earlier's."""
    return {name: [Result(**r) for r in results] for path in paths
            for name, results in json.loads(path.read_text()).items()}


def built(args: argparse.Namespace) -> dict[str, list[Result]]:
    """Every project of ``args`` built and checked three ways, under nice -n 19."""
    os.nice(19)  # a shared machine: every build and check below inherits it
    rows: dict[str, list[Result]] = {}
    with tempfile.TemporaryDirectory(prefix="ffcc-dropin-") as scratch:
        workdir = args.workdir or Path(scratch)
        for name in args.projects:
            print(f"{name}:", flush=True)
            rows[name] = [build_way(PROJECTS[name], way, workdir / name)
                          for way in ways(args.cc, args.labels)]
            if args.json:  # after every project, so that a long run's start is kept
                args.json.write_text(json.dumps(
                    {n: [asdict(r) for r in rs] for n, rs in rows.items()}, indent=1))
    return rows

if __name__ == "__main__":
    sys.exit(main())
