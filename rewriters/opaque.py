"""Opaque copies: labels read values the optimiser cannot relate to the program's own.

docs/DESIGN.md, rule 3. A label predicate that reads the program's own values lets the
compiler reason across label and original code: a label's guard ``d != 0`` tells it ``d == 0`` on the
other path, where the original's unconditional ``3000 / d`` is then undefined and may be folded
away (the original's trap disappears); the other way round, the original's undefined behaviour
lets it fold a label's guard. So every value a label reads is first passed through an empty
``asm`` that the compiler must assume rewrites it (or is only an operand of the labels' own asm
statement: COMPARED_LAUNDER); the original keeps computing on the original values (rule
1). Integers and pointers go through a register (``"+r"``, one per statement so that no target
runs out of registers), other scalars through memory (``"+m"``: valid for every type, but it
forces a stack slot; long double and complex values cannot use ``"+r"`` in clang).
A register launder costs the compiler less than a stack slot, in compile time and in the code
it makes (bench/RESULTS.md, "Launders through a register"). Bit-field values are promoted first.

Labels read program values in two places, both through this module: the label statements of a
site (``rewrite.label_statements``: copies of binary operands, or the label-private captures of a
decision laundered in place), and the speculative evaluation of a skipped operand
(``speculation``: the variables and ``.`` members it reads are copied first). Compile-time
constants are read as they are (nothing to relate, and guards on them still fold).
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

from clang.cindex import Cursor, TypeKind

from .model import COMPARED_LAUNDER, register_launder
from .ops import unary_op
from .safety import guards, is_bitfield_ref, is_constant, is_plain_operand, is_unevaluated
from .unit import INTEGER_KINDS, Rename, Unit, canonical_kind, children, is_arithmetic, strip_implicit

UNKNOWN = 2  # tri-state value of a capture the original did not evaluate
# Scratch objects of floating labels that hold the floating-point environment
# (wm_aor.held_difference, held_region): placeholder -> type, over the placeholders of the two
# operands. fr holds the original's value, frz the same for a zero divisor where it divides;
# fm and fmz a label's own mutant's; fm_add ... fm_div each mutant's where a site's labels
# share one region, fmz_div the dividing mutant's for a zero divisor.
HELD_VALUES = ("fr", "frz", "fm", "fmz", "fm_add", "fm_sub", "fm_mul", "fm_div", "fmz_div")
HELD = {"fenv": "unsigned int", "fmask": "unsigned int", "fa": "__typeof__($x0)",
        "fb": "__typeof__($x1)", **{name: "__typeof__($fa + $fb)" for name in HELD_VALUES}}
# Prefix of every temporary the rewriters declare; the driver defines it (clang: nodebug, so
# -g builds do not carry debug info for thousands of temporaries: a tenth of the compile).
TEMP = "__FFCC_TEMP"
# gcc accepts at most 30 operands per asm statement; an in-out operand counts twice.
OPERANDS_PER_ASM = 15


def launder(objects: list[str], in_memory: Container[str] = (),
            compared: Container[str] = ()) -> str:
    """Empty asm statements after which ``objects`` (lvalues) hold unknown values; those in
    ``in_memory`` are not integers or pointers; those in ``compared`` only comparison groups
    read (COMPARED_LAUNDER)."""
    memory = [name for name in objects if name in in_memory]
    statements = [f"{COMPARED_LAUNDER}({name});" if name in compared else register_launder(name)
                  for name in objects if name not in in_memory]
    statements += [
        '__asm__ volatile("" : '
        + ", ".join(f'"+m"({name})' for name in memory[i:i + OPERANDS_PER_ASM]) + ");"
        for i in range(0, len(memory), OPERANDS_PER_ASM)]
    return " ".join(statements)


def copies(values: list[tuple[str, str]], in_memory: Container[str] = (),
           declared: Container[str] = (), compared: Container[str] = ()) -> str:
    """``__auto_type NAME = (VALUE);`` for each (name, value), then their laundering; names in
    ``declared`` exist already (elements of a frame, frame.py): ``NAME = (VALUE);``."""
    if not values:
        return ""
    stores = " ".join(f"{name} = ({value});" if name in declared
                      else f"{TEMP} __auto_type {name} = ({value});" for name, value in values)
    return f"{stores} {launder([name for name, _ in values], in_memory, compared)}"


def in_register(kind: TypeKind) -> bool:
    """Values of this type may be laundered through a general register."""
    return kind in INTEGER_KINDS or kind == TypeKind.POINTER


def promoted(text: str, bitfield: bool) -> str:
    """``__auto_type`` cannot copy a bit-field: promote it (``+``) first."""
    return f"+{text}" if bitfield else text


@dataclass(frozen=True)
class Speculation:
    """A skipped operand's evaluation for labels: ``text`` behind ``guard`` (C tests, "" for
    none), over opaque ``copies`` (name, initializer, a node it copies) of the variables it
    reads."""

    guard: str
    text: str
    copies: tuple[tuple[str, str, Cursor], ...] = ()
    in_memory: frozenset[str] = frozenset()

    def store(self, name: str, elements: dict[str, str] | None = None) -> str:
        """C expression storing the tri-state outcome in ``name``: 0/1, or UNKNOWN when the
        guards fail. Each outcome is stored in an arm of ``?:``: no value of a branch is kept
        (at -O0 clang gives such a value a stack slot of its own). The copies are the frame
        elements ``elements`` names for them (frame.py), else variables declared in a
        statement expression."""
        outcome = f"({self.text}) ? ({name} = 1) : ({name} = 0)"
        if self.guard:
            outcome = f"({self.guard}) ? ({outcome}) : ({name} = {UNKNOWN})"
        pairs = [(copy, initializer) for copy, initializer, _ in self.copies]
        if not pairs:
            return outcome
        if elements is None:
            return f"({{ {copies(pairs, self.in_memory)} (void)({outcome}); }})"
        stores = copies([(elements[copy], initializer) for copy, initializer in pairs],
                        {elements[copy] for copy in self.in_memory}, set(elements.values()))
        outcome = _COPY_NAME.sub(lambda found: elements[found.group(0)], outcome)
        return f"(({{ {stores} }}), {outcome})"


_COPY_NAME = re.compile(r"\b__ffcc_v\d+\b")


def speculation(cursor: Cursor, unit: Unit) -> Speculation:
    """The evaluation of a skipped operand for labels only: 0/1, or UNKNOWN when its guards
    fail. Guards and operand read opaque copies of the variables they use."""
    sources: dict[str, tuple[str, str, Cursor]] = {}  # source text -> (copy name, initializer, node)
    copies = _Copies(unit)
    for node in _scalar_reads(cursor, unit):
        source = unit.flat_text(node)
        if source is None:  # no text to copy: read as it is, like macro text
            continue
        copies.read(node, sources.setdefault(source, (f"__ffcc_v{len(sources)}",
                                                      promoted(source, is_bitfield_ref(node)),
                                                      node))[0])
    text = unit.flat_text(cursor, copies.rename)
    assert text is not None  # safety.readable asked for it
    guard = " && ".join(guards(cursor, unit, copies.rename) or ())
    return Speculation(guard, text, tuple(sources.values()), frozenset(copies.in_memory))


def reread(cursor: Cursor, unit: Unit, prefix: str) -> str | None:
    """A side-effect-free expression evaluated again for labels from opaque copies (named
    ``prefix`` and a number) of the variables it reads: a statement expression whose value is
    the expression's. Copied as written, ``a*b`` would be one product the optimiser shares
    between label and program, and gcc fuses a product into a multiply-add only where the
    product has no other use. None when a read is a bit-field (its copy has no type to spell
    the same way in gcc and clang) or has no text."""
    pairs: list[tuple[str, str]] = []
    reads = _Copies(unit)
    for node in _scalar_reads(cursor, unit):
        source = unit.flat_text(node)
        if source is None or is_bitfield_ref(node):
            return None
        pairs.append((f"{prefix}{len(pairs)}", source))
        reads.read(node, pairs[-1][0])
    text = unit.flat_text(cursor, reads.rename)
    if text is None:
        return None
    return f"({{ {copies(pairs, reads.in_memory)} {text}; }})" if pairs else text


class _Copies:
    """The opaque copies an expression is read from: which read each replaces (the renaming
    of its text) and which copies must live in memory (their type has no register)."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.rename: Rename = {}
        self.in_memory: set[str] = set()

    def read(self, node: Cursor, name: str) -> None:
        """``node`` reads the copy ``name``."""
        if not in_register(canonical_kind(node)):
            self.in_memory.add(name)
        start, end = self.unit.span(node)
        self.rename[start] = (end, name)


def _scalar_reads(cursor: Cursor, unit: Unit) -> list[Cursor]:
    """Outermost variables and ``.`` members of scalar type read as values inside ``cursor``
    (not under ``&`` or in unevaluated operands; constants and macro text left as they are)."""
    node = strip_implicit(cursor)
    if is_unevaluated(node) or unary_op(node) == "&":
        return []
    if is_plain_operand(node, unit) and not is_constant(node) and not unit.opaque(node):
        kind = canonical_kind(node)
        if is_arithmetic(kind) or kind == TypeKind.POINTER:
            return [node]
    return [read for child in children(node) for read in _scalar_reads(child, unit)]


def held_region(values: tuple[tuple[str, str], ...]) -> str:
    """C statements that compute each ``(scratch, expression)`` of ``values`` (expressions
    over ``$fa`` and ``$fb``, the operands' copies) with every SSE floating-point exception
    masked, and restore MXCSR exactly as it was, flags included. Empty ``asm`` operands carry
    the operands into the masked region and the values out of it, so the compiler cannot move
    the arithmetic out of it (wm_aor.py)."""
    computed = " ".join(f"${name} = {expression};" for name, expression in values)
    results = ", ".join(f'"+m"(${name})' for name, _ in values)
    return ("$fa = ($x0); $fb = ($x1); "
            '__asm__ volatile("stmxcsr %0" : "=m"($fenv)); $fmask = $fenv | 0x1f80u; '
            '__asm__ volatile("ldmxcsr %2" : "+m"($fa), "+m"($fb) : "m"($fmask)); '
            f'{computed} __asm__ volatile("ldmxcsr %{len(values)}" : {results} : "m"($fenv)); ')

