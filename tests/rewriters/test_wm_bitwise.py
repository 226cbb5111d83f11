"""WM / BOR (issue 17 point 14): ``& | ^`` by each other and ``<<`` <-> ``>>``: kill conditions,
constant mutants left out, shifts that never shift out of range, hits on the right inputs."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code, build, cc, labels_where, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions


def kills(tmp_path, expr: str, decl: str = "int a, int b") -> dict[str, str]:
    ann = annotate_code(tmp_path, f"int f({decl}) {{\n  return {expr};\n}}\n",
                        LabelOptions(mcc=False, wm_ops=frozenset({"BOR"})))
    return {label.operator: label.predicate for label in ann.labels}


def test_bitwise_kill_conditions(tmp_path):
    assert kills(tmp_path, "a & b") == {
        "wm.bor.band_bor": "((unsigned int)a) != ((unsigned int)b)",
        "wm.bor.band_xor": "(((unsigned int)a) | ((unsigned int)b)) != 0"}
    assert kills(tmp_path, "a | b") == {
        "wm.bor.bor_band": "((unsigned int)a) != ((unsigned int)b)",
        "wm.bor.bor_xor": "(((unsigned int)a) & ((unsigned int)b)) != 0"}
    assert kills(tmp_path, "a ^ n", "int a, long n") == {
        "wm.bor.xor_band": "(((unsigned long)a) | ((unsigned long)n)) != 0",
        "wm.bor.xor_bor": "(((unsigned long)a) & ((unsigned long)n)) != 0"}


@pytest.mark.parametrize("expr, decl, left", [
    ("a ^ 0", "int a", {"wm.bor.xor_band"}),  # a ^ 0 == a | 0: equivalent
    ("a | 0", "int a", {"wm.bor.bor_band"}),  # a | 0 vs a ^ 0: equivalent
    ("a & -1", "int a", {"wm.bor.band_bor"}),  # a & -1 vs a ^ -1: killed by every a
    ("c & 0x100", "unsigned char c", set()),  # 0 whatever c: every mutant constant
    ("q | 2", "_Bool q", set()),  # q & 2 is 0 and q | 2 never q: both constant
    ("(a > 0) & 1", "int a", {"wm.bor.band_bor"}),  # (a > 0) | 1 is never 0
])
def test_constant_mutants_are_not_emitted(tmp_path, expr, decl, left):
    """Issue 17 point 13 for BOR: kill conditions decided statically, exactly
    (kill_rules.bitwise_constant, brute-forced in test_kill_rules.py)."""
    assert set(kills(tmp_path, expr, decl)) == left


def test_shift_kill_conditions(tmp_path):
    assert kills(tmp_path, "a << b") == {"wm.bor.shl_shr": "a != 0 && b != 0"}
    assert kills(tmp_path, "a >> b") == {"wm.bor.shr_shl": "a != 0 && b != 0"}
    assert kills(tmp_path, "1 << b") == {"wm.bor.shl_shr": "b != 0"}
    # unsigned arithmetic wraps (2u << 31 == 2u >> 31 == 0): the values are compared, and the
    # label shifts only by an amount below the width
    assert kills(tmp_path, "u << b", "unsigned u, int b") == {"wm.bor.shl_shr": (
        "(unsigned long long)b < 32 && (((unsigned int)u) << b) != (((unsigned int)u) >> b)")}
    for never in ("a << 0", "0 >> b", "a << 40", "a >> -1"):
        assert kills(tmp_path, never) == {}
    assert kills(tmp_path, "u << w", "unsigned u, unsigned __int128 w") == {}  # not testable


def test_complement_and_negation_removal_are_no_labels(tmp_path):
    """~e -> e and !e -> e always differ: killed by every evaluation."""
    ann = annotate_code(tmp_path, "int f(int a) {\n  return ~a + !a;\n}\n",
                        LabelOptions(mcc=False, wm_ops=frozenset({"BOR", "UOD"})))
    assert [label.operator for label in ann.labels] == []


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_kills_light_on_the_right_inputs(tmp_path, cc, opt):
    code = ("#include <stdlib.h>\nint main(int argc, char **argv) {\n"
            "  unsigned a = strtoul(argv[1], 0, 0), b = strtoul(argv[2], 0, 0);\n"
            "  unsigned r = (a & b) + (a << b);\n  return (int)(r & 1);\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=False, wm_ops=frozenset({"BOR"})))
    binary = build(tmp_path, ann.text, cc, opt, "bor", ("-fsanitize=undefined",))
    and_or = labels_where(ann, operator="wm.bor.band_bor", original="a & b")
    shift = labels_where(ann, operator="wm.bor.shl_shr")
    assert and_or <= run(binary, ["3", "5"]).hits and not (and_or & run(binary, ["5", "5"]).hits)
    assert shift <= run(binary, ["3", "1"]).hits
    assert not (shift & run(binary, ["2", "31"]).hits)  # 2u << 31 == 2u >> 31 == 0
    out_of_range = run(binary, ["1", "40"])  # the original is undefined; the label adds nothing
    assert not (shift & out_of_range.hits) and b"shift exponent 40" in out_of_range.stderr
    assert out_of_range.stderr.count(b"runtime error") == 1
