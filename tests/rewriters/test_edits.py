"""Edit engine: order at one offset, nesting, conflicts, line structure."""

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
