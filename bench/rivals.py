"""Rivals that work: AFL++ built from its source, and a check that its input-to-state stage runs.

A comparison with ``afl-fuzz -c`` means something only if the rival's cmplog stage runs:
Debian's packaged afl-fuzz 4.04c never runs it, where the same tag built from source does.
``build`` compiles an AFL++ source tree (a checkout of github.com/AFLplusplus/AFLplusplus at
the tag wanted: this script fetches nothing) into CACHE/NAME with its LLVM mode, then checks
it; ``check`` checks any afl-fuzz with the afl-clang-fast beside it.  The check builds the
magic sample (whose crash sits behind whole-value magic comparisons) with afl-clang-fast and
its ``AFL_LLVM_CMPLOG=1`` companion and runs ``afl-fuzz -c`` until the first crash: a rival
whose input-to-state works finds it in seconds; one whose stage never runs finds nothing in
the time given, and the check fails (exit status 1).

    python bench/rivals.py build ~/src/AFLplusplus --name v4.21c
    python bench/rivals.py check --afl-fuzz /usr/bin/afl-fuzz --seconds 60
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ffcc-bench" / "rivals"
MAKE_FLAGS = ("NO_PYTHON=1", "NO_NYX=1", "NO_SPLICING=1")  # afl-fuzz and LLVM mode only
MAGIC = REPO / "samples" / "magic"
QUIET = {"AFL_QUIET": "1", "AFL_NO_UI": "1", "AFL_SKIP_CPUFREQ": "1", "AFL_NO_AFFINITY": "1",
         "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1"}


def build(source: Path, name: str) -> Path:
    """The AFL++ tree at ``source`` copied to CACHE/name and built there; its directory."""
    tree = CACHE / name
    if not (tree / "afl-fuzz").exists():
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git"))
        subprocess.run(["make", f"-j{os.cpu_count() or 1}", "all", *MAKE_FLAGS], cwd=tree,
                       check=True, stdout=subprocess.DEVNULL)
    for tool in ("afl-fuzz", "afl-clang-fast"):
        if not (tree / tool).exists():
            raise SystemExit(f"rivals: {tree} has no {tool} (is llvm-config installed?)")
    return tree


def check(afl_fuzz: Path, afl_cc: Path, seconds: float) -> bool:
    """Whether ``afl_fuzz -c`` finds the magic sample's crash within ``seconds``; prints the
    time, executions and what it found."""
    env = {**os.environ, **QUIET}
    with tempfile.TemporaryDirectory(prefix="ffcc-rival-") as work:
        target, cmplog = Path(work) / "magic", Path(work) / "magic.cmplog"
        source = str(MAGIC / "magic.c")
        subprocess.run([str(afl_cc), "-O2", "-o", str(target), source], check=True, env=env)
        subprocess.run([str(afl_cc), "-O2", "-o", str(cmplog), source], check=True,
                       env={**env, "AFL_LLVM_CMPLOG": "1"})
        out = Path(work) / "out"
        started = time.monotonic()
        subprocess.run([str(afl_fuzz), "-i", str(MAGIC / "seeds"), "-o", str(out), "-c",
                        str(cmplog), "-V", str(int(seconds)), "--", str(target), "@@"],
                       env={**env, "AFL_BENCH_UNTIL_CRASH": "1"}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=seconds + 60)
        took = time.monotonic() - started
        stats = {key.strip(): value.strip() for key, _, value in
                 (line.partition(":") for line in
                  (out / "default" / "fuzzer_stats").read_text().splitlines())}
        crashes = int(stats["saved_crashes"])
        print(f"{afl_fuzz}: {crashes} crash(es) in {took:.0f} s, "
              f"{int(stats['execs_done'])} execs, version {stats['afl_version']}")
    return crashes > 0


DEFAULT = CACHE / "aflpp-v4.21c"  # the newest release this machine has built


def working_path(tree: Path, seconds: float = 60.0) -> dict[str, str]:
    """An environment whose PATH finds ``tree``'s afl-fuzz and afl-clang-fast first, once
    ``check`` has seen its input-to-state stage work; exits with a one-line error if the tree
    has no AFL++ built or its stage found nothing (no -c comparison may use it)."""
    afl_fuzz, afl_cc = tree / "afl-fuzz", tree / "afl-clang-fast"
    if not (afl_fuzz.exists() and afl_cc.exists()):
        raise SystemExit(f"rivals: no AFL++ built in {tree}: python bench/rivals.py build "
                         "AFLPLUSPLUS_SOURCE --name v4.21c")
    if not check(afl_fuzz, afl_cc, seconds):
        raise SystemExit(f"rivals: {afl_fuzz}'s input-to-state stage found nothing in "
                         f"{seconds:.0f} s: no -c comparison may use it")
    return {**os.environ, "PATH": f"{tree}{os.pathsep}{os.environ.get('PATH', '')}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    built = sub.add_parser("build", help="build an AFL++ source tree, then check it")
    built.add_argument("source", type=Path)
    built.add_argument("--name", required=True, help="the tag or commit the tree is at")
    checked = sub.add_parser("check", help="check an afl-fuzz and the afl-clang-fast beside it")
    checked.add_argument("--afl-fuzz", type=Path, default=Path(shutil.which("afl-fuzz") or ""))
    for command in (built, checked):
        command.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    if args.command == "build":
        tree = build(args.source, args.name)
        afl_fuzz, afl_cc = tree / "afl-fuzz", tree / "afl-clang-fast"
    else:
        afl_fuzz = args.afl_fuzz
        afl_cc = afl_fuzz.parent / "afl-clang-fast"
    works = check(afl_fuzz, afl_cc, args.seconds)
    if not works:
        print(f"rivals: {afl_fuzz}'s input-to-state stage found nothing: no -c comparison "
              "may use it", file=sys.stderr)
    return 0 if works else 1


if __name__ == "__main__":
    sys.exit(main())
