"""Pruning benchmark: fast against gccdiff (seed 004 §5), and what pruning costs.

Prints, from one run, for the samples, cJSON and jq:
  - labels removed by fast and by gccdiff (infeasible / trivial), and fast with the
    laundering kept (what laundering does to pruning power);
  - agreement of fast and gccdiff on the labels gccdiff decided, and every difference;
  - fast pruning time / plain build time (target <= 3): the fast analysis compiles of every
    file against compiling the same files plain (-O2 -c), both one file after the other;
  - gccdiff time / fast time, measured on the gccdiff sample and extrapolated to all labels.

gccdiff compiles each file once or twice per label, so on big projects it runs on a
sample: ``--max-labels N`` labels per project, drawn at random (seeded) over its files;
fast decides all labels.

    python bench/prune_bench.py [--projects samples,cjson,jq] [--max-labels 150]
                                [--cc clang] [--jq-tree DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.projects import CJSON, JQ, fetch, fresh_copy, run_step  # noqa: E402
from ffcc.instrument.plan import analysis_flags  # noqa: E402
from ffcc.instrument.prune.compile import AnalysisCompiler  # noqa: E402
from ffcc.instrument.prune.pruner import FAST, GCCDIFF, analyse, default_jobs  # noqa: E402
from ffcc.instrument.toolchain import predefined_macros, select_backend  # noqa: E402
from ffcc.rewriters.operators import WM_GROUPS  # noqa: E402

ALL_WM = frozenset(WM_GROUPS)
JQ_SOURCES = ("builtin", "bytecode", "compile", "execute", "jq_test", "jv", "jv_alloc",
              "jv_aux", "jv_dtoa", "jv_file", "jv_parse", "jv_print", "jv_unicode", "linker",
              "locfile", "util", "lexer", "parser", "main")


@dataclass
class FileResult:
    """One file: its labels, each method's verdicts, and the seconds each step took."""

    path: str
    labels: list[dict]
    fast: dict[int, str]
    opaque_fast: dict[int, str]
    gccdiff: dict[int, str]
    sampled: list[int]
    seconds: dict[str, float] = field(default_factory=dict)


def annotated(path: str, flags: list[str]):
    from ffcc.rewriters import LabelOptions, annotate
    return annotate(path, [*predefined_macros(), *flags], LabelOptions(mcc=True, wm_ops=ALL_WM))


def timed(action):
    start = time.monotonic()
    result = action()
    return result, time.monotonic() - start


def plain_compile(cc: str, path: str, flags: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([cc, *predefined_macros(), *analysis_flags(flags), "-O2", "-w", "-c",
                        path, "-o", f"{tmp}/x.o"], check=True, capture_output=True)


def measure_file(cc: str, path: str, flags: list[str], sample: set[int] | None,
                 jobs: int) -> FileResult:
    """Annotate one file, decide its labels fast (with and without laundering) and with
    gccdiff (``sample``: only these indices; None: all)."""
    result, annotate_s = timed(lambda: annotated(path, flags))
    count = len(result.labels)
    compiler = lambda: AnalysisCompiler(cc, [*predefined_macros(), *flags], path)  # noqa: E731
    _, plain_s = timed(lambda: plain_compile(cc, path, flags))
    fast, fast_s = timed(lambda: analyse(FAST, result.text, count, compiler()))
    opaque, _ = timed(lambda: analyse(FAST, result.text, count, compiler(), keep_laundering=True))
    indices = sorted(range(count) if sample is None else sample)
    diff, diff_s = timed(lambda: analyse(GCCDIFF, result.text, count, compiler(), jobs,
                                         indices=indices))
    labels = [{"index": l.index, "operator": l.operator, "line": l.line,
               "predicate": l.predicate} for l in result.labels]
    return FileResult(path, labels, fast, opaque, diff, indices,
                      {"annotate": annotate_s, "plain": plain_s, "fast": fast_s,
                       "gccdiff": diff_s})


def draw_sample(counts: dict[str, int], max_labels: int | None, seed: int = 4
                ) -> dict[str, set[int] | None]:
    """Per file, the label indices gccdiff decides: all, or ``max_labels`` drawn at random."""
    everything = [(path, i) for path, n in counts.items() for i in range(n)]
    if max_labels is None or len(everything) <= max_labels:
        return {path: None for path in counts}
    chosen = random.Random(seed).sample(everything, max_labels)
    return {path: {i for p, i in chosen if p == path} for path in counts}


def measure_project(name: str, cc: str, files: list[tuple[str, list[str]]],
                    max_labels: int | None, jobs: int) -> list[FileResult]:
    counts = {path: len(annotated(path, flags).labels) for path, flags in files}
    sample = draw_sample(counts, max_labels)
    results = []
    for path, flags in files:
        results.append(measure_file(cc, path, flags, sample[path], jobs))
        print(f"  {name}: {Path(path).name}: {len(results[-1].labels)} labels, "
              f"{results[-1].seconds['fast']:.1f}s fast, "
              f"{results[-1].seconds['gccdiff']:.1f}s gccdiff on {len(results[-1].sampled)}",
              flush=True)
    return results


def differences(results: list[FileResult]) -> list[str]:
    """One line per sampled label on which fast and gccdiff disagree."""
    lines = []
    for r in results:
        for index in r.sampled:
            if r.fast.get(index) != r.gccdiff.get(index):
                label = r.labels[index]
                lines.append(f"{Path(r.path).name}:{label['line']} #{index} {label['operator']} "
                             f"`{label['predicate']}`: fast {r.fast.get(index) or 'kept'}, "
                             f"gccdiff {r.gccdiff.get(index) or 'kept'}")
    return lines


def summary(name: str, results: list[FileResult]) -> dict:
    total = sum(len(r.labels) for r in results)
    sampled = sum(len(r.sampled) for r in results)
    agree = sum(1 for r in results for i in r.sampled if r.fast.get(i) == r.gccdiff.get(i))
    seconds = {k: sum(r.seconds[k] for r in results) for k in ("annotate", "plain", "fast", "gccdiff")}

    def removed(verdicts_of) -> dict[str, int]:
        verdicts = [v for r in results for v in verdicts_of(r).values()]
        return {"infeasible": verdicts.count("infeasible"), "trivial": verdicts.count("trivial")}

    fast_on_sample = [r.fast.get(i) for r in results for i in r.sampled]
    gccdiff_all = seconds["gccdiff"] * total / sampled if sampled else 0.0
    return {
        "project": name, "labels": total, "gccdiff_sampled": sampled,
        "removed_fast": removed(lambda r: r.fast),
        "removed_fast_laundering_kept": removed(lambda r: r.opaque_fast),
        "removed_gccdiff_on_sample": removed(lambda r: r.gccdiff),
        "removed_fast_on_sample": {v: fast_on_sample.count(v) for v in ("infeasible", "trivial")},
        "agreement": agree / sampled if sampled else 1.0,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "gccdiff_seconds_all_labels_estimate": round(gccdiff_all, 1),
        "fast_over_plain": seconds["fast"] / seconds["plain"],
        "gccdiff_over_fast": gccdiff_all / seconds["fast"],
        "differences": differences(results),
    }


def sample_files() -> list[tuple[str, list[str]]]:
    return [(str(p.relative_to(REPO)), []) for p in sorted((REPO / "samples").glob("*/*.c"))]


def cjson_files() -> list[tuple[str, list[str]]]:
    tree = fetch(CJSON)
    return [(str(tree / f), [f"-I{tree}"]) for f in ("cJSON.c", "cJSON_Utils.c")]


def jq_files(tree: Path | None, workdir: Path) -> list[tuple[str, list[str]]]:
    """jq's sources with the flags its Makefile compiles them with (configured once)."""
    if tree is None or not (tree / "Makefile").exists():
        tree = fresh_copy(JQ, workdir)
        run_step(JQ.configure.format(cc="gcc"), tree)
    run_step("make src/builtin.inc src/version.h", tree)
    found = re.search(r"^DEFS = (.*)$", (tree / "Makefile").read_text(), re.M)
    if found is None:
        raise RuntimeError(f"{tree}/Makefile has no DEFS line")
    defs = found.group(1)
    flags = [*shlex.split(defs), f"-I{tree}", f"-I{tree}/src"]
    return [(str(tree / "src" / f"{name}.c"), flags) for name in JQ_SOURCES]


def report(s: dict) -> None:
    rf, rg = s["removed_fast"], s["removed_gccdiff_on_sample"]
    print(f"\n{s['project']}: {s['labels']} labels; gccdiff on {s['gccdiff_sampled']}")
    print(f"  fast removes {rf['infeasible']} infeasible + {rf['trivial']} trivial of all labels"
          f" (laundering kept: {s['removed_fast_laundering_kept']['infeasible']} + "
          f"{s['removed_fast_laundering_kept']['trivial']})")
    print(f"  on the sample: gccdiff removes {rg['infeasible']} + {rg['trivial']}, "
          f"fast {s['removed_fast_on_sample']['infeasible']} + "
          f"{s['removed_fast_on_sample']['trivial']}; agreement {100 * s['agreement']:.1f}%")
    sec = s["seconds"]
    print(f"  seconds: plain compile {sec['plain']:.1f}, annotate {sec['annotate']:.1f}, "
          f"fast {sec['fast']:.1f}, gccdiff {sec['gccdiff']:.1f} on the sample "
          f"(~{s['gccdiff_seconds_all_labels_estimate']:.0f} for all labels)")
    print(f"  fast / plain build = {s['fast_over_plain']:.2f} (target <= 3); "
          f"gccdiff / fast = {s['gccdiff_over_fast']:.0f}")
    for line in s["differences"]:
        print(f"  differs: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", default="samples,cjson,jq")
    parser.add_argument("--max-labels", type=int, default=150,
                        help="gccdiff sample size per project (samples: all labels)")
    parser.add_argument("--cc", default=None, help="backend (default: ffcc's choice)")
    parser.add_argument("--jq-tree", type=Path, default=None, help="a configured jq-1.6 tree")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    cc = select_backend(args.cc).path
    jobs = default_jobs()
    print(f"prune bench: backend {cc}, {jobs} jobs, gccdiff sample {args.max_labels} labels "
          "per project (samples: all)")
    summaries = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.projects.split(","):
            if name == "samples":
                files, limit = sample_files(), None
            elif name == "cjson":
                files, limit = cjson_files(), args.max_labels
            else:
                files, limit = jq_files(args.jq_tree, Path(tmp)), args.max_labels
            summaries.append(summary(name, measure_project(name, cc, files, limit, jobs)))
            report(summaries[-1])
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2) + "\n")


if __name__ == "__main__":
    main()
