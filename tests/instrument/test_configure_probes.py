"""A build system's probes of the compiler (autoconf's conftest.c, zlib's ztest<pid>.c, CMake's
try_compile projects, Meson's checks) get no labels: configure compiles hundreds and deletes
them; every other file of the same command line keeps its labels."""

from __future__ import annotations

import os

import pytest
from helpers import ffcc, have

from ffcc.instrument.selection import configure_probe
from ffcc.runtime.abi import LABELDB_SECTION, SUMMARY_SUFFIX

PROBE = "int main(int argc, char **argv) {\n  return argc > 1 && argv[1][0] == 'x';\n}\n"


@pytest.mark.parametrize("sources, output, probe", [
    (["conftest.c"], "conftest", True),
    (["build/conftest.c"], "conftest.o", True),
    (["ztest4711.c"], "ztest4711", True),
    (["/p/build/CMakeFiles/CMakeScratch/TryCompile-x1/src.c"], None, True),
    (["/p/build/CMakeFiles/CMakeTmp/CheckSymbolExists.c"], None, True),
    (["/p/build/CMakeFiles/3.25.1/CompilerIdC/CMakeCCompilerId.c"], "a.out", True),
    (["/p/build/meson-private/tmpa1b2/testfile.c"], None, True),
    ([], "conftest", True),
    (["conftest.c", "main.c"], "conftest", False),
    (["my_conftest.c"], "conftest", False),
    (["ztest.c"], None, False),
    ([], "prog", False),
    ([], None, False),
])
def test_what_counts_as_a_probe(sources, output, probe):
    assert configure_probe(sources, output) is probe


@pytest.mark.skipif(not have("gcc"), reason="needs gcc")
def test_a_conftest_program_is_built_without_labels_and_a_real_one_with(tmp_path):
    for name in ("conftest.c", "main.c"):
        (tmp_path / name).write_text(PROBE)
    env = {"FFCC_SERVER": "0", "PATH": os.environ["PATH"]}
    for stem in ("conftest", "main"):
        ffcc("--cc=gcc", "--mcc", "--wm", "-c", f"{stem}.c", "-o", f"{stem}.o", cwd=tmp_path,
             env=env)
        ffcc("--cc=gcc", "--mcc", "--wm", f"{stem}.c", "-o", stem, cwd=tmp_path, env=env)
    assert LABELDB_SECTION.encode() not in (tmp_path / "conftest.o").read_bytes()
    assert not (tmp_path / f"conftest{SUMMARY_SUFFIX}").exists()
    assert LABELDB_SECTION.encode() in (tmp_path / "main.o").read_bytes()
    assert (tmp_path / f"main{SUMMARY_SUFFIX}").exists()
