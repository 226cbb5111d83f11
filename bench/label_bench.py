"""Label benchmark: what labels cost at build time, and how many there are.

Prints, from one run, for jq and cJSON:
  build time with labels (CC=ffcc, FFCC_FLAGS="--mcc --wm") / plain gcc build
  time (target <= 2.0; the paper's own tool: 2.5x without clang-tidy, 7.6x
  with it), for the build step (make / cmake --build), configure run plain;
  beside it the same over ffcc's unlabelled build (the labels' own cost);
  and the label counts per criterion and WM operator beside seed 004's
  Table 2 columns (lines of code, conditionals added, program size growth at
  one line per conditional).

    python bench/label_bench.py [--rounds 1] [--projects jq,cjson]
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import sys
import tempfile
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


def build_seconds(project: Project, cc: str, workdir: Path, env: dict[str, str]) -> tuple[float, Path]:
    tree = fresh_copy(project, workdir)
    run_step(project.configure.format(cc=cc), tree)
    seconds, _ = run_step(project.build, tree, env)
    return seconds, tree


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
            key = (label["file"], label["line"], label["column"], label["operator"],
                   label["predicate"])
            if key in seen:
                continue
            seen.add(key)
            counts[label["criterion"]] += 1
            if label["criterion"] == "wm":
                counts[label["operator"].split(".")[1].upper()] += 1
    return counts


def bench(project: Project, rounds: int) -> tuple[float, float, int, Counter]:
    """Median ratios of the labelled build to the plain gcc build (the target) and to ffcc's
    own unlabelled build (what the labels themselves cost)."""
    to_gcc, to_edges = [], []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            plain, _ = build_seconds(project, "gcc", Path(tmp) / "gcc", {})
            edges, _ = build_seconds(project, ffcc_executable(), Path(tmp) / "edges", {})
            labelled, tree = build_seconds(project, ffcc_executable(), Path(tmp) / "ffcc", LABELS)
            loc = lines_of_code(tree, PROGRAM_SOURCES[project.name])
            counts = label_counts(tree)
        print(f"  {project.name} round {r + 1}: build gcc {plain:.1f}s, ffcc {edges:.1f}s, "
              f"ffcc --mcc --wm {labelled:.1f}s, ratio {labelled / plain:.2f} "
              f"(to unlabelled ffcc {labelled / edges:.2f})", flush=True)
        to_gcc.append(labelled / plain)
        to_edges.append(labelled / edges)
    return statistics.median(to_gcc), statistics.median(to_edges), loc, counts


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
        ratio, to_edges, loc, counts = bench(projects[name], args.rounds)
        print(f"    {name}: median ratio {ratio:.2f} (to unlabelled ffcc {to_edges:.2f})")
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
