"""ffcc rewriters: make coverage objectives (MCC, weak mutation) explicit as label branches.

``annotate(path, compile_args, options)`` (labelling.py) parses one C file with libclang, asks
each selected criterion for label requests at every site, hands out unit-local label indices
(this is the only place that does), and returns the rewritten source plus one ``Label`` record
per label.
Each label is the statement ``__FFCC_LABEL(i, (PRED));``; the labels of a site that compare
the same two integer values are also one ``__FFCC_COMPARE((a), (b), __FFCC_CMP_LT(i) ...,
STATEMENTS);`` around their statements, its AOR labels on integers of 32 or 64 bits one
``__FFCC_ARITH((a), (b), __FFCC_AOR(ADD, DIV, i) ..., STATEMENTS);``, and runs of its other
labels one ``__FFCC_COUNTS(__FFCC_CNT(i) ..., STATEMENTS, __FFCC_HIT(i, (PRED)), ...);``
(rewrite.py); a site's label code
is one block ``{ __FFCC_GATE_OPEN(g) ... __FFCC_GATE_CLOSE(g) }`` (g: the site's number,
``Label.gate``). The driver defines what these compile to (a branch or a branch-free slot
update; a group as one asm statement, or the statements; a gate that skips a retired site, or
nothing: docs/LABELS.md), ``__FFCC_TEMP`` (a prefix of every temporary declaration, for attributes),
``__FFCC_LAUNDER_COMPARED(x);`` (a value only comparison groups read: model.COMPARED_LAUNDER) and
the ``#line`` mapping. Line structure of the file is kept.

Code inside macro expansions is left alone (its nodes have no text of their own) unless
``options.in_macros`` asks: then function bodies' macro invocations are first replaced by the
preprocessor's own expansion of them (macro_expansion.py).

``operators`` is the registry of label operators and groups. The names below are imported on
first use, so that importing the registry (ffcc's option parser does, for every compiler
command) does not load libclang or tree-sitter; no submodule is named like one of them, as
importing it would rebind that name to the module.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .estimate import lines_of_code
    from .labelling import annotate
    from .model import Annotation, Label, LabelOptions

__all__ = ["annotate", "Annotation", "Label", "LabelOptions", "lines_of_code"]

_MODULE_OF = {"annotate": "labelling", "Annotation": "model", "Label": "model",
              "LabelOptions": "model", "lines_of_code": "estimate"}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)
