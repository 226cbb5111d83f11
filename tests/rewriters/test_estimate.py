"""estimate_file: tree-sitter counts, no compile flags, fast."""


from rewriter_harness import PROGRAMS

from ffcc.instrument.cli import run
from ffcc.rewriters import LabelOptions, annotate, estimate_file


def test_counts_on_a_small_file(tmp_path):
    source = tmp_path / "e.c"
    source.write_text("#include <missing.h>\n// comment\nint f(int a, int b) {\n"
                      "  if (a < b && b > 0) return a * 2;\n\n  return 0;\n}\n")
    est = estimate_file(str(source))
    assert est.mcc_labels == 3  # b > 0 is not evaluated when a >= b
    # a < b: ROR 4 + ABS 6; b > 0 and a * 2: ROR/AOR 4 + ABS 3 (literal skipped); COR 3
    assert est.wm_labels == (4 + 6) + (4 + 3) + (4 + 3) + 3
    assert est.lines_of_code == 5
    assert est.labels_per_loc == (est.mcc_labels + est.wm_labels) / 5


def test_counts_updates_and_bitwise_sites(tmp_path):
    source = tmp_path / "e.c"
    source.write_text("int f(int a, int b) {\n  a += b;\n  a <<= 2;\n  a++;\n"
                      "  return -a ^ (b & 3);\n}\n")
    every = estimate_file(str(source))
    # a += b: ASR 4 + ABS 3; a <<= 2: ASR 1; a++: nothing; -a: UOD 1 + ABS 3; ^ and &: BOR 2 each
    assert every.wm_labels == (4 + 3) + 1 + (1 + 3) + 2 + 2
    default = estimate_file(str(source), LabelOptions(mcc=False, wm_ops=frozenset(
        {"ABS", "UOD"})))
    assert default.wm_labels == 3 + (1 + 3)


PAIRS = "(a && b) || (c && d) || (e && f) || (g && h)"


def test_bounded_mcc_estimate(tmp_path):
    source = tmp_path / "e.c"
    source.write_text("int f(int a, int b, int c, int d, int e, int f, int g, int h) {\n"
                      f"  return {PAIRS};\n}}\n")
    path = str(source)
    for bound in (0, 2, 3, 5, 8):
        options = LabelOptions(mcc=True, mcc_max=bound)
        assert estimate_file(path, options).mcc_labels == len(annotate(path, [], options).labels)
    assert estimate_file(path).mcc_labels == 31  # the default bound leaves it whole
    assert estimate_file(path, LabelOptions(mcc=True, mcc_max=2)).mcc_labels == 21


def _estimated(capsys, *argv: str) -> tuple[int, int]:
    """(mcc, wm) of the one file ``ffcc --estimate ARGV`` prints."""
    assert run(["--estimate", *argv]) == 0
    columns = capsys.readouterr().out.splitlines()[1].split()
    return int(columns[2]), int(columns[3])


def test_ffcc_estimate_counts_what_the_label_options_ask(tmp_path, capsys):
    source = tmp_path / "e.c"
    source.write_text("int f(int a, int b, int c, int d, int e, int f, int g, int h) {\n"
                      f"  if ({PAIRS}) return a < d;\n  return 0;\n}}\n")
    path = str(source)
    mcc, wm = _estimated(capsys, path)  # no label option: every group
    assert (mcc, wm) == _estimated(capsys, "--mcc", "--wm", path) and mcc == 31
    assert _estimated(capsys, "--mcc", "--mcc-max=2", path) == (21, 0)
    assert _estimated(capsys, "--mcc", "--mcc-max=0", path) == (31, 0)
    mcc_of_ror, ror = _estimated(capsys, "--wm=ROR", path)
    assert mcc_of_ror == 0 and 0 < ror < wm


def test_estimate_is_close_for_mcc():
    path = str(PROGRAMS / "mixed.c")
    est = estimate_file(path)
    exact = annotate(path, [], LabelOptions(mcc=True))
    assert est.mcc_labels == len(exact.labels) + exact.left_out
