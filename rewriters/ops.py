"""Operator kinds of binary and unary expressions, read from libclang.

The Python bindings of libclang 18 do not wrap ``clang_getCursorBinaryOperatorKind`` and
``clang_getCursorUnaryOperatorKind``; we bind them here. They work inside macro expansions too,
where tokens are useless (every node there points at the invocation text).
"""

from __future__ import annotations

import ctypes

from clang import cindex
from clang.cindex import Cursor, CursorKind

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
RELATIONAL = frozenset({"<", ">", "<=", ">=", "==", "!="})
ARITHMETIC = frozenset({"+", "-", "*", "/", "%"})
LOGICAL = frozenset({"&&", "||"})


def _bind(name: str) -> ctypes._CFuncPtr:
    func = getattr(cindex.conf.lib, name)
    func.argtypes = [cindex.Cursor]
    func.restype = ctypes.c_int
    return func


_binary_kind = _bind("clang_getCursorBinaryOperatorKind")
_unary_kind = _bind("clang_getCursorUnaryOperatorKind")


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
