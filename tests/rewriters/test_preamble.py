"""Precompiled preambles (rewriters/preamble.py): the same annotations, for less parsing."""

from __future__ import annotations

import os
import time

import pytest

from ffcc.rewriters import LabelOptions, annotate
from ffcc.rewriters.operators import WM_DEFAULT
from ffcc.rewriters.preamble import Preambles, preamble_end
from ffcc.rewriters.unit import ParseError, Unit

OPTIONS = LabelOptions(mcc=True, wm_ops=frozenset(WM_DEFAULT))

HEADER = """#ifndef LIMITS_H
#define LIMITS_H
#define LIMIT 10
#define HERE __LINE__
#define WHERE HERE
typedef int count_t;
#include "more.h"
#endif
"""

# The macros of the header (WHERE, through HERE, is __LINE__) decide which labels copy a
# condition: a copy of __LINE__ would take the copy's line.
UNIT = """/* {name}: a unit of the project */
#define UNIT_{name} 1
#include "limits.h"

int {name}(count_t a, int b) {{
  if (a < LIMIT && b > WHERE) return 1;
  while (a > 0 && b != MORE) a -= b;
  return a * b;
}}
"""


def written(path, text: str, age: float = 10.0):
    """``text`` at ``path``, last modified ``age`` seconds ago (a settled header)."""
    path.write_text(text)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.fixture
def project(tmp_path):
    """A header and three units that begin alike but for one macro of their own, and an
    empty cache directory."""
    written(tmp_path / "limits.h", HEADER)
    written(tmp_path / "more.h", "#define MORE 3\n")
    for name in ("first", "second", "third"):
        written(tmp_path / f"{name}.c", UNIT.format(name=name).replace(f"UNIT_{name}", "UNIT"))
    (tmp_path / "cache").mkdir()
    return tmp_path


def annotations(project, names, preamble_dir=None):
    return [annotate(str(project / f"{name}.c"), [], OPTIONS, preamble_dir=preamble_dir)
            for name in names]


def same(found, expected) -> None:
    for one, other in zip(found, expected, strict=True):
        assert (one.text, one.labels, one.headers) == (other.text, other.labels, other.headers)


def precompiled(project) -> list[str]:
    return sorted(name for name in os.listdir(project / "cache") if name.endswith(".pch"))


def test_units_that_begin_alike_share_one_precompiled_preamble(project):
    names = ["first", "second", "third"]
    plain = annotations(project, names)
    assert any("__LINE__" in str(a.labels) or "WHERE" in a.text for a in plain)
    shared = annotations(project, names, str(project / "cache"))
    same(shared, plain)
    assert len(precompiled(project)) == 1  # the second unit precompiled it, the third used it
    unit = Unit(str(project / "third.c"), [], preambles=Preambles(str(project / "cache")))
    assert unit._preamble_macros["WHERE"] == ["HERE", "WHERE"]
    assert str(project / "more.h") in unit.headers


def test_a_macro_of_the_preamble_that_expands_to_line_is_not_copied(project):
    cache = str(project / "cache")
    annotations(project, ["first", "second"], cache)
    third, = annotations(project, ["third"], cache)
    plain, = annotations(project, ["third"])
    assert third.text == plain.text
    assert third.text.count("WHERE") == 1 and third.text.count("LIMIT") > 1


def test_a_changed_header_is_read_again(project):
    cache = str(project / "cache")
    annotations(project, ["first", "second"], cache)
    written(project / "more.h", "#define MORE 3\n#include \"extra.h\"\n", age=5.0)
    written(project / "extra.h", "#define EXTRA 1\n")
    third, = annotations(project, ["third"], cache)
    assert str(project / "extra.h") in third.headers
    same([third], annotations(project, ["third"]))


def test_a_precompiled_preamble_that_is_gone_is_parsed_again(project):
    cache = project / "cache"
    annotations(project, ["first", "second"], str(cache))
    for name in precompiled(project):
        os.remove(cache / name)
    same(annotations(project, ["third"], str(cache)), annotations(project, ["third"]))


def test_a_recently_modified_header_is_not_precompiled(project):
    written(project / "more.h", "#define MORE 3\n", age=0.0)
    annotations(project, ["first", "second"], str(project / "cache"))
    assert precompiled(project) == []


@pytest.mark.parametrize("text", [  # "|" marks the preamble's end
    '#include "a.h"|\nint x;\n',
    '/* c */\n#define A 1 \\\n  + 2\n// c\n#include <b.h>|\nint x;',
    '#ifdef A\n#include "a.h"\n#else\n#define B\n#endif|\nint x;',
    '#include "a.h"|\n#if A\nint x;\n#endif\n',         # a conditional left open
    '#include "a.h"|\n#pragma once\n#include "b.h"\n',  # another directive
    '#include "a.h"|\n#if __LINE__ > 3\n#endif\n',      # its line would change
    '#define HERE __LINE__|\nint x;',                   # read where it is used
    '|int x;\n#include "a.h"\n',
])
def test_the_preamble_is_the_leading_directives(text):
    assert preamble_end(text.replace("|", "").encode()) == text.index("|")


def test_a_changed_system_header_is_read_again(tmp_path):
    """clang checks only the project's headers as it loads a PCH; the stamps kept beside it
    cover the system's too."""
    (tmp_path / "system").mkdir()
    (tmp_path / "cache").mkdir()
    written(tmp_path / "system" / "sys.h", "#define MORE 3\n")
    for name in ("first", "second", "third"):
        written(tmp_path / f"{name}.c", f"#include <sys.h>\nint {name}(int a, int b) "
                "{ return a > 0 && b > MORE; }\n")
    args = ["-isystem", str(tmp_path / "system")]
    for name in ("first", "second"):
        annotate(str(tmp_path / f"{name}.c"), args, OPTIONS, preamble_dir=str(tmp_path / "cache"))
    written(tmp_path / "system" / "sys.h", "#define MORE 3\n#include <extra.h>\n", age=5.0)
    written(tmp_path / "system" / "extra.h", "\n")
    third = annotate(str(tmp_path / "third.c"), args, OPTIONS, preamble_dir=str(tmp_path / "cache"))
    assert str(tmp_path / "system" / "extra.h") in third.headers


def test_a_preamble_whose_headers_just_changed_is_precompiled_once_they_settle(project):
    written(project / "more.h", "#define MORE 3\n", age=0.0)
    cache = str(project / "cache")
    annotations(project, ["first", "second", "third"], cache)
    assert precompiled(project) == []
    for path in [project / "more.h", *(project / "cache").iterdir()]:  # ten seconds later
        status = path.stat()
        os.utime(path, (status.st_atime - 10, status.st_mtime - 10))
    annotations(project, ["second"], cache)
    assert len(precompiled(project)) == 1


def test_a_unit_with_errors_of_its_own_reports_them_as_without(project):
    cache = str(project / "cache")
    annotations(project, ["first", "second"], cache)
    written(project / "broken.c", UNIT.format(name="broken").replace("return 1;", "return 1"))
    with pytest.raises(ParseError) as plain:
        annotations(project, ["broken"])
    with pytest.raises(ParseError) as shared:
        annotations(project, ["broken"], cache)
    assert str(shared.value) == str(plain.value)
