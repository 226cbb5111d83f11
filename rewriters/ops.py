"""Operator kinds of binary and unary expressions, and integer constant values, from libclang.

The Python bindings of libclang 18 do not wrap ``clang_getCursorBinaryOperatorKind``,
``clang_getCursorUnaryOperatorKind`` and ``clang_Cursor_Evaluate``; we bind them here. They work
inside macro expansions too, where tokens are useless (every node there points at the invocation
text). ``expansion_extent`` binds ``clang_getExpansionLocation`` to read node extents without the
bindings' per-location objects.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from clang import cindex
from clang.cindex import Cursor, CursorKind

from ._top_level import ffi
from ._top_level import lib as top_level_walk

# CXBinaryOperatorKind values (clang-c/Index.h, LLVM >= 17) mapped to C spellings.
BINARY_SPELLING = {
    3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>", 11: "<", 12: ">", 13: "<=",
    14: ">=", 15: "==", 16: "!=", 17: "&", 18: "^", 19: "|", 20: "&&", 21: "||", 22: "=",
    23: "*=", 24: "/=", 25: "%=", 26: "+=", 27: "-=", 28: "<<=", 29: ">>=", 30: "&=", 31: "^=",
    32: "|=", 33: ",",
}
# CXUnaryOperatorKind values mapped to C spellings ("x++" style for postfix).
UNARY_SPELLING = {
    1: "x++", 2: "x--", 3: "++x", 4: "--x", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!",
    11: "__real__", 12: "__imag__", 13: "__extension__",
}
ASSIGNING = frozenset({"=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|="})
INCREMENTING = frozenset({"x++", "x--", "++x", "--x"})


EVAL_INT, EVAL_FLOAT = 1, 2  # CXEval_Int, CXEval_Float


def _bind(name: str, argtypes: list, restype: Any) -> Callable[..., Any]:
    func = getattr(cindex.conf.lib, name)
    func.argtypes = argtypes
    func.restype = restype
    return func


_binary_kind = _bind("clang_getCursorBinaryOperatorKind", [cindex.Cursor], ctypes.c_int)
_unary_kind = _bind("clang_getCursorUnaryOperatorKind", [cindex.Cursor], ctypes.c_int)
_evaluate = _bind("clang_Cursor_Evaluate", [cindex.Cursor], ctypes.c_void_p)
_eval_kind = _bind("clang_EvalResult_getKind", [ctypes.c_void_p], ctypes.c_int)
_eval_int = _bind("clang_EvalResult_getAsLongLong", [ctypes.c_void_p], ctypes.c_longlong)
_eval_double = _bind("clang_EvalResult_getAsDouble", [ctypes.c_void_p], ctypes.c_double)
_eval_dispose = _bind("clang_EvalResult_dispose", [ctypes.c_void_p], None)
_extent = _bind("clang_getCursorExtent", [cindex.Cursor], cindex.SourceRange)
_range_start = _bind("clang_getRangeStart", [cindex.SourceRange], cindex.SourceLocation)
_range_end = _bind("clang_getRangeEnd", [cindex.SourceRange], cindex.SourceLocation)
_target_info = _bind("clang_getTranslationUnitTargetInfo", [cindex.TranslationUnit],
                     ctypes.c_void_p)
_target_triple = _bind("clang_TargetInfo_getTriple", [ctypes.c_void_p], cindex._CXString)
_target_dispose = _bind("clang_TargetInfo_dispose", [ctypes.c_void_p], None)
_expansion = _bind("clang_getExpansionLocation",
                   [cindex.SourceLocation, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint)], None)
_location_for_offset = _bind("clang_getLocationForOffset",
                             [cindex.TranslationUnit, cindex.File, ctypes.c_uint],
                             cindex.SourceLocation)


def _for_c(kind: str, name: str) -> Any:
    """libclang's function ``name``, as the C walk of a unit's top level calls it (a pointer
    of ``kind``, top_level.h): the library the bindings loaded."""
    return ffi.cast(kind, ctypes.cast(getattr(cindex.conf.lib, name), ctypes.c_void_p).value)


_VISIT_CHILDREN = _for_c("ffcc_visit_children", "clang_visitChildren")
_GET_EXTENT = _for_c("ffcc_get_extent", "clang_getCursorExtent")
_GET_SPELLING = _for_c("ffcc_get_spelling", "clang_getCursorSpelling")
_GET_C_STRING = _for_c("ffcc_get_c_string", "clang_getCString")
_DISPOSE_STRING = _for_c("ffcc_dispose_string", "clang_disposeString")
_TOKEN_FUNCTIONS = ffi.new("ffcc_token_functions *", {
    "get_extent": _GET_EXTENT,
    "tokenize": _for_c("ffcc_tokenize", "clang_tokenize"),
    "get_token_kind": _for_c("ffcc_get_token_kind", "clang_getTokenKind"),
    "get_token_spelling": _for_c("ffcc_get_token_spelling", "clang_getTokenSpelling"),
    "dispose_tokens": _for_c("ffcc_dispose_tokens", "clang_disposeTokens"),
    "get_c_string": _GET_C_STRING,
    "dispose_string": _DISPOSE_STRING})
_CURSOR_SIZE = ctypes.sizeof(Cursor)
_TOP_LEVEL_CAPACITY = 4096  # nodes of each kind the walk's arrays hold at first
_NAME_BYTES = 24  # bytes per macro name that macro_names holds at first
_Cursor = TypeVar("_Cursor", bound=Cursor)
_Found = TypeVar("_Found")


class TopLevel(NamedTuple):
    """A unit's top level, its headers' included, sorted (MainFileExtents.top_level)."""

    spans: list[tuple[int, int]]     # of the macro expansions written in the main file
    definitions: ctypes.Array[Any]   # every macro definition
    declarations: ctypes.Array[Any]  # the declarations that may be the main file's


class MainFileExtents:
    """Where the main file's nodes are, from the one libclang call that gives a node's extent.

    A location's raw value (``int_data``: clang's ``SourceLocation::getRawEncoding``) is its
    place in the translation unit's source space, where every file entry (the main file, each
    inclusion of a header) has a range of offsets of its own and a macro expansion's locations
    have the top bit set.  So a node whose extent begins and ends in the main file's range is
    written there, at those places less the range's start: what ``expansion_extent`` gives,
    without its four more calls.  A unit's headers give its top level thousands of nodes, and
    one that begins in another file's range is in no way the main file's."""

    def __init__(self, tu: cindex.TranslationUnit, main_file: cindex.File, size: int) -> None:
        self._start = _location_for_offset(tu, main_file, 0).int_data
        self._end = self._start + size

    def offsets(self, cursor: Cursor) -> tuple[int, int] | None:
        """(start, end) of a node whose extent is text of the main file, else None (a node
        from a header, or one that begins or ends in a macro expansion)."""
        extent = _extent(cursor)
        begin, end = extent.begin_int_data, extent.end_int_data
        if self._start <= begin <= self._end and self._start <= end <= self._end:
            return begin - self._start, end - self._start
        return None

    def top_level(self, unit: Cursor, cursor_type: type[_Cursor]) -> TopLevel:
        """The children of the translation unit's cursor ``unit``, sorted in C (top_level.h):
        the spans of the macro expansions written in the main file (as ``offsets`` gives
        them), every macro definition, and the declarations that may be the main file's (those
        that begin in it or in a macro expansion, not in another file), as arrays of
        ``cursor_type`` in the order libclang lists them."""
        root = ffi.new("ffcc_cursor *")
        ffi.memmove(root, bytes(unit), _CURSOR_SIZE)

        def walk(capacity: int) -> tuple[tuple[Any, tuple[Any, ...]], int]:
            found = ffi.new("ffcc_top_level *")
            arrays = (ffi.new("ffcc_cursor[]", capacity), ffi.new("ffcc_cursor[]", capacity),
                      ffi.new("unsigned int[]", 2 * capacity))  # found points into them
            found.capacity = capacity
            found.declarations, found.definitions, found.spans = arrays
            top_level_walk.ffcc_sort_top_level(_VISIT_CHILDREN, _GET_EXTENT, root,
                                               self._start, self._end, found)
            return (found, arrays), max(found.declaration_count, found.definition_count,
                                        found.span_count)

        found, _arrays = _fitted(walk, _TOP_LEVEL_CAPACITY)
        offsets = ffi.unpack(found.spans, 2 * found.span_count)
        return TopLevel(list(zip(offsets[::2], offsets[1::2])),
                        _cursors(cursor_type, found.definitions, found.definition_count),
                        _cursors(cursor_type, found.declarations, found.declaration_count))


def macro_names(definitions: ctypes.Array[Any]) -> list[str]:
    """The names of the macro ``definitions`` (TopLevel's), in their order: what each one's
    ``spelling`` gives, for a tenth of the time (thousands of definitions)."""
    count = len(definitions)
    cursors = ffi.from_buffer("ffcc_cursor[]", definitions)

    def spell(capacity: int) -> tuple[bytes, int]:
        names = ffi.new("char[]", capacity)
        used = top_level_walk.ffcc_macro_names(_GET_SPELLING, _GET_C_STRING, _DISPOSE_STRING,
                                               cursors, count, names, capacity)
        return ffi.buffer(names, min(used, capacity))[:], used

    return _fitted(spell, _NAME_BYTES * count).decode(errors="surrogateescape").split("\n")[:-1]


def macro_identifiers(tu: cindex.TranslationUnit, definitions: ctypes.Array[Any]
                      ) -> list[list[str]]:
    """The identifiers of each of the macro ``definitions`` (TopLevel's) of ``tu``, in their
    order: what each one's ``get_tokens`` gives as identifiers, without a Python object per
    token."""
    count = len(definitions)
    cursors = ffi.from_buffer("ffcc_cursor[]", definitions)
    unit = ffi.cast("void *", ctypes.cast(tu.obj, ctypes.c_void_p).value)

    def tokenize(capacity: int) -> tuple[bytes, int]:
        identifiers = ffi.new("char[]", capacity)
        used = top_level_walk.ffcc_macro_identifiers(_TOKEN_FUNCTIONS, unit, cursors, count,
                                                     identifiers, capacity)
        return ffi.buffer(identifiers, min(used, capacity))[:], used

    lines = _fitted(tokenize, 4 * _NAME_BYTES * count).decode(errors="surrogateescape")
    return [line.split() for line in lines.split("\n")[:-1]]


def _fitted(attempt: Callable[[int], tuple[_Found, int]], capacity: int) -> _Found:
    """What ``attempt(capacity)`` found, from a second attempt with the capacity the first
    said it needed when that was more: the C functions fill arrays of a given size and say
    how much they needed."""
    found, needed = attempt(capacity)
    if needed > capacity:
        found, _ = attempt(needed)
    return found


def _cursors(cursor_type: type[_Cursor], array: Any, count: int) -> ctypes.Array[_Cursor]:
    """The first ``count`` cursors of the C walk's ``array``, copied out as ``cursor_type``."""
    return (cursor_type * count).from_buffer_copy(ffi.buffer(array, count * _CURSOR_SIZE))


def expansion_extent(cursor: Cursor) -> tuple[int, int, int | None]:
    """(start offset, end offset, file handle of the start) of a node's extent, as expansion
    locations: what ``cursor.extent.start.offset`` etc. give, for a third of the time (no
    line and column, no Python objects per location; rewriters ask this for every node)."""
    extent = _extent(cursor)
    file, start, end = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint()
    _expansion(_range_start(extent), ctypes.byref(file), None, None, ctypes.byref(start))
    _expansion(_range_end(extent), None, None, None, ctypes.byref(end))
    return start.value, end.value, file.value


def binary_op(cursor: Cursor) -> str | None:
    """Spelling of a binary or compound-assignment operator node, else None."""
    if cursor.kind not in (CursorKind.BINARY_OPERATOR, CursorKind.COMPOUND_ASSIGNMENT_OPERATOR):
        return None
    return BINARY_SPELLING.get(_binary_kind(cursor))


def unary_op(cursor: Cursor) -> str | None:
    """Spelling of a unary operator node (postfix as ``x++``), else None."""
    if cursor.kind != CursorKind.UNARY_OPERATOR:
        return None
    return UNARY_SPELLING.get(_unary_kind(cursor))


def constant_value(cursor: Cursor) -> int | None:
    """Value of an integer constant expression (``3``, ``N - 1`` with N an enumerator or a
    macro), else None."""
    value = constant_number(cursor)
    return value if isinstance(value, int) else None


def constant_number(cursor: Cursor) -> int | float | None:
    """Value of an integer or floating constant expression, else None. (A value of an
    unsigned 64-bit type beyond 2^63 comes out negative: the same bits.)"""
    result = _evaluate(cursor)
    if not result:
        return None
    try:
        kind = _eval_kind(result)
        if kind == EVAL_INT:
            return int(_eval_int(result))
        return float(_eval_double(result)) if kind == EVAL_FLOAT else None
    finally:
        _eval_dispose(result)


def target_triple(unit: cindex.TranslationUnit) -> str:
    """The target the translation unit was parsed for, e.g. ``x86_64-unknown-linux-gnu``."""
    info = _target_info(unit)
    try:
        return cindex._CXString.from_result(_target_triple(info))
    finally:
        _target_dispose(info)
