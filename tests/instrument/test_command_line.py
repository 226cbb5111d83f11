"""Classifying gcc/clang command lines the way build systems write them."""

import pytest

from ffcc.instrument.command_line import Mode, parse_command


@pytest.mark.parametrize("argv, mode", [
    (["--version"], Mode.QUERY),
    (["-print-prog-name=ld"], Mode.QUERY),
    (["-v"], Mode.QUERY),
    (["-E", "a.c"], Mode.PREPROCESS),
    (["-dM", "-E", "-x", "c", "-"], Mode.PREPROCESS),
    (["-MM", "a.c"], Mode.PREPROCESS),
    (["-###", "-c", "a.c"], Mode.PREPROCESS),
    (["-MD", "-MF", "a.d", "-c", "a.c"], Mode.COMPILE),
    (["-S", "a.c"], Mode.ASSEMBLY),
    (["-c", "a.c", "-o", "a.o"], Mode.COMPILE),
    (["a.o", "b.o", "-o", "prog"], Mode.LINK),
    (["a.c", "-lm"], Mode.LINK),
    (["-shared", "-fPIC", "a.o", "-o", "liba.so"], Mode.LINK),
])
def test_modes(argv, mode):
    assert parse_command(argv).mode is mode


def test_inputs_outputs_and_link_kind():
    cmd = parse_command(["-O2", "-I", "inc", "-Iinc2", "-DX=1", "-c", "src/a.c", "-o", "obj/a.o"])
    assert [s.path for s in cmd.sources] == ["src/a.c"] and cmd.output == "obj/a.o"
    assert cmd.options == ["-O2", "-I", "inc", "-Iinc2", "-DX=1", "-c"]
    link = parse_command(["-o", "prog", "main.o", "libz.a", "-L.", "-lz", "-lm"])
    assert link.builds_loadable and link.linker_inputs == ["main.o", "libz.a", "-lz", "-lm"]
    shared = parse_command(["-shared", "a.o", "-o", "x.so"])
    assert shared.shared and shared.builds_loadable
    relocatable = parse_command(["-r", "a.o", "b.o", "-o", "ab.o"])
    assert relocatable.relocatable and not relocatable.builds_loadable
    assert parse_command(["-nostdlib", "a.o"]).no_stdlib


def test_language_follows_x_and_extensions():
    cmd = parse_command(["-x", "c", "conftest.txt", "-x", "none", "b.S", "c.cpp", "d.c"])
    assert [(s.path, s.language) for s in cmd.sources] == [
        ("conftest.txt", "c"), ("b.S", "asm"), ("c.cpp", "c++"), ("d.c", "c")]
    assert [s.path for s in cmd.c_sources] == ["conftest.txt", "d.c"]


def test_separate_values_are_not_inputs():
    cmd = parse_command(["-include", "config.h", "-MF", "dep.d", "-MT", "t.o", "-Xlinker",
                         "--no-undefined", "-c", "a.c"])
    assert [s.path for s in cmd.sources] == ["a.c"] and cmd.linker_inputs == []
    assert parse_command(["-m32", "a.c"]).arch_flags == ("-m32",)
