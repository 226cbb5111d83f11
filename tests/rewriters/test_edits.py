"""Edit engine: order at one offset, nesting, conflicts, line structure."""

import random

import pytest

from ffcc.rewriters.edits import EditConflict, EditSet


def apply(source: str, *calls) -> str:
    edits = EditSet(source.encode())
    for name, *args in calls:
        getattr(edits, name)(*args)
    return edits.apply().decode()


def test_no_edits_is_identity():
    assert apply("int x;") == "int x;"


def test_replacement_and_insert():
    assert apply("a && b", ("replace", 2, 2, "?"), ("insert", 6, " : 0")) == "a ? b : 0"


def test_nested_wraps_nest_whatever_the_order_added():
    inner_first = apply("abc", ("wrap", 1, 2, "<", ">"), ("wrap", 0, 3, "[", "]"))
    outer_first = apply("abc", ("wrap", 0, 3, "[", "]"), ("wrap", 1, 2, "<", ">"))
    assert inner_first == outer_first == "[a<b>c]"


def test_same_range_first_added_is_outside():
    assert apply("x", ("wrap", 0, 1, "(", ")"), ("wrap", 0, 1, "[", "]")) == "([x])"


def test_shared_start_longer_range_opens_first():
    assert apply("ab", ("wrap", 0, 1, "<", ">"), ("wrap", 0, 2, "[", "]")) == "[<a>b]"


def test_adjacent_wraps_close_before_open():
    assert apply("ab", ("wrap", 0, 1, "(", ")"), ("wrap", 1, 2, "[", "]")) == "(a)[b]"


def test_point_inserts_keep_insertion_order_inside_wraps():
    assert apply("x", ("insert", 0, "1"), ("insert", 0, "2"), ("wrap", 0, 1, "(", ")")) == "(12x)"


def test_overlapping_replacements_refused():
    with pytest.raises(EditConflict):
        apply("abcdef", ("replace", 0, 3, "x"), ("replace", 2, 2, "y"))


def test_crossing_wraps_refused():
    with pytest.raises(EditConflict):
        apply("abcdef", ("wrap", 0, 3, "(", ")"), ("wrap", 2, 5, "[", "]"))


def test_wrap_cutting_a_replacement_refused():
    with pytest.raises(EditConflict):
        apply("abcdef", ("replace", 1, 3, "x"), ("wrap", 2, 5, "[", "]"))


def test_out_of_bounds_refused():
    with pytest.raises(EditConflict):
        apply("abc", ("insert", 4, "x"))


def test_line_breaks_in_new_text_refused():
    with pytest.raises(EditConflict):
        apply("abc", ("insert", 1, "x\ny"))


def test_replacement_keeps_line_count():
    assert apply("a &&\n b", ("replace", 1, 4, " ?")) == "a ?\n b"


def test_rollback_forgets_later_edits():
    edits = EditSet(b"abc")
    edits.insert(0, "<")
    mark = edits.checkpoint()
    edits.insert(3, ">")
    edits.rollback(mark)
    assert edits.apply() == b"<abc"


def _conflicts(accepted: list[tuple], new: tuple) -> bool:
    """The documented conflict rules, checked against every accepted edit (the oracle)."""
    def wrap_cuts(w, r):
        return any(r[1] < p < r[1] + r[2] for p in (w[1], w[2]))
    for old in accepted:
        if new[0] == old[0] == "replace":
            if new[1] < old[1] + old[2] and old[1] < new[1] + new[2]:
                return True
        elif new[0] == old[0] == "wrap":
            a, b = (new[1], new[2]), (old[1], old[2])
            if a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]:
                return True
        elif wrap_cuts(*((new, old) if new[0] == "wrap" else (old, new))):
            return True
    return False


def test_conflict_checks_match_the_rules_on_random_edits():
    """The indexed checks refuse exactly what the rules refuse, rollbacks included."""
    rng = random.Random(7)
    for _ in range(200):
        edits, accepted = EditSet(b"x" * 40), []
        for _ in range(30):
            start = rng.randrange(40)
            if rng.random() < 0.3:
                new = ("replace", start, rng.randint(1, min(4, 40 - start)), "r")
            else:
                new = ("wrap", start, rng.randint(start, min(40, start + 12)), "(", ")")
            expected = _conflicts(accepted, new)
            mark = edits.checkpoint()
            try:
                getattr(edits, new[0])(*new[1:])
            except EditConflict:
                assert expected, new
                continue
            assert not expected, new
            if rng.random() < 0.1:
                edits.rollback(mark)
            else:
                accepted.append(new)
        assert len(edits) == len(accepted)
