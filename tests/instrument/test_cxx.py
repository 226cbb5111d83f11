"""ffcc++, ffcc's C++ driver: mixed C/C++ programs build, link and behave as g++ builds them;
C++ units get edge coverage and the runtime, never labels (issue 31.3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from forkserver_client import ForkServer
from helpers import have, run_program

from ffcc.instrument.command_line import parse_command
from ffcc.instrument.errors import FfccError
from ffcc.instrument.options import parse_options
from ffcc.instrument.plan import link_argv, runtime_build
from ffcc.instrument.toolchain import (
    CXX_DRIVER,
    Backend,
    BackendKind,
    driver_of,
    partner_name,
    select_backend,
)
from ffcc.runtime.abi import read_label_db

BACKENDS = [b for b in ("gcc", "clang") if have(b) and have("g++" if b == "gcc" else "clang++")]
LABELS = {"plain": "", "labelled": "--mcc --wm"}

LIB_H = """#ifdef __cplusplus
extern "C" {
#endif
int classify(int x);
#ifdef __cplusplus
}
#endif
"""
LIB_C = """#include "lib.h"
int classify(int x) {
  if (x > 10 && x < 100)
    return 2;
  return x < 0;
}
"""
# Reads numbers from the file argv[1]: odd and even numbers below 10 take different paths in
# the C++ code and the same one in classify(), so their maps differ by C++ edges alone.
MAIN_CPP = """#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include "lib.h"
struct Tally {
  std::map<std::string, int> counts;
  void add(const std::string &kind) { ++counts[kind]; }
};
int main(int argc, char **argv) {
  std::ifstream in(argc > 1 ? argv[1] : "/dev/null");
  Tally tally;
  int number;
  while (in >> number) {
    if (number % 2)
      tally.add("odd");
    else
      tally.add("even");
    std::cout << number << " " << classify(number) << "\\n";
  }
  for (const auto &entry : tally.counts)
    std::cout << entry.first << "=" << entry.second << "\\n";
  return tally.counts.size();
}
"""


def write_sources(directory: Path) -> None:
    for name, text in (("lib.h", LIB_H), ("lib.c", LIB_C), ("main.cpp", MAIN_CPP)):
        (directory / name).write_text(text)


def driver(name: str, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([name, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env})
    assert done.returncode == 0, f"{name} {' '.join(args)}:\n{done.stderr}"
    return done


def gnu_build(directory: Path) -> Path:
    """The reference: gcc for C, g++ for C++, nothing added."""
    subprocess.run(["gcc", "-O2", "-c", "lib.c", "-o", "ref-lib.o"], cwd=directory, check=True)
    subprocess.run(["g++", "-O2", "main.cpp", "ref-lib.o", "-o", "ref"], cwd=directory, check=True)
    return directory / "ref"


def ffcc_build(directory: Path, backend: str, labels: str, one_command: bool) -> Path:
    """lib.c by ffcc, main.cpp by ffcc++ (compiled and linked apart, or in one command that
    links the C object), as ``CC=ffcc CXX=ffcc++ make`` builds them."""
    env = {"FFCC_CC": backend, "FFCC_FLAGS": labels}
    driver("ffcc", "-O2", "-c", "lib.c", "-o", "lib.o", cwd=directory, env=env)
    steps: list[tuple[str, ...]]
    if one_command:
        steps = [("-O2", "main.cpp", "lib.o", "-o", "prog")]
    else:
        steps = [("-O2", "-c", "main.cpp", "-o", "main.o"), ("main.o", "lib.o", "-o", "prog")]
    for step in steps:
        assert driver(CXX_DRIVER, *step, cwd=directory, env=env).stderr == ""  # no label warning
    return directory / "prog"


def edges(program: Path, numbers: str, work: Path, env: dict[str, str] | None = None) -> set[int]:
    """The map entries a run of ``program`` on ``numbers`` set."""
    data = work / "input"
    data.write_text(numbers)
    server = ForkServer([str(program), str(data)], env=env)
    try:
        return {i for i, hit in enumerate(server.run().map) if hit}
    finally:
        server.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels", LABELS, ids=LABELS)
@pytest.mark.parametrize("one_command", [False, True], ids=["separate-link", "one-command"])
def test_c_objects_link_into_a_cxx_program_that_behaves_as_gnus(tmp_path, backend, labels,
                                                                 one_command):
    write_sources(tmp_path)
    program = ffcc_build(tmp_path, backend, LABELS[labels], one_command)
    reference = gnu_build(tmp_path)
    for numbers in ("", "3 4 5", "-7 42 1000"):
        (tmp_path / "numbers").write_text(numbers)
        expected = run_program([str(reference), str(tmp_path / "numbers")])
        assert run_program([str(program), str(tmp_path / "numbers")]) == expected
    assert edges(program, "3", tmp_path) != edges(program, "4", tmp_path)  # C++ edges
    if labels == "labelled":  # lib.c's labels, in the database ffcc++'s link wrote
        database = read_label_db(program)
        assert database is not None
        assert {Path(label.file).name for label in database.labels} == {"lib.c"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_form_reads_c_files_as_cxx_without_labels(tmp_path, backend):
    write_sources(tmp_path)
    done = driver(CXX_DRIVER, "--mcc", "--wm", "-o", "build/", "main.cpp", "lib.c", cwd=tmp_path,
                  env={"FFCC_CC": backend})
    assert "ffcc: warning" not in done.stderr and "ffcc++: warning" not in done.stderr
    (tmp_path / "numbers").write_text("3 42")
    reference = gnu_build(tmp_path)
    assert run_program([str(tmp_path / "build" / "main"), str(tmp_path / "numbers")]) == \
        run_program([str(reference), str(tmp_path / "numbers")])


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_library_built_by_ffcc_plus_plus(tmp_path, backend):
    """A C++ shared object gets the weak hooks; its edges land in the map of the program that
    loads it."""
    (tmp_path / "shape.cpp").write_text(
        '#include <string>\nextern "C" int describe(int n) {\n'
        '  std::string s = n > 5 ? "large" : "small";\n  return (int)s.size();\n}\n')
    (tmp_path / "main.cpp").write_text(
        '#include <cstdio>\n#include <fstream>\nextern "C" int describe(int);\n'
        'int main(int, char **argv) {\n  std::ifstream in(argv[1]);\n  int n = 0;\n  in >> n;\n'
        '  std::printf("%d\\n", describe(n));\n}\n')
    env = {"FFCC_CC": backend}
    driver(CXX_DRIVER, "-fPIC", "-shared", "shape.cpp", "-o", "libshape.so", cwd=tmp_path, env=env)
    driver(CXX_DRIVER, "main.cpp", "-L.", "-lshape", "-o", "prog", cwd=tmp_path, env=env)
    library = {"LD_LIBRARY_PATH": str(tmp_path)}
    (tmp_path / "seven").write_text("7")
    assert run_program([str(tmp_path / "prog"), str(tmp_path / "seven")], env=library).stdout == b"5\n"
    program = tmp_path / "prog"
    assert edges(program, "7", tmp_path, library) != edges(program, "1", tmp_path, library)


@pytest.mark.parametrize("backend", BACKENDS)
def test_persistent_mode_macros_link_in_cxx(tmp_path, backend):
    """__AFL_LOOP and __AFL_INIT name the runtime's C symbols from C++ units too."""
    (tmp_path / "loop.cpp").write_text(
        "#include <cstdio>\nint main() {\n  __AFL_INIT();\n  int runs = 0;\n"
        "  while (__AFL_LOOP(1000)) runs++;\n  std::printf(\"%d\\n\", runs);\n}\n")
    driver(CXX_DRIVER, "loop.cpp", "-o", "loop", cwd=tmp_path, env={"FFCC_CC": backend})
    assert run_program([str(tmp_path / "loop")]).stdout == b"1\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_c_driver_compiles_cxx_sources_as_cxx_without_labels(tmp_path, backend):
    """As gcc does with a .cpp file; ffcc++ reads a .c file as C++, as g++ does."""
    (tmp_path / "which.cpp").write_text(
        '#include <cstdio>\nint main() { std::puts(__cplusplus ? "c++" : "c"); }\n')
    (tmp_path / "which.c").write_text(
        '#include <stdio.h>\nint main(void) {\n#ifdef __cplusplus\n  puts("c++");\n#else\n'
        '  puts("c");\n#endif\n}\n')
    env = {"FFCC_CC": backend, "FFCC_FLAGS": "--mcc --wm"}
    done = driver("ffcc", "which.cpp", "-lstdc++", "-o", "from-cpp", cwd=tmp_path, env=env)
    assert done.stderr == "" and read_label_db(tmp_path / "from-cpp") is None  # no labels
    driver(CXX_DRIVER, "-w", "which.c", "-o", "from-c", cwd=tmp_path, env=env)
    for program in ("from-cpp", "from-c"):
        assert run_program([str(tmp_path / program)]).stdout == b"c++\n"


@pytest.fixture
def socket_dir(monkeypatch):
    """A private socket directory, short enough for a socket path (pytest's are not)."""
    directory = Path(tempfile.mkdtemp(prefix="ffcc-test-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(directory))
    monkeypatch.setenv("FFCC_SERVER_IDLE", "5")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("server", [True, False], ids=["server", "in-process"])
def test_each_driver_runs_its_compiler_wherever_the_command_runs(tmp_path, socket_dir, server):
    """ffcc and ffcc++ share the compile server and its forked commands: each runs its own
    compiler (stand-ins that name themselves and their parent), with the server and without."""
    env = {"FFCC_SERVER": "1" if server else "0"}
    for language in ("CC", "CXX"):
        stand_in = tmp_path / f"stand-in-{language}"
        stand_in.write_text(f'#!/bin/sh\necho {language}; tr "\\0" " " < /proc/$PPID/cmdline\n')
        stand_in.chmod(0o755)
        env[f"FFCC_{language}"] = str(stand_in)

    def ran(name: str, language: str) -> bool:
        """Whether ``name`` ran the stand-in of ``language``, in the server."""
        first, parent = driver(name, "-c", "x.c", cwd=tmp_path, env=env).stdout.splitlines()
        assert first == language
        return "ffcc.instrument.server" in parent

    assert ran("ffcc", "CC") == server  # the first command starts the server, if wanted
    assert any(socket_dir.glob("ffcc-*/server-*.sock")) == server
    assert ran(CXX_DRIVER, "CXX") == ran("ffcc", "CC") == ran(CXX_DRIVER, "CXX") == server


def test_installed_beside_ffcc_as_the_same_compiled_client():
    installed = Path(sys.executable).parent
    ffcc_cxx = installed / CXX_DRIVER
    assert ffcc_cxx.read_bytes() == (installed / "ffcc").read_bytes()
    help_text = subprocess.run([ffcc_cxx, "--help"], capture_output=True, text=True).stdout
    assert help_text.startswith("usage: ffcc++ ")
    bad = subprocess.run([ffcc_cxx, "--no-such-option"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("ffcc++: error: unknown option")


# --- the parts, without a compiler -------------------------------------------------------

def test_driver_is_told_by_the_name_run():
    assert driver_of("/usr/local/bin/ffcc++") == driver_of("x86_64-linux-gnu-ffcc++") == "ffcc++"
    assert driver_of("/usr/bin/ffcc") == driver_of("ffcc") == "ffcc"


@pytest.mark.parametrize("c_name, cxx_name", [
    ("clang", "clang++"), ("clang-18", "clang++-18"), ("gcc", "g++"), ("gcc-12", "g++-12"),
    ("x86_64-linux-gnu-gcc-12", "x86_64-linux-gnu-g++-12"), ("cc", "c++"),
    ("afl-clang-fast", "afl-clang-fast++"), ("afl-clang-lto", "afl-clang-lto++"),
    ("afl-gcc-fast", "afl-g++-fast"), ("afl-cc", "afl-c++"),
])
def test_compilers_pair_by_name(c_name, cxx_name):
    assert partner_name(c_name, cxx=True) == partner_name(cxx_name, cxx=True) == cxx_name
    assert partner_name(cxx_name, cxx=False) == partner_name(c_name, cxx=False) == c_name


@pytest.mark.skipif(not (have("clang") and have("clang++")), reason="clang++ not installed")
def test_cxx_backend_is_the_c_compilers_partner_and_keeps_it_for_the_runtime(tmp_path):
    c_backend = select_backend("clang")
    backend = select_backend("clang", cxx=True)
    assert (backend.path, backend.kind) == (shutil.which("clang++"), BackendKind.CLANG)
    assert backend.c_compiler == c_backend.path == c_backend.c_compiler
    if c_backend.linker is not None:  # plain links go through g++ beside clang++
        assert backend.linker == os.path.join(os.path.dirname(c_backend.linker), "g++")
    assert select_backend(None, cxx=True, requested_cxx="clang++").c_compiler == c_backend.path
    build = runtime_build(backend, (), tmp_path)
    assert {argv[0] for argv in (*build.compiles, build.merge)} == {c_backend.path}


def test_cxx_compiler_asked_for_is_named_in_the_error():
    with pytest.raises(FfccError) as raised:
        select_backend(None, cxx=True, requested_cxx="no-such-compiler++")
    assert "--cxx or FFCC_CXX" in str(raised.value)
    assert raised.value.reported_by("ffcc++").startswith("ffcc++: error: compiler")


def test_plain_cxx_links_go_through_the_g_plus_plus_beside_clang_plus_plus():
    backend = Backend("/usr/bin/clang++", BackendKind.CLANG, linker="/usr/bin/g++", c_path="/usr/bin/clang")
    assert link_argv(backend, ["-O2", "a.o", "-o", "prog"]) == ["/usr/bin/g++", "a.o", "-o", "prog"]
    assert link_argv(backend, ["-stdlib=libc++", "a.o"])[0] == "/usr/bin/clang++"
    assert Backend("/usr/bin/g++", BackendKind.GCC).c_compiler == "/usr/bin/g++"


def test_options_pick_the_cxx_compiler():
    assert parse_options(["-c", "a.cpp"], environ={"FFCC_CXX": "g++-12"}).cxx == "g++-12"
    opts = parse_options(["--cxx=clang++", "-c", "a.cpp"], environ={}, driver=CXX_DRIVER)
    assert (opts.cxx, opts.cxx_driver, opts.compiler_args) == ("clang++", True, ["-c", "a.cpp"])


def test_cxx_driver_reads_c_files_as_cxx_unless_told():
    assert [s.language for s in parse_command(["-c", "a.c", "b.h", "c.cpp"], cxx=True).sources] \
        == ["c++", "c++-header", "c++"]
    assert parse_command(["-x", "c", "-c", "a.c"], cxx=True).c_sources[0].path == "a.c"
    assert parse_command(["-c", "-"], cxx=True).sources[0].language == "c++"
    assert parse_command(["-c", "a.cpp"]).sources[0].language == "c++"
    assert not parse_command(["-c", "a.cpp"]).c_sources
