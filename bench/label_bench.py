"""Label benchmark: what labels cost at build time, and how many there are.

Prints, from one run, for jq and cJSON:
  build time with labels (CC=ffcc, FFCC_FLAGS="--mcc --wm") / plain gcc build
  time (target <= 2.0; the paper's own tool: 2.5x without clang-tidy, 7.6x
  with it), for the build step (make / cmake --build), configure run plain;
  beside it the same over ffcc's unlabelled build (the labels' own cost);
  the same ratios of CPU time (user + system of every process the build step
  ran, the compile server's included), which the machine's load moves far less
  than wall time; and the label counts per criterion and WM operator beside seed 004's
  Table 2 columns (lines of code, conditionals added, program size growth at
  one line per conditional).

    python bench/label_bench.py [--rounds 1] [--projects jq,cjson]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.driver_bench import ffcc_executable  # noqa: E402
from bench.projects import CJSON, JQ, Project, fresh_copy, run_step  # noqa: E402
from ffcc.runtime.abi import DB_SUFFIX, read_label_db  # noqa: E402

# Sources whose lines count as the program's (tests and generated parsers included
# only where the program itself compiles them).
PROGRAM_SOURCES = {"jq": "src/*.c", "cjson": "cJSON*.c"}
LABELS = {"FFCC_FLAGS": "--mcc --wm"}


def byte_compile_ffcc() -> None:
    """Write ffcc's bytecode caches first, as ``pip install`` does.  An editable install run
    with PYTHONDONTWRITEBYTECODE=1 (this container sets it) never writes them, so each of a
    build's compiler processes would compile every ffcc module it imports from source again
    (about 0.07 s per labelled compile): a cost of the test setup, not of ffcc."""
    for package in ("instrument", "rewriters"):
        compileall.compile_dir(REPO / package, quiet=1)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: str) -> list[str]:
    """/proc/PID/stat from its third field on (state, ppid, ...)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _parent(pid: str) -> str | None:
    try:
        return _stat(pid)[1]
    except OSError:  # the process ended while we looked
        return None


def compile_servers(runtime_dir: Path) -> list[str]:
    """The pids of the compile servers of the build whose XDG_RUNTIME_DIR is ``runtime_dir``
    (not their forked relays and workers, which share their command line)."""
    pids = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ffcc.instrument.server" in argv and any(str(runtime_dir).encode() in a for a in argv):
            pids.add(cmdline.parent.name)
    return [pid for pid in pids if _parent(pid) not in pids]


def _is_zygote(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:2] == [b"ffcc-zygote"]
    except OSError:
        return False


def _cpu(pid: str) -> float:
    """A process's CPU seconds and its reaped children's: utime, stime, cutime, cstime
    (fields 14-17 of /proc/PID/stat)."""
    return sum(int(v) for v in _stat(pid)[11:15]) / os.sysconf("SC_CLK_TCK")


def server_cpu(pid: str) -> float:
    """CPU seconds of a compile server and of the commands it ran, once it has reaped them
    (its relays and workers are its children; the client processes are the build's), its
    compiler zygotes' included (children that stay, whose own children, the commands they
    ran, must be reaped too)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = [p.name for p in Path("/proc").glob("[0-9]*") if _parent(p.name) == pid]
        zygotes = [child for child in children if _is_zygote(child)]
        if len(zygotes) == len(children) and not any(
                _parent(p.name) in zygotes for p in Path("/proc").glob("[0-9]*")):
            break
        time.sleep(0.2)
    return _cpu(pid) + sum(map(_cpu, zygotes))


def build_seconds(project: Project, cc: str, workdir: Path,
                  env: dict[str, str]) -> tuple[float, float, Path]:
    """Wall and CPU seconds of the build step (configure run plain).  The build has compile
    servers of its own (one started by configure's first ffcc command, as in a user's build),
    whose CPU time in the build step the build step's includes."""
    tree = fresh_copy(project, workdir)
    private = {"XDG_RUNTIME_DIR": str(workdir)}
    run_step(project.configure.format(cc=cc), tree, private)
    cpu = children_cpu() + sum(map(server_cpu, compile_servers(workdir)))
    seconds, _ = run_step(project.build, tree, {**env, **private})
    servers = compile_servers(workdir)
    cpu = children_cpu() + sum(map(server_cpu, servers)) - cpu
    for server in servers:
        os.kill(int(server), signal.SIGTERM)
    return seconds, cpu, tree


def lines_of_code(tree: Path, pattern: str) -> int:
    return sum(1 for path in tree.glob(pattern)
               for line in path.read_text(errors="replace").splitlines() if line.strip())


def label_counts(tree: Path) -> Counter:
    """Distinct labels over every program the build linked, by criterion and operator."""
    seen: set[tuple] = set()
    counts: Counter[str] = Counter()
    for db in tree.rglob(f"*{DB_SUFFIX}"):
        database = read_label_db(str(db).removesuffix(DB_SUFFIX))
        for label in database.labels if database else ():
            key = (label.file, label.line, label.column, label.operator, label.predicate)
            if key in seen:
                continue
            seen.add(key)
            counts[label.criterion] += 1
            if label.criterion == "wm":
                counts[label.operator.split(".")[1].upper()] += 1
    return counts


def bench(project: Project, rounds: int) -> tuple[int, Counter]:
    """Print the ratios of the labelled build to the plain gcc build (the target) and to
    ffcc's own unlabelled build (what the labels themselves cost), wall and CPU, per round
    and their medians; the program's lines and label counts."""
    to_gcc, to_edges, cpu_to_gcc, cpu_to_edges = [], [], [], []
    for r in range(rounds):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # short: it holds the server's socket
            plain, plain_cpu, _ = build_seconds(project, "gcc", Path(tmp) / "gcc", {})
            edges, edges_cpu, _ = build_seconds(project, ffcc_executable(), Path(tmp) / "edges", {})
            labelled, labelled_cpu, tree = build_seconds(project, ffcc_executable(),
                                                         Path(tmp) / "ffcc", LABELS)
            loc = lines_of_code(tree, PROGRAM_SOURCES[project.name])
            counts = label_counts(tree)
        print(f"  {project.name} round {r + 1}: build gcc {plain:.1f}s, ffcc {edges:.1f}s, "
              f"ffcc --mcc --wm {labelled:.1f}s, ratio {labelled / plain:.2f} "
              f"(to unlabelled ffcc {labelled / edges:.2f}); CPU gcc {plain_cpu:.1f}s, "
              f"ffcc {edges_cpu:.1f}s, ffcc --mcc --wm {labelled_cpu:.1f}s, ratio "
              f"{labelled_cpu / plain_cpu:.2f} ({labelled_cpu / edges_cpu:.2f})", flush=True)
        to_gcc.append(labelled / plain)
        to_edges.append(labelled / edges)
        cpu_to_gcc.append(labelled_cpu / plain_cpu)
        cpu_to_edges.append(labelled_cpu / edges_cpu)
    print(f"    {project.name}: median ratio {statistics.median(to_gcc):.2f} "
          f"({min(to_gcc):.2f}-{max(to_gcc):.2f}; to unlabelled ffcc "
          f"{statistics.median(to_edges):.2f}); CPU {statistics.median(cpu_to_gcc):.2f} "
          f"({min(cpu_to_gcc):.2f}-{max(cpu_to_gcc):.2f}; to unlabelled ffcc "
          f"{statistics.median(cpu_to_edges):.2f})")
    return loc, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--projects", default="jq,cjson")
    args = parser.parse_args()
    byte_compile_ffcc()
    projects = {"jq": JQ, "cjson": CJSON}
    rows = []
    print("build time with all labels / plain gcc build time (target <= 2.0)")
    for name in args.projects.split(","):
        loc, counts = bench(projects[name], args.rounds)
        rows.append((name, loc, counts))
    print("\nlabels added (seed 004 Table 2 columns; growth at one line per label)")
    print(f"{'program':10} {'LOC':>7} {'MCC':>7} {'WM':>7} {'Both':>7}  {'ROR':>6} {'AOR':>6} "
          f"{'COR':>6} {'ABS':>6}  {'growth MCC/WM/Both':>20}")
    for name, loc, c in rows:
        both = c["mcc"] + c["wm"]
        growth = "/".join(f"+{100 * n / loc:.0f}%" for n in (c["mcc"], c["wm"], both))
        print(f"{name:10} {loc:7} {c['mcc']:7} {c['wm']:7} {both:7}  {c['ROR']:6} {c['AOR']:6} "
              f"{c['COR']:6} {c['ABS']:6}  {growth:>20}")


if __name__ == "__main__":
    main()
