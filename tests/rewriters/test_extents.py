"""Where a unit's nodes are: the main file's read from their extents' raw places
(ops.MainFileExtents) agree with libclang's expansion locations, for every node; and the C walk
of the top level sorts its nodes as the bindings list them."""

from __future__ import annotations

import pytest
from clang.cindex import Cursor, CursorKind

from ffcc.rewriters import ops
from ffcc.rewriters.ops import MainFileExtents, expansion_extent
from ffcc.rewriters.unit import Unit, children

HEADER = ("#define TWICE(x) ((x) + (x))\n#define DECLARE(name) int name(int v)\n"
          "#define LAST(a, b) (b)\nstatic inline int in_header(int v) { return TWICE(v) > 3; }\n"
          "struct pair { int a, b; };\n")
MAIN = ('#include "pieces.h"\n'
        "DECLARE(from_macro) { return TWICE(v) - 1; }\n"  # a function a macro declares
        "int first(int a, int b) {\n  int s = TWICE(a) * LAST(a, b + 1);\n"
        "  if (a < b && TWICE(b) != 4) s += in_header(a);\n  return s;\n}\n"
        '#include "late.h"\n'  # a header between two functions
        "int second(struct pair p) { return LAST(p.a, p.b) > late(p.a) ? p.a : -p.b; }\n")
LATE = "static int late(int q) { return q % 7; }\n"


def _nodes(cursor: Cursor) -> list[Cursor]:
    found, pending = [], list(children(cursor))
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(children(node))
    return found


@pytest.fixture
def unit(tmp_path) -> Unit:
    (tmp_path / "pieces.h").write_text(HEADER)
    (tmp_path / "late.h").write_text(LATE)
    source = tmp_path / "case.c"
    source.write_text(MAIN)
    return Unit(str(source), [])


def test_main_file_extents_agree_with_expansion_locations(unit):
    extents: MainFileExtents = unit._main_extents
    seen = {"main": 0, "header": 0, "macro": 0}
    for node in _nodes(unit.tu.cursor):
        start, end, file = expansion_extent(node)
        in_main = file is not None and file == unit._main_file
        offsets = extents.offsets(node)
        if offsets is not None:
            assert in_main and offsets == (start, end), node.kind
            seen["main"] += 1
        else:
            seen["macro" if in_main else "header"] += 1
        assert unit.in_main_file(node) == in_main
    assert all(seen.values()), seen  # each kind of place occurred
    assert [f.spelling for f in unit.functions()] == ["from_macro", "first", "second"]
    # Each invocation written in the main file, none of the header's.
    invocations = [MAIN[s:e] for s, e in zip(unit._macro_starts, unit._macro_ends)]
    assert invocations == ["DECLARE(from_macro)", "TWICE(v)", "TWICE(a)", "LAST(a, b + 1)",
                           "TWICE(b)", "LAST(p.a, p.b)"]


@pytest.mark.parametrize("capacity", [None, 1])  # 1: each C function runs again, with room
def test_the_c_walk_sorts_the_top_level_as_the_bindings_list_it(unit, monkeypatch, capacity):
    if capacity is not None:
        monkeypatch.setattr(ops, "_TOP_LEVEL_CAPACITY", capacity)
        monkeypatch.setattr(ops, "_NAME_BYTES", capacity)
    extents: MainFileExtents = unit._main_extents
    top = children(unit.tu.cursor)
    walked = extents.top_level(unit.tu.cursor, Cursor)

    def may_be_main(node: Cursor) -> bool:  # begins in the main file or in a macro expansion
        begin = node.extent.begin_int_data
        return bool(begin & 1 << 31) or extents.offsets(node) is not None or (
            expansion_extent(node)[2] == unit._main_file)

    definitions = [node for node in top if node.kind == CursorKind.MACRO_DEFINITION]
    declarations = [node for node in top if not node.kind.is_preprocessing() and may_be_main(node)]
    spans = [extents.offsets(node) for node in top
             if node.kind == CursorKind.MACRO_INSTANTIATION and extents.offsets(node)]
    assert [bytes(node) for node in walked.definitions] == [bytes(node) for node in definitions]
    assert [bytes(node) for node in walked.declarations] == [bytes(node) for node in declarations]
    assert walked.spans == spans
    assert ops.macro_names(walked.definitions) == [node.spelling for node in definitions]
    assert len(definitions) > 3 and len(declarations) == 3 and len(spans) == 6
