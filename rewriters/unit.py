"""One parsed C file: libclang AST plus what rewriters need to edit its bytes safely.

Offsets are byte offsets into the main file as libclang reports them (expansion locations). Code
that comes out of a macro expansion has every node's extent squeezed onto the invocation text, so
such nodes cannot be told apart by position: ``Unit.spelled`` tells whether a node's extent is
really its own text, and ``Unit.opaque`` whether its inside belongs to a macro expansion.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from clang import cindex
from clang.cindex import Cursor, CursorKind, TokenKind, Type, TypeKind

from .ops import MainFileExtents, expansion_extent, macro_identifiers, macro_names

if TYPE_CHECKING:
    from .macro_expansion import Expansion
    from .preamble import Preambles

INTEGER_KINDS = frozenset({
    TypeKind.BOOL, TypeKind.CHAR_U, TypeKind.UCHAR, TypeKind.CHAR16, TypeKind.CHAR32,
    TypeKind.USHORT, TypeKind.UINT, TypeKind.ULONG, TypeKind.ULONGLONG, TypeKind.UINT128,
    TypeKind.CHAR_S, TypeKind.SCHAR, TypeKind.WCHAR, TypeKind.SHORT, TypeKind.INT,
    TypeKind.LONG, TypeKind.LONGLONG, TypeKind.INT128, TypeKind.ENUM,
})
SIGNED_KINDS = frozenset({
    TypeKind.CHAR_S, TypeKind.SCHAR, TypeKind.WCHAR, TypeKind.SHORT, TypeKind.INT,
    TypeKind.LONG, TypeKind.LONGLONG, TypeKind.INT128,
})
FLOAT_KINDS = frozenset({
    TypeKind.FLOAT, TypeKind.DOUBLE, TypeKind.LONGDOUBLE, TypeKind.FLOAT128, TypeKind.HALF,
})
# A node kind's class as set membership: CursorKind.is_expression() and is_statement() are a
# libclang call each, and the site walks ask them of every node.
EXPRESSION_KINDS = frozenset(k for k in CursorKind.get_all_kinds() if k.is_expression())
STATEMENT_KINDS = frozenset(k for k in CursorKind.get_all_kinds() if k.is_statement())
# Unsigned type of the same width, for arithmetic that must wrap instead of overflowing.
UNSIGNED_SPELLING = {
    TypeKind.INT: "unsigned int", TypeKind.UINT: "unsigned int",
    TypeKind.LONG: "unsigned long", TypeKind.ULONG: "unsigned long",
    TypeKind.LONGLONG: "unsigned long long", TypeKind.ULONGLONG: "unsigned long long",
    TypeKind.INT128: "unsigned __int128", TypeKind.UINT128: "unsigned __int128",
}


@cache
def builtin_header_args() -> tuple[str, ...]:
    """Flags that give libclang the compiler's own headers (stddef.h, stdarg.h, ...).

    The libclang wheel ships without its resource directory, so borrow the installed clang's,
    or else gcc's include directory.
    """
    clang = shutil.which("clang")
    if clang is not None:
        found = _default_resource_dir(clang) or _ask(clang, "-print-resource-dir")
        if (Path(found) / "include" / "stddef.h").is_file():
            return ("-resource-dir", found)
    gcc = shutil.which("gcc")
    if gcc is not None:
        found = _ask(gcc, "-print-file-name=include")
        if (Path(found) / "stddef.h").is_file():
            return ("-isystem", found)
    return ()


def _default_resource_dir(clang: str) -> str | None:
    """clang's resource directory where clang puts it by default, ``<bin>/../lib/clang/<ver>``,
    when there is exactly one candidate: found without running clang, which would cost every
    labelled compile a twentieth of a second."""
    root = Path(os.path.realpath(clang)).parent.parent / "lib" / "clang"
    found = [p.parent.parent for p in root.glob("*/include/stddef.h")]
    return str(found[0]) if len(found) == 1 else None


def _in_borrowed_headers(diagnostic: cindex.Diagnostic) -> bool:
    """Whether ``diagnostic`` is in the headers borrowed from the installed clang, which may
    be older than libclang: clang 14's emmintrin.h calls builtins clang 15 removed, errors to
    libclang 18 in inline bodies that the unit's own code does not depend on (an error that
    matters shows in the unit too)."""
    args = builtin_header_args()
    where = diagnostic.location.file
    return args[:1] == ("-resource-dir",) and where is not None \
        and os.path.realpath(where.name).startswith(os.path.realpath(args[1]) + os.sep)


def _where(diagnostic: cindex.Diagnostic, main: str) -> str:
    """``line:column: `` of a diagnostic, its file's name first when it is not ``main``."""
    location = diagnostic.location
    named = location.file is not None and os.path.realpath(location.file.name) != os.path.realpath(main)
    return (f"{location.file.name}:" if named else "") + f"{location.line}:{location.column}: "


def _ask(compiler: str, option: str) -> str:
    return subprocess.run([compiler, option], capture_output=True, text=True).stdout.strip()


# What clang 16 and later reject by default and gcc up to 13 (the backend, often) and clang up to
# 15 accept with a warning: the parse must not refuse a file its backend compiles.  MPFR's
# tests.c calls feenableexcept undeclared (it defines _GNU_SOURCE after <locale.h> has read
# <features.h>).  No limit on errors: errors in the borrowed headers (_in_borrowed_headers) do
# not refuse the parse, and past clang's default of 20 it would stop with the unit half read.
LENIENT_ARGS = ("-Wno-error=implicit-function-declaration", "-Wno-error=implicit-int",
                "-Wno-error=int-conversion", "-Wno-error=incompatible-function-pointer-types",
                "-ferror-limit=0")


class ParseError(RuntimeError):
    """libclang could not produce a usable AST (fatal errors in the file)."""


# Predefined macros that expand to something else at each use.
PER_USE_MACROS = frozenset({"__COUNTER__", "__LINE__"})

# start offset of a sub-expression -> (its end offset, the name written instead of its tokens)
Rename = dict[int, tuple[int, str]]
# The outermost macro invocations of the main file: their starts, and their ends, in order.
Invocations = tuple[list[int], list[int]]
Span = tuple[int, int]  # (start, end) offsets of a node or token in the unit's source


class Token(NamedTuple):
    """One raw token (``lex``); a tuple because files have tens of thousands of them, and a
    frozen dataclass takes twice as long to build."""

    offset: int
    end: int
    spelling: str
    kind: TokenKind


# Options that let the optimiser reassociate floating arithmetic, and those that stop it.
REASSOCIATING = {"-ffast-math": True, "-Ofast": True, "-fassociative-math": True,
                 "-funsafe-math-optimizations": True, "-fno-fast-math": False,
                 "-fno-associative-math": False, "-fno-unsafe-math-optimizations": False}


# What asks for reassociation in the source: clang's `#pragma clang fp reassociate(on)` and
# `#pragma float_control(precise, off)`, gcc's `#pragma GCC optimize` and `optimize` attribute
# with one of the options above (`_Pragma("...")` spells the same words).
_REASSOCIATING_TEXT = re.compile(
    rb"clang\s+fp\s+reassociate\s*\(\s*on\s*\)"
    rb"|float_control\s*\(\s*precise\s*,\s*off"
    rb"|(?:GCC\s+optimize|optimize(?:__)?\s*\()[^\n]*?"
    rb"(?:fast-math|Ofast|associative-math|unsafe-math-optimizations)")
# A word each of those forms spells.  The expression tries every position of a text (7 ms
# over the 300 kB of headers a small unit includes); a search for the words, 0.5 ms, leaves it
# the few texts that spell one.
_REASSOCIATING_WORDS = (b"reassociate", b"float_control", b"optimize")


def asks_reassociation(text: bytes) -> bool:
    """Whether ``text`` holds a pragma or attribute that asks for reassociation."""
    return (any(word in text for word in _REASSOCIATING_WORDS)
            and _REASSOCIATING_TEXT.search(text) is not None)


def reassociates(compile_args: list[str], source: bytes = b"") -> bool:
    """Whether the compile may reassociate floating arithmetic: the last option that says, or
    a pragma or attribute of ``source`` that asks for it (in some function: the whole unit is
    taken as reassociating)."""
    allowed = False
    for arg in compile_args:
        allowed = REASSOCIATING.get(arg, allowed)
    return allowed or asks_reassociation(source)


def headers_reassociate(headers: list[str]) -> bool:
    """Whether one of the headers a unit includes asks for reassociation: a pragma at a
    header's file scope (``#pragma GCC optimize("Ofast")``) holds for every function after it."""
    for path in headers:
        try:
            status = os.stat(path)
        except OSError:
            continue
        if _header_reassociates(path, status.st_mtime_ns, status.st_size):
            return True
    return False


@lru_cache(maxsize=8192)
def _header_reassociates(path: str, mtime_ns: int, size: int) -> bool:
    """One header's verdict, kept while its modification time and size stay: a process that
    annotates many units (the project form) reads each header once for all of them."""
    del mtime_ns, size  # the cache key only
    try:
        return asks_reassociation(Path(path).read_bytes())
    except OSError:
        return False


class Unit:
    """A translation unit restricted to its main file."""

    def __init__(self, path: str, compile_args: list[str], expansion: Expansion | None = None,
                 preambles: Preambles | None = None) -> None:
        """``expansion``: parse that text (the file with macros expanded) in the file's place;
        ``preambles``: where the preambles units share are precompiled (preamble.py)."""
        self.path = str(Path(path))
        self.expansion = expansion
        self.source = Path(path).read_bytes() if expansion is None else expansion.source
        args = [*builtin_header_args(), *LENIENT_ARGS, *compile_args]
        precompiled = None
        if preambles is not None and expansion is None:
            precompiled = preambles.parse(self.path, args, self.source)
        if precompiled is None:
            self.tu = cindex.Index.create().parse(
                self.path,
                args=args,
                unsaved_files=None if expansion is None else [(self.path, self.source)],
                options=cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD,
            )
            self.headers = [inclusion.include.name for inclusion in self.tu.get_includes()]
        else:
            self.tu, self.headers = precompiled.tu, precompiled.headers
        # macro -> the identifiers of its definitions, for those of a precompiled preamble
        self._preamble_macros = {} if precompiled is None else precompiled.macros
        fatal = [d for d in self.tu.diagnostics
                 if d.severity >= cindex.Diagnostic.Error and not _in_borrowed_headers(d)]
        if fatal:
            raise ParseError("; ".join(_where(d, self.path) + d.spelling for d in fatal[:5]))
        # sums may be reordered
        self.reassociates = (reassociates(compile_args, self.source)
                             or headers_reassociate(self.headers))
        self._locations: dict[bytes, tuple[int, int, bool]] = {}
        self._per_use: dict[str, bool] = {}  # macro name -> expands to a PER_USE_MACROS one
        main_file = cindex.File.from_name(self.tu, self.path)
        self._main_file = _handle(main_file)
        self._main_extents = MainFileExtents(self.tu, main_file, len(self.source))
        # The top level, its headers' included: thousands of nodes, most of them the headers'.
        top_level = self._main_extents.top_level(self.tu.cursor, _Cursor)
        self._macro_starts, self._macro_ends = _outermost(top_level.spans)
        self._definitions = top_level.definitions  # every macro's, for _identifiers_defining
        self._declarations = [c for c in self._owned(top_level.declarations)
                              if self.in_main_file(c)]  # the file's own

    def _owned(self, cursors: Iterable[Cursor]) -> list[Cursor]:
        """``cursors`` as the bindings give them, each keeping the translation unit alive."""
        owned = list(cursors)
        for cursor in owned:
            cursor._tu = self.tu
        return owned

    def forget_nodes(self) -> None:
        """Drop what the unit keeps about the nodes it was asked about (their children and
        extents), once no one will ask again soon: it is asked about again as it is first."""
        self._locations.clear()
        forget_children(self.tu)

    # -- positions -------------------------------------------------------------------------

    def in_main_file(self, cursor: Cursor) -> bool:
        return self._located(cursor)[2]

    def span(self, cursor: Cursor) -> tuple[int, int]:
        start, end, _ = self._located(cursor)
        return start, end

    def _located(self, cursor: Cursor) -> tuple[int, int, bool]:
        """(start, end, in the main file) of a node, cached: each libclang location costs
        several calls, and files compare by handle, not by name.  The key is the cursor's
        bytes, not the cursor: hashing one is a libclang call (equal bytes are the same node;
        the rare equal cursors with different bytes only cost a second lookup)."""
        key = bytes(cursor)
        found = self._locations.get(key)
        if found is None:
            written = self._main_extents.offsets(cursor)
            if written is not None:
                (start, end), in_main_file = written, True
            else:
                start, end, file = expansion_extent(cursor)
                in_main_file = file is not None and file == self._main_file
            found = self._locations[key] = (start, self._invocation_end(cursor, end)
                                            if in_main_file else end, in_main_file)
        return found

    def _invocation_end(self, cursor: Cursor, end: int) -> int:
        """``end``, or the end of the macro invocation it falls in when the node's last token
        comes from that invocation. libclang ends a node whose last token comes from a macro
        argument where the invocation begins (the argument's expansion location), not after
        its ``)``: ``p[0] == T('x')`` would end before ``T``. A node may also end right
        where an invocation begins with a token of its own: ``(a)`` in ``(a)AND(b)``."""
        i = bisect.bisect_right(self._macro_starts, end) - 1
        if i < 0 or end >= self._macro_ends[i] or not _ends_in_macro(cursor, end):
            return end
        return self._macro_ends[i]

    def text(self, cursor: Cursor) -> str:
        start, end = self.span(cursor)
        return self.source[start:end].decode(errors="surrogateescape")

    def spelled(self, cursor: Cursor) -> bool:
        """True when the node's extent is real text that may be wrapped as a whole.

        A node inside a macro expansion gets the invocation's extent (or an empty one); its
        extent then lies within a macro range and is not its own text. A node whose extent
        covers an invocation is its text only if it holds all that the invocation expands to:
        with ``#define INC(x) x + 1``, ``y * INC(z)`` is ``(y * z) + 1``, and ``y * z`` spans
        the invocation but is not ``y * INC(z)``.
        """
        start, end, in_main_file = self._located(cursor)
        if not in_main_file or end <= start:
            return False
        lo, hi = self._macros_over(start, end)
        if lo == hi:
            return True
        # The invocations are disjoint and sorted: all lie within the node when the first
        # starts and the last ends within it.
        return (start <= self._macro_starts[lo] and self._macro_ends[hi - 1] <= end
                and self._expansions.holds(cursor, lo, hi))

    def opaque(self, cursor: Cursor) -> bool:
        """True when the node's inside comes from a macro expansion (do not edit within)."""
        if not self.spelled(cursor):
            return True
        start, end = self.span(cursor)
        lo, hi = self._macros_over(start, end)
        # Only the first invocation sharing text with the node can hold all of it.
        return lo < hi and self._macro_starts[lo] <= start and end <= self._macro_ends[lo]

    @cached_property
    def _expansions(self) -> Expansions:
        return Expansions(self.span, (self._macro_starts, self._macro_ends), self._declarations)

    def touches_macro(self, start: int, end: int) -> bool:
        """True when a byte range shares any text with a macro invocation."""
        lo, hi = self._macros_over(start, end)
        return lo < hi

    def macro_ranges(self) -> list[tuple[int, int]]:
        """The outermost macro invocations of the file, in order."""
        return list(zip(self._macro_starts, self._macro_ends))

    def _macros_over(self, start: int, end: int) -> tuple[int, int]:
        return overlapping((self._macro_starts, self._macro_ends), start, end)

    # -- tokens ----------------------------------------------------------------------------

    @cached_property
    def tokens(self) -> list[Token]:
        """Every token of the main file, in order, comments left out (``lex``)."""
        return lex(self.source)

    @cached_property
    def _token_offsets(self) -> list[int]:
        return [t.offset for t in self.tokens]

    def tokens_in(self, start: int, end: int) -> list[Token]:
        lo = bisect.bisect_left(self._token_offsets, start)
        hi = bisect.bisect_left(self._token_offsets, end)
        return self.tokens[lo:hi]

    def flat_text(self, cursor: Cursor, rename: Rename | None = None) -> str | None:
        """The node's tokens joined on one line (no comments), safe to copy elsewhere.

        ``rename`` maps the start offset of a sub-expression to (its end offset, a name): its
        tokens are written as that name instead. None when the extent holds a preprocessor
        directive: such text cannot be re-emitted.
        """
        toks = self.tokens_in(*self.span(cursor))
        if not toks or any(t.spelling == "#" for t in toks):
            return None
        spellings: list[str] = []
        skip_to = -1
        for tok in toks:
            if tok.offset < skip_to:
                continue
            if rename and tok.offset in rename:
                skip_to, name = rename[tok.offset]
                spellings.append(name)
            else:
                spellings.append(tok.spelling)
        return join_tokens(spellings)

    def repeatable(self, cursor: Cursor) -> bool:
        """May the node's text be written a second time, for a label, meaning the same? Not
        when it expands a macro whose value changes with each expansion: a copy of
        ``__COUNTER__`` counts once more (the program's own later values shift), and a copy of
        ``__LINE__`` takes the copy's line."""
        start, end = self.span(cursor)
        if not self.touches_macro(start, end):  # the main file's macro invocations, builtins too
            return True
        return not any(tok.kind == TokenKind.IDENTIFIER and self._changes_per_use(tok.spelling)
                       for tok in self.tokens_in(start, end))

    def _changes_per_use(self, name: str) -> bool:
        """Does ``name`` expand, directly or through other macros, to one of PER_USE_MACROS?
        A search over the macro definitions: if it finds none, nothing it reached does either."""
        known = self._per_use.get(name)
        if known is not None:
            return known
        seen = {name}
        pending = [name]
        while pending:
            current = pending.pop()
            if current in PER_USE_MACROS or self._per_use.get(current):
                self._per_use[name] = True
                return True
            for identifier in self._identifiers_defining(current):
                if identifier not in seen:
                    seen.add(identifier)
                    pending.append(identifier)
        self._per_use.update(dict.fromkeys(seen, False))
        return False

    def _identifiers_defining(self, name: str) -> Iterator[str]:
        """The identifiers in the definitions of the macro ``name`` (a unit may define one
        several times, its precompiled preamble too)."""
        yield from self._preamble_macros.get(name, ())
        places = self._macro_definitions.get(name, ())
        if not places:
            return
        definitions = (self._definitions._type_ * len(places))(
            *(self._definitions[index] for index in places))
        for identifiers in macro_identifiers(self.tu, definitions):
            yield from identifiers

    @cached_property
    def _macro_definitions(self) -> dict[str, list[int]]:
        """Macro name -> the places of its definitions in ``_definitions``."""
        found: dict[str, list[int]] = {}
        for index, name in enumerate(macro_names(self._definitions)):
            found.setdefault(name, []).append(index)
        return found

    def first_token(self, cursor: Cursor) -> str:
        """The spelling of the node's first token ("" if none), without slicing out all of its
        tokens: asked for every expression node, so nested ones would cost quadratic time."""
        start, end = self.span(cursor)
        i = bisect.bisect_left(self._token_offsets, start)
        if i == len(self.tokens) or self.tokens[i].offset >= end:
            return ""
        return self.tokens[i].spelling

    def operator_between(self, left: Cursor, right: Cursor) -> Token | None:
        """The single operator token between two operands, or None if it is not plain text."""
        start, end = self.span(left)[1], self.span(right)[0]
        if self.touches_macro(start, end):
            return None
        toks = self.tokens_in(start, end)
        if len(toks) != 1 or toks[0].kind != TokenKind.PUNCTUATION:
            return None
        return toks[0]

    # -- AST helpers -----------------------------------------------------------------------

    def functions(self) -> list[Cursor]:
        """Function definitions whose bodies are spelled in the main file."""
        return [c for c in self._declarations
                if c.kind == CursorKind.FUNCTION_DECL and c.is_definition()]

    def line_col(self, offset: int) -> tuple[int, int]:
        """Line and column in the file on disk (code from an expanded macro: the invocation's)."""
        if self.expansion is not None:
            offset = self.expansion.to_original(offset)
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    @cached_property
    def _line_starts(self) -> list[int]:
        original = self.source if self.expansion is None else self.expansion.original
        return [0] + [match.end() for match in re.finditer(rb"\n", original)]


class Expansions:
    """Which nodes hold all that a macro invocation of the main file expands to.

    Every node of an invocation's expansion has an extent within the invocation (libclang
    places them all there); the smallest node holding all of them, their lowest common
    ancestor, is the invocation's owner, and a node holds the expansion when it is the owner
    or one of its ancestors. An implicit conversion and its operand count as one node: they
    are one text. Only subtrees that share text with an invocation are walked, once per
    file."""

    def __init__(self, span: Callable[[Cursor], tuple[int, int]], invocations: Invocations,
                 roots: list[Cursor]) -> None:
        """``span``: a node's extent; ``invocations``: the outermost invocations' sorted
        starts and ends; ``roots``: the file's declarations."""
        self._span = span
        self._invocations = invocations
        self._identity: dict[bytes, bytes] = {}  # a node -> the node it is one text with
        self._owners: list[tuple[bytes, ...] | None] = [None] * len(invocations[0])
        for root in roots:
            self._walk(root)
        self._holders: Counter[bytes] = Counter(  # a node -> how many owners it is or holds
            node for path in self._owners for node in path or ())
        self._owned = [0]  # owned[i]: how many of the first i invocations have an owner
        for path in self._owners:
            self._owned.append(self._owned[-1] + (path is not None))

    def holds(self, cursor: Cursor, lo: int, hi: int) -> bool:
        """Does the node hold the expansions of invocations lo..hi-1, all within its extent?"""
        identity = self._identity.get(bytes(cursor))
        held = 0 if identity is None else self._holders[identity]
        return held == self._owned[hi] - self._owned[lo]

    def _walk(self, root: Cursor) -> None:
        """Record the owners among ``root`` and its descendants."""
        starts, ends = self._invocations
        pending: list[tuple[Cursor, tuple[bytes, ...]]] = [(root, ())]  # node, its ancestors
        while pending:
            node, ancestors = pending.pop()
            start, end = self._span(node)
            lo, hi = overlapping(self._invocations, start, end)
            if lo == hi:
                continue
            path = self._identify(node, ancestors)
            if hi - lo == 1 and starts[lo] <= start and end <= ends[lo]:
                self._owned_by(lo, path)
            else:
                pending.extend((child, path) for child in children(node))

    def _identify(self, node: Cursor, ancestors: tuple[bytes, ...]) -> tuple[bytes, ...]:
        """The identities from the root down to ``node``, which is one with any implicit
        conversion over it and with those under it."""
        key = bytes(node)
        if key in self._identity:  # the operand of a conversion, one with it
            return ancestors
        self._identity[key] = key
        operand = converted(node)
        while operand is not None:
            self._identity[bytes(operand)] = key
            operand = converted(operand)
        return (*ancestors, key)

    def _owned_by(self, invocation: int, path: tuple[bytes, ...]) -> None:
        """Make the owner of ``invocation`` the lowest common ancestor of its owner so far
        and the node at the end of ``path``."""
        owner = self._owners[invocation]
        if owner is None:
            self._owners[invocation] = path
            return
        common = 0
        while common < min(len(owner), len(path)) and owner[common] == path[common]:
            common += 1
        self._owners[invocation] = owner[:common]


# One match per token, the white space and comments before it included (a match each
# would double the matches); at the end of the text, white space and comments match \Z.
_TOKEN = re.compile(rb"""
    (?: \s | \\\r?\n | //(?: [^\n\\] | \\. )* | /\*.*?(?: \*/ | \Z ) )*
    (?: (?P<literal> (?: u8 | [uUL] )? (?: "(?: [^"\\\n] | \\. )*" | '(?: [^'\\\n] | \\. )*' )
                   | \.?[0-9] (?: [eEpP][+-] | [0-9A-Za-z_.] )* )
      | (?P<word> [A-Za-z_$\x80-\xff] [A-Za-z0-9_$\x80-\xff]* )
      | (?P<punct> %:%: | \.\.\. | <<= | >>= | -> | \+\+ | -- | << | >> | <= | >= | == | != | && | \|\|
                 | [*/%+\-&^|]= | \#\# | <: | :> | <% | %> | %: | \S )
      | \Z )
""", re.S | re.X)
# By group number: literal, word, punct.
_TOKEN_KINDS = (None, TokenKind.LITERAL, TokenKind.IDENTIFIER, TokenKind.PUNCTUATION)


def lex(source: bytes) -> list[Token]:
    """The C tokens of ``source`` as a raw lexer sees them (no preprocessing), comments and
    line continuations dropped.  Keywords come out as identifiers.  A regular expression over
    the bytes is some 20 times faster than asking libclang for each token's location.  A
    spelling is sliced from the text decoded once (Latin-1 keeps byte offsets); only one
    with other than ASCII characters is decoded again, as UTF-8."""
    found = []
    text = source.decode("latin-1")
    for match in _TOKEN.finditer(source):
        group = match.lastindex
        if group is None:
            continue
        start, end = match.span(group)
        spelling = text[start:end]
        if not spelling.isascii():
            spelling = source[start:end].decode(errors="surrogateescape")
        found.append(Token(start, end, spelling, _TOKEN_KINDS[group]))
    return found


def join_tokens(spellings: list[str]) -> str:
    """Tokens on one line: a space where two tokens would otherwise fuse (``a b``, ``- -``,
    ``/ *``), around comparisons and logical operators, and after commas."""
    out = spellings[0]
    for prev, tok in zip(spellings, spellings[1:]):
        fuse = _wordlike(prev[-1]) and _wordlike(tok[0]) or (
            not _wordlike(prev[-1]) and not _wordlike(tok[0])
            and prev[-1] not in "()[]," and tok[0] not in "()[],;")
        spaced = fuse or tok in _SPACED or prev in _SPACED or prev == ","
        out += (" " if spaced else "") + tok
    return out


_SPACED = frozenset({"&&", "||", "==", "!=", "<=", ">=", "<", ">", "?", ":", "=", "+=", "-="})


def _wordlike(char: str) -> bool:
    return char.isalnum() or char in "_$'\""


def _handle(file: cindex.File) -> int | None:
    return ctypes.cast(file.obj, ctypes.c_void_p).value


class _Cursor(Cursor):
    """The cursors ``children`` lists: ``kind`` is one list lookup.  The rewriters ask every
    node's kind many times, and the bindings' property checks the kind number on each call."""

    @property
    def kind(self) -> CursorKind:
        return _CURSOR_KINDS[self._kind_id]


_CURSOR_KINDS = CursorKind._kinds


def _append_child(child: _Cursor, _parent: _Cursor, found: list[_Cursor]) -> int:
    found.append(child)
    return 1  # CXChildVisit_Continue


_VISIT = ctypes.CFUNCTYPE(ctypes.c_int, _Cursor, _Cursor, ctypes.py_object)
_APPEND_CHILD = _VISIT(_append_child)  # one C callback for every walk
_visit_children = cindex.conf.lib["clang_visitChildren"]  # a binding of its own, for _VISIT
_visit_children.argtypes = [Cursor, _VISIT, ctypes.py_object]
_visit_children.restype = ctypes.c_uint


def children(cursor: Cursor) -> tuple[Cursor, ...]:
    """The node's children, as ``cursor.get_children()`` lists them, for a fraction of the
    time: the bindings' visitor asserts each child is not the null cursor (two more libclang
    calls per child) and wraps a new C callback per call, and the rewriters ask for a node's
    children four times on average, so each node's are listed once and kept with the
    translation unit (by the cursor's bytes: hashing a cursor is a libclang call).  Children
    keep the translation unit alive."""
    tu = cursor._tu
    try:
        listed: dict[bytes, tuple[Cursor, ...]] = tu._ffcc_children
    except AttributeError:
        listed = tu._ffcc_children = {}
    key = bytes(cursor)
    kids = listed.get(key)
    if kids is None:
        found: list[_Cursor] = []
        _visit_children(cursor, _APPEND_CHILD, found)
        for child in found:
            child._tu = tu
        kids = listed[key] = tuple(found)
    return kids


def preorder(cursor: Cursor) -> Iterator[Cursor]:
    """The node, then its descendants, in the order ``cursor.walk_preorder()`` gives them,
    listed through ``children``: the bindings' walk lists every node's children again."""
    stack = [cursor]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def forget_children(tu: cindex.TranslationUnit) -> None:
    """Drop the children ``children`` keeps for the translation unit's nodes."""
    if hasattr(tu, "_ffcc_children"):
        tu._ffcc_children.clear()


def _ends_in_macro(cursor: Cursor, end: int) -> bool:
    """Does the node's last token come from a macro expansion, ``end`` being where libclang
    ends its extent? Then the node, or a descendant ending where it does, has an empty extent
    (every token of a macro argument is placed where the invocation begins); else the node
    ends with a token of its own, written in the file."""
    node: Cursor | None = cursor
    while node is not None:
        if expansion_extent(node)[0] == end:
            return True
        node = next((child for child in children(node) if expansion_extent(child)[1] == end),
                    None)
    return False


def function_body(function: Cursor) -> Cursor | None:
    """A function definition's compound statement."""
    return next((c for c in children(function) if c.kind == CursorKind.COMPOUND_STMT), None)


def converted(cursor: Cursor) -> Cursor | None:
    """The operand of an implicit conversion, else None. libclang shows a conversion as an
    UNEXPOSED_EXPR spanning exactly its one child; the other nodes it shows that way
    (``va_arg``, atomic builtins, ``a ?: b``, ...) span their own tokens or have several
    children."""
    if cursor.kind != CursorKind.UNEXPOSED_EXPR:
        return None
    kids = children(cursor)
    return kids[0] if len(kids) == 1 and cursor.extent == kids[0].extent else None


def strip_implicit(cursor: Cursor) -> Cursor:
    """Skip implicit conversions."""
    while (operand := converted(cursor)) is not None:
        cursor = operand
    return cursor


def unparenthesised(cursor: Cursor) -> Cursor:
    """The expression inside any parentheses and implicit conversions."""
    node = strip_implicit(cursor)
    while node.kind == CursorKind.PAREN_EXPR:
        node = strip_implicit(children(node)[0])
    return node


def type_kind(seen: Type) -> TypeKind:
    """The type's kind, TypeKind.INVALID for one the bindings do not know (libclang 18's have
    no ``_Float16``, ``__bf16`` or fixed-point kinds; ``Type.kind`` raises ValueError on them).
    INVALID is in no set of kinds that labels handle, so sites involving such a type get none."""
    known = TypeKind._kinds
    number = seen._kind_id
    found = known[number] if 0 <= number < len(known) else None
    return TypeKind.INVALID if found is None else found


def canonical_kind(cursor: Cursor) -> TypeKind:
    return type_kind(cursor.type.get_canonical())


def is_arithmetic(kind: TypeKind) -> bool:
    return kind in INTEGER_KINDS or kind in FLOAT_KINDS


def bit_width(cursor: Cursor) -> int:
    return cursor.type.get_canonical().get_size() * 8


def overlapping(invocations: Invocations, start: int, end: int) -> tuple[int, int]:
    """The (outermost) macro invocations sharing text with [start, end): their positions
    lo..hi-1 in the sorted invocations."""
    starts, ends = invocations
    return bisect.bisect_right(ends, start), bisect.bisect_left(starts, end)


def _outermost(ranges) -> Invocations:
    """Sorted starts and ends of the outermost of possibly nested ranges.

    A macro invocation nested in another's arguments never changes whether a span
    is inside, outside or across macro text, so only the outermost ones are kept;
    being disjoint and sorted, they can be searched by bisection.
    """
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(ranges):
        if ends and start < ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends
