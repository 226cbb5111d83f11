"""Rivals that work: AFL++ and the original FairFuzz built from source, and checks that they do.

A comparison with ``afl-fuzz -c`` means something only if the rival's cmplog stage runs:
Debian's packaged afl-fuzz 4.04c never runs it, where the same tag built from source does.
``build`` compiles an AFL++ source tree (a checkout of github.com/AFLplusplus/AFLplusplus at
the tag wanted: this script fetches nothing) into CACHE/NAME with its LLVM mode, then checks
it; ``check`` checks any afl-fuzz with the afl-clang-fast beside it.  The check builds the
magic sample (whose crash sits behind whole-value magic comparisons) with afl-clang-fast and
its ``AFL_LLVM_CMPLOG=1`` companion and runs ``afl-fuzz -c`` until the first crash: a rival
whose input-to-state works finds it in seconds; one whose stage never runs finds nothing in
the time given, and the check fails (exit status 1).

``build-fairfuzz`` builds afl-rb (github.com/carolemieux/afl-rb: FairFuzz, the algorithm ffuzz
claims to improve, on AFL 2.52b) from a checkout or a bare mirror (its HEAD) into CACHE/NAME:
its own Makefile, whose last step checks afl-gcc's instrumentation; ``check-fairfuzz`` runs its
afl-fuzz on the keywords sample (FairFuzz's Figure 1: nested keywords) and fails unless it
finds new paths.  Its llvm_mode does not build against LLVM 14 (the IRBuilder and pass
manager APIs it calls are gone), so its targets are built with afl-gcc and afl-g++ (gcc and
AFL's assembly-level instrumentation, afl-as).

    python bench/rivals.py build ~/src/AFLplusplus --name v4.21c
    python bench/rivals.py check --afl-fuzz /usr/bin/afl-fuzz --seconds 60
    python bench/rivals.py build-fairfuzz /work/.mirror/carolemieux+afl-rb/repo --name afl-rb
    python bench/rivals.py check-fairfuzz --seconds 20
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ffcc-bench" / "rivals"
MAKE_FLAGS = ("NO_PYTHON=1", "NO_NYX=1", "NO_SPLICING=1")  # afl-fuzz and LLVM mode only
MAGIC = REPO / "samples" / "magic"
KEYWORDS = REPO / "samples" / "keywords"
QUIET = {"AFL_QUIET": "1", "AFL_NO_UI": "1", "AFL_SKIP_CPUFREQ": "1", "AFL_NO_AFFINITY": "1",
         "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1"}


def copy_source(source: Path, tree: Path) -> None:
    """``source`` copied to ``tree``, which it replaces: a checkout without its .git, a git
    directory (a bare mirror, which may have no config file) as its HEAD, by git archive."""
    shutil.rmtree(tree, ignore_errors=True)
    head = subprocess.run(["git", "--git-dir", str(source), "rev-parse", "--verify", "--quiet",
                           "HEAD^{commit}"], capture_output=True)
    if head.returncode == 0:
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", str(source), "archive", "HEAD"],
                                 check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    else:
        shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git"))


def build(source: Path, name: str) -> Path:
    """The AFL++ tree at ``source`` copied to CACHE/name and built there; its directory."""
    tree = CACHE / name
    if not (tree / "afl-fuzz").exists():
        copy_source(source, tree)
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


# --- afl-rb: the original FairFuzz -------------------------------------------------------

AFLRB = CACHE / "afl-rb"
FAIRFUZZ_TOOLS = ("afl-fuzz", "afl-gcc", "afl-g++", "afl-as")
# AFL 2.52b's defaults, but no memory limit (its default is 50 MB), as AFL++ and ffuzz run.
FAIRFUZZ_OPTIONS = ("-m", "none")


class RivalFailed(subprocess.SubprocessError):
    """A rival that stopped with an error or left no stats; the message ends with what it
    said last."""


def build_fairfuzz(source: Path, name: str) -> Path:
    """afl-rb at ``source`` (a checkout or a bare mirror) copied to CACHE/name and built there
    by its Makefile (afl-fuzz, afl-gcc and its afl-g++ link, afl-as; its test_build step fails
    the build unless afl-gcc's instrumentation works); its directory.  gcc 12 builds it as it
    is, with warnings only: no flag needed."""
    tree = CACHE / name
    if not all((tree / tool).exists() for tool in FAIRFUZZ_TOOLS):
        copy_source(source, tree)
        subprocess.run(["make", f"-j{os.cpu_count() or 1}", "all"], cwd=tree, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    missing = [tool for tool in FAIRFUZZ_TOOLS if not (tree / tool).exists()]
    if missing:
        raise SystemExit(f"rivals: {tree} has no {', '.join(missing)}")
    return tree


def read_fairfuzz_stats(out: Path) -> dict[str, str]:
    """AFL 2.52b's fuzzer_stats, directly under -o (no default/ instance folder)."""
    lines = (out / "fuzzer_stats").read_text().splitlines()
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}


def fairfuzz_campaign(afl_fuzz: Path, seeds: Path, out: Path, seconds: float,
                      extra: Sequence[str], target: Sequence[str],
                      env: dict[str, str]) -> dict[str, str]:
    """One campaign of afl-rb's afl-fuzz (``extra``: options beyond FAIRFUZZ_OPTIONS) on the
    ``target`` command line, its output in ``out`` (replaced); its final fuzzer_stats.  AFL
    2.52b has no -V: it is stopped by SIGINT after ``seconds``, on which it writes its stats
    and exits 0."""
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(afl_fuzz), "-i", str(seeds), "-o", str(out), *FAIRFUZZ_OPTIONS, *extra, "--",
            *target]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True, errors="replace") as proc:
        try:
            said, _ = proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            said, _ = proc.communicate(timeout=60)
    if proc.returncode != 0 or not (out / "fuzzer_stats").exists():
        raise RivalFailed(f"{' '.join(argv)} exited {proc.returncode}:\n{said[-2000:]}")
    return read_fairfuzz_stats(out)


def check_fairfuzz(tree: Path, seconds: float) -> bool:
    """Whether ``tree``'s afl-fuzz, on the keywords sample built by its afl-gcc, finds new
    paths within ``seconds``; prints what it did."""
    env = {**os.environ, **QUIET}
    with tempfile.TemporaryDirectory(prefix="ffcc-rival-") as work:
        target = Path(work) / "keywords"
        subprocess.run([str(tree / "afl-gcc"), "-O2", "-o", str(target),
                        str(KEYWORDS / "keywords.c")], check=True, env=env)
        stats = fairfuzz_campaign(tree / "afl-fuzz", KEYWORDS / "seeds", Path(work) / "out",
                                  seconds, (), (str(target), "@@"), env)
    found = int(stats["paths_found"])
    print(f"{tree / 'afl-fuzz'}: {found} new path(s) over {stats['paths_total']} in "
          f"{seconds:.0f} s, {int(stats['execs_done'])} execs, version {stats['afl_version']}")
    return found > 0


def fairfuzz_verdict(tree: Path, seconds: float) -> int:
    """check_fairfuzz's exit status, with a line on stderr when it fails."""
    works = check_fairfuzz(tree, seconds)
    if not works:
        print(f"rivals: {tree}/afl-fuzz found no new path", file=sys.stderr)
    return 0 if works else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    built = sub.add_parser("build", help="build an AFL++ source tree, then check it")
    built.add_argument("source", type=Path)
    built.add_argument("--name", required=True, help="the tag or commit the tree is at")
    checked = sub.add_parser("check", help="check an afl-fuzz and the afl-clang-fast beside it")
    checked.add_argument("--afl-fuzz", type=Path, default=Path(shutil.which("afl-fuzz") or ""))
    fair = sub.add_parser("build-fairfuzz", help="build afl-rb (a checkout or a bare mirror), "
                          "then check it")
    fair.add_argument("source", type=Path)
    fair.add_argument("--name", default=AFLRB.name, help="its folder under " + str(CACHE))
    fair_checked = sub.add_parser("check-fairfuzz", help="check an afl-rb tree built here")
    fair_checked.add_argument("--tree", type=Path, default=AFLRB)
    for command in (built, checked):
        command.add_argument("--seconds", type=float, default=120.0)
    for command in (fair, fair_checked):
        command.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    if args.command == "build-fairfuzz":
        return fairfuzz_verdict(build_fairfuzz(args.source, args.name), args.seconds)
    if args.command == "check-fairfuzz":
        return fairfuzz_verdict(args.tree, args.seconds)
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
