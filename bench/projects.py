"""Real C projects from Debian's source packages, and how to build and test them.

Shared by the drop-in tests and the build benchmark, so both build the same
way.  Sources are fetched once with ``apt-get source`` into a cache and copied
fresh for every build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


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

    def source_dir(self, cache: Path) -> Path | None:
        found = sorted(p for p in cache.glob(f"{self.name}-*") if p.is_dir())
        return found[0] if found else None


ZLIB = Project("zlib", ("zlib",), (), "CC={cc} ./configure", "make -j2", "make test")
JQ = Project(
    "jq", ("jq", "jq=1.6-2.1+deb12u2"), ("autoreconf -fi",),
    # valgrind 3.19 cannot read clang 14's DWARF 5 (plain clang -g fails too).
    "CC={cc} ./configure --disable-shared --disable-docs --disable-maintainer-mode "
    "--disable-valgrind",
    "make -j2", "make check -j2")
CJSON = Project("cjson", ("cjson",), (),
                "cmake -S . -B build -DCMAKE_C_COMPILER={cc} -DENABLE_CJSON_TEST=On "
                "-DBUILD_SHARED_LIBS=Off -DENABLE_CUSTOM_COMPILER_FLAGS=Off",
                "cmake --build build -j2", "cd build && ctest --output-on-failure",
                "cmake --build build --target clean")
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
PROJECTS = {p.name: p for p in (ZLIB, JQ, CJSON, MPFR, PIXMAN, COREUTILS)}


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
            for tarball in cache.glob(f"{project.name}_*.orig.tar.*"):
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
