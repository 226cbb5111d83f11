"""display.py's spacing of mutant texts: two texts written together get a space exactly where
they would otherwise lex as other tokens."""
from __future__ import annotations

import itertools
import random

from ffcc.rewriters.display import _fused
from ffcc.rewriters.unit import lex

# Texts an edit or a token may be: names, numbers and their parts, literals and their
# prefixes, every punctuator and the characters that start comments.
PIECES = ["a", "x1", "_", "$v", "L", "u8", "e", "1", "1e", "0x1p", "1.", ".5", ".", "..",
          "'c'", '"s"', "-", "--", "+", "++", "->", ">", ">>", "<", "<<", "=", "==", "!",
          "!=", "&", "&&", "|", "||", "*", "/", "%", "^", "~", "?", ":", "#", "##", "<:",
          "%:", " ", "-abs(", "(x)", "y[0]", "\u00e9t\u00e9"]


def _lexes_apart(before: str, after: str) -> bool:
    """The definition: the tokens of the two written together are not theirs one after the
    other."""
    def spellings(text: str) -> list[str]:
        return [token.spelling for token in lex(text.encode(errors="surrogateescape"))]
    return spellings(before + after) != spellings(before) + spellings(after)


def test_fused_agrees_with_lexing_every_pair() -> None:
    for before, after in itertools.product(PIECES, repeat=2):
        assert _fused(before, after) == _lexes_apart(before, after), (before, after)


def test_fused_agrees_with_lexing_on_random_texts() -> None:
    rng = random.Random(33)
    for _ in range(3000):
        before = "".join(rng.choices(PIECES, k=rng.randint(1, 3)))
        after = "".join(rng.choices(PIECES, k=rng.randint(1, 3)))
        assert _fused(before, after) == _lexes_apart(before, after), (before, after)


def test_known_joins() -> None:
    assert _fused("-", "-abs(")
    assert _fused("1", ".5") and _fused("1e", "+2") and _fused(".", "5") and _fused("L", "'x'")
    assert _fused("/", "*") and _fused("a", "b")
    assert not _fused("x", "<=") and not _fused("<=", "y") and not _fused("a", "+1")
