"""Turn the labels of one site into edits, with side effects normalised away.

Labels never re-evaluate original code that has side effects. The shapes are plain GNU C
expressions, so no braces or statements have to be added around the site. A site's
temporaries are elements of its function's frame (frame.py: arrays declared at the top of the
function body, reused by the next full expression), so that at -O0 a label-dense function's
stack frame grows with its most label-dense full expression, not with all its sites; a site
without a frame (frame.py says where) declares them itself, in a statement expression. Label
code is a void statement expression joined to the site by the comma operator: a statement
expression with a value takes a stack slot of its own under clang at -O0.

Decision ``a && f(x)``: atoms and logical operands the labels need are captured *as the
original evaluates them* into tri-state temporaries (2 = not evaluated), and so is the
decision's value; short-circuiting is kept. Logical operands are captured as ``!!`` values, not
in ``?:`` arms, which at -O0 are blocks of their own (coverage edges of label code); the
decision's value is stored in the arms of its own branch: as a ``!!`` value it would be a phi,
which clang at -O0 keeps in a stack slot of its own for the whole function. Where the original
skips the right operand of a logical node whose value a COR label needs, that operand is
evaluated speculatively instead, only if it cannot fault whatever the program state
(``safety``: no call, side effect or memory read through a pointer) and behind its guards (seed
004 Fig. 8 a/b/c generalised, Fig. 10 guards); MCC labels read only atoms the original
evaluated. The labels run after the decision and read temporaries only; loops re-run them on
every evaluation of the condition::

    (t[0] = 2, t[1] = 2, ((t[0] = !!(a)) && (t[1] = !!(f(x)))) ? (t[2] = 1) : (t[2] = 0),
     ({ { __FFCC_GATE_OPEN(0) __asm__ volatile("" : "+r"(t[0])); ...
          __FFCC_LABEL(0, ((t[0] == 1) & (t[1] == 1))); ... __FFCC_GATE_CLOSE(0) } }),
     (int)t[2])

Binary expression ``e0 OP e1`` (WM): an operand the labels may evaluate again (a variable, a
constant, a read of memory the program reads right after: sites.py) is copied for them in the
label block; an operand with side effects is captured as the program evaluates it, and the
program's operator reads the capture. C leaves the order of ``e0`` and ``e1`` to the compiler
(gcc evaluates ``count + next()`` call first), so sites.py gives no labels to a site where that
order, or capturing one operand before the other, could change what the program computes
(``order_exposed``)::

    (({ { __FFCC_GATE_OPEN(1) u[0] = (e0); u[1] = (e1); __asm__ volatile("" : "+r"(u[0])); ...
          __FFCC_LABEL(3, (KILL(u[0], u[1]))); __FFCC_GATE_CLOSE(1) } }), e0 OP e1)
    (v[0] = (f()), ({ { ... u[0] = (v[0]); u[1] = (e1); ... } }), v[0]) OP e1
    (v[0] = (f()), v[1] = (g()), ({ { ... } }), v[0] OP v[1])

A site's label code (copies, laundering, label statements) is one block between the gate of the
site, numbered in the unit like the sites: the driver may make ``__FFCC_GATE_OPEN(g)`` skip the
block once every label of the site is retired (docs/LABELS.md); the block sets nothing the
site's value reads.

Labels read only opaque values (``opaque``: docs/DESIGN.md, rule 3): the captures, which only labels
read, are laundered in place; operands the original also uses are copied, and the copies laundered
(a value only comparison groups read, by the driver's ``__FFCC_LAUNDER_COMPARED``: nothing where
a group is one asm statement, whose operands the compiler cannot see through anyway);
compile-time constants are read as they are. ``label_statements`` is the one place doing this.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from string import Template

from .edits import EditSet
from .frame import FLOAT_RANK, TRI_STATE, Slots, value_spelling
from .logic import Decision, Logic
from .model import ARITHMETIC_NAMES, LabelRequest
from .opaque import (
    HELD,
    HELD_VALUES,
    TEMP,
    UNKNOWN,
    Speculation,
    copies,
    held_region,
    launder,
    promoted,
)
from .safety import is_bitfield_ref
from .sites import Binop
from .unit import Unit

Indexed = list[tuple[int, LabelRequest]]
EQUALITY = frozenset({"==", "!="})
PLACEHOLDER = re.compile(r"\$\{?([_A-Za-z][_A-Za-z0-9]*)")


def used_values(labels: Indexed, constant: frozenset[str] = frozenset()) -> list[str]:
    """The placeholders of values the labels read, constants left out, in order."""
    return sorted(_placeholders(labels) - constant - HELD.keys())


def used_scratch(labels: Indexed) -> list[str]:
    """The scratch objects (``opaque.HELD``) the labels use, in declaration order."""
    found = _placeholders(labels)
    return [name for name in HELD if name in found]


def _placeholders(labels: Indexed) -> set[str]:
    texts = [request.code for _, request in labels]
    shared = _held(labels)
    if shared:
        texts.append(held_region(shared))
    return {name for text in texts for name in PLACEHOLDER.findall(text)}


def _held(labels: Indexed) -> tuple[tuple[str, str], ...]:
    """The floating values the labels compare, each once, in the order they first ask for
    them (``LabelRequest.held``): computed in one region for the site."""
    return tuple(dict.fromkeys(pair for _, request in labels for pair in request.held))


def label_statements(labels: Indexed, values: dict[str, str], gate: int,
                     copy_prefix: str | None = None, constant: frozenset[str] = frozenset(),
                     in_memory: frozenset[str] = frozenset(),
                     slots: dict[str, str] | None = None,
                     scratch: dict[str, str] | None = None) -> str:
    """``__FFCC_LABEL(i, (PRED));`` for each label (in groups: ``_statements``), placeholders
    bound to opaque ``values``, in a block behind site ``gate``'s gate.

    This is the one shape every label has: the driver decides what it compiles to (a branch
    to a hit, or a branch-free update of the label's slot; instrument/labels.py), so the
    predicate is one macro argument, parenthesised so that its commas (compound literals,
    builtins) stay inside it.

    Placeholders in ``constant`` are read as they are. The others are laundered in place when
    ``copy_prefix`` is None (label-private integers), else copied first, so the original keeps
    its own values: to the frame element ``slots`` names for it, else to a variable
    ``<copy_prefix><name>``; ``in_memory``: placeholders whose values are not integers or
    pointers (``opaque.launder``). The labels' scratch objects (``opaque.HELD``) are the frame
    elements ``scratch`` names, else variables declared here, shared by the site's labels.
    """
    used = used_values(labels, constant)
    compared = _compared_only(labels)
    if copy_prefix is None:
        prologue = launder([values[name] for name in used],
                           compared={values[name] for name in used if name in compared})
    else:
        slots = slots or {}
        targets = {name: slots.get(name) or f"{copy_prefix}{name}" for name in used}
        prologue = copies([(targets[name], values[name]) for name in used],
                          {targets[name] for name in used if name in in_memory},
                          {slots[name] for name in used if name in slots},
                          {targets[name] for name in used if name in compared})
        values = {**values, **targets}
    if scratch is None:
        scratch = {name: f"__ffcc_{gate}_{name}" for name in used_scratch(labels)}
        declared = " ".join(
            f"{TEMP} {Template(HELD[name]).substitute({**values, **scratch})} {scratch[name]};"
            for name in scratch)
        prologue = f"{prologue} {declared}" if declared else prologue
    values = {**values, **scratch}
    statements = " ".join(_statements(labels, values))
    code = f"{prologue} {statements}" if prologue else statements
    return f"{{ __FFCC_GATE_OPEN({gate}) {code} __FFCC_GATE_CLOSE({gate}) }}"


def _compared_only(labels: Indexed) -> set[str]:
    """The placeholders that only comparison groups read (``_statements``: two or more labels
    comparing the same two operands), which need no laundering where a group is one asm
    statement (``opaque.COMPARED_LAUNDER``)."""
    pairs = Counter(_pair(request) for _, request in labels)
    grouped: set[str] = set()
    elsewhere: set[str] = set()
    for _, request in labels:
        pair = _pair(request)
        readers = grouped if pair is not None and pairs[pair] >= 2 else elsewhere
        readers.update(PLACEHOLDER.findall(request.code))
    return grouped - elsewhere


def _pair(request: LabelRequest) -> tuple[str, str] | None:
    """The operands a relational label compares, None for another label."""
    return None if request.relation is None else (request.relation[0], request.relation[2])


RELATION_NAMES = {"<": "LT", "<=": "LE", ">": "GT", ">=": "GE", "==": "EQ", "!=": "NE"}


# At most this many labels in one __FFCC_COUNTS: each predicate's value is a register operand
# of the group's asm statement, and x86-64 leaves 13 registers to them at -O0 (frame pointer,
# stack pointer and the count's scratch register taken), some of which computing the next
# predicate needs.
COUNTS_PER_GROUP = 6


@dataclass(frozen=True)
class _Single:
    """A label outside any comparison group."""

    index: int
    predicate: str

    @property
    def statement(self) -> str:
        return f"__FFCC_LABEL({self.index}, ({self.predicate}));"


def _statements(labels: Indexed, values: dict[str, str]) -> list[str]:
    """The label statements, in order, in groups the driver may compile as one asm statement
    each (instrument/labels.py: a label statement costs the compiler about as much as a line of
    C, a group of several labels little more than one):

    * labels that compare the same two values (``LabelRequest.relation``: ROR, ABS and UOD at a
      site ask up to ten such questions of its two operands): one
      ``__FFCC_COMPARE((a), (b), ASKED, STATEMENTS);`` where the first label of the group was,
      ASKED ``__FFCC_CMP_LT(i)`` ... per label;
    * the AOR labels of a site whose values the driver may compute (``LabelRequest.arithmetic``):
      one ``__FFCC_ARITH((a), (b), ASKED, STATEMENTS);``, ASKED ``__FFCC_AOR(ADD, DIV, i)`` ...
      per label, a group of one too: the driver's arithmetic costs the compiler less than the
      label's C predicate;
    * runs of the site's other labels, up to COUNTS_PER_GROUP at a time: one
      ``__FFCC_COUNTS(ASKED, STATEMENTS, __FFCC_HIT(i, (PRED)), ...);``, ASKED ``__FFCC_CNT(i)``
      per label.

    STATEMENTS are the labels' own statements, which is what the driver compiles where it
    does not compile a group as one. Before them all, the floating values the labels compare
    (``LabelRequest.held``), computed in one region with the environment held."""
    shared = _held(labels)
    region = [Template(held_region(shared)).substitute(values)] if shared else []
    items: list[_Single | _Group] = []
    groups: dict[tuple[str, str, str], _Group] = {}
    for index, request in labels:
        single = _Single(index, Template(request.code).substitute(values))
        grouped = _grouped(index, request, values)
        if grouped is None:
            items.append(single)
            continue
        key, asked = grouped
        if key not in groups:
            groups[key] = _Group(*key)
            items.append(groups[key])
        groups[key].labels.append((asked, single.statement))
    out: list[str] = []
    run: list[_Single] = []
    for item in items:
        if isinstance(item, _Single):
            run.append(item)
            continue
        out += _counts(run)
        run = []
        out.append(item.statement)
    return region + out + _counts(run)


@dataclass
class _Group:
    """Labels one asm statement may compute: ``macro`` (``__FFCC_COMPARE`` or
    ``__FFCC_ARITH``) of the two values ``left`` and ``right``, and each label's ASKED text
    and own statement."""

    macro: str
    left: str
    right: str
    labels: list[tuple[str, str]] = field(default_factory=list)

    @property
    def statement(self) -> str:
        if self.macro == "__FFCC_COMPARE" and len(self.labels) == 1:
            return self.labels[0][1]  # one comparison costs no more as its own statement
        asked = " ".join(text for text, _ in self.labels)
        statements = " ".join(statement for _, statement in self.labels)
        return f"{self.macro}(({self.left}), ({self.right}), {asked}, {statements});"


def _grouped(index: int, request: LabelRequest, values: dict[str, str]
             ) -> tuple[tuple[str, str, str], str] | None:
    """The group label ``index`` joins, as (macro, left value, right value), and its ASKED
    text; None for a label of no group."""
    if request.relation is not None:
        left, op, right = request.relation
        key = ("__FFCC_COMPARE", Template(left).substitute(values),
               Template(right).substitute(values))
        return key, f"__FFCC_CMP_{RELATION_NAMES[op]}({index})"
    if request.arithmetic is not None:
        original, mutant = (ARITHMETIC_NAMES[op] for op in request.arithmetic)
        key = ("__FFCC_ARITH", Template("$x0").substitute(values),
               Template("$x1").substitute(values))
        return key, f"__FFCC_AOR({original}, {mutant}, {index})"
    return None


def _counts(run: list[_Single]) -> list[str]:
    """A run of labels in __FFCC_COUNTS groups of at most COUNTS_PER_GROUP, as even as may be."""
    if not run:
        return []
    groups = -(-len(run) // COUNTS_PER_GROUP)
    size = -(-len(run) // groups)
    out = []
    for start in range(0, len(run), size):
        group = run[start:start + size]
        if len(group) == 1:
            out.append(group[0].statement)
            continue
        asked = " ".join(f"__FFCC_CNT({label.index})" for label in group)
        own = " ".join(label.statement for label in group)
        hits = ", ".join(f"__FFCC_HIT({label.index}, ({label.predicate}))" for label in group)
        out.append(f"__FFCC_COUNTS({asked}, {own}, {hits});")
    return out


def rewrite_decision(unit: Unit, edits: EditSet, decision: Decision, labels: Indexed,
                     number: int, slots: Slots | None = None) -> None:
    tag = f"{number}_"
    needs = frozenset().union(*(request.needs for _, request in labels))
    start, end = unit.span(decision.cursor)
    if slots is None:
        names = {need: f"__ffcc_{tag}{need}" for need in sorted(needs)}
        result = f"__ffcc_{tag}d"
        declarations = ", ".join(f"{name} = {UNKNOWN}" for name in names.values())
        edits.wrap(start, end,
                   f"({{ {TEMP} unsigned char {declarations}; {TEMP} int {result} = ",
                   f"; {label_statements(labels, names, number)} {result}; }})")
    else:
        names = {need: slots.take(TRI_STATE) for need in sorted(needs)}
        result = slots.take(TRI_STATE)
        resets = "".join(f"{name} = {UNKNOWN}, " for name in names.values())
        edits.wrap(start, end, f"({resets}(",
                   f") ? ({result} = 1) : ({result} = 0), "
                   f"({{ {label_statements(labels, names, number)} }}), (int){result})")
    for node in decision.logic:
        _rewrite_logic(unit, edits, node, names, slots)
    for atom in decision.atoms:
        name = names.get(f"c{atom.index}")
        if name is not None:
            edits.wrap(*unit.span(atom.cursor), f"({name} = !!(", "))")


def _rewrite_logic(unit: Unit, edits: EditSet, node: Logic, names: dict[str, str],
                   slots: Slots | None) -> None:
    left_name, right_name = names.get(f"l{node.index}"), names.get(f"r{node.index}")
    if left_name is not None:
        edits.wrap(*unit.span(node.left_cursor), f"({left_name} = !!(", "))")
        edits.wrap(*unit.span(node.right_cursor), f"({right_name} = !!(", "))")
    if right_name is None or node.right_speculative is None:
        return
    start, end = unit.span(node.cursor)
    operator_at, operator_length = node.operator.offset, node.operator.end - node.operator.offset
    speculative = node.right_speculative
    skipped = speculative.store(right_name, _speculation_elements(speculative, slots))
    edits.wrap(*unit.span(node.right_cursor), "!!(", ")")
    if node.op == "&&":
        edits.wrap(start, end, "(", f" : ({skipped}, 0))")
        edits.replace(operator_at, operator_length, "?")
    else:
        edits.wrap(start, end, "(", ")")
        edits.replace(operator_at, operator_length, f"? ({skipped}, 1) :")


def _speculation_elements(speculation: Speculation, slots: Slots | None
                          ) -> dict[str, str] | None:
    """Frame elements for the copies of a speculative evaluation, one per copy, shared by
    the full expression's speculations (each is one statement expression evaluated whole);
    None without a frame or where a copy's type has no spelling there."""
    if slots is None:
        return None
    spellings = {name: value_spelling(node, is_bitfield_ref(node), False)
                 for name, _, node in speculation.copies}
    if None in spellings.values():
        return None
    return {name: slots.take_shared(spelling, name, name in speculation.in_memory)
            for name, spelling in spellings.items() if spelling is not None}


def rewrite_binop(unit: Unit, edits: EditSet, site: Binop, labels: Indexed, number: int,
                  slots: Slots | None = None) -> None:
    """Operands that labels may read again are copied for them in the label block; the
    others are captured, as the program evaluates them, into temporaries the program's own
    operator then reads: frame elements when the site has a frame and their types a
    spelling (``_rewrite_in_frame``), else variables of a statement expression."""
    constant = frozenset(name for name, known in zip(("x0", "x1"), site.constant) if known)
    if slots is not None and _rewrite_in_frame(unit, edits, site, labels, number, slots,
                                               constant):
        return
    tag = f"{number}_"
    start, end = unit.span(site.cursor)
    in_memory = _in_memory(site)
    copy_prefix = f"__ffcc_{tag}o"
    if site.plain:
        statements = label_statements(labels, _texts(site), number, copy_prefix, constant,
                                      in_memory)
        edits.wrap(start, end, f"(({{ {statements} }}), ", ")")
        return
    first, second = f"__ffcc_{tag}x0", f"__ffcc_{tag}x1"
    promote = tuple("+" if bitfield else "" for bitfield in site.bitfield)
    statements = label_statements(labels, {"x0": first, "x1": second}, number, copy_prefix,
                                  constant, in_memory)
    edits.wrap(start, end, f"({{ {TEMP} __auto_type {first} = ({promote[0]}",
               f"); {statements} {first} {site.op} {second}; }})")
    gap_start, gap_end = unit.span(site.lhs)[1], unit.span(site.rhs)[0]
    edits.replace(gap_start, gap_end - gap_start,
                  f"); {TEMP} __auto_type {second} = ({promote[1]}")


def _rewrite_in_frame(unit: Unit, edits: EditSet, site: Binop, labels: Indexed, number: int,
                      slots: Slots, constant: frozenset[str]) -> bool:
    """The site with its temporaries in its function's frame; False (nothing edited) when a
    value it would hold has no type spelling there. Operands captured, ``e`` becomes
    ``(T = (e), ({ labels }), T)``, both ``(T0 = (e0), T1 = (e1), ({ labels }), T0 OP T1)``;
    none, the site is ``(({ labels }), e0 OP e1)``."""
    compared = site.op in EQUALITY  # ordering another pointer type than void's warns
    names = ("x0", "x1")
    operands = (site.lhs, site.rhs)
    spellings = {name: value_spelling(operand, bitfield, compared)
                 for name, operand, bitfield in zip(names, operands, site.bitfield)}
    captured = [name for name, again in zip(names, site.rereadable) if not again]
    used = used_values(labels, constant)
    known = {name: spelling for name, spelling in spellings.items() if spelling is not None}
    if not known.keys() >= {*captured, *used}:
        return False
    scratch_types = _scratch_types(used_scratch(labels), spellings["x0"], spellings["x1"])
    if scratch_types is None:
        return False
    in_memory = _in_memory(site)
    held = {name: slots.take(known[name]) for name in captured}
    copied = {name: slots.take_shared(known[name], name, name in in_memory) for name in used}
    scratch = {name: slots.take_shared(spelling, name, True)
               for name, spelling in scratch_types.items()}
    values = {**_texts(site), **held}
    block = label_statements(labels, values, number, "", constant, in_memory, copied, scratch)
    statements = f"({{ {block} }})"
    promote = {name: "+" if bitfield else "" for name, bitfield in zip(names, site.bitfield)}
    start, end = unit.span(site.cursor)
    if not captured:
        edits.wrap(start, end, f"({statements}, ", ")")
    elif len(captured) == 2:
        edits.wrap(start, end, f"({held['x0']} = ({promote['x0']}",
                   f"), {statements}, {held['x0']} {site.op} {held['x1']})")
        gap_start, gap_end = unit.span(site.lhs)[1], unit.span(site.rhs)[0]
        edits.replace(gap_start, gap_end - gap_start, f"), {held['x1']} = ({promote['x1']}")
    else:
        name = captured[0]
        operand = operands[names.index(name)]
        edits.wrap(*unit.span(operand), f"({held[name]} = ({promote[name]}",
                   f"), {statements}, {held[name]})")
    return True


def _scratch_types(names: list[str], left: str | None, right: str | None
                   ) -> dict[str, str] | None:
    """The types of the scratch objects ``names`` (``opaque.HELD``) for operands of types
    ``left`` and ``right``; None when one has no spelling."""
    if not names:
        return {}
    ranks = [FLOAT_RANK.get(spelling or "", 0) for spelling in (left, right)]
    if left is None or right is None or max(ranks) == 0:
        return None
    computed = max(FLOAT_RANK, key=lambda spelling: FLOAT_RANK[spelling] == max(ranks))
    types = {"fenv": "unsigned int", "fmask": "unsigned int", "fa": left, "fb": right,
             **{name: computed for name in HELD_VALUES}}
    return {name: types[name] for name in names}


def _texts(site: Binop) -> dict[str, str]:
    """The operands' text, for labels that read them again."""
    return {"x0": promoted(site.lhs_text, site.bitfield[0]),
            "x1": promoted(site.rhs_text, site.bitfield[1])}


def _in_memory(site: Binop) -> frozenset[str]:
    return frozenset(name for name, register in zip(("x0", "x1"), site.in_register)
                     if not register)
