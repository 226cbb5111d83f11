"""WM on updates (issue 17 point 14): compound assignments (ASR), ``++``/``--`` (IDR) and unary
minus (UOD), ABS on the values they use; pointer arithmetic compared on offsets only. The
program's own update stays as written and runs once; labels read the operands just before."""

from __future__ import annotations

import pytest
from rewriter_harness import annotate_code, build, cc, labels_where, run  # noqa: F401 (cc is a fixture)

from ffcc.rewriters import LabelOptions


def kills(tmp_path, body: str, decl: str, *groups: str) -> list[tuple[str, str]]:
    ann = annotate_code(tmp_path, f"int f({decl}) {{\n  {body}\n}}\n",
                        LabelOptions(mcc=False, wm_ops=frozenset(groups)))
    return [(label.operator, label.predicate) for label in ann.labels]


def test_compound_assignment_kill_conditions(tmp_path):
    assert kills(tmp_path, "a += b; return a;", "int a, int b", "ASR") == [
        ("wm.asr.addeq_subeq", "b != 0"),
        ("wm.asr.addeq_muleq",
         "((unsigned int)a + (unsigned int)b) != ((unsigned int)a * (unsigned int)b)"),
        ("wm.asr.addeq_diveq", "(b == 0 || ((unsigned int)a + (unsigned int)b) != "
                               "(b == -1 ? -(unsigned int)a : (unsigned int)(a / b)))"),
        ("wm.asr.addeq_modeq", "(b == 0 || ((unsigned int)a + (unsigned int)b) != "
                               "(b == -1 ? (unsigned int)0 : (unsigned int)(a % b)))")]
    assert kills(tmp_path, "a &= b; return a;", "int a, int b", "ASR") == [
        ("wm.asr.bandeq_boreq", "((unsigned int)a) != ((unsigned int)b)"),
        ("wm.asr.bandeq_xoreq", "(((unsigned int)a) | ((unsigned int)b)) != 0")]
    # computed in long, stored in an int: its 32 bits compared
    assert kills(tmp_path, "a &= b; return a;", "int a, long b", "ASR")[0] == (
        "wm.asr.bandeq_boreq",
        "((((unsigned long)a) ^ ((unsigned long)b)) & (((unsigned long)1 << 32) - 1)) != 0")
    assert kills(tmp_path, "a <<= b; return a;", "int a, int b", "ASR") == [
        ("wm.asr.shleq_shreq", "a != 0 && b != 0")]


def test_a_narrow_object_compares_the_bits_it_keeps(tmp_path):
    """``c += 128`` and ``c -= 128`` store the same in an unsigned char; the other mutants
    compare the low 8 bits (a bit-field: its width)."""
    found = dict(kills(tmp_path, "c += 128; return c;", "unsigned char c", "ASR"))
    assert "wm.asr.addeq_subeq" not in found
    assert found["wm.asr.addeq_muleq"] == (
        "((((unsigned int)c + (unsigned int)128) ^ ((unsigned int)c * (unsigned int)128)) "
        "& (((unsigned int)1 << 8) - 1)) != 0")
    found = dict(kills(tmp_path, "s.f -= n; return s.f;", "struct { unsigned f : 3; } s, int n",
                       "ASR"))
    assert "& (((unsigned int)1 << 3) - 1)) != 0" in found["wm.asr.subeq_addeq"]
    shift = dict(kills(tmp_path, "c <<= n; return c;", "unsigned char c, int n", "ASR"))
    assert shift["wm.asr.shleq_shreq"].startswith("(unsigned long long)n < 32 && ")


@pytest.mark.parametrize("body, decl", [
    ("a[i++] += 2; return i;", "int *a, int i"),  # side effects in the object assigned
    ("x += g(); return x;", "int x, int (*g)(void)"),  # in the value
    ("v += b; return v;", "volatile int v, int b"),  # reading it again is an effect
    ("q += b; return q;", "_Bool q, int b"),  # stored as != 0, not modulo
    ("f += d; return f;", "float f, double d"),  # converted on the store
])
def test_updates_without_labels(tmp_path, body, decl):
    assert kills(tmp_path, body, decl, "ASR", "IDR") == []


def test_pointer_updates_compare_offsets_only(tmp_path):
    assert kills(tmp_path, "p -= b; return *p;", "int *p, int b", "ASR") == [
        ("wm.asr.subeq_addeq", "b != 0")]
    assert kills(tmp_path, "p += 2; p++; --p; return *p;", "int *p", "ASR", "IDR") == []
    text = annotate_code(tmp_path, "int f(int *p, int b) {\n  p += b;\n  return *p;\n}\n",
                         LabelOptions(mcc=False, wm_ops=frozenset({"ASR"}))).text
    assert "p -=" not in text and "p - " not in text


def test_floating_compound_assignments_hold_the_environment(tmp_path):
    found = dict(kills(tmp_path, "d /= b; return d;", "double d, int b", "ASR"))
    assert set(found) == {"wm.asr.diveq_addeq", "wm.asr.diveq_subeq", "wm.asr.diveq_muleq"}
    assert found["wm.asr.diveq_addeq"] == "(d / b) != (d + b) && !(isnan(d / b) && isnan(d + b))"


def test_abs_on_the_value_assigned(tmp_path):
    assert kills(tmp_path, "a *= b; a += 1; return a;", "int a, int b", "ABS") == [
        ("wm.abs.abs", "b < 0"), ("wm.abs.neg", "b > 0"), ("wm.abs.zero", "b == 0")]
    assert kills(tmp_path, "a /= b; return a;", "int a, int b", "ABS") == [
        ("wm.abs.abs", "b < 0"), ("wm.abs.neg", "b > 0")]  # never divided by 0


@pytest.mark.parametrize("expr, decl, expected", [
    ("-a", "int a", [("wm.uod.neg_noop", "a != 0")]),
    ("-u", "unsigned u", [("wm.uod.neg_noop", "u > 0 && u != ((unsigned int)1 << 31)")]),
    ("-c", "unsigned char c", [("wm.uod.neg_noop", "c > 0")]),  # promoted to int
    ("-d", "double d", [("wm.uod.neg_noop", "islessgreater(d, 0)")]),  # -0.0 == 0.0, NaN
    ("-(a > 0)", "int a", [("wm.uod.neg_noop", "(a > 0) > 0")]),
    ("-1", "int a", []),
])
def test_unary_minus_removal(tmp_path, expr, decl, expected):
    assert kills(tmp_path, f"return {expr};", decl, "UOD") == expected


def test_increments_label_only_floating_and_bool_objects(tmp_path):
    """x + 1 and x - 1 always differ as integers (and pointers): no label there."""
    found = kills(tmp_path, "a++; --a; q++; q--; d++; --d; return a;",
                  "int a, _Bool q, double d", "IDR")
    assert found == [
        ("wm.idr.postinc_postdec", "q != 0"), ("wm.idr.postdec_postinc", "q != 0"),
        ("wm.idr.postinc_postdec", "(d + 1) != (d - 1) && !(isnan(d + 1) && isnan(d - 1))"),
        ("wm.idr.predec_preinc", "(d + 1) != (d - 1) && !(isnan(d + 1) && isnan(d - 1))")]


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_updates_run_once_and_labels_read_the_values_before(tmp_path, cc, opt):
    code = ("#include <stdio.h>\n#include <stdlib.h>\n"
            "struct s { int n; } box;\n"
            "int main(int argc, char **argv) {\n"
            "  int a = atoi(argv[1]), b = atoi(argv[2]);\n  struct s *p = &box;\n"
            "  double d = atof(argv[3]);\n"
            "  p->n = a;\n  p->n *= b;\n  a -= -b;\n  d++;\n"
            "  printf(\"%d %d %g\\n\", p->n, a, d);\n  return 0;\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(mcc=False, wm_ops=frozenset(
        {"ASR", "IDR", "UOD", "ABS"})))
    binary = build(tmp_path, ann.text, cc, opt, "updates", ("-fsanitize=undefined",))
    mul_add = labels_where(ann, operator="wm.asr.muleq_addeq")
    double_inc = labels_where(ann, operator="wm.idr.postinc_postdec")
    both = run(binary, ["2", "2", "1e300"])  # 2 * 2 == 2 + 2; 1e300 + 1 == 1e300 - 1
    assert both.stdout == b"4 4 1e+300\n" and not both.stderr
    assert not (mul_add & both.hits) and not (double_inc & both.hits)
    other = run(binary, ["3", "2", "0.5"])
    assert other.stdout == b"6 5 1.5\n" and mul_add <= other.hits and double_inc <= other.hits
