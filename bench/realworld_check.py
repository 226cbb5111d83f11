"""Real projects built plain and with labels: own test suites, build time, peak memory, labels.

For each project of bench/projects.py named on the command line (all by default),
a fresh copy is built twice, with the plain compiler (``--cc``, default clang,
ffcc's default backend) and with ``CC=ffcc FFCC_CC=<--cc> FFCC_FLAGS=<--labels>``,
and the project's own check runs on each.  Floating-point trap tests need
``--cc gcc``: clang 14 assumes the default floating-point environment and
speculates divisions (pixman's combiner and stress tests die of SIGFPE when
built by plain clang -O2).  The labelled build passes when its check ends
as the plain one does, with the same counts.

Memory: every build (not configure) runs in its own session with ``FFCC_SERVER=0``,
so each ffcc runs as a child of the build and not in the compile server.  Two figures per
build: the largest resident set of any one process (wait4's ru_maxrss over the
whole process tree), and the peak of the proportional set sizes of all processes
of the session alive at once (shared pages counted once), sampled every 50 ms (a
lower bound: a spike shorter than that can be missed).  ``--repeat N`` builds each tree N
times, plain and labelled in turn (the project's clean step in between, configured once), and
reports medians with the peaks' range; the check runs once, on the last builds.

    nice -n 19 python bench/realworld_check.py --cc gcc mpfr4 pixman coreutils
    nice -n 19 python bench/realworld_check.py --json out.json zlib jq cjson
    nice -n 19 python bench/realworld_check.py --repeat 3 coreutils
    nice -n 19 python bench/realworld_check.py --valgrind

``--valgrind``: every sample (samples/*/ with seeds), built by ffcc without labels
and with them, by gcc and clang at -O0 and -O2 (DWARF 4: valgrind 3.19 cannot
read clang 14's DWARF 5), runs each seed and trigger under memcheck; the
labelled run must end with the same status and, unless it dies of a signal
(where optimised code may fault on a differently merged store), the same memcheck
reports.  Inputs that hang natively are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.projects import PROJECTS, Project, fresh_copy, run_step  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MEMCHECK = ("valgrind", "-q", "--error-exitcode=99", "--track-origins=yes")
UNLABELLED_MARK = "--labels-required makes this an error"


@dataclass
class Measure:
    seconds: float
    max_process_kb: int   # largest single process of the tree
    peak_tree_kb: int     # largest proportional set size of the processes alive at one instant
    returncode: int
    output: str
    cpu: float = 0.0      # user and system seconds of the whole tree


@dataclass
class Outcome:
    variant: str
    build: Measure        # the median of ``builds``
    check_rc: int
    tests: dict[str, int]
    builds: list[Measure] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    unlabelled_files: int = 0


@dataclass
class Variant:
    """One configured copy of a project: plain or labelled."""

    name: str
    tree: Path
    env: dict[str, str]


def session_pss_kb(session: int) -> int:
    """Proportional set size of every process in ``session``, summed, in KiB: pages two
    processes share (libclang's, the compiler's) count once, as in a cgroup's accounting."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[3]) != session:  # the session id
                continue
            rollup = Path(entry.path, "smaps_rollup").read_text()
            total += int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.M)[1])  # type: ignore[index]
        except (OSError, ValueError, IndexError, TypeError):
            continue
    return total


def measured(command: str, tree: Path, env: dict[str, str]) -> Measure:
    """Run ``command`` in a new session, watching its process tree's memory."""
    with tempfile.TemporaryFile("w+") as log:
        start = time.monotonic()
        proc = subprocess.Popen(command, shell=True, cwd=tree, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **env}, start_new_session=True)
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.05):
                peak = max(peak, session_pss_kb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        done.set()
        sampler.join()
        log.seek(0)
        return Measure(seconds, usage.ru_maxrss, peak, proc.returncode, log.read(),
                       usage.ru_utime + usage.ru_stime)


def test_counts(output: str) -> dict[str, int]:
    """Passed/failed/skipped from automake, ctest or zlib's summaries in a check's output."""
    counts: Counter[str] = Counter()
    for kind, number in re.findall(r"^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): +(\d+)", output, re.M):
        counts[kind.lower()] += int(number)
    if match := re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", output):
        failed, total = int(match[2]), int(match[3])
        counts.update(pass_=total - failed, fail=failed)
    counts["pass"] += counts.pop("pass_", 0)
    counts["pass"] += len(re.findall(r"\*\*\* zlib .*test OK \*\*\*", output))
    return dict(counts)


def label_counts(tree: Path) -> dict[str, int]:
    """Labels per criterion, and objectives per operator (a label's "also" operators count
    too), over every object file of the tree."""
    from ffcc.instrument.label_db import read_program_labels

    counts: Counter[str] = Counter()
    seen = set()
    for obj in sorted(tree.rglob("*.o")):
        key = (obj.stat().st_dev, obj.stat().st_ino)
        if key in seen or obj.is_symlink():
            continue
        seen.add(key)
        for label in read_program_labels(str(obj)).labels:
            counts["total"] += 1
            counts[label.criterion] += 1
            for operator in (label.operator, *label.also):
                if operator != label.criterion:
                    counts[operator] += 1
    return dict(sorted(counts.items()))


def configured(project: Project, name: str, compiler: str, env: dict[str, str],
               workdir: Path) -> Variant:
    tree = fresh_copy(project, workdir / name)
    run_step(project.configure.format(cc=compiler), tree, env)  # ffcc's compile server helps
    return Variant(name, tree, {**env, "FFCC_SERVER": "0"})


def built(project: Project, variant: Variant, again: bool) -> Measure:
    """One measured build of ``variant`` (``again``: after undoing the previous one)."""
    if again:
        run_step(project.clean, variant.tree, variant.env)
    build = measured(project.build, variant.tree, variant.env)
    if build.returncode != 0:
        raise RuntimeError(f"{project.name} {variant.name} build failed:\n{build.output[-3000:]}")
    print(f"  {variant.name}: build {build.seconds:.0f} s, largest process "
          f"{build.max_process_kb // 1024} MB, build peak {build.peak_tree_kb // 1024} MB",
          flush=True)
    return build


def median_build(builds: list[Measure]) -> Measure:
    """Each figure's median over the builds (the last build's output)."""
    return Measure(statistics.median(b.seconds for b in builds),
                   int(statistics.median(b.max_process_kb for b in builds)),
                   int(statistics.median(b.peak_tree_kb for b in builds)),
                   max(b.returncode for b in builds), builds[-1].output,
                   statistics.median(b.cpu for b in builds))


def checked(project: Project, variant: Variant, builds: list[Measure]) -> Outcome:
    """The project's check on the last build of ``variant``, with the builds' figures."""
    check = measured(project.check, variant.tree, variant.env)
    tests = test_counts(check.output)
    if not any(tests.values()) and check.returncode == 0:
        tests = {"pass": 1}  # a smoke check with no counted tests of its own
    print(f"  {variant.name}: check rc {check.returncode} {tests}", flush=True)
    if check.returncode != 0:
        print(check.output[-4000:], flush=True)
    build = median_build(builds)
    outcome = Outcome(variant.name, build, check.returncode, tests, builds)
    if variant.name == "labelled":
        outcome.labels = label_counts(variant.tree)
        # Tests built by the check (automake's check_PROGRAMS) are labelled there.
        warnings = [line for line in (build.output + check.output).splitlines()
                    if UNLABELLED_MARK in line]
        outcome.unlabelled_files = len(warnings)
        for line in warnings:
            print(f"    {line[:300]}", flush=True)
    for measure in (build, *builds):
        measure.output = ""  # kept out of the JSON record
    return outcome


def build_and_check(project: Project, plain_cc: str, labels: str, repeat: int,
                    workdir: Path) -> tuple[Outcome, Outcome]:
    """Plain and labelled builds of ``project``, ``repeat`` times each, in turn (so that the
    machine's load changes meet both alike), then each one's check."""
    variants = (configured(project, "plain", plain_cc, {}, workdir),
                configured(project, "labelled", "ffcc",
                           {"FFCC_FLAGS": labels, "FFCC_CC": plain_cc}, workdir))
    builds: dict[str, list[Measure]] = {v.name: [] for v in variants}
    for round_ in range(repeat):
        for variant in variants:
            builds[variant.name].append(built(project, variant, again=round_ > 0))
    plain, labelled = (checked(project, v, builds[v.name]) for v in variants)
    return plain, labelled


def peak_text(outcome: Outcome) -> str:
    """The median build peak in MB, with the range when there were several builds."""
    peaks = [b.peak_tree_kb / 1024 for b in outcome.builds]
    spread = f" ({min(peaks):.0f}-{max(peaks):.0f})" if len(peaks) > 1 else ""
    return f"{outcome.build.peak_tree_kb / 1024:.0f}{spread}"


def table(rows: list[tuple[str, Outcome, Outcome]]) -> str:
    def tests(o: Outcome) -> str:
        t = o.tests
        text = f"{t.get('pass', 0)}/{t.get('pass', 0) + t.get('fail', 0) + t.get('error', 0)}"
        return text + (f" (+{t['skip']} skip)" if t.get("skip") else "") + \
            ("" if o.check_rc == 0 else f" rc={o.check_rc}")

    head = ("project", "tests plain", "tests labelled", "build s plain/lab", "max proc MB plain/lab",
            "build peak MB plain/lab", "labels (mcc, wm)", "unlabelled")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for name, plain, lab in rows:
        lines.append(" | ".join((
            name, tests(plain), tests(lab),
            f"{plain.build.seconds:.0f} / {lab.build.seconds:.0f} "
            f"(x{lab.build.seconds / plain.build.seconds:.1f})",
            f"{plain.build.max_process_kb / 1024:.0f} / {lab.build.max_process_kb / 1024:.0f} "
            f"(x{lab.build.max_process_kb / plain.build.max_process_kb:.2f})",
            f"{peak_text(plain)} / {peak_text(lab)} "
            f"(x{lab.build.peak_tree_kb / plain.build.peak_tree_kb:.2f})",
            f"{lab.labels.get('total', 0)} ({lab.labels.get('mcc', 0)}, {lab.labels.get('wm', 0)})",
            str(lab.unlabelled_files))))
    return "\n".join(lines)


def memcheck(argv: list[str]) -> tuple[int | str, list[str]]:
    """Exit status and memcheck's report headings (addresses and pids left out)."""
    try:
        done = subprocess.run([*MEMCHECK, *argv], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout", []
    headings = re.findall(r"^==\d+== (\S.*)$", done.stderr.decode(errors="replace"), re.M)
    return done.returncode, sorted({re.sub(r"0x[0-9A-Fa-f]+", "ADDR", h) for h in headings})


def hangs(argv: list[str]) -> bool:
    try:
        subprocess.run(argv, capture_output=True, timeout=5)
    except subprocess.TimeoutExpired:
        return True
    return False


def valgrind_samples(workdir: Path) -> bool:
    """Samples plain and labelled under memcheck; True when no labelled run differs."""
    runs = differences = 0
    for sample in sorted(p.parent for p in (REPO / "samples").glob("*/seeds")):
        sources = [str(p.relative_to(REPO)) for p in sorted(sample.glob("*.c"))]
        inputs = sorted((sample / "seeds").iterdir()) + sorted(sample.glob("triggers/*"))
        for cc in ("gcc", "clang"):
            for level in ("-O0", "-O2"):
                programs = []
                for labels in ([], ["--mcc", "--wm"]):
                    out = workdir / f"{sample.name}{cc}{level}{len(labels)}"
                    subprocess.run(["ffcc", f"--cc={cc}", *labels, level, "-gdwarf-4", "-o",
                                    f"{out}/", *sources], cwd=REPO, check=True,
                                   capture_output=True)
                    programs.append(str(out / sample.name))
                for path in inputs:
                    if hangs([programs[0], str(path)]):
                        continue
                    plain, labelled = (memcheck([prog, str(path)]) for prog in programs)
                    runs += 1
                    crashed = isinstance(plain[0], int) and plain[0] < 0
                    if (plain[0] != labelled[0]) if crashed else (plain != labelled):
                        differences += 1
                        print(f"  DIFFERS {sample.name} {cc} {level} {path.name}: "
                              f"plain {plain}, labelled {labelled}", flush=True)
        print(f"  {sample.name}: done", flush=True)
    print(f"valgrind: {runs} inputs x builds, {differences} where the labelled build differs")
    return differences == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", default=list(PROJECTS), metavar="PROJECT")
    parser.add_argument("--labels", default="--mcc --wm", help="FFCC_FLAGS of the labelled build")
    parser.add_argument("--cc", default="clang", help="the plain build's compiler and ffcc's backend")
    parser.add_argument("--workdir", type=Path, help="keep the build trees here")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="build each tree N times, plain and labelled in turn; medians")
    parser.add_argument("--valgrind", action="store_true", help="the samples under memcheck instead")
    args = parser.parse_args()
    if args.valgrind:
        with tempfile.TemporaryDirectory(prefix="ffcc-valgrind-") as scratch:
            return 0 if valgrind_samples(args.workdir or Path(scratch)) else 1

    rows = []
    with tempfile.TemporaryDirectory(prefix="ffcc-realworld-") as scratch:
        workdir = args.workdir or Path(scratch)
        for name in args.projects:
            project = PROJECTS[name]
            print(f"{name}:", flush=True)
            plain, labelled = build_and_check(project, args.cc, args.labels, args.repeat,
                                              workdir)
            rows.append((name, plain, labelled))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(
            [{"project": n, "plain": asdict(p), "labelled": asdict(lab)} for n, p, lab in rows],
            indent=1))
    same = all(p.check_rc == lab.check_rc and p.tests == lab.tests for _, p, lab in rows)
    print("labelled checks end as the plain ones" if same else "LABELLED CHECKS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
