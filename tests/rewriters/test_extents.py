"""Where a unit's nodes are: the main file's read from their extents' raw places
(ops.MainFileExtents) agree with libclang's expansion locations, for every node."""

from __future__ import annotations

from clang.cindex import Cursor

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


def test_main_file_extents_agree_with_expansion_locations(tmp_path):
    (tmp_path / "pieces.h").write_text(HEADER)
    (tmp_path / "late.h").write_text(LATE)
    source = tmp_path / "case.c"
    source.write_text(MAIN)
    unit = Unit(str(source), [])
    extents: MainFileExtents = unit._main_extents
    seen = {"main": 0, "header": 0, "macro": 0}
    for node in _nodes(unit.tu.cursor):
        start, end, file = expansion_extent(node)
        in_main = file is not None and file == unit._main_file
        offsets = extents.offsets(node)
        if offsets is not None:
            assert in_main and offsets == (start, end), node.kind
            seen["main"] += 1
        elif extents.elsewhere(node):
            assert not in_main, node.kind
            seen["header"] += 1
        else:
            seen["macro"] += 1
        assert unit.in_main_file(node) == in_main
    assert all(seen.values()), seen  # each kind of place occurred
    assert [f.spelling for f in unit.functions()] == ["from_macro", "first", "second"]
    # Each invocation written in the main file, none of the header's.
    invocations = [MAIN[s:e] for s, e in zip(unit._macro_starts, unit._macro_ends)]
    assert invocations == ["DECLARE(from_macro)", "TWICE(v)", "TWICE(a)", "LAST(a, b + 1)",
                           "TWICE(b)", "LAST(p.a, p.b)"]
