"""ffcc rewriters: make coverage objectives (MCC, weak mutation) explicit as label branches.

``annotate(path, compile_args, options)`` parses one C file with libclang, asks each selected
criterion for label requests at every site, hands out unit-local label indices (this is the
only place that does), and returns the rewritten source plus one ``Label`` record per label.
Each label is the statement ``__FFCC_LABEL(i);`` guarded by its predicate; the driver defines
``__FFCC_LABEL``, ``__FFCC_TEMP`` (a prefix of every temporary declaration, for attributes) and
the ``#line`` mapping. Line structure of the file is kept.

Code inside macro expansions is left alone (its nodes have no text of their own) unless
``options.in_macros`` asks: then function bodies' macro invocations are first replaced by the
preprocessor's own expansion of them (macro_expansion.py).
"""

from __future__ import annotations

from .annotate import annotate
from .estimate import Estimate, estimate_file
from .model import Annotation, Label, LabelOptions

__all__ = ["annotate", "Annotation", "Label", "LabelOptions", "estimate_file", "Estimate"]
