"""bench/walk_bound.py: its C walk sees the main file's nodes, and the annotation it is set
against labels the same units."""

from __future__ import annotations

from pathlib import Path

from bench.walk_bound import annotated, build_walker, walked

UNIT = "#include <stdio.h>\nint f(int a) { return a > 0 ? a + 1 : puts(\"no\"); }\n"


def test_the_c_walk_visits_the_main_file_only(tmp_path: Path) -> None:
    """stdio.h's declarations are thousands of nodes; the function is a dozen or two."""
    source = tmp_path / "unit.c"
    source.write_text(UNIT)
    walk = walked(build_walker(tmp_path), [], [str(source)])
    assert 10 <= walk.nodes <= 30
    assert walk.parse > 0


def test_the_annotation_it_is_measured_against_labels_the_unit(tmp_path: Path) -> None:
    source = tmp_path / "unit.c"
    source.write_text(UNIT)
    seconds, labels = annotated([], [str(source)])
    assert labels > 0 and seconds > 0
