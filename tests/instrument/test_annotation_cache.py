"""A unit compiled twice (libtool's shared and static objects) is annotated once: the second
compile takes the kept annotation while the source and its headers are unchanged, whatever
its PIC options, unless the unit reads the PIC macros; any change to what the annotation is
made of makes a new one."""

from __future__ import annotations

import json
import os
import time

import pytest
from elftools.elf.elffile import ELFFile
from helpers import ffcc, have

from ffcc.instrument.annotation_cache import ENABLED_ENV, cached_annotation, spells
from ffcc.rewriters import LabelOptions, annotate
from ffcc.runtime.abi import LABELDB_SECTION

HEADER = "#define LIMIT 3\n"
SOURCE = '#include "limit.h"\nint check(int a, int b) {\n  return a > LIMIT && b < 2;\n}\n'
OPTIONS = LabelOptions(mcc=True, wm_ops=frozenset({"ROR"}))


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A source and its header, the cache in a directory of the test's own."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv(ENABLED_ENV, raising=False)
    (tmp_path / "run").mkdir(mode=0o700)
    written(tmp_path / "limit.h", HEADER)
    return written(tmp_path / "check.c", SOURCE)


def written(path, text: str, age: float = 10.0):
    """``path`` with ``text``, last modified ``age`` seconds ago (a file changed within the
    last two seconds is not trusted to show its next change)."""
    path.write_text(text)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def labeldb(obj) -> list[dict]:
    """The object's unit and label records, less the run that compiled it (each of a
    library's two compiles records its own)."""
    with open(obj, "rb") as stream:
        section = ELFFile(stream).get_section_by_name(LABELDB_SECTION)
        lines = section.data().decode().splitlines() if section is not None else []
    return [{key: value for key, value in json.loads(line).items() if key != "compiled"}
            for line in lines]


def annotations(directory) -> list[str]:
    """The annotation entries in the cache's ``directory`` (not the precompiled preambles)."""
    return [name for name in os.listdir(directory) if not name.startswith("preamble-")]


class Counted:
    """``annotate`` of one source, counting its calls."""

    def __init__(self, source, options=OPTIONS) -> None:
        self.source, self.options, self.calls = str(source), options, 0

    def __call__(self, args: list[str]):
        def make(preamble_dir):
            self.calls += 1
            return annotate(self.source, args, self.options, preamble_dir=preamble_dir)
        return cached_annotation(self.source, args, self.options, frozenset(), make)


def test_the_static_compile_takes_the_shared_compiles_annotation(unit):
    annotated = Counted(unit)
    shared = annotated(["-O2", "-fPIC", "-DPIC"])
    static = annotated(["-O2"])
    assert annotated.calls == 1
    assert static.text == shared.text and static.labels == shared.labels
    assert str(unit.parent / "limit.h") in static.headers


def test_a_changed_header_or_option_makes_a_new_annotation(unit):
    annotated = Counted(unit)
    first = annotated(["-O2"])
    written(unit.parent / "limit.h", "#define LIMIT 3 + 1\n", age=5.0)
    second = annotated(["-O2"])
    assert annotated.calls == 2 and second.text == first.text  # the macro is not the unit's text
    annotated(["-O2", "-DEXTRA"])
    assert annotated.calls == 3
    Counted(unit, LabelOptions(mcc=True, wm_ops=frozenset({"AOR"})))(["-O2"])
    assert annotated.calls == 3  # the other options' own counter
    annotated(["-O2"])
    assert annotated.calls == 3


def test_a_unit_that_reads_the_pic_macros_is_annotated_for_each(unit):
    written(unit, SOURCE + "#ifdef PIC\nint shared_only(int c) { return c != 4; }\n#endif\n")
    annotated = Counted(unit)
    shared = annotated(["-fPIC", "-DPIC"])
    static = annotated([])
    assert annotated.calls == 2
    assert "shared_only" in shared.text and len(shared.labels) > len(static.labels)


@pytest.mark.parametrize(("text", "spelled"), [
    (b"PIC", True), (b"#ifdef PIC\n", True), (b"(PIC)", True), (b"x PICK PIC_MODE _PIC", False),
    (b"__PIC__", False), (b"SPIC PIC1 PIC", True), (b"", False)])
def test_a_word_is_spelled_only_as_a_whole_identifier(text, spelled):
    assert spells(text, b"PIC") is spelled


def test_a_unit_just_changed_is_not_kept(unit):
    written(unit, SOURCE, age=0.0)
    annotated = Counted(unit)
    annotated(["-O2"])
    annotated(["-O2"])
    assert annotated.calls == 2


def rewritten_in_the_same_tick(path, text: str) -> None:
    """``path`` with ``text`` (of the same size), its modification time as it was: what a
    rewrite within one tick of the kernel's clock leaves."""
    status = path.stat()
    path.write_text(text)
    assert path.stat().st_size == status.st_size
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_a_header_changed_just_before_the_compile_is_kept_with_its_contents(unit):
    """configure writes config.h a moment before make's first compile: within the two
    seconds a rewrite may not show in its time, so its contents are compared."""
    header = written(unit.parent / "limit.h", HEADER, age=1.0)
    annotated = Counted(unit)
    annotated(["-O2"])
    annotated(["-O2"])
    assert annotated.calls == 1
    rewritten_in_the_same_tick(header, HEADER.replace("3", "4"))
    annotated(["-O2"])
    assert annotated.calls == 2


def test_the_cache_can_be_turned_off(unit, monkeypatch):
    monkeypatch.setenv(ENABLED_ENV, "0")
    annotated = Counted(unit)
    annotated(["-O2"])
    annotated(["-O2"])
    assert annotated.calls == 2
    assert not os.listdir(unit.parent / "run")


@pytest.mark.skipif(not have("gcc"), reason="needs gcc")
def test_both_objects_of_a_library_source_carry_the_same_labels(unit, tmp_path):
    env = {"FFCC_SERVER": "0", "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "PATH": os.environ["PATH"]}
    for name, pic in (("shared.o", ["-fPIC", "-DPIC"]), ("static.o", [])):
        ffcc("--cc=gcc", "--mcc", "--wm", "-O2", *pic, "-c", "check.c", "-o", name,
             cwd=tmp_path, env=env)
    shared, static = (labeldb(tmp_path / name) for name in ("shared.o", "static.o"))
    assert static and static == shared
    kept = os.listdir(next((tmp_path / "run").glob("ffcc-*/annotations-*")))
    assert len([name for name in kept if not name.startswith(("object-", "preamble-"))]) == 1


def test_the_least_recently_used_entries_go_past_the_size_bound(unit, monkeypatch):
    from ffcc.instrument import annotation_cache

    annotated = Counted(unit)
    annotated(["-DFIRST"])
    directory = next((unit.parent / "run").glob("ffcc-*/annotations-*"))
    first, = annotations(directory)
    monkeypatch.setattr(annotation_cache, "KEEP_BYTES", os.path.getsize(directory / first) + 1)
    os.utime(directory / first, (1, 1))  # the less recently used of the two
    monkeypatch.setattr(annotation_cache, "KEEP_SECONDS", 1e12)
    annotated(["-DSECOND"])
    assert first not in annotations(directory) and len(annotations(directory)) == 1
