"""Labels in every language mode and under every strictness a project may build with (issue 32
items 6 and 7): C89 to C2x, -pedantic-errors, -Werror -Wall -Wextra, and with gcc, its own
warnings and code generation options, which libclang does not know.  Each build must get its
labels (``--labels-required``) and behave as the plain build does.

The matrix is not the cross product: every language mode is built by both compilers, with the
strictness options and optimisation levels rotated across the modes, so that each strictness
meets each compiler and several modes (the same program in every build)."""

from __future__ import annotations

import subprocess
from itertools import cycle
from pathlib import Path

import pytest
from helpers import REPO, ffcc, have, run_program, sample_inputs, sample_sources

from ffcc.instrument.command_line import parse_command
from ffcc.instrument.plan import parse_flags
from ffcc.runtime.abi import read_label_db

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
MODES = ("-std=c89", "-std=c90", "-std=gnu89", "-ansi", "-std=c99", "-std=gnu99", "-std=c11",
         "-std=gnu11", "-std=c17", "-std=gnu17", "-std=c2x", "-std=gnu2x")
STRICTNESS = (("-pedantic-errors",), ("-Werror", "-Wall", "-Wextra"), ("-pedantic",),
              ("-Werror", "-Wall", "-Wextra", "-pedantic-errors"))
LEVELS = ("-O0", "-O2")
# gcc's warnings that clang does not know, as a project's -Werror build has them.
GCC_WARNINGS = (
    "-Wlogical-op", "-Wduplicated-cond", "-Wjump-misses-init", "-Wstack-usage=100000",
    "-Wduplicated-branches", "-Wrestrict", "-Wformat-overflow=2", "-Wformat-truncation=2",
    "-Wstringop-overflow=4", "-Walloc-zero", "-Wlarger-than=100000",
    "-Wframe-larger-than=100000", "-Wimplicit-fallthrough=3", "-Wno-unused-but-set-variable",
    "-Werror=logical-op", "-Wshadow=local", "-Wnormalized=nfc", "-Wc90-c99-compat")
# gcc's optimisation and code generation options, and Debian's hardening flags.
GCC_CODE = (
    "-fno-tree-vrp", "-fipa-pta", "-fconserve-stack", "-fno-guess-branch-probability",
    "-fcf-protection", "-mtune=generic", "-fno-semantic-interposition",
    "-fmacro-prefix-map=/src=.", "-ffile-prefix-map=/build=.", "-fdiagnostics-color=never",
    "-fstack-clash-protection", "-fstack-protector-strong", "-Wa,--noexecstack",
    "-Wformat", "-Werror=format-security", "-Wdate-time", "-Wp,-D_FORTIFY_SOURCE=2", "-g",
    "-mpreferred-stack-boundary=4", "-maccumulate-outgoing-args")

# Valid C89: no // comments, declarations first, no long long.  Shifts, division and
# comparisons of every kind, so that label code casts and compares as it does in bigger units.
PROGRAM = r"""/* Every operator group gets labels. */
#include <stdio.h>
#include <stdlib.h>

static unsigned int mix(unsigned int a, int b) {
  unsigned int r = a;
  int i;
  for (i = 0; i < 4 && b != 0; i++) {
    r ^= (a << (b & 7)) | (a >> 3);
    r += (unsigned int)(b % 5);
    b /= 2;
  }
  return r;
}

static int classify(int a, int b, double x) {
  int r = 0;
  if (a > 3 && b < 10) r = a + b;
  else if (a == b || a - b > 2) r = a * b;
  if (x >= 1.5 && !(x == 2.0)) r -= 1;
  switch (a & 3) {
  case 0: r |= 8; break;
  case 1: r = -r; break;
  default: r++;
  }
  return r < 0 ? -r : r;
}

int main(int argc, char **argv) {
  int a = argc > 1 ? atoi(argv[1]) : 0;
  int b = argc > 2 ? atoi(argv[2]) : 0;
  double x = argc > 3 ? atof(argv[3]) : 0.0;
  printf("%d %u\n", classify(a, b, x), mix((unsigned int)a, b));
  return a > 100 ? 3 : 0;
}
"""
ARGUMENTS: tuple[list[str], ...] = ([], ["5", "3", "1.7"], ["4", "4", "2"], ["-9", "12", "2.5"],
                                    ["101", "-3"])


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    """(compiler, flags): each mode with each compiler, strictness and level rotated, and for
    gcc its own warnings and code generation options in turn."""
    cases = []
    for offset, cc in enumerate(BACKENDS):
        strictness, levels = cycle(STRICTNESS[offset:] + STRICTNESS[:offset]), cycle(LEVELS)
        extras = cycle((GCC_WARNINGS, GCC_CODE) if cc == "gcc" else ((),))
        cases += [(cc, (mode, *next(strictness), next(levels), *next(extras))) for mode in MODES]
    return cases


CASES = _cases()


def _labelled(cc: str, flags: tuple[str, ...], sources: list[str], program: Path,
              cwd: Path) -> int:
    """Build ``program`` with every label, as required; its label count."""
    ffcc(f"--cc={cc}", "--mcc", "--wm=all", "--labels-required", *flags, *sources, "-o",
         str(program), cwd=cwd)
    database = read_label_db(program)
    assert database is not None
    return len(database.labels)


@pytest.mark.parametrize(("cc", "flags"), CASES, ids=[f"{cc}{f[0]}{''.join(f[1:3])}"
                                                      for cc, f in CASES])
def test_labelled_build_in_each_mode_behaves_as_the_plain_one(cc, flags, tmp_path):
    (tmp_path / "prog.c").write_text(PROGRAM)
    subprocess.run([cc, *flags, "prog.c", "-o", "plain"], cwd=tmp_path, check=True)
    assert _labelled(cc, flags, ["prog.c"], tmp_path / "labelled", tmp_path) > 50
    for arguments in ARGUMENTS:
        assert (run_program([str(tmp_path / "labelled"), *arguments])
                == run_program([str(tmp_path / "plain"), *arguments])), arguments


SAMPLE_CASES = [("gcc", "temperature", ("-std=c99", "-pedantic-errors", "-O2", *GCC_WARNINGS)),
                ("gcc", "boundaries", ("-std=gnu11", "-Werror", "-Wall", "-Wextra", *GCC_CODE)),
                ("clang", "temperature", ("-std=c11", "-Werror", "-Wall", "-Wextra", "-pedantic")),
                ("clang", "boundaries", ("-std=c2x", "-pedantic-errors", "-O2"))]


@pytest.mark.parametrize(("cc", "name", "flags"), [c for c in SAMPLE_CASES if c[0] in BACKENDS],
                         ids=[f"{cc}-{name}" for cc, name, _ in SAMPLE_CASES if cc in BACKENDS])
def test_samples_behave_as_their_plain_builds(cc, name, flags, tmp_path):
    sources = sample_sources(name)
    subprocess.run([cc, *flags, *sources, "-o", str(tmp_path / "plain")], cwd=REPO, check=True)
    assert _labelled(cc, flags, sources, tmp_path / "labelled", REPO) > 0
    for case in sample_inputs(name):
        assert (run_program([str(tmp_path / "labelled"), str(case)])
                == run_program([str(tmp_path / "plain"), str(case)])), case


# Options gcc accepts that libclang rejects (unknown, unsupported for the target, or fatal to
# the parse: -save-temps, -traditional-cpp, -mfpmath=387, -fdiagnostics-format=json).
GCC_ONLY = ("-fipa-pta", "-flto-partition=none", "-fanalyzer", "-fplan9-extensions",
            "-mindirect-branch=thunk-extern", "-mrecord-mcount", "-mfpmath=387",
            "-fdiagnostics-format=json", "-fsso-struct=big-endian",
            "-specs=/usr/share/dpkg/no-pie-compile.specs", "-Wlogical-op", "-Werror",
            "-pedantic-errors", "-Wp,-MD,prog.d", "-g3", "-gz", "--param=max-inline-insns-auto=5",
            "-v", "-H")
# Not built: they preprocess apart from the compile, where gcc before 13 applies no diagnostic
# pragma to the preprocessor's warnings (ffcc's preamble undefines __BASE_FILE__, an error under
# -Werror), and a traditional preprocessor cannot read label code (its macros stringify).
SEPARATE_PREPROCESSOR = ("-save-temps=obj", "-traditional-cpp")
# Options that decide what libclang reads: macros, includes, language, target, types.
FOR_THE_PARSE = ("-DX=1", "-UY", "-Iinc", "-include", "config.h", "-std=c89", "-ansi", "-O2",
                 "-m32", "-march=x86-64-v3", "-msse4.2", "-mno-avx", "-funsigned-char",
                 "-fms-extensions", "-fgnu89-inline", "-fopenmp", "-fPIC", "-fno-builtin",
                 "-fstack-protector-strong", "-fcf-protection", "-Wp,-D_FORTIFY_SOURCE=2",
                 "-Xclang", "-fno-color-diagnostics", "-x", "c", "-pthread")


def test_libclang_gets_the_options_that_decide_the_code_and_no_other():
    command = parse_command([*GCC_ONLY, *SEPARATE_PREPROCESSOR, *FOR_THE_PARSE, *GCC_CODE, "-c", "prog.c",
                             "-o", "p.o"])
    assert parse_flags(command) == [*FOR_THE_PARSE, "-fcf-protection", "-mtune=generic",
                                    "-fstack-protector-strong", "-Wp,-D_FORTIFY_SOURCE=2"]


@pytest.mark.skipif(not have("gcc"), reason="gcc not installed")
def test_every_option_gcc_accepts_leaves_the_unit_its_labels(tmp_path):
    (tmp_path / "prog.c").write_text(PROGRAM)
    options = [o for o in GCC_ONLY if not o.startswith("-specs=") or Path(o[7:]).is_file()]
    done = ffcc("--cc=gcc", "--mcc", "--labels-required", *options, *GCC_CODE, "-c", "prog.c",
                cwd=tmp_path)
    assert (tmp_path / "prog.o").is_file() and "without labels" not in done.stderr
