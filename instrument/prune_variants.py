"""The C texts pruning compiles: an annotated unit under an analysis definition of its labels.

The rewriters write every label as exactly ``if (PRED) __FFCC_LABEL(i);`` and the driver
owns what ``__FFCC_LABEL`` means (labels.py).  Pruning never edits label statements: it puts
a different ``#define __FFCC_LABEL`` in front of the same annotated text:

* markers (fast method): ``MARK_T(i); else MARK_F(i)``, so each label's then-branch and
  else-branch carry a distinct assembler comment that only dead code loses;
* probe (gccdiff, seed 004 §5): label ``k`` alone prints, every other label is empty; the
  negated probe prints when label ``k``'s predicate is false (``((void)0); else print``);
* empty: no label does anything, the unit as if it had no labels (the gccdiff baseline).

``MARK_T(i); else MARK_F(i)`` and the negated probe are only well-formed C where the label
statement is the whole then-branch of an ``if`` without an ``else``: anywhere else (a block,
an existing ``else``, a loop body) the compile fails, so a unit that compiles in marker mode
is a unit whose labels all have that shape.  ``check_label_uses`` adds the cheap text check
that every label index is used exactly once, as ``__FFCC_LABEL(i);``.

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

from .errors import FfccError

INFEASIBLE = "infeasible"
TRIVIAL = "trivial"

# rewriters/opaque.launder: __asm__ volatile("" : "+r"(__ffcc_x)); or with "+m" operands
_LAUNDER_OPERAND = r'"\+[rm]"\(__ffcc_\w+\)'
LAUNDER = re.compile(rf'__asm__ volatile\(""\s*:\s*{_LAUNDER_OPERAND}(?:\s*,\s*{_LAUNDER_OPERAND})*\s*\);')
LABEL_USE = re.compile(r"\b__FFCC_LABEL\((\d+)\)(;?)")
MARKER = re.compile(r"ffcc:([TF]):(\d+)(?!\d)")  # clang prints the comment as "#ffcc:T:3"

MARKER_MACRO = ('#define __FFCC_LABEL(i) __asm__ volatile("/*ffcc:T:" #i "*/"); '
                'else __asm__ volatile("/*ffcc:F:" #i "*/")')
EMPTY_MACRO = "#define __FFCC_LABEL(i) ((void)0)"


class LabelShapeError(FfccError):
    """The annotated text does not use labels the way analysis variants need."""


def probe_macro(index: int, negated: bool = False) -> str:
    """Label ``index`` alone prints (when its predicate is false if ``negated``): a call to
    an external print the optimiser keeps unless it proves the branch dead.  Its argument is
    an integer, not a format string: clang numbers string literals before dropping dead
    ones, so a dead printf("...") would still shift the other strings of the object."""
    probe = f"((i) == {index} ? __ffcc_probe_print({index}) : (void)0)"
    body = f"((void)0); else {probe}" if negated else probe
    return f"void __ffcc_probe_print(int);\n#define __FFCC_LABEL(i) {body}"


def neutralise_laundering(text: str) -> tuple[str, int]:
    """The text with laundering asm statements replaced by empty statements, and how many."""
    return LAUNDER.subn(";", text)


def check_label_uses(text: str, count: int) -> None:
    """Every index 0..count-1 used once, as a statement ``__FFCC_LABEL(i);``."""
    uses = LABEL_USE.findall(text)
    indices = sorted(int(index) for index, _ in uses)
    if indices != list(range(count)) or not all(semicolon for _, semicolon in uses):
        raise LabelShapeError(f"label statements are not `if (PRED) __FFCC_LABEL(i);` "
                              f"({len(uses)} uses for {count} labels)")


def variant(text: str, macro: str, source: str) -> str:
    """The annotated ``text`` preceded by ``macro`` (and the temporaries' prefix, empty);
    ``#line`` keeps __FILE__ and lines."""
    return f"{macro}\n#define __FFCC_TEMP\n#line 1 {json.dumps(source)}\n{text}"


def surviving_markers(assembly: str) -> set[tuple[str, int]]:
    """(branch, label index) of the markers present in compiled assembly; branch T or F."""
    return {(branch, int(index)) for branch, index in MARKER.findall(assembly)}
