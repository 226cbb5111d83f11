"""What the rewriters' annotation costs against a walk of the same syntax trees in C.

The annotation (libclang's parse, then the rewriters' Python walk and decisions) is about as
much of a labelled build's CPU as the labelled compile (bench/RESULTS.md, "What a labelled
build's cost is made of").  This bounds what moving it out of Python could save: the units of
a directory annotated with ``--mcc --wm``'s options in one warm process, and the same units
parsed by the same libclang, with the same flags, and walked by bench/walk_bound.c, which asks
every node of the main file what the rewriters ask of each (kind, extent, type) and tokenizes
the file, without deciding anything.  The two ways alternate, ``--rounds`` times; printed:
each way's CPU seconds (medians) and their ratio.

    python bench/walk_bound.py DIR [--flags="-I. -DX"] [--glob '*.c'] [--rounds 3]
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from clang import cindex  # noqa: E402

from ffcc.rewriters.labelling import annotate  # noqa: E402
from ffcc.rewriters.model import LabelOptions  # noqa: E402
from ffcc.rewriters.operators import WM_DEFAULT  # noqa: E402
from ffcc.rewriters.unit import builtin_header_args  # noqa: E402

WALKER = Path(__file__).with_name("walk_bound.c")
OPTIONS = LabelOptions(mcc=True, wm_ops=frozenset(WM_DEFAULT))  # --mcc --wm


@dataclass
class Walked:
    nodes: int
    parse: float  # CPU seconds
    walk: float

    @property
    def total(self) -> float:
        return self.parse + self.walk


def build_walker(directory: Path) -> Path:
    """bench/walk_bound.c compiled into ``directory``."""
    walker = directory / "walk_bound"
    subprocess.run(["cc", "-std=c11", "-O2", "-o", str(walker), str(WALKER), "-ldl"], check=True)
    return walker


def walked(walker: Path, flags: list[str], units: list[str]) -> Walked:
    """The C walk of ``units``, as the walker measured it."""
    args = [*builtin_header_args(), *flags]
    done = subprocess.run([str(walker), cindex.conf.get_filename(), *args, "--", *units],
                          check=True, capture_output=True, text=True)
    nodes, parse, walk, _ = done.stdout.split()
    return Walked(int(nodes), float(parse), float(walk))


def annotated(flags: list[str], units: list[str]) -> tuple[float, int]:
    """CPU seconds of the rewriters' annotation of ``units`` in this process, and their labels."""
    began, labels = time.process_time(), 0
    for unit in units:
        labels += len(annotate(unit, flags, OPTIONS).labels)
    return time.process_time() - began, labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--flags", default="-I.", help="the units' compiler flags")
    parser.add_argument("--glob", default="*.c", help="which files of the directory are units")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.chdir(args.directory)
    flags, units = shlex.split(args.flags), sorted(glob.glob(args.glob))
    if not units:
        parser.error(f"no {args.glob} in {args.directory}")
    with tempfile.TemporaryDirectory() as tmp:
        walker = build_walker(Path(tmp))
        annotated(flags, units[:1])  # imports and first-use caches: a warm process, as a server's
        walks, annotations = [], []
        for number in range(args.rounds):
            walks.append(walked(walker, flags, units))
            seconds, labels = annotated(flags, units)
            annotations.append(seconds)
            print(f"  round {number + 1}: C parse {walks[-1].parse:.3f} s, walk "
                  f"{walks[-1].walk:.3f} s ({walks[-1].nodes} nodes); annotation {seconds:.2f} s "
                  f"({labels} labels)", flush=True)
    c_total = statistics.median(w.total for w in walks)
    python = statistics.median(annotations)
    print(f"{len(units)} units: C parse and walk {c_total:.3f} s, annotation {python:.2f} s, "
          f"annotation / C {python / c_total:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
