"""estimate_file: tree-sitter counts, no compile flags, fast."""

import time

from ffcc.rewriters import LabelOptions, annotate, estimate_file

from rewriter_harness import PROGRAMS


def test_counts_on_a_small_file(tmp_path):
    source = tmp_path / "e.c"
    source.write_text("#include <missing.h>\n// comment\nint f(int a, int b) {\n"
                      "  if (a < b && b > 0) return a * 2;\n\n  return 0;\n}\n")
    est = estimate_file(str(source))
    assert est.mcc_labels == 4
    # a < b: ROR 4 + ABS 6; b > 0 and a * 2: ROR/AOR 4 + ABS 3 (literal skipped); COR 3
    assert est.wm_labels == (4 + 6) + (4 + 3) + (4 + 3) + 3
    assert est.lines_of_code == 5
    assert est.labels_per_loc == (est.mcc_labels + est.wm_labels) / 5


def test_bounded_mcc_estimate(tmp_path):
    source = tmp_path / "e.c"
    source.write_text("int f(int a, int b, int c, int d) { return a && b && c && d; }\n")
    assert estimate_file(str(source)).mcc_labels == 16
    assert estimate_file(str(source), mcc_max=2).mcc_labels == 12


def test_estimate_is_fast_and_close_for_mcc():
    path = str(PROGRAMS / "mixed.c")
    start = time.perf_counter()
    est = estimate_file(path)
    assert time.perf_counter() - start < 1.0
    exact = annotate(path, [], LabelOptions(mcc=True))
    assert est.mcc_labels == len(exact.labels) + exact.left_out
