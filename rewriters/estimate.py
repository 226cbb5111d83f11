"""Lines of code of a C file, for ``ffcc --estimate``'s labels per line.

tree-sitter reads the file as it is, without its includes or flags: the count is of the
lines a reader sees holding code (a token that is not a comment), the measure the paper's
labels-per-line figures use, whatever the preprocessor makes of them.
"""

from __future__ import annotations

import tree_sitter_c
from tree_sitter import Language, Node, Parser

_PARSER = Parser(Language(tree_sitter_c.language()))


def lines_of_code(path: str) -> int:
    """Lines of ``path`` holding at least one token that is not a comment."""
    with open(path, "rb") as handle:
        root = _PARSER.parse(handle.read()).root_node
    lines: set[int] = set()
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0:
            lines.update(range(node.start_point[0], node.end_point[0] + 1))
        stack.extend(node.children)
    return len(lines)
