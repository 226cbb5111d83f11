"""Turn the labels of one site into edits, with side effects normalised away.

Labels never re-evaluate original code that has side effects. Two shapes, both plain GNU C
expressions, so no braces or statements have to be added around the site:

Decision ``a && f(x)``: the whole decision becomes a statement expression. Atoms and logical
operands the labels need are captured *as the original evaluates them* into tri-state
temporaries (2 = not evaluated); short-circuiting is kept. Where the original skips the right
operand of a logical node whose value a COR label needs, that operand is evaluated speculatively
instead, only if it cannot fault whatever the program state (``safety``: no call, side effect or
memory read through a pointer) and behind its guards (seed 004 Fig. 8 a/b/c generalised, Fig. 10
guards); MCC labels read only atoms the original evaluated. The labels run after the decision
and read temporaries only; loops re-run them on every evaluation of the condition::

    ({ unsigned char c0 = 2, c1 = 2; int d = ((c0 = !!(a)) ? (c1 = !!(f(x))) : (0));
       { __FFCC_GATE_OPEN(0) __asm__ volatile("" : "+r"(c0)); __asm__ volatile("" : "+r"(c1));
         __FFCC_LABEL(0, (c0 == 1 && c1 == 1)); ... __FFCC_GATE_CLOSE(0) } d; })

Binary expression ``e0 OP e1`` (WM): operands that are plain variables or literals are re-read
for the label; otherwise both are first stored in temporaries, in order. C leaves the order of
``e0`` and ``e1`` to the compiler (gcc evaluates ``count + next()`` call first), so sites.py gives
no labels to a site where that order, or its wrapping in a statement expression, could change
what the program computes (``order_exposed``)::

    ({ __auto_type t0 = (e0); __auto_type t1 = (e1);
       { __FFCC_GATE_OPEN(1) __auto_type o0 = (t0); __auto_type o1 = (t1);
         __asm__ volatile("" : "+r"(o0)); __asm__ volatile("" : "+r"(o1));
         __FFCC_LABEL(3, (KILL(o0, o1))); __FFCC_GATE_CLOSE(1) } t0 OP t1; })

A site's label code (copies, laundering, label statements) is one block between the gate of the
site, numbered in the unit like the sites: the driver may make ``__FFCC_GATE_OPEN(g)`` skip the
block once every label of the site is retired (docs/LABELS.md); the block declares nothing the
site's value reads.

Labels read only opaque values (``opaque``: DESIGN hard rule 3): the captures, which only labels
read, are laundered in place; operands the original also uses are copied, and the copies laundered;
compile-time constants are read as they are. ``label_statements`` is the one place doing this.
"""

from __future__ import annotations

import re
from string import Template

from .edits import EditSet
from .logic import Decision, Logic
from .model import LabelRequest
from .opaque import TEMP, UNKNOWN, copies, launder, promoted
from .sites import Binop
from .unit import Unit

Indexed = list[tuple[int, LabelRequest]]
PLACEHOLDER = re.compile(r"\$\{?([_A-Za-z][_A-Za-z0-9]*)")


def label_statements(labels: Indexed, values: dict[str, str], gate: int,
                     copy_prefix: str | None = None, constant: frozenset[str] = frozenset(),
                     in_memory: frozenset[str] = frozenset()) -> str:
    """``__FFCC_LABEL(i, (PRED));`` for each label, placeholders bound to opaque ``values``,
    in a block behind site ``gate``'s gate.

    This is the one shape every label has: the driver decides what it compiles to (a branch
    to a hit, or a branch-free update of the label's slot; instrument/labels.py), so the
    predicate is one macro argument, parenthesised so that its commas (compound literals,
    builtins) stay inside it.

    Placeholders in ``constant`` are read as they are. The others are laundered in place when
    ``copy_prefix`` is None (label-private integers), else copied to ``<copy_prefix><name>``
    first, so the original keeps its own values; ``in_memory``: placeholders whose values are
    not integers or pointers (``opaque.launder``).
    """
    used = sorted({name for _, request in labels for name in PLACEHOLDER.findall(request.code)}
                  - constant)
    if copy_prefix is None:
        prologue = launder([values[name] for name in used])
    else:
        prologue = copies([(f"{copy_prefix}{name}", values[name]) for name in used],
                          {f"{copy_prefix}{name}" for name in in_memory})
        values = {**values, **{name: f"{copy_prefix}{name}" for name in used}}
    statements = " ".join(
        f"__FFCC_LABEL({index}, ({Template(request.code).substitute(values)}));"
        for index, request in labels
    )
    code = f"{prologue} {statements}" if prologue else statements
    return f"{{ __FFCC_GATE_OPEN({gate}) {code} __FFCC_GATE_CLOSE({gate}) }}"


def rewrite_decision(unit: Unit, edits: EditSet, decision: Decision, labels: Indexed,
                     number: int) -> None:
    tag = f"{number}_"
    needs = frozenset().union(*(request.needs for _, request in labels))
    names = {need: f"__ffcc_{tag}{need}" for need in sorted(needs)}
    result = f"__ffcc_{tag}d"
    declarations = ", ".join(f"{name} = {UNKNOWN}" for name in names.values())
    start, end = unit.span(decision.cursor)
    edits.wrap(start, end,
               f"({{ {TEMP} unsigned char {declarations}; {TEMP} int {result} = ",
               f"; {label_statements(labels, names, number)} {result}; }})")
    for node in decision.logic:
        _rewrite_logic(unit, edits, node, names)
    for atom in decision.atoms:
        name = names.get(f"c{atom.index}")
        if name is not None:
            edits.wrap(*unit.span(atom.cursor), f"({name} = !!(", "))")


def _rewrite_logic(unit: Unit, edits: EditSet, node: Logic, names: dict[str, str]) -> None:
    left_name, right_name = names.get(f"l{node.index}"), names.get(f"r{node.index}")
    if left_name is not None:
        edits.wrap(*unit.span(node.left_cursor), f"({left_name} = !!(", "))")
        edits.wrap(*unit.span(node.right_cursor), f"({right_name} = !!(", "))")
    if right_name is None or not node.right_readable:
        return
    start, end = unit.span(node.cursor)
    operator_at, operator_length = node.operator.offset, node.operator.end - node.operator.offset
    skipped = f"{right_name} = {node.right_speculative}"
    edits.wrap(*unit.span(node.right_cursor), "!!(", ")")
    if node.op == "&&":
        edits.wrap(start, end, "(", f" : ({skipped}, 0))")
        edits.replace(operator_at, operator_length, "?")
    else:
        edits.wrap(start, end, "(", ")")
        edits.replace(operator_at, operator_length, f"? ({skipped}, 1) :")


def rewrite_binop(edits: EditSet, site: Binop, labels: Indexed, number: int) -> None:
    tag = f"{number}_"
    start, end = site.cursor.extent.start.offset, site.cursor.extent.end.offset
    constant = frozenset(name for name, known in zip(("x0", "x1"), site.constant) if known)
    in_memory = frozenset(name for name, register in zip(("x0", "x1"), site.in_register)
                          if not register)
    copy_prefix = f"__ffcc_{tag}o"
    if site.plain:
        values = {"x0": promoted(site.lhs_text, site.bitfield[0]),
                  "x1": promoted(site.rhs_text, site.bitfield[1])}
        statements = label_statements(labels, values, number, copy_prefix, constant, in_memory)
        edits.wrap(start, end, f"({{ {statements} ", "; })")
        return
    first, second = f"__ffcc_{tag}x0", f"__ffcc_{tag}x1"
    promote = tuple("+" if bitfield else "" for bitfield in site.bitfield)
    statements = label_statements(labels, {"x0": first, "x1": second}, number, copy_prefix,
                                  constant, in_memory)
    edits.wrap(start, end, f"({{ {TEMP} __auto_type {first} = ({promote[0]}",
               f"); {statements} {first} {site.op} {second}; }})")
    gap_start, gap_end = site.lhs.extent.end.offset, site.rhs.extent.start.offset
    edits.replace(gap_start, gap_end - gap_start,
                  f"); {TEMP} __auto_type {second} = ({promote[1]}")
