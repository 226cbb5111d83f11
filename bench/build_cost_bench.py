"""Build cost of labels at scale: whole builds, configure included, against gcc's.

For each project (Debian source packages of different styles: label-dense parsers, numeric
code, a configure-heavy library, many small files, and SQLite's amalgamation, one file of
244,000 lines), the build runs from a fresh copy, configure then make, three ways in turn:

  gcc        CC=gcc
  ffcc       CC=ffcc with FFCC_FLAGS="--mcc --wm", as a user's drop-in build runs it (with
             ffcc's compile servers)
  ffcc-mem   the same without compile servers (FFCC_SERVER=0), so that every process of the
             build is in its process tree: its peak memory is the build's peak for ffcc
  ffcc-gcc-mem  the same with gcc as ffcc's backend (FFCC_CC=gcc): clang, ffcc's default
             backend, takes about 94 MB to compile an empty file at -O2 where gcc takes 28,
             so this way tells the labels' memory from the backend's

Measured: wall seconds, CPU seconds (user + system of every process of the build, the compile
servers' included) and two peaks of memory: the largest resident set of any one process, and
the build's, the largest sum of the proportional set sizes of its processes alive at one
instant (pages they share, such as the compiler's own code, counted once; sampled every 50 ms,
realworld_check.measured).  Printed per project: each build's figures and ffcc's ratios to
gcc's (CPU and wall from "ffcc", memory from "ffcc-mem" and "ffcc-gcc-mem"), medians over
rounds; the goal is CPU <= 2.0 and memory <= 1.5 (issue 33).  ``--json FILE`` keeps every
figure (written atomically).

    python bench/build_cost_bench.py [--projects cjson,jq,...] [--rounds 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.driver_bench import ffcc_executable  # noqa: E402
from bench.label_bench import byte_compile_ffcc, compile_servers, server_cpu  # noqa: E402
from bench.projects import PROJECTS, Project, fresh_copy  # noqa: E402
from bench.realworld_check import measured  # noqa: E402

LABELS = "--mcc --wm"
# SQLite's amalgamation (sqlite3.c and shell.c, made by its own `make sqlite3.c`, not
# timed) compiled and linked as its README says: one unit of 244,000 lines.
SQLITE = Project(
    "sqlite3", ("sqlite3",), ("./configure >/dev/null && make sqlite3.c shell.c >/dev/null",),
    "true", "$CC -O2 -DSQLITE_THREADSAFE=0 -c sqlite3.c -o sqlite3.o && $CC -O2 "
    "-DSQLITE_THREADSAFE=0 shell.c sqlite3.o -lm -ldl -o sqlite3-shell", "true")
CHOICES = {**PROJECTS, SQLITE.name: SQLITE}
DEFAULT = ("cjson", "jq", "expat", "zlib", "bzip2", "lcms2", "xz-utils", "libyaml", "jansson",
           "lzo2", "mpfr4", "sqlite3",
           # held out: no label option was tuned on them
           "libpng1.6", "pixman", "lua", "giflib")
# Each way's environment besides CC (gcc for "gcc", ffcc for the others).
WAYS: dict[str, dict[str, str]] = {
    "gcc": {},
    "ffcc": {"FFCC_FLAGS": LABELS},
    "ffcc-mem": {"FFCC_FLAGS": LABELS, "FFCC_SERVER": "0"},
    "ffcc-gcc-mem": {"FFCC_FLAGS": LABELS, "FFCC_SERVER": "0", "FFCC_CC": "gcc"},
}


@dataclass
class Figures:
    wall: float
    cpu: float
    peak_mb: float        # the largest process
    build_peak_mb: float  # the build's processes together


def timed(command: str, tree: Path, env: dict[str, str]) -> Figures:
    """``command`` run in ``tree``; raises with its output's tail on failure."""
    done = measured(command, tree, env)
    if done.returncode != 0:
        raise RuntimeError(f"`{command}` failed in {tree}:\n{done.output[-3000:]}")
    return Figures(done.seconds, done.cpu, done.max_process_kb / 1024, done.peak_tree_kb / 1024)


def build(project: Project, way: str, workdir: Path) -> Figures:
    """One build of ``project`` from a fresh copy: configure, then make, timed together."""
    tree = fresh_copy(project, workdir / way)
    cc = "gcc" if way == "gcc" else ffcc_executable()
    env = {"CC": cc, "XDG_RUNTIME_DIR": str(workdir), **WAYS[way]}  # the build's own servers
    figures = timed(f"( {project.configure.format(cc=cc)} ) && {project.build}", tree, env)
    servers = compile_servers(workdir)
    figures.cpu += sum(map(server_cpu, servers))
    for server in servers:
        os.kill(int(server), 15)
    return figures


def bench(project: Project, rounds: int) -> list[dict[str, Figures]]:
    results = []
    for number in range(rounds):
        ways = tuple(WAYS) if number % 2 == 0 else tuple(reversed(WAYS))
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # short: it holds the servers' sockets
            found = {way: build(project, way, Path(tmp)) for way in ways}
        print(f"  {project.name} round {number + 1}: " + "; ".join(
            f"{way} {f.wall:.1f} s, {f.cpu:.1f} s CPU, {f.peak_mb:.0f} MB, "
            f"build {f.build_peak_mb:.0f} MB"
            for way, f in found.items()), flush=True)
        results.append(found)
    return results


def ratios(results: list[dict[str, Figures]]) -> tuple[float, ...]:
    """Median ratios to gcc: CPU, wall (the drop-in build), the largest process's memory and
    the build's (without servers), the same with gcc as ffcc's backend."""
    def median(way: str, key: str) -> float:
        return statistics.median(getattr(r[way], key) / getattr(r["gcc"], key) for r in results)
    return (median("ffcc", "cpu"), median("ffcc", "wall"),
            median("ffcc-mem", "peak_mb"), median("ffcc-mem", "build_peak_mb"),
            median("ffcc-gcc-mem", "peak_mb"), median("ffcc-gcc-mem", "build_peak_mb"))


def write_json(path: Path, data: object) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=1))
    os.replace(temporary, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", default=",".join(DEFAULT),
                        help=f"comma-separated, from {', '.join(sorted(CHOICES))}")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    names = args.projects.split(",")
    unknown = [name for name in names if name not in CHOICES]
    if unknown:
        parser.error(f"unknown project {', '.join(unknown)}")
    byte_compile_ffcc()
    table, kept = [], {}
    for name in names:
        results = bench(CHOICES[name], args.rounds)
        kept[name] = [{way: asdict(f) for way, f in r.items()} for r in results]
        table.append((name, *ratios(results)))
        if args.json:
            write_json(args.json, kept)
    print(f"\n{'project':12} {'CPU':>6} {'wall':>6} {'process':>8} {'build':>6} "
          f"{'process/gcc':>12} {'build/gcc':>10}   (ffcc --mcc --wm / gcc; memory: the largest "
          "process's, the build's; /gcc: ffcc's backend gcc; goals: CPU <= 2.0, memory <= 1.5)")
    for name, cpu, wall, process, whole, process_gcc, whole_gcc in table:
        flag = "" if cpu <= 2.0 and whole <= 1.5 else "  over"
        print(f"{name:12} {cpu:6.2f} {wall:6.2f} {process:8.2f} {whole:6.2f} "
              f"{process_gcc:12.2f} {whole_gcc:10.2f}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
