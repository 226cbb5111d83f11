"""Quick label-count estimate from tree-sitter: no compile flags, no includes, no libclang.

Meant to choose criteria before instrumenting a project (the paper saw from +1% to +100% code
size depending on coding style, Table 2). It counts the same sites as ``annotate`` but cannot see
types or macros, so it assumes every operand is a signed integer that can be guarded (so
``++``/``--``, whose integer mutants are never labels, count nothing); the numbers are
upper-bound-ish estimates, not promises. It counts the operator groups a
``LabelOptions`` asks for, MCC combinations as mcc.py makes them (evaluation.py), with its bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tree_sitter_c
from tree_sitter import Language, Node, Parser

from .evaluation import combination_count, flow_of
from .model import LabelOptions
from .operators import (
    ABS,
    AOR,
    ARITHMETIC,
    ASR,
    BITWISE,
    BOR,
    COR,
    LOGICAL,
    RELATIONAL,
    ROR,
    SHIFT,
    UOD,
    WM_GROUPS,
    by_original,
)

_PARSER = Parser(Language(tree_sitter_c.language()))
LITERAL_TYPES = {"number_literal", "char_literal"}
SKIPPED_TYPES = {"sizeof_expression", "alignof_expression", "preproc_def",
                 "preproc_function_def", "case_statement"}
EVERYTHING = LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS))
# per-site label counts under the assumption above
ROR_PER_SITE = sum(m.kill is not None for m in by_original(ROR)["<"])  # not the negation
AOR_PER_SITE = len(by_original(AOR)["+"])
ABS_PER_OPERAND = len(ABS)
COR_PER_OPERATOR = len(by_original(COR)["&&"])
BOR_PER_SITE = {op: len(mutants) for op, mutants in by_original(BOR).items()}
ASR_PER_SITE = {op: len(mutants) for op, mutants in by_original(ASR).items()}
UOD_PER_SITE = len(UOD)
ARITHMETIC_ASSIGNMENTS = frozenset(f"{op}=" for op in ARITHMETIC)


@dataclass(frozen=True)
class Estimate:
    mcc_labels: int
    wm_labels: int
    lines_of_code: int
    labels_per_loc: float


def estimate_file(path: str, options: LabelOptions = EVERYTHING) -> Estimate:
    """Labels of the groups ``options`` asks for (default: every group, MCC's default bound)."""
    source = Path(path).read_bytes()
    tree = _PARSER.parse(source)
    counter = _Counter(options)
    for node in _function_bodies(tree.root_node):
        counter.visit(node)
    loc = _lines_of_code(tree.root_node, source)
    total = counter.mcc + counter.wm
    return Estimate(counter.mcc, counter.wm, loc, total / loc if loc else 0.0)


def _function_bodies(root: Node) -> list[Node]:
    found: list[Node] = []
    stack = [root]
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


def _field(node: Node, name: str) -> Node:
    """A child the C grammar gives every node of this type."""
    child = node.child_by_field_name(name)
    if child is None:
        raise ValueError(f"tree-sitter {node.type} without {name}")
    return child


def _strip(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _shape(node: Node) -> tuple[str, tuple[Node, ...]]:
    """A decision node as evaluation.flow_of reads it (the same nodes as logic.py's)."""
    node = _strip(node)
    if node.type == "unary_expression" and _operator(node) == "!":
        return "!", (_field(node, "argument"),)
    if node.type == "binary_expression" and _operator(node) in LOGICAL:
        return _operator(node), (_field(node, "left"), _field(node, "right"))
    return "atom", ()


def _atoms(decision: Node) -> list[Node]:
    """A decision's atoms, left to right."""
    kind, parts = _shape(decision)
    return [_strip(decision)] if kind == "atom" else [a for part in parts for a in _atoms(part)]


class _Counter:
    def __init__(self, options: LabelOptions) -> None:
        self.options = options
        groups = options.wm_ops
        self.ror_per_site = ROR_PER_SITE if "ROR" in groups else 0
        self.aor_per_site = AOR_PER_SITE if "AOR" in groups else 0
        self.abs_per_operand = ABS_PER_OPERAND if "ABS" in groups else 0
        self.cor_per_operator = COR_PER_OPERATOR if "COR" in groups else 0
        self.bor = "BOR" in groups
        self.asr = "ASR" in groups
        self.uod_per_site = UOD_PER_SITE if "UOD" in groups else 0
        self.mcc = 0
        self.wm = 0

    def visit(self, node: Node) -> None:
        stack = [node]
        while stack:
            node = stack.pop()
            if node.type in SKIPPED_TYPES:
                continue
            if node.type == "binary_expression" and _operator(node) in LOGICAL:
                atoms = _atoms(node)
                self.mcc += self._mcc_labels(node, len(atoms))
                self.wm += self.cor_per_operator * (len(atoms) - 1)  # one per && or ||
                stack.extend(atoms)
                continue
            if node.type == "binary_expression":
                self._binary(node)
            elif node.type == "assignment_expression":
                self._assignment(node)
            elif node.type == "unary_expression" and _operator(node) == "-":
                self._negation(node)
            stack.extend(node.children)

    def _mcc_labels(self, decision: Node, atoms: int) -> int:
        if not self.options.mcc or atoms < self.options.mcc_min_atoms:
            return 0
        return combination_count(flow_of(decision, _shape), self.options.mcc_max)

    def _binary(self, node: Node) -> None:
        op = _operator(node)
        operands = [_field(node, "left"), _field(node, "right")]
        if all(_literal(o) for o in operands):
            return
        if op in BITWISE + SHIFT:
            self.wm += BOR_PER_SITE[op] if self.bor else 0
            return
        if op not in RELATIONAL and op not in ARITHMETIC:
            return
        self.wm += self.ror_per_site if op in RELATIONAL else self.aor_per_site
        self.wm += self.abs_per_operand * sum(not _literal(o) for o in operands)

    def _assignment(self, node: Node) -> None:
        op = _operator(node)
        if op not in ASR_PER_SITE:
            return  # plain =
        self.wm += ASR_PER_SITE[op] if self.asr else 0
        if op in ARITHMETIC_ASSIGNMENTS and not _literal(_field(node, "right")):
            self.wm += self.abs_per_operand

    def _negation(self, node: Node) -> None:
        if not _literal(_field(node, "argument")):
            self.wm += self.uod_per_site + self.abs_per_operand


def _literal(node: Node) -> bool:
    return _strip(node).type in LITERAL_TYPES


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
