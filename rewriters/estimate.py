"""Quick label-count estimate from tree-sitter: no compile flags, no includes, no libclang.

Meant to choose criteria before instrumenting a project (the paper saw from +1% to +100% code
size depending on coding style, Table 2). It counts the same sites as ``annotate`` but cannot see
types or macros, so it assumes every operand is a signed integer that can be guarded; the
numbers are upper-bound-ish estimates, not promises.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tree_sitter_c
from tree_sitter import Language, Node, Parser

from .wm_cor import MUTANTS as COR_MUTANTS
from .wm_ror import HOLDS_ON

_PARSER = Parser(Language(tree_sitter_c.language()))
LOGICAL = {"&&", "||"}
ARITHMETIC = {"+", "-", "*", "/", "%"}
LITERAL_TYPES = {"number_literal", "char_literal"}
SKIPPED_TYPES = {"sizeof_expression", "alignof_expression", "preproc_def",
                 "preproc_function_def", "case_statement"}
# per-site label counts under the assumption above
ROR_PER_SITE = len(HOLDS_ON) - 2  # other operators, minus the always-killed negation
AOR_PER_SITE = 4
ABS_PER_OPERAND = 3
COR_PER_OPERATOR = len(COR_MUTANTS["&&"])


@dataclass(frozen=True)
class Estimate:
    mcc_labels: int
    wm_labels: int
    lines_of_code: int
    labels_per_loc: float


def estimate_file(path: str, mcc_max: int | None = None) -> Estimate:
    source = Path(path).read_bytes()
    tree = _PARSER.parse(source)
    counter = _Counter(mcc_max)
    for node in _function_bodies(tree.root_node):
        counter.visit(node)
    loc = _lines_of_code(tree.root_node, source)
    total = counter.mcc + counter.wm
    return Estimate(counter.mcc, counter.wm, loc, total / loc if loc else 0.0)


def _function_bodies(root: Node) -> list[Node]:
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            found.extend(c for c in node.children if c.type == "compound_statement")
        else:
            stack.extend(node.children)
    return found


def _operator(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return op.type if op is not None else ""


def _strip(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


class _Counter:
    def __init__(self, mcc_max: int | None) -> None:
        self.mcc_max = mcc_max
        self.mcc = 0
        self.wm = 0

    def visit(self, node: Node) -> None:
        stack = [node]
        while stack:
            node = stack.pop()
            if node.type in SKIPPED_TYPES:
                continue
            if node.type == "binary_expression" and _operator(node) in LOGICAL:
                atoms: list[Node] = []
                operators = self._decision(node, atoms)
                self.mcc += self._mcc_labels(len(atoms))
                self.wm += COR_PER_OPERATOR * operators
                stack.extend(atoms)
                continue
            if node.type == "binary_expression":
                self._binary(node)
            stack.extend(node.children)

    def _decision(self, node: Node, atoms: list[Node]) -> int:
        node = _strip(node)
        if node.type == "unary_expression" and _operator(node) == "!":
            return self._decision(node.child_by_field_name("argument"), atoms)
        if node.type == "binary_expression" and _operator(node) in LOGICAL:
            return (1 + self._decision(node.child_by_field_name("left"), atoms)
                    + self._decision(node.child_by_field_name("right"), atoms))
        atoms.append(node)
        return 0

    def _mcc_labels(self, atoms: int) -> int:
        if atoms < 2:
            return 0
        if self.mcc_max is None or atoms <= self.mcc_max:
            return 2 ** atoms
        return (atoms - self.mcc_max + 1) * 2 ** self.mcc_max

    def _binary(self, node: Node) -> None:
        op = _operator(node)
        if op not in HOLDS_ON and op not in ARITHMETIC:
            return
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        if all(_strip(o).type in LITERAL_TYPES for o in operands):
            return
        self.wm += ROR_PER_SITE if op in HOLDS_ON else AOR_PER_SITE
        self.wm += ABS_PER_OPERAND * sum(_strip(o).type not in LITERAL_TYPES for o in operands)


def _lines_of_code(root: Node, source: bytes) -> int:
    """Lines holding at least one token that is not a comment."""
    lines: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0:
            lines.update(range(node.start_point[0], node.end_point[0] + 1))
        stack.extend(node.children)
    return len(lines)
