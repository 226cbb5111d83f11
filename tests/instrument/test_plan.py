"""The backend command for each kind of invocation, checked without running it."""

from pathlib import Path

from ffcc.instrument.command_line import parse_command
from ffcc.instrument.plan import needs_runtime, plan_compile
from ffcc.instrument.runtime_cache import RuntimeFiles
from ffcc.instrument.toolchain import CLANG, FOREIGN, GCC, Backend

RT = RuntimeFiles(core=Path("/rt/ffcc_rt.o"), shared_stub=Path("/rt/stub.o"),
                  fuzzer_main=Path("/rt/libmain.a"))
CLANG_BE = Backend("/usr/bin/clang", CLANG)


def plan(argv, backend=CLANG_BE):
    cmd = parse_command(argv)
    return plan_compile(cmd, backend, RT if needs_runtime(cmd, backend) else None)


def test_compile_gets_macros_and_coverage_but_no_runtime():
    argv = plan(["-O2", "-c", "a.c"])
    assert argv[0] == "/usr/bin/clang" and argv[-3:] == ["-O2", "-c", "a.c"]
    assert "-fsanitize-coverage=trace-pc-guard" in argv and "-D__AFL_COMPILER=1" in argv
    assert str(RT.core) not in argv


def test_gcc_uses_trace_pc():
    argv = plan(["-c", "a.c"], Backend("/usr/bin/gcc", GCC))
    assert "-fsanitize-coverage=trace-pc" in argv


def test_executable_link_appends_runtime_after_user_inputs():
    argv = plan(["main.o", "-o", "prog", "-lm"])
    tail = argv[argv.index("-lm") + 1:]
    assert tail[:2] == [str(RT.core), str(RT.fuzzer_main)]
    assert any(a.startswith("-Wl,--export-dynamic-symbol=__sanitizer_cov_trace_pc") for a in tail)
    assert "-fsanitize-coverage=trace-pc-guard" not in argv  # nothing to compile


def test_shared_objects_get_stubs_and_partial_links_nothing():
    assert plan(["-shared", "a.o", "-o", "x.so"])[-1] == str(RT.shared_stub)
    assert str(RT.core) not in plan(["-r", "a.o", "b.o", "-o", "ab.o"])


def test_queries_pass_through_untouched():
    assert plan(["--version"]) == ["/usr/bin/clang", "--version"]


def test_preprocessing_sees_macros_without_coverage():
    argv = plan(["-E", "a.c"])
    assert "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1" in argv
    assert "-fsanitize-coverage=trace-pc-guard" not in argv


def test_foreign_backend_adds_no_runtime():
    afl = Backend("/usr/bin/afl-clang-fast", FOREIGN)
    argv = plan(["a.c", "-o", "prog"], afl)
    assert not needs_runtime(parse_command(["a.c"]), afl)
    assert not any("fsanitize-coverage" in a for a in argv)
    # afl-clang-fast defines the AFL macros itself; redefining them would warn
    assert "-D__FFCC__=1" in argv and not any(a.startswith("-D__AFL") for a in argv)
