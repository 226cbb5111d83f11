"""A library source compiled twice (libtool's PIC object, then its static one; zlib's the other
way round) is compiled with labels once, as PIC: the second compile gets the first one's object
and dependency file while the unit's inputs and every other option are the same, and compiles
its own otherwise."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from helpers import ffcc, have
from test_annotation_cache import rewritten_in_the_same_tick

from ffcc.instrument.annotation_cache import ENABLED_ENV

HEADER = "#define LIMIT 3\n"
SOURCE = '#include "limit.h"\nint check(int a, int b) {\n  return a > LIMIT && b < 2;\n}\n'
MAIN = ('#include <stdio.h>\nint check(int, int);\n'
        'int main(int argc, char **argv) { printf("%d\\n", check(argc, argv[0][0] & 1)); }\n')
DEPS = ["-MT", "check.lo", "-MD", "-MP", "-MF", "check.Tpo"]
LIBTOOL_PIC = ["-fPIC", "-DPIC"]


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A source and its header written a while ago, the cache in the test's own directory."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("FFCC_SERVER", "0")
    monkeypatch.delenv(ENABLED_ENV, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "run").mkdir(mode=0o700)
    (tmp_path / "tmp").mkdir()
    for name, text in (("limit.h", HEADER), ("check.c", SOURCE), ("main.c", MAIN)):
        written(tmp_path / name, text)
    return tmp_path


def written(path, text: str, age: float = 10.0) -> None:
    """``path`` with ``text``, last modified ``age`` seconds ago."""
    path.write_text(text)
    then = time.time() - age
    os.utime(path, (then, then))


def compiled(tree, output: str, *options: str, cc: str = "clang") -> tuple[bytes, bool]:
    """The object of a labelled compile of check.c with ``options`` (and libtool's -MT, -MD),
    and whether it was the one kept from the unit's earlier compile."""
    done = ffcc(f"--cc={cc}", "--mcc", "--wm", "--ffcc-verbose", "-O2", *DEPS, "-c", "check.c",
                *options, "-o", output, cwd=tree)
    served = "the labelled object kept from the unit's earlier compile" in done.stderr
    assert served == ("check.c: " not in done.stderr), done.stderr  # annotated otherwise
    assert not list((tree / "tmp").iterdir())  # served or not, nothing is left behind
    return (tree / output).read_bytes(), served


def test_the_static_compile_gets_the_pic_compiles_object_and_dependencies(unit):
    shared, _ = compiled(unit, "shared.o", *LIBTOOL_PIC)
    dependencies = (unit / "check.Tpo").read_text()
    (unit / "check.Tpo").unlink()
    static, served = compiled(unit, "static.o")
    assert served and static == shared
    assert (unit / "check.Tpo").read_text() == dependencies
    assert "check.c" in dependencies and "limit.h" in dependencies
    subprocess.run(["ar", "rc", "libcheck.a", "static.o"], cwd=unit, check=True)
    ffcc("--mcc", "--wm", "main.c", "libcheck.a", "-o", "prog", cwd=unit)
    assert subprocess.run([str(unit / "prog")], capture_output=True, text=True).stdout == "0\n"
    summary = (unit / "prog.ffcc-summary.json").read_text()
    assert '"labels": 0' not in summary


def test_the_pic_compile_gets_the_object_of_the_static_compile_before_it(unit):
    """zlib's order: the static compile, compiled as PIC, serves the shared library's."""
    done = ffcc("--mcc", "--wm", "--ffcc-verbose", "-O2", *DEPS, "-c", "check.c", "-o",
                "static.o", cwd=unit)
    assert done.stderr.count(" -fPIC") == 1, done.stderr  # the labelled compile's command
    shared, served = compiled(unit, "shared.o", *LIBTOOL_PIC)
    assert served and shared == (unit / "static.o").read_bytes()


def test_a_compile_that_asks_for_other_code_or_options_compiles_its_own(unit):
    shared, _ = compiled(unit, "shared.o", *LIBTOOL_PIC)
    for options in (["-fno-pic"], ["-DEXTRA"], ["-O1"]):
        other, served = compiled(unit, "other.o", *options)
        assert other != shared and not served, options


def test_pic_objects_with_interposable_functions_are_not_kept(unit):
    """Such PIC code calls global functions through the PLT and never inlines them."""
    interposable = "-fsemantic-interposition"
    compiled(unit, "shared.o", *LIBTOOL_PIC, interposable)
    assert not compiled(unit, "static.o", interposable)[1]
    if have("gcc"):  # gcc's PIC code always is
        compiled(unit, "shared.o", *LIBTOOL_PIC, cc="gcc")
        assert not compiled(unit, "static.o", cc="gcc")[1]


def test_a_changed_header_makes_the_static_compile_its_own(unit):
    compiled(unit, "shared.o", *LIBTOOL_PIC)
    written(unit / "limit.h", "#define LIMIT 4\n", age=5.0)
    assert not compiled(unit, "static.o")[1]


def test_a_header_changed_just_before_is_compared_by_its_contents(unit):
    """zlib's zconf.h, which configure writes a moment before make compiles."""
    written(unit / "limit.h", HEADER, age=1.0)
    compiled(unit, "shared.o", *LIBTOOL_PIC)
    assert compiled(unit, "static.o")[1]
    rewritten_in_the_same_tick(unit / "limit.h", "#define LIMIT 4\n")
    assert not compiled(unit, "static.o")[1]


@pytest.mark.parametrize("reading, as_pic", [
    ("#ifdef PIC\nint shared_only(int c) { return c != 4; }\n#endif\n", True),
    ("#ifdef __PIE__\nint pie_only(int c) { return c != 4; }\n#endif\n", False),
    ('const char *built(void) { return __DATE__ " " __TIME__; }\n', False)])
def test_a_unit_whose_code_follows_the_pic_or_clock_macros_compiles_each_object(
        unit, reading, as_pic):
    """``as_pic``: compiling the unit as PIC leaves its code as asked, so it is."""
    written(unit / "check.c", SOURCE + reading)
    compiled(unit, "shared.o", *LIBTOOL_PIC)
    assert not compiled(unit, "static.o")[1]
    done = ffcc("--mcc", "--wm", "--ffcc-verbose", "-c", "check.c", "-o", "own.o", cwd=unit)
    assert (" -fPIC" in done.stderr) == as_pic, done.stderr


def test_a_unit_whose_headers_spell_pic_but_whose_code_does_not_change_is_compiled_once(unit):
    """xz's liblzma: a header every unit includes defines a macro differently under PIC, and
    this unit does not use it; in either order, one compile serves the other."""
    written(unit / "limit.h", HEADER + "#ifdef PIC\n#define VERSIONED(name) name\n#endif\n")
    shared, _ = compiled(unit, "shared.o", *LIBTOOL_PIC)
    static, served = compiled(unit, "static.o")
    assert served and static == shared
    written(unit / "check.c", SOURCE + "/* the static compile first */\n")
    static, _ = compiled(unit, "static.o")
    shared, served = compiled(unit, "shared.o", *LIBTOOL_PIC)
    assert served and static == shared


def test_dependency_targets_named_after_the_output_are_not_kept(unit):
    for output, options in (("shared.o", LIBTOOL_PIC), ("static.o", [])):
        done = ffcc("--mcc", "--wm", "--ffcc-verbose", "-MD", "-c", "check.c", *options,
                    "-o", output, cwd=unit)
        assert "earlier compile" not in done.stderr
    assert (unit / "static.d").read_text().startswith("static.o:")


def test_an_output_that_cannot_be_written_gets_the_compilers_own_error(unit):
    compiled(unit, "shared.o", *LIBTOOL_PIC)
    done = ffcc("--mcc", "--wm", "-O2", *DEPS, "-c", "check.c", "-o", "missing/static.o",
                cwd=unit, check=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "missing/static.o" in done.stderr, done.stderr


def test_compiles_writing_serialized_diagnostics_are_not_kept(unit):
    """Each writes its own file, which the preprocessor run for a kept object would too; and
    libclang, which cannot parse with the option, does not get it."""
    for output, options in (("shared", LIBTOOL_PIC), ("static", [])):
        done = ffcc("--mcc", "--wm", "--ffcc-verbose", *DEPS, "-c", "check.c", *options,
                    "--serialize-diagnostics", f"{output}.dia", "-o", f"{output}.o", cwd=unit)
        speculated = done.stderr.rstrip().endswith(" -fPIC")  # Keeping.argv's addition
        assert "earlier compile" not in done.stderr and not speculated, done.stderr
        assert (unit / f"{output}.dia").exists() and "labels" in done.stderr
