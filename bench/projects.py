"""Real C projects from Debian's source packages, and how to build and test them.

Shared by the drop-in tests and the build benchmark, so both build the same
way.  Sources are fetched once with ``apt-get source`` into a cache and copied
fresh for every build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Counts = dict[str, int]  # "pass", "fail", "skip", "error", ... -> how many tests


def automake_counts(tree: Path, output: str) -> Counts:
    """The counts of automake's test-suite summary (every summary of a recursive check)."""
    counts: Counter[str] = Counter()
    for kind, number in re.findall(r"^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): +(\d+)", output, re.M):
        counts[kind.lower()] += int(number)
    return dict(counts)


def ctest_counts(tree: Path, output: str) -> Counts:
    """ctest's closing line: "95% tests passed, 1 tests failed out of 19"."""
    if not (match := re.search(r"\d+% tests passed, (\d+) tests failed out of (\d+)", output)):
        return {}
    return {"pass": int(match[2]) - int(match[1]), "fail": int(match[1])}


def marker_counts(passed: str, failed: str) -> Callable[[Path, str], Counts]:
    """Counts of lines matching ``passed`` and ``failed``: for suites without a summary, whose
    every test prints a verdict of its own (zlib's "*** zlib test OK ***")."""
    def counts(tree: Path, output: str) -> Counts:
        return {"pass": len(re.findall(passed, output, re.M)),
                "fail": len(re.findall(failed, output, re.M))}
    return counts


def jq_counts(tree: Path, output: str) -> Counts:
    """automake's counts, and inside them the cases of jq's own runner ("301 of 301 tests
    passed" in each tests/*.log), where a difference would hide in a passing script."""
    counts = automake_counts(tree, output)
    for log in sorted(tree.glob("tests/*.log")):
        for passed, total in re.findall(r"^(\d+) of (\d+) tests passed", log.read_text(), re.M):
            counts["cases"] = counts.get("cases", 0) + int(total)
            counts["cases_fail"] = counts.get("cases_fail", 0) + int(total) - int(passed)
    return counts


def expat_counts(tree: Path, output: str) -> Counts:
    """automake's counts, and the checks of expat's minicheck runners ("100%: Checks: 251,
    Failed: 0" in tests/runtests.log and runtestspp.log, the C and the C++ runner)."""
    counts = automake_counts(tree, output)
    for log in sorted(tree.glob("expat/tests/runtests*.log")):
        for total, failed in re.findall(r"Checks: (\d+), Failed: (\d+)", log.read_text()):
            counts["cases"] = counts.get("cases", 0) + int(total)
            counts["cases_fail"] = counts.get("cases_fail", 0) + int(failed)
    return counts


def tuktest_counts(tree: Path, output: str) -> Counts:
    """automake's counts, and the cases of xz's tuktest programs ("PASS: name", "FAIL:",
    "SKIP:" per test function in each tests/test_*.log)."""
    counts = automake_counts(tree, output)
    for log in sorted(tree.glob("tests/test_*.log")):
        for kind in re.findall(r"^(PASS|FAIL|SKIP|ERROR): ", log.read_text(), re.M):
            counts["cases"] = counts.get("cases", 0) + 1
            counts["cases_fail"] = counts.get("cases_fail", 0) + (kind in ("FAIL", "ERROR"))
    return counts


def jansson_counts(tree: Path, output: str) -> Counts:
    """automake's counts, and the cases of jansson's suites: after each "Suite: name" line of
    test/run-suites.log, one character per case ('.' passed, 'S' skipped, 'F' failed)."""
    counts = automake_counts(tree, output)
    log = tree / "test" / "run-suites.log"
    marks = "".join(re.findall(r"^Suite: \S+\n([.SF]*)$", log.read_text() if log.exists() else "",
                               re.M))
    counts["cases"], counts["cases_fail"] = len(marks), marks.count("F")
    return counts


def cmp_counts(tree: Path, output: str) -> Counts:
    """bzip2's check: each echoed ``cmp`` is a test; one that prints "differ" or "EOF on"
    failed (``make -k`` goes on past it)."""
    tests = len(re.findall(r"^cmp ", output, re.M))
    failed = len(re.findall(r"^\S+ \S+ differ|^cmp: EOF on", output, re.M))
    return {"pass": tests - failed, "fail": failed}


@dataclass(frozen=True)
class Project:
    """A Debian source package and its build, written for any CC."""

    name: str
    versions: tuple[str, ...]   # apt-get source arguments, tried in order
    prepare: tuple[str, ...]    # run once per copy, not timed (e.g. autoreconf)
    configure: str              # {cc} is replaced by the compiler
    build: str
    check: str
    clean: str = "make clean"   # undoes the build, keeps the configuration
    # The check's pass/fail/skip counts from the tree (logs) and the check's output.
    counts: Callable[[Path, str], Counts] = automake_counts
    # Run after the check; writes files into roundtrip/ that every build of the project must
    # write byte for byte alike, and fails when a round trip (compress, decompress) differs.
    roundtrip: str = ""
    cxx: bool = False           # has C++ units: CXX matters
    package: str = ""           # the source package's name, when not the project's

    def source_dir(self, cache: Path) -> Path | None:
        found = sorted(p for p in cache.glob(f"{self.package or self.name}-*") if p.is_dir())
        return found[0] if found else None


# Static and shared (examplesh, minigzipsh against libz.so) builds, each tested.
ZLIB = Project("zlib", ("zlib", "zlib=1:1.2.13.dfsg-1"), (), "CC={cc} ./configure", "make -j2", "make test",
               counts=marker_counts(r"\*\*\* zlib .*test OK \*\*\*", r"\*\*\* .*test FAILED"),
               roundtrip="mkdir -p roundtrip && cat *.c *.h > roundtrip/input"
               " && ./minigzip -9 < roundtrip/input > roundtrip/input.9.gz"
               " && ./minigzip -1 < roundtrip/input > roundtrip/input.1.gz"
               " && ./minigzipsh -d < roundtrip/input.9.gz | cmp - roundtrip/input"
               " && ./minigzip -d < roundtrip/input.1.gz | cmp - roundtrip/input")
JQ = Project(
    "jq", ("jq", "jq=1.6-2.1+deb12u2"), ("autoreconf -fi",),
    # valgrind 3.19 cannot read clang 14's DWARF 5 (plain clang -g fails too).
    "CC={cc} ./configure --disable-shared --disable-docs --disable-maintainer-mode "
    "--disable-valgrind",
    "make -j2", "make check -j2", counts=jq_counts,
    roundtrip="mkdir -p roundtrip && ./jq -n '[range(2000) | {a: ., b: (. * 1.37), c: tostring}]'"
    " > roundtrip/gen.json && ./jq -S -c 'map(.b / 3)' roundtrip/gen.json > roundtrip/canon.json")
CJSON = Project("cjson", ("cjson",), (),
                "cmake -S . -B build -DCMAKE_C_COMPILER={cc} -DENABLE_CJSON_TEST=On "
                "-DBUILD_SHARED_LIBS=Off -DENABLE_CUSTOM_COMPILER_FLAGS=Off",
                "cmake --build build -j2", "cd build && ctest --output-on-failure",
                "cmake --build build --target clean", counts=ctest_counts)
# cJSON with its own flags: -std=c89 -pedantic -Werror and some thirty warnings, where a
# warning that only labelled code raises would cost the file its labels.
CJSON_STRICT = Project(
    "cjson-strict", CJSON.versions, (),
    CJSON.configure.replace(" -DENABLE_CUSTOM_COMPILER_FLAGS=Off", ""), CJSON.build, CJSON.check,
    CJSON.clean, ctest_counts, package="cjson")
# Numeric libraries whose own tests watch the floating-point environment.  MPFR's
# tests, with these macros, trap division by zero and invalid operations
# (feenableexcept) and fail when either flag is raised at the end of a test.
MPFR = Project(
    "mpfr4", ("mpfr4",), (),
    # Without gcc's decimal floats and _Float128 in mpfr.h, which libclang cannot parse.
    "./configure CC={cc} --disable-shared --disable-decimal-float --disable-float128 "
    "CFLAGS='-O2 -DMPFR_ERRDIVZERO -DMPFR_TESTS_FPE_DIV -DMPFR_TESTS_FPE_TRAP'",
    "make -j2", "make check -j2")
# pixman's gradient, combiner, pdf-op, radial and stress tests trap division by zero
# and invalid operations (feenableexcept).  Its suite in its own order (expected
# completion time) up to stress-test: the six after it are checksum fuzzers of the
# compositing paths that take 20 minutes and more when labelled.  Debian's patch
# answers 404: upstream tarball only.
PIXMAN_TESTS = (
    "oob-test infinite-loop trap-crasher fence-image-self-test region-translate-test fetch-test "
    "a1-trap-test prng-test radial-invalid pdf-op-test region-test combiner-test "
    "scaling-crash-test alpha-loop scaling-helpers-test thread-test rotate-test alphamap "
    "gradient-crash-test pixel-test matrix-test filter-reduction-test composite-traps-test "
    "region-contains-test glyph-test solid-test stress-test")
PIXMAN = Project("pixman", ("pixman", "--tar-only pixman"), (),
                 "./configure CC={cc} --disable-shared --disable-gtk --disable-libpng CFLAGS=-O2",
                 "make -j2", f"make check -j2 TESTS='{PIXMAN_TESTS}'")
# gnulib (lib/libcoreutils.a, uniwidth/width.c among it) and a few programs; the
# check is a smoke run of those programs, as coreutils' own suite needs every program.
COREUTILS_PROGRAMS = ("src/sort", "src/wc", "src/ls", "src/expr", "src/printf", "src/od")
COREUTILS = Project(
    "coreutils", ("coreutils",), (),
    "FORCE_UNSAFE_CONFIGURE=1 ./configure CC={cc} CFLAGS=-O2 --disable-nls --without-selinux "
    "--without-openssl",
    # BUILT_SOURCES (generated headers) are made only by `make all`: make them first.
    "printf 'built-sources: $(BUILT_SOURCES)\\n' > built.mk"
    " && make -j2 -f Makefile -f built.mk built-sources && make -j2 " + " ".join(COREUTILS_PROGRAMS),
    "printf 'b 2\\na 10\\nb 1\\n' | src/sort -k2,2n | src/wc"
    " && src/expr 6 '*' 7 && src/printf '%.3f %x\\n' 2.5 255 && src/ls -l src/wc >/dev/null"
    " && echo ffcc | src/od -An -tx1")
# bzip2 has no configure: its two Makefiles name gcc.  The shared library (Makefile-libbz2_so,
# -fPIC objects) first, then the static one and the programs from fresh objects.  Its own
# `make test` compresses and decompresses three samples and compares them with the shipped
# ones; the same six comparisons run on bzip2-shared (libbz2.so).
BZIP2_CHECK = (
    "make -k test; rc=$?; for n in 1 2 3; do"
    " echo cmp bzip2-shared -$n sample$n;"
    " LD_LIBRARY_PATH=. ./bzip2-shared -$n < sample$n.ref | cmp - sample$n.bz2 || rc=1;"
    " echo cmp bzip2-shared -d sample$n;"
    " LD_LIBRARY_PATH=. ./bzip2-shared -d < sample$n.bz2 | cmp - sample$n.ref || rc=1;"
    " done; exit $rc")
BZIP2 = Project(
    "bzip2", ("bzip2",), (), "sed -i 's|^CC=gcc$|CC={cc}|' Makefile Makefile-libbz2_so",
    "make -f Makefile-libbz2_so && rm -f *.o && make -j2 libbz2.a bzip2 bzip2recover",
    BZIP2_CHECK, counts=cmp_counts,
    roundtrip="mkdir -p roundtrip && cat *.c *.h sample1.ref sample2.ref > roundtrip/input"
    " && ./bzip2 -9 < roundtrip/input > roundtrip/input.9.bz2"
    " && ./bzip2 -1 < roundtrip/input > roundtrip/input.1.bz2"
    " && LD_LIBRARY_PATH=. ./bzip2-shared -d < roundtrip/input.9.bz2 | cmp - roundtrip/input"
    " && ./bzip2 -d < roundtrip/input.1.bz2 | cmp - roundtrip/input")
# C and C++: libexpat.so, xmlwf, and two test runners on the same checks, runtests (C) and
# runtestspp (C++, linked by CXX).  The newest Debian revision answers 404.
EXPAT = Project(
    "expat", ("expat", "expat=2.5.0-1+deb12u2"), ("cd expat && ./buildconf.sh",),
    "cd expat && ./configure CC={cc} --without-docbook", "make -C expat -j2",
    "make -C expat check -j2", counts=expat_counts, cxx=True,
    roundtrip="mkdir -p roundtrip && expat/xmlwf/xmlwf -d roundtrip"
    " testdata/largefiles/nes96.xml expat/doc/xmlwf.xml")
LIBYAML = Project(
    "libyaml", ("libyaml",), ("./bootstrap",), "./configure CC={cc}", "make -j2",
    "make check -j2",
    roundtrip="mkdir -p roundtrip && for f in examples/*.yaml; do"
    " tests/example-reformatter < $f > roundtrip/${f#examples/} || exit 1; done")
# libpng.so and its 30-odd check programs (pngvalid's many variants, pngstest, pngimage).
LIBPNG = Project(
    "libpng1.6", ("libpng1.6", "libpng1.6=1.6.39-2+deb12u5"), (), "./configure CC={cc}",
    "make -j2", "make check -j2",
    roundtrip="mkdir -p roundtrip && ./pngtest pngtest.png roundtrip/pngout.png"
    " && ./pngtest roundtrip/pngout.png roundtrip/pngout2.png")
# Colour management: floating-point interpolation and matrix code, liblcms2.so.  Its
# testbed prints "Checking <title> ...Ok." (or "...|Err|<0.001953 .Ok.", the largest error
# of a curve) or "FAIL!" per check, then a speed test.  The largest errors are floating-point
# results of the library: every build must print them alike.
LCMS2 = Project(
    "lcms2", ("lcms2",), (), "./configure CC={cc}", "make -j2",
    "make check > testbed/check.out 2>&1; rc=$?; cat testbed/check.out; exit $rc",
    counts=marker_counts(r"^Checking .*Ok(\.|, but)", r"FAIL!\s*$"),
    roundtrip="mkdir -p roundtrip"
    " && grep -o '^Checking .*|Err|<[0-9.]*' testbed/check.out > roundtrip/errors.txt")
# liblzma.so with x86 assembly (crc32_x86.S, crc64_x86.S) beside C, xz, and tuktest's unit
# tests and shell round trips (test_compress.sh, test_files.sh).  One thread: the .xz
# bytes of a multi-threaded compression depend on the block split.
XZ = Project(
    "xz-utils", ("xz-utils",), (), "./configure CC={cc} --disable-nls --disable-doc",
    "make -j2", "make check -j2", counts=tuktest_counts,
    roundtrip="mkdir -p roundtrip && cat src/liblzma/*/*.c > roundtrip/input"
    " && src/xz/xz -T1 -9 -c roundtrip/input > roundtrip/input.9.xz"
    " && src/xz/xz -T1 -0e -c roundtrip/input > roundtrip/input.0e.xz"
    " && src/xz/xz -d -c roundtrip/input.9.xz | cmp - roundtrip/input"
    " && src/xz/xz -d -c roundtrip/input.0e.xz | cmp - roundtrip/input")
# A JSON library: dtoa-free number formatting, UTF-8, hash tables; its suites of valid and
# invalid documents and API tests (some hundred cases).
JANSSON = Project("jansson", ("jansson",), ("autoreconf -fi",), "./configure CC={cc}",
                  "make -j2", "make check -j2", counts=jansson_counts)
# LZO: compressors written as macro-heavy C included many times over (lzo1x_c.ch), liblzo2.so;
# `make check` and `make test` compress and decompress files of the tree with every method
# and compare (lzotest, util/check.sh), then checksums and minilzo.
LZO2 = Project(
    "lzo2", ("lzo2",), (), "./configure CC={cc} --enable-shared", "make -j2",
    "make check && make test",
    counts=marker_counts(r"^===== All (checks|tests) passed", r"^make: \*\*\* .*Error"))
# ffcc defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, as afl-clang-fast does, and liblzma
# then skips its CRC checks of headers and indexes (so that a fuzzer gets past them): four of
# xz's tests, which expect corrupt headers to be refused, fail.  Undefined, they pass.
XZ_CHECKED = Project(
    "xz-utils-checked", XZ.versions, XZ.prepare,
    XZ.configure + " CFLAGS='-O2 -UFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION'", XZ.build,
    XZ.check, XZ.clean, XZ.counts, XZ.roundtrip, package="xz-utils")
# Held out of every label option's tuning: Lua's interpreter (a parser, a code generator and
# a register VM in one switch), its library and luac, from upstream's tarball and Makefile
# (Debian's builds each unit as C and as C++ through libtool); the check runs a script
# through the labelled interpreter.
LUA = Project(
    "lua", ("--tar-only lua5.4", "--tar-only lua5.4=5.4.4-3"), (), "true",
    "make -C src -j2 linux CC=\"$CC -std=gnu99\"",
    "src/lua -e 'local t = {} for i = 1, 1000 do t[i] = i * i end "
    "assert(#t == 1000 and t[10] == 100 and string.format(\"%5.2f\", 1/3) == \" 0.33\")'",
    clean="make -C src clean", package="lua")
# GIF codec and its utilities (plain Makefile, shared and static libraries, LZW bit I/O), all
# that `make all` builds but the manual pages (xmlto); the check decodes and re-encodes the
# pictures of its test suite and compares.
GIFLIB_PROGRAMS = ("gif2rgb", "gifbuild", "giffix", "giftext", "giftool", "gifclrmp", "gifbg",
                   "gifcolor", "gifecho", "giffilter", "gifhisto", "gifinto", "gifsponge",
                   "gifwedge")
GIFLIB = Project("giflib", ("giflib", "giflib=5.2.1-2.5"), (), "true",
                 "make -j2 CC=\"$CC\" libgif.so libgif.a libutil.so libutil.a "
                 + " ".join(GIFLIB_PROGRAMS), "make -C tests")
PROJECTS = {p.name: p for p in (ZLIB, BZIP2, LIBYAML, CJSON, CJSON_STRICT, EXPAT, JQ, LIBPNG,
                                LCMS2, XZ, XZ_CHECKED, JANSSON, LZO2, MPFR, PIXMAN, COREUTILS,
                                LUA, GIFLIB)}


def sources_cache() -> Path:
    return Path(os.environ.get("FFCC_SOURCES_DIR") or os.path.expanduser("~/.cache/ffcc-sources"))


def fetch(project: Project, cache: Path | None = None) -> Path:
    """The pristine source tree, fetched with apt-get source on first use."""
    cache = cache or sources_cache()
    cache.mkdir(parents=True, exist_ok=True)
    if (found := project.source_dir(cache)) is not None:
        return found
    errors = []
    for spec in project.versions:
        done = subprocess.run(["apt-get", "source", "-qq", *spec.split()], cwd=cache,
                              capture_output=True, text=True)
        if spec.startswith("--tar-only"):  # upstream tarball only: unpack it here
            source_package = spec.split()[1].split("=")[0]
            for tarball in cache.glob(f"{source_package}_*.orig.tar.*"):
                subprocess.run(["tar", "-xf", tarball.name], cwd=cache, check=True)
        if (found := project.source_dir(cache)) is not None:
            return found
        errors.append(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else spec)
    raise RuntimeError(f"cannot fetch {project.name} sources: {'; '.join(errors)}")


def fresh_copy(project: Project, workdir: Path) -> Path:
    tree = workdir / project.name
    shutil.copytree(fetch(project), tree, symlinks=True)
    for step in project.prepare:
        subprocess.run(step, shell=True, cwd=tree, check=True, capture_output=True)
    return tree


def run_step(command: str, tree: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run one shell step; returns seconds taken and its combined output. Raises on failure."""
    start = time.monotonic()
    done = subprocess.run(command, shell=True, cwd=tree, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"`{command}` failed in {tree}:\n{output[-3000:]}")
    return time.monotonic() - start, output
