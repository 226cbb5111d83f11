"""Label temporaries in arrays declared once per function, shared between full expressions.

At -O0 neither gcc nor clang shares stack slots between variables of disjoint scopes (gcc only
for nested-scope variables of 32 bytes or more), so a temporary declared per site took a stack
slot of its own for the whole frame: a label-dense function's frame grew with its sites, and
deep recursion that the plain build completes could overflow labelled (docs/DESIGN.md, rule 3).
Instead, a function's temporaries are elements of a few arrays declared at the top of its body,
one array per type (``__FFCC_TEMP unsigned char __ffcc_t0[3];``), and the sites of different full
expressions use the same elements: a site's temporaries live only while its full expression is
evaluated, and full expressions of a function are evaluated one after the other (a statement
expression inside one belongs to it). Within one full expression, what lives across the
evaluation of program code (captures, a decision's value) has an element of its own: operands
the program leaves unsequenced may hold sites, and two unsequenced stores to one object would be
undefined. What only a site's label block uses (copies of operands, floating-point scratch) is
shared by role (``take_shared``): a label block is one statement expression, which the compilers
evaluate as a whole. A frame is then as large as the most label-dense full expression needs,
not as the whole function. At -O1 and above the compilers keep such elements (constant indices,
no address taken) in registers as they did the variables; elements laundered in memory
(``"+m"``) are arrays of their own, which stay in memory as those variables did.

A function whose body cannot take declarations at its start (its brace written by a macro,
GNU ``__label__`` declarations or a pragma such as ``#pragma clang fp``, which must come first)
has no frame, and neither has code in a
block literal (``^{ ... }``), which could not assign a variable of the function: their sites
declare their temporaries themselves (rewrite.py).
"""

from __future__ import annotations

from clang.cindex import Cursor, Type, TypeKind

from .opaque import TEMP
from .unit import Token, Unit, function_body, strip_implicit, type_kind, unparenthesised

# C spellings of the canonical scalar types a temporary may have.
SPELLING = {
    TypeKind.BOOL: "_Bool", TypeKind.CHAR_U: "char", TypeKind.CHAR_S: "char",
    TypeKind.UCHAR: "unsigned char", TypeKind.SCHAR: "signed char",
    TypeKind.USHORT: "unsigned short", TypeKind.SHORT: "short",
    TypeKind.UINT: "unsigned int", TypeKind.INT: "int",
    TypeKind.ULONG: "unsigned long", TypeKind.LONG: "long",
    TypeKind.ULONGLONG: "unsigned long long", TypeKind.LONGLONG: "long long",
    TypeKind.UINT128: "unsigned __int128", TypeKind.INT128: "__int128",
    TypeKind.FLOAT: "float", TypeKind.DOUBLE: "double", TypeKind.LONGDOUBLE: "long double",
    TypeKind.FLOAT128: "__float128",
}
# Floating types in the order of the usual arithmetic conversions (others are left out).
FLOAT_RANK = {"float": 1, "double": 2, "long double": 3}
TRI_STATE = "unsigned char"  # decision captures (opaque.UNKNOWN when not evaluated) and values
# Pointers compared for equality by a site (and by its labels): a pointer to any object type
# converts to this one, qualifiers kept, and compares as the original does (ordering it against
# another pointer type draws a warning).
OBJECT_POINTER = "const volatile void *"
ARRAY_KINDS = frozenset({TypeKind.CONSTANTARRAY, TypeKind.INCOMPLETEARRAY})
FUNCTION_KINDS = frozenset({TypeKind.FUNCTIONPROTO, TypeKind.FUNCTIONNOPROTO})
Kind = tuple[str, bool]  # an array's element type and whether it is laundered in memory


class Frame:
    """The temporaries of one function's sites (``take``), declared by ``declarations``."""

    def __init__(self, brace: int) -> None:
        self.brace = brace  # offset of the body's opening brace
        self._arrays: dict[Kind, tuple[str, int]] = {}  # -> (name, elements)
        self._taken: dict[tuple[int, Kind], int] = {}  # (full expression, kind) -> count
        self._pending: list[tuple[int, Kind]] = []  # taken by the site being placed
        self._shared: dict[tuple[int, Kind, str], str] = {}  # (full expression, kind, role)
        self._pending_shared: list[tuple[int, Kind, str]] = []

    def slots(self, full_expression: int) -> Slots:
        return Slots(self, full_expression)

    def take(self, full_expression: int, spelling: str, memory: bool = False) -> str:
        """An element of type ``spelling``; ``memory``: one laundered in memory (``"+m"``,
        opaque.launder), from an array of its own, as such an array stays in memory at -O2."""
        kind = (spelling, memory)
        key = (full_expression, kind)
        index = self._taken.get(key, 0)
        self._taken[key] = index + 1
        self._pending.append(key)
        name, size = self._arrays.get(kind, (f"__ffcc_t{len(self._arrays)}", 0))
        self._arrays[kind] = name, max(size, index + 1)
        return f"{name}[{index}]"

    def take_shared(self, full_expression: int, spelling: str, role: str,
                    memory: bool = False) -> str:
        """An element that every site of the full expression asking for ``role`` gets: for
        what only a site's label block uses (copies, scratch), as the compilers evaluate a
        statement expression as a whole (one label block is never interleaved with
        another's)."""
        key = (full_expression, (spelling, memory), role)
        if key not in self._shared:
            self._shared[key] = self.take(full_expression, spelling, memory)
            self._pending_shared.append(key)
        return self._shared[key]

    def commit(self) -> None:
        """The site being placed keeps what it took."""
        self._pending.clear()
        self._pending_shared.clear()

    def discard(self) -> None:
        """The site being placed was not: its elements are free again (sizes stay, unused
        elements cost nothing but stack)."""
        for key in self._pending:
            self._taken[key] -= 1
        for shared in self._pending_shared:
            del self._shared[shared]
        self._pending.clear()
        self._pending_shared.clear()

    def declarations(self) -> str:
        """The arrays that committed sites use, one declaration each ("" for none)."""
        used = {kind for (_, kind), count in self._taken.items() if count}
        return " ".join(f"{TEMP} {spelling}{'' if spelling.endswith('*') else ' '}{name}[{size}];"
                        for (spelling, memory), (name, size) in self._arrays.items()
                        if (spelling, memory) in used)


class Slots:
    """Elements of a frame for the sites of one full expression."""

    def __init__(self, frame: Frame, full_expression: int) -> None:
        self.frame = frame
        self.full_expression = full_expression

    def take(self, spelling: str, memory: bool = False) -> str:
        return self.frame.take(self.full_expression, spelling, memory)

    def take_shared(self, spelling: str, role: str, memory: bool = False) -> str:
        return self.frame.take_shared(self.full_expression, spelling, role, memory)


def frame_of(unit: Unit, function: Cursor) -> Frame | None:
    """A frame for ``function``, or None where its body cannot start with declarations."""
    body = function_body(function)
    if body is None or not unit.in_main_file(body):
        return None
    brace = unit.span(body)[0]
    if unit.source[brace:brace + 1] != b"{" or unit.touches_macro(brace, brace + 1):
        return None
    first = unit.tokens_in(brace + 1, unit.span(body)[1])
    if first and first[0].spelling == "__label__" or _opens_with_pragma(unit, first):
        return None
    return Frame(brace)


def _opens_with_pragma(unit: Unit, tokens: list[Token]) -> bool:
    """Whether a pragma comes before the body's first declaration or statement, past any
    conditional directives (``#if defined(__clang__)``): ``#pragma clang fp ...`` and
    ``#pragma STDC ...`` must open their compound statement, before any declaration."""
    i = 0
    while i < len(tokens) and tokens[i].spelling in ("#", "_Pragma"):
        if tokens[i].spelling == "_Pragma" or [t.spelling for t in tokens[i + 1:i + 2]] == ["pragma"]:
            return True
        i += 1  # the rest of the directive's line
        while i < len(tokens) and b"\n" not in unit.source[tokens[i - 1].end:tokens[i].offset]:
            i += 1
    return False


def value_spelling(operand: Cursor, bitfield: bool, compared: bool) -> str | None:
    """The type of a temporary holding ``operand``'s value as written (lvalue conversion,
    arrays decayed; a bit-field promoted, as ``opaque.promoted`` writes it), or None when it
    has no spelling valid anywhere in the function. Pointers only where they are only
    ``compared`` for equality (``OBJECT_POINTER``)."""
    node = strip_implicit(operand)
    seen = node.type.get_canonical()
    if bitfield:
        return _promoted_bitfield(node, seen)
    if type_kind(seen) == TypeKind.ENUM:
        seen = seen.get_declaration().enum_type.get_canonical()
    if type_kind(seen) in ARRAY_KINDS:
        return OBJECT_POINTER if compared else None
    if type_kind(seen) == TypeKind.POINTER:
        pointee = seen.get_pointee().get_canonical()
        return OBJECT_POINTER if compared and type_kind(pointee) not in FUNCTION_KINDS else None
    return SPELLING.get(type_kind(seen))


def _promoted_bitfield(node: Cursor, declared: Type) -> str | None:
    """``+b`` for a bit-field ``b`` of an int-sized or narrower type: int when every value fits
    in int, else unsigned int; None for wider bit-fields (their promotion differs between
    compilers)."""
    node = unparenthesised(node)
    field = node.referenced
    kind = type_kind(declared)
    if kind == TypeKind.ENUM:
        kind = type_kind(declared.get_declaration().enum_type.get_canonical())
    int_bits = 32
    if field is None or declared.get_size() * 8 > int_bits:
        return None
    width = field.get_bitfield_width()
    if width < int_bits or kind not in (TypeKind.UINT, TypeKind.ULONG):
        return "int"
    return "unsigned int"
