"""The operator registry: ids are a contract of the label records; groups and criteria agree."""

from __future__ import annotations

from rewriter_harness import annotate_code

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.criteria import BY_GROUP, selected
from ffcc.rewriters.operators import (
    ABS,
    AOR,
    ASR,
    BOR,
    CRITERION_GROUPS,
    GROUPS,
    IDR,
    OPERATORS,
    ROR,
    UOD,
    WM_DEFAULT,
    WM_GROUPS,
    by_original,
)


def test_operator_ids_in_emission_order():
    relational = ("lt", "le", "gt", "ge", "eq", "ne")
    arithmetic = ("add", "sub", "mul", "div", "mod")
    bitwise = ("band", "bor", "xor")
    assert list(OPERATORS) == [
        "mcc",
        *(f"wm.ror.{a}_{b}" for a in relational for b in relational if a != b),
        *(f"wm.aor.{a}_{b}" for a in arithmetic for b in arithmetic if a != b),
        "wm.cor.and_or", "wm.cor.and_lhs", "wm.cor.and_rhs",
        "wm.cor.or_and", "wm.cor.or_lhs", "wm.cor.or_rhs",
        "wm.abs.abs", "wm.abs.neg", "wm.abs.zero",
        "wm.uod.neg_noop",
        "wm.idr.preinc_predec", "wm.idr.postinc_postdec", "wm.idr.predec_preinc",
        "wm.idr.postdec_postinc",
        *(f"wm.bor.{a}_{b}" for a in bitwise for b in bitwise if a != b),
        "wm.bor.shl_shr", "wm.bor.shr_shl",
        *(f"wm.asr.{a}eq_{b}eq" for a in arithmetic for b in arithmetic if a != b),
        *(f"wm.asr.{a}eq_{b}eq" for a in bitwise for b in bitwise if a != b),
        "wm.asr.shleq_shreq", "wm.asr.shreq_shleq",
    ]


def test_default_groups_follow_mull():
    """Mull's cxx_default: arithmetic (with -x -> x), increment, comparison and boundary; its
    bitwise and assignment groups are off by default (ffcc adds its COR and ABS)."""
    assert WM_DEFAULT == ("ROR", "AOR", "COR", "ABS", "UOD", "IDR")
    assert set(WM_DEFAULT) < set(WM_GROUPS) and set(WM_GROUPS) - set(WM_DEFAULT) == {"BOR", "ASR"}


def test_every_operator_belongs_to_a_group_of_its_criterion():
    for operator in OPERATORS.values():
        assert operator.group in CRITERION_GROUPS[operator.criterion]
        assert operator.help and "\n" not in operator.help
    assert [g for groups in CRITERION_GROUPS.values() for g in groups] == list(GROUPS)


def test_each_group_has_one_criterion_module_run_in_group_order():
    assert set(BY_GROUP) == set(GROUPS)
    everything = LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS))
    assert [criterion.group for criterion in selected(everything)] == list(GROUPS)
    assert [c.group for c in selected(LabelOptions(mcc=False, wm_ops=frozenset({"ABS", "ROR"})))
            ] == ["ROR", "ABS"]


def test_kill_data():
    ror = {op.id: op for op in ROR}
    assert ror["wm.ror.lt_le"].kill == {"eq"} and ror["wm.ror.ne_eq"].kill is None
    assert ror["wm.ror.lt_ne"].kill == {"gt"} and ror["wm.ror.le_ge"].kill == {"lt", "gt"}
    assert all(sum(op.kill is None for op in mutants) == 1
               for mutants in by_original(ROR).values())  # one negation per operator
    aor = {op.id: op for op in AOR}
    assert aor["wm.aor.add_sub"].simplified == "($x1) != 0"
    assert aor["wm.aor.mul_add"].simplified is None
    assert [op.kill for op in ABS] == [{"lt"}, {"gt"}, {"eq"}]
    assert [op.kill for op in UOD] == [{"lt", "gt"}]
    bor = {op.id: op for op in BOR}
    assert bor["wm.bor.band_bor"].kill == "{a} != {b}"
    assert bor["wm.bor.xor_band"].kill == "({a} | {b}) != 0"
    assert bor["wm.bor.bor_xor"].kill == "({a} & {b}) != 0"
    assert bor["wm.bor.shl_shr"].kill == bor["wm.bor.shr_shl"].kill == "{a} != 0 && {b} != 0"
    assert all(op.underlying.original + "=" == op.original
               and op.underlying.mutant + "=" == op.mutant for op in ASR)
    assert [(op.original, op.mutant) for op in IDR] == [
        ("++x", "--x"), ("x++", "x--"), ("--x", "++x"), ("x--", "x++")]


def test_emitted_labels_name_registered_operators(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b, double d) {\n  b += a;\n  d++;\n"
                                  "  return a < b && a + b > 1 && -(a & b);\n}\n",
                        LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS)))
    for label in ann.labels:
        assert OPERATORS[label.operator].criterion == label.criterion
    assert {OPERATORS[label.operator].group for label in ann.labels} == set(GROUPS)
