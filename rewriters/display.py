"""The texts label records show: expressions as the source spells them, one rule for spaces.

``source_text``: the expression's tokens, separated by one space wherever the source separates
them (spaces, line breaks, comments) and by nothing where it does not, so ``a+b`` and ``a + b``
stay as written and a record's ``original`` can be searched for in the file. ``mutated_text``:
the same for a mutant, which a report shows in the original's place (record ``mutants``).

``value_text``: how a predicate names an operand's value. Labels never evaluate an expression
with side effects again; they read the value the program computed. Such an operand is written
in backquotes, ``\\`x++\\` != 3``: "the value x++ had", not a second increment. Operands without
side effects are written as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clang.cindex import Cursor

from .model import Edit
from .safety import side_effect_free
from .unit import Span, Token, Unit, lex


def source_text(unit: Unit, cursor: Cursor) -> str | None:
    """The node's tokens on one line, spaced as in the source; None if it holds a directive."""
    return mutated_text(unit, cursor, ())


def mutated_text(unit: Unit, cursor: Cursor, edits: Sequence[Edit]) -> str | None:
    """``source_text`` of the node with ``edits`` made (a mutant: mutation.py). The tokens an
    edit covers give way to its text, spaced as the source spaces what the edit replaces, and
    by a space where it would otherwise run into a neighbour (``- -abs(e)``). None where
    source_text is None, or where an edit lies outside the node (a request at another site)."""
    start, end = unit.span(cursor)
    tokens = unit.tokens_in(start, end)
    if not tokens or any(token.spelling == "#" for token in tokens) or \
            not all(start <= first <= last <= end for first, last, _ in edits):
        return None
    removed = [(first, last) for first, last, _ in edits if first < last]
    pieces = _pieces(tokens, sorted(edits), removed) if edits else tokens
    parts = [pieces[0][2]]
    for before, after in zip(pieces, pieces[1:]):
        # the source's bytes between the two (spaces, comments), less those an edit removed
        between = after[0] - before[1] - sum(max(0, min(last, after[0]) - max(first, before[1]))
                                             for first, last in removed)
        spaced = between > 0 or (before[1] != after[0] or type(before) is not Token
                                 or type(after) is not Token) and _fused(before[2], after[2])
        parts.append(f" {after[2]}" if spaced else after[2])
    return "".join(parts)


def _pieces(tokens: list[Token], edits: list[Edit], removed: list[Span]) -> list[Token | Edit]:
    """The tokens no edit removes and the edits' texts, in source order: (start, end, text)
    first in each, and an edit before a token it starts at."""
    pieces: list[Token | Edit] = []
    pending = iter(edits)
    edit = next(pending, None)
    for token in tokens:
        while edit is not None and edit[0] <= token.offset:
            pieces += [edit] if edit[2] else []
            edit = next(pending, None)
        if not any(first <= token.offset < last for first, last in removed):
            pieces.append(token)
    while edit is not None:
        pieces += [edit] if edit[2] else []
        edit = next(pending, None)
    return pieces


# Characters that never join the character before or after them into one token.
_SEPARATE = frozenset("()[]{},;")


def _fused(before: str, after: str) -> bool:
    """Would the two texts written together lex as other tokens (``-`` and ``-abs(``)?  Only
    texts whose touching characters could join are lexed: a record's mutants ask this of
    every edit's neighbours, and most are a name beside an operator."""
    if before[-1] in _SEPARATE or after[0] in _SEPARATE or not _may_join(before[-1], after[0]):
        return False

    def spellings(text: str) -> list[str]:
        return [token.spelling for token in lex(text.encode(errors="surrogateescape"))]
    return spellings(before + after) != spellings(before) + spellings(after)


def _may_join(last: str, first: str) -> bool:
    """Could a text ending in ``last`` and one starting with ``first`` lex differently when
    written together?  Two word characters (``a`` ``b``) or two punctuation characters
    (``-`` ``-``, ``/`` ``*``) may; a word character beside punctuation only as a number or a
    literal's prefix reads on (``1`` ``.5``, ``1e`` ``+2``, ``.`` ``5``, ``L`` ``'x'``)."""
    word_last, word_first = _word_character(last), _word_character(first)
    if word_last == word_first:
        return True
    if word_last:
        return first in ".'\"" or first in "+-" and last in "eEpP"
    return last == "."


def _word_character(char: str) -> bool:
    """A character of a name or a number as ``lex`` reads them."""
    return char.isalnum() or char in "_$" or char >= "\x80"


def value_text(unit: Unit, cursor: Cursor) -> str | None:
    """``source_text``, in backquotes (and without parentheses around the whole) when
    evaluating it again would have side effects."""
    text = source_text(unit, cursor)
    if text is None or side_effect_free(cursor):
        return text
    while wrapped(text):
        text = text[1:-1].strip()
    return f"`{text}`"


def written(template: str, operands: dict[str, str]) -> str:
    """A predicate template over ``$x0``/``$x1`` written with these operand texts. Where the
    template parenthesises an operand, ``($x0)``, the parentheses are kept only if the text
    needs them: not for a name, a number, a ``.`` member, a backquoted value, or a text
    already in parentheses."""
    def operand(match: re.Match[str]) -> str:
        value = operands[match.group(1) or match.group(2)]
        if match.group(1) and not (_SIMPLE.fullmatch(value) or value.startswith("`")
                                   or wrapped(value)):
            return f"({value})"
        return value
    return _PLACEHOLDER.sub(operand, template)


_PLACEHOLDER = re.compile(r"\(\$(x[01])\)|\$(x[01])")
_SIMPLE = re.compile(r"[\w.]+")
_PARENTHESIS = re.compile(r"[()]")


def wrapped(text: str) -> bool:
    """Whether ``text`` starts with a parenthesis that closes at its very end."""
    if not text.startswith("("):
        return False
    depth = 0
    for paren in _PARENTHESIS.finditer(text):
        depth += 1 if paren.group() == "(" else -1
        if depth == 0:
            return paren.end() == len(text)
    return False
