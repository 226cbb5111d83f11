"""Every command ffcc runs, for each purpose, checked without running it."""

from pathlib import Path

import pytest

from ffcc import runtime
from ffcc.instrument.command_line import parse_command
from ffcc.instrument.plan import (
    LABELLED_CLANG_SCHEDULING,
    LABELLED_GCC_MEMORY,
    RuntimeFiles,
    analysis_argv,
    front_flags,
    labelled_argv,
    link_additions,
    needs_runtime,
    parse_flags,
    plan_compile,
    preprocess_argv,
    project_compile_options,
    project_compiles,
    project_link,
    runtime_build,
    sanitizer_runtime_flags,
)
from ffcc.instrument.toolchain import Backend, BackendKind

RT = RuntimeFiles(core=Path("/rt/ffcc_rt.o"), shared_stub=Path("/rt/stub.o"),
                  fuzzer_main=Path("/rt/libmain.a"), cmplog=Path("/rt/cmplog.o"))
CLANG_BE = Backend("/usr/bin/clang", BackendKind.CLANG)


def plan(argv, backend=CLANG_BE):
    cmd = parse_command(argv)
    return plan_compile(cmd, backend, RT if needs_runtime(cmd, backend) else None)


def test_compile_gets_macros_and_coverage_but_no_runtime():
    argv = plan(["-O2", "-c", "a.c"])
    assert argv[0] == "/usr/bin/clang" and argv[-3:] == ["-O2", "-c", "a.c"]
    assert "-fsanitize-coverage=trace-pc-guard" in argv and "-D__AFL_COMPILER=1" in argv
    assert str(RT.core) not in argv


def test_gcc_uses_trace_pc():
    argv = plan(["-c", "a.c"], Backend("/usr/bin/gcc", BackendKind.GCC))
    assert "-fsanitize-coverage=trace-pc" in argv


def test_labelled_gcc_compiles_collect_garbage_sooner():
    gcc = Backend("/usr/bin/gcc", BackendKind.GCC)
    cmd = parse_command(["-O2", "-c", "a.c"])
    labelled = plan_compile(cmd, gcc, None, labelled=True)
    assert labelled == [*plan_compile(cmd, gcc, None)[:-3], *LABELLED_GCC_MEMORY, "-O2", "-c", "a.c"]
    link = parse_command(["a.o", "-o", "prog"])
    assert not set(LABELLED_GCC_MEMORY) & set(plan_compile(link, gcc, RT, labelled=True))
    objects = [Path("build/obj/a.o")]
    project = parse_command(["a.c", "-o", "build/"])
    assert project_compiles(project, gcc, objects, labelled=True)[0][1:] == [
        *front_flags(project, gcc), *LABELLED_GCC_MEMORY, "-c", "a.c", "-o", "build/obj/a.o"]


def test_labelled_clang_compiles_bound_slp_scheduling_unless_the_command_does():
    cmd = parse_command(["-O2", "-c", "a.c"])
    assert plan_compile(cmd, CLANG_BE, None, labelled=True) == [
        *plan(["-O2", "-c", "a.c"])[:-3], *LABELLED_CLANG_SCHEDULING, "-O2", "-c", "a.c"]
    assert plan_compile(cmd, CLANG_BE, None) == plan(["-O2", "-c", "a.c"])
    own = ["-mllvm", "-slp-schedule-budget=500", "-c", "a.c"]
    assert plan_compile(parse_command(own), CLANG_BE, None, labelled=True) == plan(own)
    link = parse_command(["a.o", "-o", "prog"])
    assert not set(LABELLED_CLANG_SCHEDULING) & set(plan_compile(link, CLANG_BE, RT, labelled=True))


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
    afl = Backend("/usr/bin/afl-clang-fast", BackendKind.FOREIGN)
    argv = plan(["a.c", "-o", "prog"], afl)
    assert not needs_runtime(parse_command(["a.c"]), afl)
    assert not any("fsanitize-coverage" in a for a in argv)
    # afl-clang-fast defines the AFL macros itself; redefining them would warn
    assert "-D__FFCC__=1" in argv and not any(a.startswith("-D__AFL") for a in argv)


def test_libclang_parses_without_outputs_or_dependency_files():
    cmd = parse_command(["-O2", "-MD", "-MF", "a.d", "-Iinc", "-c", "a.c", "-o", "a.o", "-DX"])
    assert parse_flags(cmd) == ["-O2", "-Iinc", "-DX"]
    tuned = parse_command(["--param", "max-inline-insns-auto=50", "--param=ggc-min-expand=30",
                           "-Werror", "-c", "a.c"])
    assert parse_flags(tuned) == []  # --param is an error to libclang, -Werror only diagnostics


def test_labelled_compile_swaps_sources_and_searches_their_directories_first():
    argv = ["/usr/bin/clang", "-Iinc", "-c", "src/a.c", "b.c", "-o", "x.o"]
    assert labelled_argv(argv, {"src/a.c": "/tmp/l/a.c"}) == [
        "/usr/bin/clang", "-iquote", str(Path("src").resolve()),
        "-Iinc", "-c", "/tmp/l/a.c", "b.c", "-o", "x.o"]


def test_project_compiles_each_source_and_links_the_runtime():
    cmd = parse_command(["-O1", "-Wl,--as-needed", "-Iinc", "a.c", "b.c", "-lm", "-o", "build/"])
    objects = [Path("build/obj/a.o"), Path("build/obj/b.o")]
    front = front_flags(cmd, CLANG_BE)
    assert project_compile_options(cmd) == ["-O1", "-Iinc"]
    assert project_compiles(cmd, CLANG_BE, objects) == [
        ["/usr/bin/clang", *front, "-O1", "-Iinc", "-c", "a.c", "-o", "build/obj/a.o"],
        ["/usr/bin/clang", *front, "-O1", "-Iinc", "-c", "b.c", "-o", "build/obj/b.o"]]
    link = project_link(cmd, CLANG_BE, objects, Path("build/a"), RT)
    assert link == ["/usr/bin/clang", "-O1", "-Wl,--as-needed", "-Iinc", "build/obj/a.o",
                    "build/obj/b.o", "-lm", "-o", "build/a", *link_additions(cmd, RT)]
    assert project_link(cmd, CLANG_BE, objects, Path("build/a"), None) == link[:9]


def test_runtime_build_compiles_merges_and_archives():
    work = Path("/cache/w")
    build = runtime_build(Backend("/usr/bin/gcc", BackendKind.GCC), ("-m32",), work)
    flags = ["-std=gnu11", "-O2", "-fPIC", "-g0", "-w"]
    include = ["-I", str(runtime.RUNTIME_DIR)]
    assert build.compiles == (
        ["/usr/bin/gcc", *flags, "-m32", "-DFFCC_EDGE_HASHED", *include, "-c",
         str(runtime.RUNTIME_DIR / "ffcc_map.c"), "-o", "/cache/w/ffcc_map.part.o"],
        ["/usr/bin/gcc", *flags, "-m32", "-DFFCC_EDGE_HASHED", *include, "-c",
         str(runtime.RUNTIME_DIR / "ffcc_forkserver.c"), "-o", "/cache/w/ffcc_forkserver.part.o"],
        ["/usr/bin/gcc", *flags, "-m32", *include, "-c",
         str(runtime.SHARED_STUB), "-o", "/cache/w/ffcc_shared_stub.o"],
        ["/usr/bin/gcc", *flags, "-m32", *include, "-c",
         str(runtime.FUZZER_MAIN), "-o", "/cache/w/ffcc_fuzzer_main.o"],
        ["/usr/bin/gcc", *flags, "-m32", *include, "-c",
         str(runtime.CMPLOG), "-o", "/cache/w/ffcc_cmplog.o"])
    assert build.merge == ["/usr/bin/gcc", "-m32", "-r", "-nostdlib", "-o", "/cache/w/ffcc_rt.o",
                           "/cache/w/ffcc_map.part.o", "/cache/w/ffcc_forkserver.part.o"]
    assert build.archive == ["ar", "rcs", "/cache/w/libffcc_fuzzer_main.a",
                             "/cache/w/ffcc_fuzzer_main.o"]
    assert build.parts == (work / "ffcc_map.part.o", work / "ffcc_forkserver.part.o")
    files = RuntimeFiles.in_dir(work)
    assert str(files.core) in build.merge and str(files.fuzzer_main) in build.archive


def test_clang_runtime_uses_guard_edges():
    build = runtime_build(CLANG_BE, (), Path("/w"))
    assert not any("-DFFCC_EDGE_HASHED" in argv for argv in build.compiles)


def test_analysis_compiles_read_stdin_with_the_units_preprocessor_flags():
    flags = ["-DX=1", "-O0", "-g", "-Wall", "-fsanitize=address", "-Iinc"]
    common = ["/usr/bin/gcc", "-DX=1", "-Iinc", "-O2", "-w", "-fwrapv", "-fno-strict-aliasing",
              "-fno-delete-null-pointer-checks", "-iquote", str(Path("src").resolve())]
    assert analysis_argv("/usr/bin/gcc", flags, "src/a.c", None) == [
        *common, "-S", "-o", "-", "-x", "c", "-"]
    assert analysis_argv("/usr/bin/gcc", flags, "src/a.c", "/tmp/v.o") == [
        *common, "-c", "-o", "/tmp/v.o", "-x", "c", "-"]


def test_macro_expansion_preprocesses_the_marked_copy_to_stdout():
    assert preprocess_argv("/usr/bin/clang", ["-DX", "-Iinc"], "src/a.c", "/tmp/m/a.c") == [
        "/usr/bin/clang", "-E", "-P", "-w", "-x", "c", "-DX", "-Iinc",
        "-iquote", str(Path("src").resolve()), '-D__BASE_FILE__="src/a.c"', "/tmp/m/a.c",
        "-o", "-"]


CLANG_WITH_GCC = Backend("/usr/bin/clang", BackendKind.CLANG, linker="/usr/bin/gcc")


def test_plain_links_go_through_gcc_without_compile_only_options():
    argv = plan(["-O2", "-g", "-std=c89", "-Wcomma", "-Werror", "-fvisibility=hidden", "-Iinc",
                 "-D", "X=1", "-rdynamic", "main.o", "-o", "prog", "-L", "lib", "-lm",
                 "-Wl,--as-needed", "-Xlinker", "-zrelro", "libx.a", "-pthread"], CLANG_WITH_GCC)
    assert argv[:argv.index("libx.a") + 2] == [
        "/usr/bin/gcc", "-rdynamic", "main.o", "-o", "prog", "-L", "lib", "-lm",
        "-Wl,--as-needed", "-Xlinker", "-zrelro", "libx.a", "-pthread"]
    assert argv[argv.index("-pthread") + 1:] == link_additions(parse_command(["a.o"]), RT)


def test_links_that_ask_clang_for_something_keep_its_driver():
    for option in ("-fsanitize=address", "-flto", "-fuse-ld=lld", "--target=aarch64-linux-gnu",
                   "-rtlib=compiler-rt", "-fprofile-instr-generate", "--coverage", "-v", "-gz",
                   "-fopenmp", "-x"):
        assert plan([option, "main.o", "-o", "prog"], CLANG_WITH_GCC)[0] == "/usr/bin/clang", option
    assert plan(["main.c", "-o", "prog"], CLANG_WITH_GCC)[0] == "/usr/bin/clang"  # compiles too
    assert plan(["main.o", "-o", "prog"])[0] == "/usr/bin/clang"  # no gcc beside it
    cmd = parse_command(["-O1", "a.c", "-o", "build/"])
    link = project_link(cmd, CLANG_WITH_GCC, [Path("build/obj/a.o")], Path("build/a"), None)
    assert link == ["/usr/bin/gcc", "build/obj/a.o", "-o", "build/a"]


@pytest.mark.parametrize("args, expected", [
    (["x.c", "-o", "x"], ["-fno-sanitize-link-runtime"]),
    (["-fsanitize=address", "x.c", "-o", "x"], []),
    (["-c", "x.c", "-o", "x.o"], []),
])
def test_clang_links_a_sanitizer_runtime_only_when_asked(args, expected):
    clang = Backend(path="/usr/bin/clang", kind=BackendKind.CLANG)
    assert sanitizer_runtime_flags(parse_command(args), clang) == expected
    gcc = Backend(path="/usr/bin/gcc", kind=BackendKind.GCC)
    assert sanitizer_runtime_flags(parse_command(args), gcc) == []


def test_the_runtime_is_read_as_objects_after_a_users_x():
    forced = link_additions(parse_command(["-x", "c", "t.c", "-o", "t"]), RT)
    assert forced[:3] == ["-x", "none", str(RT.core)]
    assert link_additions(parse_command(["-xc", "t.c", "-o", "t"]), RT)[:2] == ["-x", "none"]
    assert link_additions(parse_command(["t.c", "-o", "t"]), RT)[0] == str(RT.core)
