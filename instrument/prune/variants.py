"""The C texts pruning compiles: an annotated unit under an analysis definition of its labels.

The rewriters write every label as exactly ``__FFCC_LABEL(i, (PRED));`` (inside the
``__FFCC_COMPARE`` or ``__FFCC_COUNTS`` of a group of labels, which analysis compiles as those
statements)
and the driver owns what ``__FFCC_LABEL`` means (labels.py).  Pruning never edits label
statements: it puts a different ``#define __FFCC_LABEL`` in front of the same annotated
text, each one a branch on the predicate:

* markers (fast method): ``if (p) MARK_T(i); else MARK_F(i)``, so each label's then-branch
  and else-branch carry a distinct assembler comment that only dead code loses;
* probe (gccdiff, seed 004 §5): label ``k`` alone prints, every other label is empty; the
  negated probe prints when label ``k``'s predicate is false (``if (p) ; else print``);
* empty: no label does anything, the unit as if it had no labels (the gccdiff baseline).

``check_label_uses`` checks the text first: every label index used exactly once, as a
statement ``__FFCC_LABEL(i, (PRED));`` whose predicate is one parenthesised argument.

Laundering (rewriters/opaque.py) hides the values a label reads from the optimiser, so that
it cannot relate labels to undefined behaviour of the program in the *built* binary.  For
analysis that opacity only hides facts that decide labels (``x != 50`` on a laundered copy of
a constant is undecidable), so ``neutralise_laundering`` removes the empty asm statements in
analysis variants, and they are compiled with flags that keep the optimiser from using the
program's undefined behaviour instead (plan.ANALYSIS_FLAGS).
"""

from __future__ import annotations

import json
import re

from ..errors import FfccError
from ..labels import GROUPS_AS_LABELS, NO_GATES

# rewriters/opaque.launder: __asm__ volatile("" : "+r"(__ffcc_x)); or with "+m" operands; the
# operand may be an element of a frame array (rewriters/frame.py: __ffcc_t0[3])
_LAUNDER_OPERAND = r'"\+[rm]"\(__ffcc_\w+(?:\[\d+\])?\)'
LAUNDER = re.compile(rf'__asm__ volatile\(""\s*:\s*{_LAUNDER_OPERAND}(?:\s*,\s*{_LAUNDER_OPERAND})*\s*\);')
LABEL_USE = re.compile(r"\b__FFCC_LABEL\((\d+), ")
MARKER = re.compile(r"ffcc:([TF]):(\d+)(?!\d)")  # clang prints the comment as "#ffcc:T:3"

MARKER_MACRO = ('#define __FFCC_LABEL(i, p) if (p) __asm__ volatile("/*ffcc:T:" #i "*/"); '
                'else __asm__ volatile("/*ffcc:F:" #i "*/")')
EMPTY_MACRO = "#define __FFCC_LABEL(i, p) if (p) ((void)0)"


class LabelShapeError(FfccError):
    """The annotated text does not use labels the way analysis variants need."""


def probe_macro(index: int, negated: bool = False) -> str:
    """Label ``index`` alone prints (when its predicate is false if ``negated``): a call to
    an external print the optimiser keeps unless it proves the branch dead.  Its argument is
    an integer, not a format string: clang numbers string literals before dropping dead
    ones, so a dead printf("...") would still shift the other strings of the object."""
    probe = f"((i) == {index} ? __ffcc_probe_print({index}) : (void)0)"
    body = f"((void)0); else {probe}" if negated else probe
    return f"void __ffcc_probe_print(int);\n#define __FFCC_LABEL(i, p) if (p) {body}"


def neutralise_laundering(text: str) -> tuple[str, int]:
    """The text with laundering asm statements replaced by empty statements, and how many."""
    return LAUNDER.subn(";", text)


def check_label_uses(text: str, count: int) -> None:
    """Every index 0..count-1 used once, as a statement ``__FFCC_LABEL(i, (PRED));``."""
    uses = [(int(use.group(1)), _is_statement(text, use.end())) for use in LABEL_USE.finditer(text)]
    indices = sorted(index for index, _ in uses)
    if indices != list(range(count)) or not all(statement for _, statement in uses):
        raise LabelShapeError(f"label statements are not `__FFCC_LABEL(i, (PRED));` "
                              f"({len(uses)} uses for {count} labels)")


def _is_statement(text: str, start: int) -> bool:
    """Whether ``text[start:]`` is one parenthesised argument, then ``);``."""
    end = _group_end(text, start)
    return end is not None and text.startswith(");", end)


def _group_end(text: str, start: int) -> int | None:
    """The index after the parenthesised group at ``start``, skipping string and character
    literals; None when there is no such group."""
    if not text.startswith("(", start):
        return None
    depth, position, quote = 0, start, ""
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\":
                position += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    return None


def variant(text: str, macro: str, source: str) -> str:
    """The annotated ``text`` preceded by ``macro`` (and the temporaries' prefix, empty; the
    sites' gates, nothing; a group of labels, its labels' statements); ``#line`` keeps
    __FILE__ and lines."""
    return (f"{macro}\n#define __FFCC_TEMP\n{NO_GATES}{GROUPS_AS_LABELS}"
            f"#line 1 {json.dumps(source)}\n{text}")


def surviving_markers(assembly: str) -> set[tuple[str, int]]:
    """(branch, label index) of the markers present in compiled assembly; branch T or F."""
    return {(branch, int(index)) for branch, index in MARKER.findall(assembly)}
