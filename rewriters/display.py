"""The texts label records show: expressions as the source spells them, one rule for spaces.

``source_text``: the expression's tokens, separated by one space wherever the source separates
them (spaces, line breaks, comments) and by nothing where it does not, so ``a+b`` and ``a + b``
stay as written and a record's ``original`` can be searched for in the file.

``value_text``: how a predicate names an operand's value. Labels never evaluate an expression
with side effects again; they read the value the program computed. Such an operand is written
in backquotes, ``\\`x++\\` != 3``: "the value x++ had", not a second increment. Operands without
side effects are written as they are.
"""

from __future__ import annotations

import re

from clang.cindex import Cursor

from .safety import side_effect_free
from .unit import Unit


def source_text(unit: Unit, cursor: Cursor) -> str | None:
    """The node's tokens on one line, spaced as in the source; None if it holds a directive."""
    tokens = unit.tokens_in(*unit.span(cursor))
    if not tokens or any(token.spelling == "#" for token in tokens):
        return None
    parts = [tokens[0].spelling]
    for before, token in zip(tokens, tokens[1:]):
        parts.append(f" {token.spelling}" if token.offset > before.end else token.spelling)
    return "".join(parts)


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
