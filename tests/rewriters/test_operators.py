"""The operator registry: ids are a contract of the label records; groups and criteria agree."""

from __future__ import annotations

from rewriter_harness import annotate_code

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.criteria import BY_GROUP, selected
from ffcc.rewriters.operators import (
    ABS,
    AOR,
    CRITERION_GROUPS,
    GROUPS,
    OPERATORS,
    ROR,
    WM_GROUPS,
    by_original,
)


def test_operator_ids_in_emission_order():
    relational = ("lt", "le", "gt", "ge", "eq", "ne")
    arithmetic = ("add", "sub", "mul", "div", "mod")
    assert list(OPERATORS) == [
        "mcc",
        *(f"wm.ror.{a}_{b}" for a in relational for b in relational if a != b),
        *(f"wm.aor.{a}_{b}" for a in arithmetic for b in arithmetic if a != b),
        "wm.cor.and_or", "wm.cor.and_lhs", "wm.cor.and_rhs",
        "wm.cor.or_and", "wm.cor.or_lhs", "wm.cor.or_rhs",
        "wm.abs.abs", "wm.abs.neg", "wm.abs.zero",
    ]


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


def test_emitted_labels_name_registered_operators(tmp_path):
    ann = annotate_code(tmp_path, "int f(int a, int b) {\n  return a < b && a + b > 1;\n}\n",
                        LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS)))
    for label in ann.labels:
        assert OPERATORS[label.operator].criterion == label.criterion
    assert {OPERATORS[label.operator].group for label in ann.labels} == set(GROUPS)
