"""Real bugs with low density: Magma's libpng, side by side with working rivals (issue 34).

One command builds libpng (at the commit Magma's targets/libpng/fetch.sh names, with Magma's
setup patch and its seven bug patches PNG001-PNG007: real bugs, each a fixed CVE put back)
with libpng's oss-fuzz harness libpng_read_fuzzer once per fuzzer configuration, runs R
campaigns of S seconds of every configuration, two at a time, replays every saved input on an
oracle build that prints each bug canary it reaches and each it triggers, and writes a results
folder as bench/lava_bench.py does: results.json (every run), table.md (bugs triggered and
reached, execs/s, queue, edges, labels per configuration, and ffuzz-wm-c against ffuzz-c and
the best rival with Mann-Whitney U p-values), bugs-libpng.png (distinct bugs triggered over
time) and reached-libpng.png (distinct bugs reached over time).

    python bench/magma_bench.py --magma /work/.mirror/HexHive+magma/repo \\
        --libpng /work/.mirror/glennrp+libpng/repo \\
        [--configs ffuzz,ffuzz-c,ffuzz-wm-c,afl-fuzz-c,afl-rb,libfuzzer] [--seconds 300] \\
        [--runs 3] [--jobs 2]
    python bench/magma_bench.py --magma ... --libpng ... --build-only   # builds and checks
    python bench/magma_bench.py --report DIR                          # table and plots again

--magma and --libpng take a git repository, URL or local path (a bare mirror or a checkout);
they default to github.com/HexHive/magma (its HEAD: targets/libpng only) and
github.com/glennrp/libpng (commit LIBPNG_COMMIT, as Magma's fetch.sh), both exported once into
~/.cache/ffcc-bench/magma/, where the patched tree and every build are cached too: a second
run builds nothing (--rebuild does).

The tree: Magma's patches applied as its magma/apply_patches.sh does (%MAGMA_BUG% replaced by
the patch's name); pnglibconf.h generated from the patched scripts/pnglibconf.dfa by libpng's
own scripts/pnglibconf.mak (awk and the C preprocessor: WARNINGS, STDIO and WRITE off, user
width and height limits 0x7fffffff, as Magma's configure makes it; Magma's
--with-libpng-prefix=MAGMA_, which only renames the exported symbols, is left out).  No
autotools: every build compiles libpng's units (LIBPNG_UNITS) and the harness directly,
with -O2 -DMAGMA_ENABLE_CANARIES and a canary header of this script's own force-included
(CANARY_HEADER, not Magma's canary.h and its monitor): in the fuzzed builds MAGMA_LOG(id, cond)
prints "MAGMA triggered <id>" and aborts when cond holds (fatal canaries, so every fuzzer sees
a triggered bug as a crash), in the oracle (gcc and g++, -DFFCC_MAGMA_ORACLE, and a main of its
own that runs the files it is given) it prints "MAGMA reached <id>" and "MAGMA triggered <id>"
the first time the canary is reached and triggered in the process, and goes on (once per
process: every input is replayed in a process of its own, and PNG004's canary, in the row
loop, would otherwise print a line per row).

Configurations (--configs), the same as bench/lava_bench.py's:

  ffuzz         ffuzz on the ffcc build (edges only)
  ffuzz-c       ffuzz -c 0 on an ffcc --cmplog build
  ffuzz-wm-c    ffuzz -c 0 on an ffcc --cmplog --wm build
  ffuzz-wm      ffuzz on an ffcc --wm build; ffuzz-mcc-wm: on ffcc --mcc --wm
  ffuzz-2phase  ffuzz on the ffcc build, then on the --wm build (--labels-binary)
  afl-fuzz-c    AFL++ built from source (bench/rivals.py) with -c on its AFL_LLVM_CMPLOG build
  afl-fuzz      the same AFL++ without -c
  afl-rb        the original FairFuzz (afl-rb, AFL 2.52b; bench/rivals.py build-fairfuzz) with
                its defaults and -m none, on its afl-gcc build
  libfuzzer     clang's libFuzzer with -use_cmp=1, in fork mode (bench/lava_bench.py's
                run_libfuzzer) so that a canary's abort does not end the campaign

ffcc builds are project builds (`ffcc [labels] ... libpng_read_fuzzer.cc png.c ... -lz -lm -lstdc++
-o DIR/`: the C driver compiles the C++ harness as C++, without labels, and links ffcc's
libFuzzer-style main), so labelled campaigns get ffuzz's lean rebuilds; AFL++'s builds compile
libpng with afl-clang-fast and the harness with afl-clang-fast++ -fsanitize=fuzzer (AFL++'s
libFuzzer driver), as bench/fuzz_bench.py's HARNESS_COMPILERS do; both fuzzers run the
harness with no @@.  afl-rb's build compiles libpng with its afl-gcc and the harness with its
afl-g++ (AFL 2.52b: no LLVM mode on LLVM 14), linked with the oracle's file-reading main and
run with @@; libFuzzer's compiles libpng with clang -fsanitize=fuzzer-no-link and the harness
with clang++ -fsanitize=fuzzer, which links libFuzzer.  Seeds: Magma's
corpus/libpng_read_fuzzer (four PNGs).

A crash's bug is the first id the oracle says it triggers (the fuzzed build aborted there); a
crash that triggers none is "unsorted" (a crash of the code itself, which the oracle, a gcc
build without sanitizers, may not repeat).  A bug is reached when some saved input (queue,
crashes, hangs) reaches its canary on the oracle; its time is that of the first such input
(the time: field of its name).  Before the matrix, every seed must run cleanly on every fuzzed
build (exit 0, no canary triggered), the oracle says which canaries the seeds reach, and a few
inputs written here (PROBES) must trigger their bug on the oracle and the same bug on every
fuzzed build, the labelled ones included (ffcc's labels rewrite the code around the canaries).
Edges are those of each campaign's queue and crashes replayed by AFL++'s afl-showmap on the one
afl-clang-fast build; labels are those `ffuzz report` counts on the labelled build.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench import bugstats, rivals  # noqa: E402
from bench.fuzz_bench import ENV, WORK, ffcc_digest  # noqa: E402
from bench.lava_bench import (  # noqa: E402
    COMPARISONS,
    CONFIGS,
    DEFAULT_CONFIGS,
    RUNNERS,
    BenchError,
    Launch,
    Recorder,
    Task,
    Trees,
    campaign_figures,
    check_rival,
    found_at,
    git,
    rival_meta,
    rival_trees,
    run_matrix,
    saved_inputs,
    tasks,
    version,
)
from ffcc.runtime.abi import BUILD_RECORD  # noqa: E402
from ffcc.runtime.files import write_atomic  # noqa: E402

CACHE = rivals.CACHE.parent / "magma"
DEFAULT_MAGMA = "https://github.com/HexHive/magma"
DEFAULT_LIBPNG = "https://github.com/glennrp/libpng"
LIBPNG_COMMIT = "a37d4836519517bdce6cb9d956092321eca3e73b"  # Magma's targets/libpng/fetch.sh
TARGET = "libpng"                # the program name results.json and table.md use
HARNESS = "libpng_read_fuzzer"
HARNESS_SOURCE = "contrib/oss-fuzz/libpng_read_fuzzer.cc"
BUGS = tuple(f"PNG{n:03d}" for n in range(1, 8))
AFLPP = rivals.CACHE / "aflpp-v4.21c"
MAGMA_CONFIGS = (*DEFAULT_CONFIGS, "libfuzzer")  # libpng_read_fuzzer is a libFuzzer harness
REPLAY_SECONDS = 5.0   # an oracle replay longer than this is a hang: its prints so far count
CANARY = re.compile(rb"^MAGMA (reached|triggered) (\w+)$", re.M)
LIBPNG_UNITS = ("png.c", "pngerror.c", "pngget.c", "pngmem.c", "pngpread.c", "pngread.c",
                "pngrio.c", "pngrtran.c", "pngrutil.c", "pngset.c", "pngtrans.c", "pngwio.c",
                "pngwrite.c", "pngwtran.c", "pngwutil.c")
# What ffcc's project builds link the harness with (the C driver links the C++ harness).
FFCC_LIBS = ("-lz", "-lm", "-lstdc++")
HEADER_NAME = "ffcc_magma_canary.h"
DRIVER_NAME = "ffcc_magma_oracle_main.c"

# The canaries Magma's bug patches call, written for this benchmark (Magma's own canary.c
# counts into a monitor's shared memory; this one prints).  cond is evaluated once.
CANARY_HEADER = r"""/* Bug canaries for Magma's patches (bench/magma_bench.py writes this file). */
#ifndef FFCC_MAGMA_CANARY_H
#define FFCC_MAGMA_CANARY_H
#include <stdio.h>
#include <stdlib.h>

/* Both operands always evaluated, as Magma's branch-free versions. */
#define MAGMA_AND(a, b) (!!(a) & !!(b))
#define MAGMA_OR(a, b) (!!(a) | !!(b))

#ifdef FFCC_MAGMA_ORACLE
/* The oracle: say, once per process, that the canary was reached and that it triggered. */
#define MAGMA_LOG(id, cond) do { \
        static int ffcc_magma_said_; \
        int ffcc_magma_cond_ = !!(cond); \
        if (!(ffcc_magma_said_ & 1)) { \
            ffcc_magma_said_ |= 1; \
            fprintf(stderr, "MAGMA reached %s\n", (id)); \
        } \
        if (ffcc_magma_cond_ && !(ffcc_magma_said_ & 2)) { \
            ffcc_magma_said_ |= 2; \
            fprintf(stderr, "MAGMA triggered %s\n", (id)); \
        } \
    } while (0)
#else
/* A fuzzed build: a triggered canary is a crash. */
#define MAGMA_LOG(id, cond) do { \
        if (cond) { \
            fprintf(stderr, "MAGMA triggered %s\n", (id)); \
            abort(); \
        } \
    } while (0)
#endif
#endif
"""

# The oracle's main: each file named on the command line through the harness, in turn; afl-rb's
# build links it too (Build.file_main).  Its text is part of every build's recipe.
ORACLE_MAIN = r"""/* The oracle's main (bench/magma_bench.py writes this file). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *in = fopen(argv[i], "rb");
        if (in == NULL) {
            perror(argv[i]);
            return 2;
        }
        size_t size = 0, room = 4096;
        uint8_t *data = malloc(room);
        size_t got;
        while (data != NULL && (got = fread(data + size, 1, room - size, in)) > 0) {
            size += got;
            if (size == room)
                data = realloc(data, room *= 2);
        }
        fclose(in);
        if (data == NULL)
            return 2;
        LLVMFuzzerTestOneInput(data, size);
        free(data);
    }
    return 0;
}
"""


# --- sources ------------------------------------------------------------------------------

def digest(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:12]


def export(source: str, rev: str, paths: tuple[str, ...], name: str) -> Path:
    """``paths`` (all of it when empty) of ``source`` at ``rev``, exported once into
    CACHE/sources/<name>-<hash>/tree: a local repository (bare or not) is archived in place,
    anything else fetched first (depth 1).  The folder's COMMIT file names the commit."""
    root = CACHE / "sources" / f"{name}-{digest(source, rev, *paths)}"
    if (root / "COMMIT").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent, prefix=".fetch-") as work:
        repo = source
        if not Path(source).exists():
            print(f"magma_bench: fetching {source} {rev}", file=sys.stderr, flush=True)
            repo = str(Path(work) / "repo.git")
            git("init", "--quiet", "--bare", repo)
            git("--git-dir", repo, "fetch", "--quiet", "--depth", "1", source, rev)
            rev = "FETCH_HEAD"
        commit = git("-C", repo, "rev-parse", f"{rev}^{{commit}}").stdout.decode().strip()
        archive = git("-C", repo, "archive", commit, *paths)
        tree = Path(work) / "tree"
        tree.mkdir()
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        done = Path(work) / "done"
        done.mkdir()
        os.replace(tree, done / "tree")
        (done / "COMMIT").write_text(commit + "\n")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(done, root)
    return root


@dataclass(frozen=True)
class Target:
    """The patched libpng tree and what the matrix needs from Magma's target."""

    tree: Path          # libpng, patched, pnglibconf.h generated, canary header and oracle main
    seeds: Path         # Magma's corpus/libpng_read_fuzzer
    cache: Path         # where its builds go
    magma_commit: str
    libpng_commit: str


def prepare_tree(magma: str, libpng: str, rebuild: bool) -> Target:
    """The libpng tree with Magma's setup patch and bug patches, pnglibconf.h made from the
    patched options, and this script's canary header and oracle main, made once per pair of
    sources."""
    mroot = export(magma, "HEAD", ("targets/libpng",), "magma")
    lroot = export(libpng, LIBPNG_COMMIT, (), "libpng")
    magma_commit, libpng_commit = ((r / "COMMIT").read_text().strip() for r in (mroot, lroot))
    if libpng_commit != LIBPNG_COMMIT:
        raise BenchError(f"{libpng}: {LIBPNG_COMMIT} resolved to {libpng_commit}")
    target = mroot / "tree" / "targets" / "libpng"
    cache = CACHE / "libpng" / digest(magma_commit, libpng_commit)
    tree = cache / "tree"
    result = Target(tree, target / "corpus" / HARNESS, cache, magma_commit, libpng_commit)
    if rebuild:
        shutil.rmtree(cache, ignore_errors=True)
    if (tree / ".prepared").exists():
        write_support(tree)
        return result
    patches = [*sorted((target / "patches" / "setup").glob("*.patch")),
               *sorted((target / "patches" / "bugs").glob("*.patch"))]
    if [p.stem for p in patches if p.parent.name == "bugs"] != list(BUGS):
        raise BenchError(f"{target}/patches/bugs holds no PNG001-PNG007 patches")
    make_tree(lroot, tree, patches)
    write_support(tree)
    (tree / ".prepared").write_text(json.dumps([p.name for p in patches]) + "\n")
    return result


def make_tree(lroot: Path, tree: Path, patches: list[Path]) -> None:
    """``tree``: libpng's exported tree (``lroot``, from export()) copied afresh, ``patches``
    applied as Magma's apply_patches.sh does (%MAGMA_BUG% replaced by the patch's name), and
    pnglibconf.h made from the (patched) scripts/pnglibconf.dfa by libpng's own
    scripts/pnglibconf.mak."""
    shutil.rmtree(tree, ignore_errors=True)
    tree.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(lroot / "tree", tree, symlinks=True)
    for patch in patches:
        text = patch.read_text().replace("%MAGMA_BUG%", patch.stem)
        done = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "-d", str(tree)],
                              input=text, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"{patch.name} does not apply: {done.stdout.strip()[-300:]}")
    done = subprocess.run(["make", "-f", "scripts/pnglibconf.mak", "CC=gcc", "pnglibconf.h"],
                          cwd=tree, capture_output=True, text=True)
    if done.returncode != 0 or not (tree / "pnglibconf.h").exists():
        raise BenchError(f"pnglibconf.mak failed: {done.stderr.strip()[-300:]}")
    for step in ("c", "out", "pre", "dfn"):  # the generator's intermediate files
        (tree / f"pnglibconf.{step}").unlink(missing_ok=True)


def plain_tree(libpng: str) -> Path:
    """libpng at LIBPNG_COMMIT as it is (no Magma patch, no canary header), pnglibconf.h made
    from libpng's default options, made once in CACHE/libpng/plain-<commit>/tree: libpng
    itself for benchmarks other than this one (``libpng``: a git repository, URL or path)."""
    lroot = export(libpng, LIBPNG_COMMIT, (), "libpng")
    commit = (lroot / "COMMIT").read_text().strip()
    tree = CACHE / "libpng" / f"plain-{commit[:12]}" / "tree"
    if not (tree / ".prepared").exists():
        make_tree(lroot, tree, [])
        (tree / ".prepared").write_text("[]\n")
    return tree


def write_support(tree: Path) -> None:
    """This script's canary header and oracle main in ``tree``, written again when they
    changed (build_target's recipe holds their hash, so that the builds follow)."""
    for name, text in ((HEADER_NAME, CANARY_HEADER), (DRIVER_NAME, ORACLE_MAIN)):
        path = tree / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def library_sources(tree: Path) -> list[Path]:
    """libpng's units, as its Makefile.am lists them (no ARM, MIPS, PowerPC or Intel code:
    off by default on x86-64 with neither PNG_INTEL_SSE nor --enable-intel-sse)."""
    return [tree / name for name in LIBPNG_UNITS]


def ffcc_sources(tree: Path) -> list[Path]:
    """What ffcc builds the harness from: the harness first (ffcc names the program after
    it), then libpng's units; linked with FFCC_LIBS."""
    return [tree / HARNESS_SOURCE, *library_sources(tree)]


# --- builds -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Build:
    """One way to build the harness: ``ffcc`` (a project build, with ``flags``: its label
    options) or a kind toolchain() knows (``afl``: AFL++'s compilers, with ``env``;
    ``afl-rb``; ``libfuzzer``; ``gcc``: the oracle)."""

    kind: str
    flags: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    @property
    def file_main(self) -> bool:
        """Whether the build links ORACLE_MAIN, which runs the files its command line names:
        those whose fuzzer brings no driver of its own (the oracle's, afl-rb's)."""
        return self.kind in ("gcc", "afl-rb")

    @property
    def args(self) -> tuple[str, ...]:
        """The harness's arguments under a fuzzer: @@ (the input file) for a build with the
        file-reading main, none for one whose main is a fuzzer's driver (which hands the test
        case over itself)."""
        return ("@@",) if self.file_main else ()


BUILDS = {
    "oracle": Build("gcc"),
    "plain": Build("ffcc"),
    "cmplog": Build("ffcc", ("--cmplog",)),
    "wm-cmplog": Build("ffcc", ("--cmplog", "--wm")),
    "wm": Build("ffcc", ("--wm",)),
    "mcc-wm": Build("ffcc", ("--mcc", "--wm")),
    "afl": Build("afl"),
    "afl-cmplog": Build("afl", env=(("AFL_LLVM_CMPLOG", "1"),)),
    "afl-rb": Build("afl-rb"),
    "libfuzzer": Build("libfuzzer"),
}


@dataclass(frozen=True)
class Toolchain:
    """How compile_link builds the harness one way: the C compiler for libpng, the C++ one
    for the harness and the link, flags for every unit (``extra``) and for the harness and the
    link (``harness_extra``)."""

    cc: str
    cxx: str
    extra: tuple[str, ...] = ()
    harness_extra: tuple[str, ...] = ()


def toolchain(kind: str, trees: Trees) -> Toolchain:
    """The Toolchain of a Build's kind (any but ffcc), its compilers from the rivals' trees."""
    aflpp, aflrb = trees["aflpp"], trees["afl-rb"]
    return {
        "afl": Toolchain(str(aflpp / "afl-clang-fast"), str(aflpp / "afl-clang-fast++"),
                         harness_extra=("-fsanitize=fuzzer",)),
        "afl-rb": Toolchain(str(aflrb / "afl-gcc"), str(aflrb / "afl-g++")),
        "libfuzzer": Toolchain("clang", "clang++", ("-fsanitize=fuzzer-no-link",),
                               ("-fsanitize=fuzzer",)),
        "gcc": Toolchain("gcc", "g++", ("-g", "-DFFCC_MAGMA_ORACLE")),
    }[kind]


def common_flags(tree: Path) -> list[str]:
    """What every build compiles libpng and the harness with: Magma's canary switch and
    the canary header force-included, as Magma's Dockerfile does with its canary.h."""
    return ["-O2", f"-I{tree}", "-DMAGMA_ENABLE_CANARIES", "-include", str(tree / HEADER_NAME)]


def run_quiet(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    """A build command whose failure becomes a BenchError with its last words."""
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        words = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise BenchError(f"{Path(argv[0]).name} failed ({' '.join(argv[-3:])}): "
                         + " / ".join(words))


def compile_link(tree: Path, out: Path, tools: Toolchain, env: dict[str, str],
                 file_main: bool) -> Path:
    """libpng (and ORACLE_MAIN, with ``file_main``) compiled with the toolchain's C compiler,
    the harness with its C++ one, one unit per CPU at a time, linked by the C++ one: every
    build but ffcc's."""
    obj = out / "obj"
    obj.mkdir(parents=True)
    flags = [*common_flags(tree), *tools.extra]
    commands = [[tools.cc, *flags, "-c", str(src), "-o", str(obj / f"{src.stem}.o")]
                for src in library_sources(tree)]
    commands.append([tools.cxx, *flags, *tools.harness_extra, "-c", str(tree / HARNESS_SOURCE),
                     "-o", str(obj / f"{HARNESS}.o")])
    if file_main:
        commands.append([tools.cc, "-O2", "-g", "-c", str(tree / DRIVER_NAME),
                         "-o", str(obj / "oracle_main.o")])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for future in [pool.submit(run_quiet, argv, env) for argv in commands]:
            future.result()
    binary = out / HARNESS
    run_quiet([tools.cxx, *tools.harness_extra, *(str(o) for o in sorted(obj.glob("*.o"))),
               "-lz", "-o", str(binary)], env)
    return binary


def build_target(target: Target, name: str, trees: Trees) -> Path:
    """The harness built the ``name`` way (a BUILDS key) in CACHE/.../builds/name, cached:
    the stamp records the commands' recipe and the seconds the build took."""
    build = BUILDS[name]
    out = target.cache / "builds" / name
    tree = target.tree
    recipe: dict[str, object] = {"kind": build.kind, "flags": list(build.flags),
                                 "env": dict(build.env), "common": common_flags(tree),
                                 "support": digest(CANARY_HEADER, ORACLE_MAIN)}
    if build.kind == "ffcc":
        recipe["ffcc"] = ffcc_digest()
    stamp = out / ".ffcc-magma-build.json"
    if stamp.exists():
        record = json.loads(stamp.read_text())
        if record["recipe"] == recipe and Path(record["binary"]).exists():
            return Path(record["binary"])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = {**ENV, "AFL_QUIET": "1", **dict(build.env)}
    started = time.monotonic()
    if build.kind == "ffcc":
        run_quiet(["ffcc", *build.flags, *common_flags(tree), *map(str, ffcc_sources(tree)),
                   *FFCC_LIBS, "-o", f"{out / 'project'}/"], env)
        project = out / "project"
        binary = project / json.loads((project / BUILD_RECORD).read_text())["program"]
    else:
        binary = compile_link(tree, out, toolchain(build.kind, trees), env, build.file_main)
    seconds = time.monotonic() - started
    stamp.write_text(json.dumps({"recipe": recipe, "binary": str(binary),
                                 "seconds": round(seconds, 1)}))
    return binary


def build_seconds(target: Target) -> dict[str, float]:
    """Seconds each cached build took."""
    return {p.parent.name: json.loads(p.read_text())["seconds"]
            for p in sorted((target.cache / "builds").glob("*/.ffcc-magma-build.json"))}


# --- the oracle ---------------------------------------------------------------------------

@dataclass
class Replay:
    """What the oracle printed on one input: bugs reached and triggered, in order."""

    reached: list[str]
    triggered: list[str]


def replay(oracle: Path, case: Path) -> Replay:
    """``case`` run by the oracle; a run longer than REPLAY_SECONDS counts what it printed."""
    try:
        done = subprocess.run([str(oracle), str(case)], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=REPLAY_SECONDS)
        err = done.stderr
    except subprocess.TimeoutExpired as hung:
        err = hung.stderr if isinstance(hung.stderr, bytes) else b""
    found = Replay([], [])
    for kind, bug in CANARY.findall(err):
        (found.reached if kind == b"reached" else found.triggered).append(bug.decode())
    return found


def sort_findings(instance: Path, oracle: Path, fuzzed: Path
                  ) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Every saved input of ``instance`` replayed on the oracle: the first time each bug was
    triggered (by a crash or hang: its first triggered id) and reached (by any saved input),
    and how many crashes and hangs there were, how many triggered no bug, and how many
    crashes the ``fuzzed`` build (rerun on each) says trigger another bug than the oracle
    does ("disagree": none, when the oracle is right about the builds the fuzzers ran)."""
    triggered: dict[str, float] = {}
    reached: dict[str, float] = {}
    tally = {"crashes": 0, "hangs": 0, "unsorted": 0, "disagree": 0}
    for folder in ("queue", "crashes", "hangs"):
        for case in sorted((instance / folder).glob("id:*")):
            if not case.is_file():
                continue
            at = found_at(case)
            seen = replay(oracle, case)
            for bug in seen.reached:
                reached[bug] = min(reached.get(bug, at), at)
            if folder == "queue":
                continue
            tally[folder] += 1
            first = seen.triggered[0] if seen.triggered else None
            if folder == "crashes" and fuzzed_trigger(fuzzed, case) != first:
                tally["disagree"] += 1
            if not seen.triggered:
                tally["unsorted"] += 1
                continue
            bug = seen.triggered[0]
            triggered[bug] = min(triggered.get(bug, at), at)
    return triggered, reached, tally


# --- checks before the matrix -------------------------------------------------------------

def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, depth: int, colour: int, *chunks: bytes,
        idat: bytes | None = None) -> bytes:
    """A PNG: IHDR, ``chunks``, one IDAT of ``idat`` (by default rows of zeros, one byte per
    pixel, enough for the 8-bit-or-less one-channel images the probes use) and IEND."""
    rows = idat if idat is not None else zlib.compress(b"\0" * (height * (1 + width)))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth,
                                                               colour, 0, 0, 0))
            + b"".join(chunks) + chunk(b"IDAT", rows) + chunk(b"IEND", b""))


def truncated_exif() -> bytes:
    """A grey 1x1 PNG that ends inside an eXIf chunk: the read error leaves eXIf_buf allocated,
    and without the fix nothing says to free it."""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + struct.pack(">I", 64) + b"eXIf" + b"MM\0*\0\0\0\x08")


# Inputs written here that trigger one bug each (the bug's patch says why), to check that the
# oracle and every fuzzed build agree on them.
PROBES = {
    # IDAT's row factor width*channels+1 wraps to 0 in 32 bits: RGB, width (2**32-1)/3.
    "PNG001": png((2**32 - 1) // 3, 1, 8, 2, idat=zlib.compress(b"\0")),
    # A 1-bit palette image with a 3-entry PLTE: more entries than 1 << bit_depth.
    "PNG003": png(1, 1, 1, 3, chunk(b"PLTE", bytes(9))),
    "PNG006": truncated_exif(),
    # An empty PLTE is reported, not fatal, and leaves the palette NULL for png_set_expand.
    "PNG007": png(1, 1, 8, 3, chunk(b"PLTE", b"")),
}


def probe_dir(target: Target) -> Path:
    folder = target.cache / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    for bug, data in PROBES.items():
        (folder / bug).write_bytes(data)
    return folder


def fuzzed_trigger(binary: Path, case: Path) -> str | None:
    """The bug a fuzzed build says ``case`` triggers (it aborts there), or None."""
    try:
        done = subprocess.run([str(binary), str(case)], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=30)
        err = done.stderr
    except subprocess.TimeoutExpired as hung:
        err = hung.stderr if isinstance(hung.stderr, bytes) else b""
    ids = [bug.decode() for kind, bug in CANARY.findall(err) if kind == b"triggered"]
    return ids[0] if ids else None


def checks(target: Target, binaries: dict[str, Path]) -> dict[str, Any]:
    """Seeds on every build (fuzzed builds: exit 0, no trigger; the oracle: what they reach)
    and the probes on every build; returns what results.json records, "problems" listing
    what failed."""
    problems: list[str] = []
    oracle = binaries["oracle"]
    seeds = sorted(p for p in target.seeds.iterdir() if p.is_file())
    seeds_reach: set[str] = set()
    for seed in seeds:
        seen = replay(oracle, seed)
        seeds_reach.update(seen.reached)
        if seen.triggered:
            problems.append(f"oracle: seed {seed.name} triggers {', '.join(seen.triggered)}")
        for name, binary in binaries.items():
            if name == "oracle":
                continue
            done = subprocess.run([str(binary), str(seed)], capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=30)
            if done.returncode != 0 or b"MAGMA triggered" in done.stderr:
                problems.append(f"{name}: exit {done.returncode} on seed {seed.name}")
    probes: dict[str, dict[str, str | None]] = {}
    folder = probe_dir(target)
    for bug in PROBES:
        seen = replay(oracle, folder / bug)
        row: dict[str, str | None] = {"oracle": seen.triggered[0] if seen.triggered else None}
        for name, binary in binaries.items():
            if name != "oracle":
                row[name] = fuzzed_trigger(binary, folder / bug)
        probes[bug] = row
        if row["oracle"] != bug:
            problems.append(f"probe {bug}: the oracle says {row['oracle']}")
        wrong = [f"{n} says {v}" for n, v in row.items() if v != row["oracle"]]
        if wrong:
            problems.append(f"probe {bug}: {'; '.join(wrong)} (oracle {row['oracle']})")
    return {"seeds": [s.name for s in seeds], "seeds_reach": sorted(seeds_reach),
            "probes": probes, "problems": problems}


# --- the other figures of a campaign ------------------------------------------------------

def showmap_edges(instance: Path, binary: Path, aflpp: Path) -> int | None:
    """Edges of the instance's queue and crashes on ``binary`` (the one afl-clang-fast build
    every configuration is measured on), by AFL++'s afl-showmap in collect mode (-C); the
    harness reads its input as it does under afl-fuzz (no @@)."""
    files = saved_inputs(instance)
    if not files:
        return 0
    with tempfile.TemporaryDirectory(prefix="ffcc-magma-edges-") as work:
        listing, union = Path(work) / "inputs", Path(work) / "edges"
        listing.write_text("".join(f"{p}\n" for p in files))
        done = subprocess.run([str(aflpp / "afl-showmap"), "-C", "-q", "-t", "2000", "-I",
                               str(listing), "-o", str(union), "--", str(binary)],
                              env={**ENV, "AFL_CMIN_ALLOW_ANY": "1", "AFL_QUIET": "1"},
                              capture_output=True, timeout=600)
        if not union.exists():
            print(f"magma_bench: afl-showmap wrote no map for {instance} (exit "
                  f"{done.returncode})", file=sys.stderr)
            return None
        return sum(1 for line in union.read_text().splitlines() if line.strip())


def labels_covered(out: Path, binary: Path) -> tuple[int, int] | None:
    """Labels covered and labels (pruned ones left out) of the campaign's saved inputs on the
    labelled ``binary``: `ffuzz report`'s lcov tracefile, BRH and BRF summed over files."""
    report = out / "labels-report"
    done = subprocess.run(["ffuzz", "report", str(out), "-o", str(report), "--", str(binary)],
                          env=ENV, capture_output=True, text=True, timeout=1800)
    info = report / "labels.info"
    if done.returncode != 0 or not info.exists():
        print(f"magma_bench: ffuzz report failed on {out}: "
              f"{(done.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
        return None
    text = info.read_text()
    return (sum(int(n) for n in re.findall(r"^BRH:(\d+)$", text, re.M)),
            sum(int(n) for n in re.findall(r"^BRF:(\d+)$", text, re.M)))


# --- the matrix ---------------------------------------------------------------------------

@dataclass
class Matrix:
    """Everything a campaign needs: the builds, the seeds, where results go."""

    binaries: dict[str, Path]  # build name -> binary
    seeds: Path
    seconds: float
    results: Path
    aflpp: Path | None  # for the edges on its "afl" build: None when no AFL++ is built
    trees: Trees

    def resolve(self, item: str) -> str:
        """An extra option, "{build}" replaced by that build's binary."""
        return str(self.binaries[item[1:-1]]) if item.startswith("{") else item


def fuzz(matrix: Matrix, task: Task) -> bugstats.Run:
    """Run one campaign and measure it; a failed campaign is a Run with its error."""
    config = CONFIGS[task.config]
    binaries = matrix.binaries
    out = matrix.results / "campaigns" / f"{task.program}-{task.config}-{task.run}"
    extra = tuple(matrix.resolve(x) for x in config.extra)
    run = bugstats.Run(task.program, task.config, task.run, matrix.seconds)
    launch = Launch(binaries[config.build], matrix.seeds, matrix.seconds, out, extra,
                    BUILDS[config.build].args)
    try:
        outcome = RUNNERS[config.fuzzer](launch, matrix.trees)
    except (subprocess.SubprocessError, OSError) as failed:  # CampaignFailed among them
        run.error = f"{type(failed).__name__}: {failed}"
        return run
    instance = outcome.instance
    run.bugs, run.reached, tally = sort_findings(instance, binaries["oracle"],
                                                 binaries[config.build])
    run.validated = sorted(run.bugs)  # every Magma bug is a real one
    labels = labels_covered(out, binaries[config.labels]) if config.labels else None
    run.figures = {
        **campaign_figures(outcome),
        "edges": (showmap_edges(instance, binaries["afl"], matrix.aflpp)
                  if matrix.aflpp and "afl" in binaries else None),
        "labels_covered": labels[0] if labels else None,
        "labels_total": labels[1] if labels else None, **tally}
    return run


def describe(run: bugstats.Run) -> str:
    """The progress line of one finished campaign."""
    head = f"run {run.run + 1} {run.config}:"
    if run.error:
        lines = run.error.strip().splitlines()
        return f"{head} FAILED {lines[0]}" + (f" ... {lines[-1]}" if len(lines) > 1 else "")
    f = run.figures
    return (f"{head} triggered [{' '.join(sorted(run.bugs))}], reached "
            f"[{' '.join(sorted(run.reached))}], {f['crashes']} crashes ({f['unsorted']} "
            f"unsorted, {f['disagree']} disagree), {f['execs_per_sec']} execs/s, queue "
            f"{f['queue']}, edges {f['edges']}, labels {f['labels_covered']}")


# --- results ------------------------------------------------------------------------------

def id_notes(runs: list[bugstats.Run], configs: list[str]) -> list[str]:
    """Which bugs each configuration triggered and reached over all its runs, and how its
    crashes sorted."""
    lines = []
    for config in configs:
        done = bugstats.ok_runs(runs, TARGET, config)
        if not done:
            continue
        hit = sorted(set().union(*(r.bugs for r in done)))
        seen = sorted(set().union(*(r.reached for r in done)))
        total = {k: sum(int(r.figures.get(k) or 0) for r in done)
                 for k in ("crashes", "unsorted", "disagree")}
        lines.append(f"- {config}: triggered {', '.join(hit) or 'none'}; reached "
                     f"{', '.join(seen) or 'none'}; {total['crashes']} crashes saved, "
                     f"{total['unsorted']} triggering no canary on the oracle, "
                     f"{total['disagree']} whose canary on the fuzzed build is not the oracle's")
    return lines


def time_table(runs: list[bugstats.Run], configs: list[str], reached: bool) -> list[str]:
    """Seconds to trigger (``reached``: to reach) each bug some run did, per configuration:
    the median over the runs that did and how many of the runs those were."""
    done = {c: bugstats.ok_runs(runs, TARGET, c) for c in configs}
    times = {c: [r.reached if reached else r.bugs for r in rs] for c, rs in done.items()}
    bugs = sorted(set().union(*(set(t) for ts in times.values() for t in ts)))
    if not bugs:
        return []
    rows = [f"Seconds to {'reach' if reached else 'trigger'} each bug (median over the runs "
            "that did; how many of the runs did):", "",
            "| bug | " + " | ".join(configs) + " |", "|" + "---|" * (len(configs) + 1)]
    for bug in bugs:
        cells = []
        for config in configs:
            found = [t[bug] for t in times[config] if bug in t]
            cells.append(f"{statistics.median(found):.0f} ({len(found)}/{len(times[config])})"
                         if found else f"- (0/{len(times[config])})")
        rows.append(f"| {bug} | " + " | ".join(cells) + " |")
    return [*rows, ""]


def check_notes(info: dict[str, Any]) -> list[str]:
    """table.md's account of the checks before the matrix."""
    probes = info.get("checks", {}).get("probes", {})
    agree = [bug for bug, row in probes.items() if set(row.values()) == {bug}]
    problems = info.get("checks", {}).get("problems", [])
    return [f"Checks: the seeds ({len(info['checks']['seeds'])}) reach "
            f"{', '.join(info['checks']['seeds_reach']) or 'no canary'} on the oracle; "
            f"the inputs written to trigger {', '.join(probes)} trigger "
            f"{', '.join(agree) or 'none of them'} on the oracle and every fuzzed build alike"
            + ("." if not problems else "; FAILED: " + "; ".join(problems) + ".")]


def write_tables(results: Path) -> Path:
    """table.md, bugs-libpng.png and reached-libpng.png from results.json."""
    data = json.loads((results / "results.json").read_text())
    runs = [bugstats.Run(**r) for r in data["runs"]]
    info = data["meta"]
    configs = info["configs"]
    title = (f"Magma libpng ({HARNESS}, PNG001-PNG007), {info['runs']} runs of "
             f"{info['seconds']:g} s ({info['date']}, ffcc {info['ffcc_commit']})")
    notes = {TARGET: ["Bugs over all runs:", *id_notes(runs, configs), "",
                      *time_table(runs, configs, reached=False),
                      *time_table(runs, configs, reached=True),
                      *(check_notes(info) if "checks" in info else [])]}
    text = bugstats.markdown(runs, [TARGET], configs, COMPARISONS, title, notes,
                             validated=False, reached=True)
    if info.get("rival_cmplog_works") is False:
        text += "\n**AFL++'s cmplog stage failed bench/rivals.py's check: afl-fuzz-c is no rival.**\n"
    write_atomic(results / "table.md", text)
    bugstats.plot(runs, TARGET, configs, results / f"bugs-{TARGET}.png")
    bugstats.plot(runs, TARGET, configs, results / f"reached-{TARGET}.png", reached=True)
    return results / "table.md"


def meta(args: argparse.Namespace, target: Target, aflpp: Path | None) -> dict[str, object]:
    """What results.json says about how its runs were made."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"date": datetime.now().isoformat(timespec="seconds"), "ffcc_commit": commit,
            "ffuzz": version(["ffuzz", "--version"]), "magma": args.magma,
            "magma_commit": target.magma_commit, "libpng": args.libpng,
            "libpng_commit": target.libpng_commit, "aflpp": str(aflpp) if aflpp else None,
            "seconds": args.seconds, "runs": args.runs, "jobs": args.jobs,
            "programs": [TARGET], "configs": args.configs.split(","), "cpus": os.cpu_count()}


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--magma", default=DEFAULT_MAGMA,
                        help="Magma's git repository (URL or path): targets/libpng")
    parser.add_argument("--libpng", default=DEFAULT_LIBPNG,
                        help=f"libpng's git repository (URL or path) holding {LIBPNG_COMMIT}")
    parser.add_argument("--configs", default=",".join(MAGMA_CONFIGS),
                        help="of " + ",".join(CONFIGS))
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="campaigns at once (one per core)")
    parser.add_argument("--results", type=Path,
                        help="results folder (default bench/.work/magma-results/<timestamp>)")
    parser.add_argument("--aflpp", type=Path, default=AFLPP,
                        help="AFL++ tree built by bench/rivals.py (afl-fuzz, afl-clang-fast)")
    parser.add_argument("--afl-rb", type=Path, default=rivals.AFLRB,
                        help="afl-rb tree built by bench/rivals.py build-fairfuzz")
    parser.add_argument("--rebuild", action="store_true",
                        help="patch the tree and rebuild every build again")
    parser.add_argument("--build-only", action="store_true",
                        help="build and check the builds, run no campaign")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="write DIR's table.md and plots again from its results.json")
    args = parser.parse_args(argv)
    unknown = set(args.configs.split(",")) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown configuration: {', '.join(sorted(unknown))}")
    return args


def prepare(args: argparse.Namespace) -> tuple[Matrix, Target, dict[str, Any]]:
    """The tree, the rivals' trees, every build the configurations need, and their checks."""
    configs = [CONFIGS[c] for c in args.configs.split(",")]
    trees = rival_trees(args, configs)
    wants_afl = any(c.fuzzer == "afl-fuzz" for c in configs)
    aflpp: Path | None = args.aflpp
    if not all((args.aflpp / tool).exists() for tool in ("afl-fuzz", "afl-clang-fast",
                                                           "afl-clang-fast++", "afl-showmap")):
        if wants_afl:
            raise BenchError(f"no AFL++ build in {args.aflpp}: build one with `python "
                             "bench/rivals.py build <AFL++ v4.21c source> --name v4.21c` "
                             "(or leave the afl-fuzz configurations out)")
        aflpp = None  # no edges on a common build either
    target = prepare_tree(args.magma, args.libpng, args.rebuild)
    builds = {"oracle", *(b for c in configs for b in c.builds()), *(("afl",) if aflpp else ())}
    binaries: dict[str, Path] = {}
    for build in sorted(builds):
        print(f"magma_bench: {build} build", file=sys.stderr, flush=True)
        binaries[build] = build_target(target, build, trees)
    info: dict[str, Any] = {"build_seconds": build_seconds(target),
                            "checks": checks(target, binaries)}
    for problem in info["checks"]["problems"]:
        print(f"magma_bench: CHECK FAILED: {problem}", file=sys.stderr)
    if wants_afl and aflpp:
        info["rival_cmplog_works"] = check_rival(aflpp)
    results = args.results or WORK / "magma-results" / datetime.now().strftime("%Y%m%d-%H%M%S")
    seeds = target.seeds
    return Matrix(binaries, seeds, args.seconds, results.resolve(), aflpp, trees), target, info


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.report:
        print(write_tables(args.report))
        return 0
    try:
        matrix, target, info = prepare(args)
    except BenchError as error:
        print(f"magma_bench: {error}", file=sys.stderr)
        return 1
    print(json.dumps(info, indent=1), file=sys.stderr)
    if args.build_only:
        return 1 if info["checks"]["problems"] else 0
    matrix.results.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(matrix.results, {**meta(args, target, matrix.aflpp),
                                         **rival_meta(args.configs.split(","), matrix.trees),
                                         **info})
    recorder.write()
    run_matrix(partial(fuzz, matrix), describe,
               tasks([TARGET], args.configs.split(","), args.runs), args.jobs, recorder)
    table = write_tables(matrix.results)
    print(table.read_text())
    print(f"results in {matrix.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
