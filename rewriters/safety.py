"""What a label may read: side-effect freedom, guards against faults, and plain operands.

docs/DESIGN.md, rules 1 and 2. A label reads an expression the original program did not
evaluate at that point (a short-circuited operand) only if evaluating it cannot fault, be
undefined, read uninitialised memory or touch state whatever the program state: reads of variables the program
has initialised there (``variables``), ``.`` members of them, constants, and arithmetic and
comparisons over those, where every operation that can be undefined is guarded by a test written
in C (divisor non-zero and not MIN / -1, shift amount in range, signed arithmetic without overflow).
Memory reached through a pointer is never read: a null check cannot make a dereference safe
that the program itself did not perform (dangling pointers, union members holding a non-pointer,
pointers valid only under the short-circuit condition such as ``p != end && *p``). So ``*p``,
``p->f``, ``p[i]``, pointer arithmetic, and subscripts other than a constant index within the
bound of an array object are refused, as are calls, volatile and atomic accesses, and the size of
a variable-length array (it evaluates its bound, which UBSan checks). ``guards`` returns the
tests, innermost first, or None when the expression is refused.

Expression kinds are allow-listed: anything this module does not know (``va_arg``, atomic
builtins, statement expressions, ``a ?: b``: libclang shows several as "unexposed") counts as
having side effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from clang.cindex import Cursor, CursorKind, TypeKind

from .ops import ASSIGNING, INCREMENTING, binary_op, constant_value, unary_op
from .unit import (
    FLOAT_KINDS,
    INTEGER_KINDS,
    SIGNED_KINDS,
    Rename,
    Unit,
    bit_width,
    canonical_kind,
    children,
    converted,
    strip_implicit,
    type_kind,
    unparenthesised,
)

if TYPE_CHECKING:
    from .variables import Variables

LITERALS = frozenset({
    CursorKind.INTEGER_LITERAL, CursorKind.FLOATING_LITERAL, CursorKind.CHARACTER_LITERAL,
    CursorKind.STRING_LITERAL, CursorKind.IMAGINARY_LITERAL,
})
# Expression kinds that read memory or compute values but never change state by themselves
# (implicit conversions too: ``converted``).
PURE_KINDS = LITERALS | {
    CursorKind.DECL_REF_EXPR, CursorKind.PAREN_EXPR, CursorKind.UNARY_OPERATOR,
    CursorKind.BINARY_OPERATOR, CursorKind.CONDITIONAL_OPERATOR, CursorKind.CSTYLE_CAST_EXPR,
    CursorKind.MEMBER_REF_EXPR, CursorKind.ARRAY_SUBSCRIPT_EXPR,
}
SIZE_KINDS = frozenset({CursorKind.CXX_UNARY_EXPR})  # sizeof, _Alignof
ACCESS_KINDS = frozenset({
    CursorKind.DECL_REF_EXPR, CursorKind.MEMBER_REF_EXPR, CursorKind.ARRAY_SUBSCRIPT_EXPR,
    CursorKind.UNARY_OPERATOR,
})


def is_unevaluated(cursor: Cursor) -> bool:
    """``sizeof``/``_Alignof`` with a compile-time value: its operand is not evaluated. The size
    of a variable-length array is computed at run time from its operand."""
    return cursor.kind in SIZE_KINDS and constant_value(cursor) is not None


def is_shared_read(cursor: Cursor) -> bool:
    """A volatile or atomic access: reading it is itself an effect (a device register, a
    synchronisation with other threads), and its value may differ at each read."""
    if cursor.kind not in ACCESS_KINDS:
        return False
    seen = cursor.type
    if type_kind(seen) in (TypeKind.TYPEDEF, TypeKind.ELABORATED):  # such as atomic_int
        seen = seen.get_canonical()
    return type_kind(seen) == TypeKind.ATOMIC or seen.is_volatile_qualified()


def changes_state(cursor: Cursor) -> bool:
    """Does this node itself (its children aside) change state or have an unknown effect?"""
    if cursor.kind in SIZE_KINDS:
        return False  # a run-time size evaluates its operand: its children tell
    if (cursor.kind not in PURE_KINDS and converted(cursor) is None) or is_shared_read(cursor):
        return True
    return binary_op(cursor) in ASSIGNING or unary_op(cursor) in INCREMENTING


def side_effect_free(cursor: Cursor) -> bool:
    """No assignment, ++/--, call, volatile or atomic access, or unknown kind anywhere inside
    (outside operands that are not evaluated)."""
    if is_unevaluated(cursor):
        return True
    return not changes_state(cursor) and all(side_effect_free(child) for child in children(cursor))


def is_constant(cursor: Cursor) -> bool:
    """Built only from literals, enumerators and constant sizeof: its value is known at compile
    time."""
    if cursor.kind in LITERALS or is_unevaluated(cursor):
        return True
    if cursor.kind == CursorKind.DECL_REF_EXPR:
        ref = cursor.referenced
        return ref is not None and ref.kind == CursorKind.ENUM_CONSTANT_DECL
    if cursor.kind not in (CursorKind.PAREN_EXPR, CursorKind.CSTYLE_CAST_EXPR,
                           CursorKind.BINARY_OPERATOR, CursorKind.UNARY_OPERATOR,
                           CursorKind.CONDITIONAL_OPERATOR) and converted(cursor) is None:
        return False
    if unary_op(cursor) in ("*", "&") or binary_op(cursor) in ASSIGNING:
        return False
    return all(is_constant(child) for child in children(cursor))


def is_plain_operand(cursor: Cursor, unit: Unit) -> bool:
    """A variable, literal, or ``.`` member of one: reading it again is free and cannot fault,
    and its text may be copied (``Unit.repeatable``)."""
    return unit.repeatable(cursor) and _plain(cursor, unit)


def _plain(cursor: Cursor, unit: Unit) -> bool:
    node = strip_implicit(cursor)
    if node.kind == CursorKind.PAREN_EXPR:
        return _plain(children(node)[0], unit)
    if node.kind in LITERALS - {CursorKind.STRING_LITERAL}:
        return True
    if is_shared_read(node):
        return False
    if node.kind == CursorKind.DECL_REF_EXPR:
        ref = node.referenced
        return ref is not None and ref.kind in (
            CursorKind.VAR_DECL, CursorKind.PARM_DECL, CursorKind.ENUM_CONSTANT_DECL)
    if node.kind == CursorKind.MEMBER_REF_EXPR and not unit.opaque(node):
        kids = children(node)
        return (len(kids) == 1 and canonical_kind(kids[0]) != TypeKind.POINTER
                and _plain(kids[0], unit))
    return False


def is_bitfield_ref(cursor: Cursor) -> bool:
    node = unparenthesised(cursor)
    ref = node.referenced if node.kind == CursorKind.MEMBER_REF_EXPR else None
    return ref is not None and ref.kind == CursorKind.FIELD_DECL and ref.is_bitfield()


class Unguardable(Exception):
    """An operation whose safety cannot be expressed as a C test."""


def guards(cursor: Cursor, unit: Unit, rename: Rename | None = None) -> list[str] | None:
    """Tests that make evaluating ``cursor`` safe, in evaluation order; None if impossible.
    ``rename`` as for ``Unit.flat_text`` (tests over opaque copies of the operands)."""
    found: list[str] = []
    try:
        _collect_guards(cursor, unit, found, rename)
    except Unguardable:
        return None
    return list(dict.fromkeys(found))


def readable(cursor: Cursor, unit: Unit, variables: Variables) -> bool:
    """May a label evaluate this expression where the original would not have?"""
    return (side_effect_free(cursor) and unit.repeatable(cursor)
            and unit.flat_text(cursor) is not None and guards(cursor, unit) is not None
            and variables.initialised_reads(cursor))


def _text(cursor: Cursor, unit: Unit, rename: Rename | None) -> str:
    clean = unit.spelled(cursor) and not _inside_macro(cursor, unit)
    text = unit.flat_text(cursor, rename) if clean else None
    if text is None:
        raise Unguardable(f"no clean text for a guard at offset {cursor.extent.start.offset}")
    return f"({text})"


def _inside_macro(cursor: Cursor, unit: Unit) -> bool:
    start, end = unit.span(cursor)
    return unit.touches_macro(start, end) and unit.opaque(cursor)


def _collect_guards(cursor: Cursor, unit: Unit, found: list[str], rename: Rename | None) -> None:
    if cursor.kind in SIZE_KINDS:
        if is_unevaluated(cursor):
            return
        raise Unguardable("size of a variable-length array: its bound may be non-positive")
    kids = children(cursor)
    for child in kids:
        _collect_guards(child, unit, found, rename)
    if cursor.kind == CursorKind.ARRAY_SUBSCRIPT_EXPR:
        _check_subscript(kids)
    elif cursor.kind == CursorKind.MEMBER_REF_EXPR:
        if not kids or _is_pointer(kids[0]):
            raise Unguardable("member access through a pointer")
    elif cursor.kind == CursorKind.CSTYLE_CAST_EXPR:
        target = canonical_kind(cursor)
        if kids and target in INTEGER_KINDS and canonical_kind(kids[-1]) in FLOAT_KINDS:
            raise Unguardable("float to integer conversion")
    elif unary_op(cursor) == "*":
        raise Unguardable("pointer dereference")
    elif unary_op(cursor) == "-" and canonical_kind(cursor) in SIGNED_KINDS:
        operand = _text(kids[0], unit, rename)
        found.append(f"!__builtin_sub_overflow(0, {operand}, &(__typeof__(-{operand})){{0}})")
    elif (op := binary_op(cursor)) is not None:
        _binary_guard(cursor, op, kids, unit, found, rename)


def _is_pointer(cursor: Cursor) -> bool:
    return canonical_kind(cursor) == TypeKind.POINTER


def _check_subscript(kids: Sequence[Cursor]) -> None:
    """Only ``a[K]``: an array object (its own path checked by the caller) and a constant index
    known to be within its bound. Anything else may read memory the program never owned."""
    base_type = strip_implicit(kids[0]).type.get_canonical()
    if type_kind(base_type) != TypeKind.CONSTANTARRAY:
        raise Unguardable("subscript of a pointer or array of unknown bound")
    index = constant_value(kids[1]) if is_constant(kids[1]) else None
    if index is None or not 0 <= index < base_type.element_count:
        raise Unguardable("subscript whose index is not a constant within the bound")


def _binary_guard(cursor: Cursor, op: str, kids: Sequence[Cursor], unit: Unit,
                  found: list[str], rename: Rename | None) -> None:
    result = canonical_kind(cursor)
    if op in ("+", "-") and any(_is_pointer(kid) for kid in kids):
        raise Unguardable("pointer arithmetic")  # no overflow builtin takes pointers either
    if op in ("/", "%") and result in INTEGER_KINDS:
        divisor = _text(kids[1], unit, rename)
        found.append(f"{divisor} != 0")
        if result in SIGNED_KINDS:  # only MIN / -1 overflows: there -dividend does
            dividend = _text(kids[0], unit, rename)
            found.append(f"({divisor} != -1 || !__builtin_sub_overflow(0, {dividend}, "
                         f"&(__typeof__({dividend} / {divisor})){{0}}))")
    elif op in ("<<", ">>"):
        amount = _text(kids[1], unit, rename)
        width = bit_width(cursor)
        found.append(f"(unsigned long long){amount} < {width}ull")
        if op == "<<" and result in SIGNED_KINDS:
            value = _text(kids[0], unit, rename)
            found.append(f"{value} >= 0 && ({value} >> ({width - 1} - {amount})) == 0")
    elif op in ("+", "-", "*") and result in SIGNED_KINDS:
        left, right = _text(kids[0], unit, rename), _text(kids[1], unit, rename)
        builtin = {"+": "add", "-": "sub", "*": "mul"}[op]
        found.append(f"!__builtin_{builtin}_overflow({left}, {right}, "
                     f"&(__typeof__({left} {op} {right})){{0}})")


def repeatable_value(cursor: Cursor) -> bool:
    """Can evaluating this side-effect-free expression a second time, just before the program
    evaluates it, make no difference the program could see? Only reads of memory, and
    operations that are never undefined and raise no floating-point exception: not signed
    ``+ - *`` or negation (overflow), ``/ % << >>``, floating arithmetic or comparisons, or
    conversions to or from a floating type. A read of memory the program reads anyway faults
    where the program's own read would; a sanitizer check that reports a read and goes on
    (UBSan's alignment check) reports both, as for the operands of updates (sites.py). String
    literals are left out: a second one may be another object."""
    if cursor.kind == CursorKind.STRING_LITERAL:
        return False
    if is_unevaluated(cursor):
        return True
    kids = children(cursor)
    kind = canonical_kind(cursor)
    operand = converted(cursor)
    if operand is not None or cursor.kind == CursorKind.CSTYLE_CAST_EXPR:
        source = canonical_kind(operand if operand is not None else kids[-1])
        if source != kind and (source in FLOAT_KINDS or kind in FLOAT_KINDS):
            return False
    op = binary_op(cursor)
    if op is not None:
        operands = {canonical_kind(kid) for kid in kids}
        if op in ("/", "%", "<<", ">>") or operands & FLOAT_KINDS or (
                op in ("+", "-", "*") and kind in SIGNED_KINDS):
            return False
    elif unary_op(cursor) == "-" and (kind in SIGNED_KINDS or kind in FLOAT_KINDS):
        return False
    return all(repeatable_value(kid) for kid in kids)
