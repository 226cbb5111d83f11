"""Types the libclang Python bindings have no TypeKind for (libclang 18's: ``_Float16``,
``__bf16``): ``Type.kind`` raises ValueError on them, which stopped the rewriter and with it
the build. Sites involving such a type get no labels; the decisions around them keep theirs."""

from __future__ import annotations

import pytest
from clang.cindex import Type, TypeKind
from rewriter_harness import ALL_WM, annotate_code

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.unit import type_kind

ALL = LabelOptions(mcc=True, wm_ops=ALL_WM)
# One decision (3 MCC combinations, 2 COR mutants); the rest are arithmetic and relational
# sites over T: ROR, AOR, ASR, ABS and UOD labels when T is a type labels handle.
CODE = """typedef {t} T;
int both(T a, T b, int c) {{ return a < b && c; }}
T mix(T a, T b) {{ T s = a; s += b; return a < b ? a + b : s * -b; }}
"""
DECISION_ONLY = {"mcc", "wm.cor.and_or", "wm.cor.and_rhs"}


def test_a_kind_number_the_bindings_do_not_know_is_invalid():
    unknown = Type()
    unknown._kind_id = 32  # CXType_Float16, absent from libclang 18's bindings
    with pytest.raises(ValueError):
        unknown.kind  # noqa: B018 (the property is what raises)
    assert type_kind(unknown) == TypeKind.INVALID
    known = Type()
    known._kind_id = TypeKind.DOUBLE.value
    assert type_kind(known) == TypeKind.DOUBLE


@pytest.mark.parametrize("spelling", ["_Float16", "__bf16"])
def test_sites_of_an_unknown_type_get_no_labels(tmp_path, spelling):
    ann = annotate_code(tmp_path, CODE.format(t=spelling), ALL)
    assert {label.operator for label in ann.labels} == DECISION_ONLY
    assert len(ann.labels) == 5


def test_the_same_code_over_a_known_type_is_labelled(tmp_path):
    """The control: over float the sites above do get labels, so the test above shows what
    the unknown type changes."""
    operators = {label.operator.split(".")[1] for label in
                 annotate_code(tmp_path, CODE.format(t="float"), ALL).labels
                 if label.operator != "mcc"}
    assert operators >= {"ror", "aor", "asr", "abs", "uod", "cor"}
