"""--in-macros: function bodies' macro invocations replaced by their expansions, then labelled."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest
from clang.cindex import Cursor
from rewriter_harness import ALL_WM, annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.instrument.plan import preprocess_argv
from ffcc.instrument.toolchain import select_backend
from ffcc.rewriters import LabelOptions, annotate
from ffcc.rewriters.macro_expansion import Expansion, expand_macros
from ffcc.rewriters.unit import Unit, children

# The preprocessor command the ffcc driver hands the rewriters.
PREPROCESS = partial(preprocess_argv, select_backend(None).path)
IN_MACROS = LabelOptions(mcc=True, in_macros=True, macro_preprocessor=PREPROCESS)

MACROS = ("#define BOTH(a, b) ((a) && (b))\n#define POS(c) ((c) > 0 && (c) < 9)\n"
          "int f(int x, int y) {\n  if (BOTH(x, y)) return 1;\n"
          "  return POS(x) || y;\n}\n")


def test_without_the_flag_macro_code_gets_no_labels(tmp_path):
    ann = annotate_code(tmp_path, MACROS, LabelOptions(mcc=True))
    assert {l.original for l in ann.labels} == {"POS(x) || y"}


def test_expanded_code_is_labelled_at_the_invocation(tmp_path):
    ann = annotate_code(tmp_path, MACROS, IN_MACROS)
    by_original = {}
    for label in ann.labels:
        by_original.setdefault(label.original, set()).add((label.line, label.column))
    assert by_original == {
        "((x) && (y))": {(4, 7)},                       # BOTH(x, y)
        "((x) > 0 && (x) < 9) || y": {(5, 10)},         # POS(x) || y: the decision spans both
    }
    assert len(ann.labels) == 3 + 5  # the combinations evaluation reaches
    lines = ann.text.splitlines()
    assert len(lines) == len(MACROS.splitlines())
    original = MACROS.splitlines()
    assert lines[2].startswith(f"{original[2]} __FFCC_TEMP ")  # the frame (frame.py)
    assert lines[:2] == original[:2] and lines[5:] == original[5:]


PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define SHOW(e) printf("%s = %d at line %d\n", #e, (e), __LINE__)
#define CAT(a, b) a##b
#define TWICE(x) ((x) * 2)
#define CALL TWICE
int self = 1;
#define self (4 + self)
int main(int argc, char **argv) {
  int a = atoi(argv[1]), b = atoi(argv[2]);
  int CAT(m, x) = MAX(a,
                      b); int line = __LINE__;
  SHOW(a < b && b < 10);
  SHOW(isdigit(a) || a % 7 == 3);
  printf("%d %d %d %d %s\n", mx, line, CALL(a - b), self, __FILE__);
  return mx > 40;
}
"""
INPUTS = [("1", "2"), ("5", "2"), ("48", "32"), ("-7", "100"), ("10", "10"), ("52", "0"),
          ("0", "-3")]


def test_expansion_keeps_behaviour_and_lights_labels_in_macros(tmp_path, cc):
    options = LabelOptions(mcc=True, wm_ops=ALL_WM, in_macros=True, macro_preprocessor=PREPROCESS)
    ann = annotate_code(tmp_path, PROGRAM, options, args=["-w"])
    in_max = {l.index for l in ann.labels if l.original.startswith("(a) > (b)")}
    assert in_max, [l.original for l in ann.labels]
    (tmp_path / "labelled").mkdir()
    labelled = build(tmp_path / "labelled", ann.text, cc, "-O2", "prog")
    plain = build(tmp_path, PROGRAM, cc, "-O2", "case")  # the same __FILE__ as annotated
    lit = set()
    for argv in INPUTS:
        got, want = run(labelled, list(argv)), run(plain, list(argv))
        assert (got.stdout, got.status) == (want.stdout, want.status), argv
        lit |= got.hits
    assert b"a < b && b < 10 = " in want.stdout and b" at line 15\n" in want.stdout
    assert in_max <= lit


def test_self_referential_and_directive_macros_stay(tmp_path):
    code = ("#define ONE 1\nint self;\n#define self (4 + self)\n"
            "int f(int x) {\n#if ONE\n  return self > x;\n#endif\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(wm_ops=frozenset({"ROR"}), in_macros=True,
                                                     macro_preprocessor=PREPROCESS))
    assert "#if ONE" in ann.text
    assert {l.original for l in ann.labels} == {"self > x"}


def test_pragma_in_an_expansion_is_not_expanded(tmp_path):
    code = ("#define QUIET(e) _Pragma(\"GCC diagnostic push\") (e) _Pragma(\"GCC diagnostic pop\")\n"
            "int f(int x, int y) {\n  return QUIET(x < y);\n}\n")
    ann = annotate_code(tmp_path, code, LabelOptions(wm_ops=frozenset({"ROR"}), in_macros=True,
                                                     macro_preprocessor=PREPROCESS))
    assert ann.labels == [] and ann.text == code


def test_without_a_preprocessor_labels_stay_out_of_macros(tmp_path):
    options = LabelOptions(mcc=True, in_macros=True,
                           macro_preprocessor=partial(preprocess_argv, "/nonexistent/cc"))
    ann = annotate_code(tmp_path, MACROS, options)
    assert {l.original for l in ann.labels} == {"POS(x) || y"}


def test_in_macros_needs_the_drivers_preprocessor():
    with pytest.raises(ValueError, match="macro_preprocessor"):
        LabelOptions(in_macros=True)


def test_offsets_map_back_to_the_invocation():
    original = b"a = M(1,\n  2); b = N;\n"
    expansion = Expansion(original, {(4, 13): b"(1 + 2)", (19, 20): b"7"})
    assert expansion.source == b"a = (1 + 2)\n; b = 7;\n"
    assert [expansion.to_original(i) for i in (0, 4, 8, 11, 12, 13, 17, 18, 19)] == [
        0, 4, 4, 4, 13, 14, 18, 19, 20]


def test_an_expansion_that_would_change_the_token_stream_is_dropped(tmp_path):
    """Expanding f's __COUNTER__ uses would renumber the later one outside any function."""
    source = tmp_path / "counter.c"
    source.write_text("#define NEXT __COUNTER__\nint f(void) { return NEXT + NEXT; }\n"
                      "int later = __COUNTER__;\n")
    assert expand_macros(Unit(str(source), []), [], PREPROCESS) is None
    source.write_text("#define NEXT __COUNTER__\nint f(void) { return NEXT + NEXT; }\n")
    assert b"return 0 + 1;" in expand_macros(Unit(str(source), []), [], PREPROCESS).source


def test_file_expands_to_the_name_the_command_spells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "name.c").write_text('#include <stdio.h>\n'
                                     'int f(void) { return puts(__FILE__) > 0 && 1; }\n')
    ann = annotate("./name.c", [], IN_MACROS)
    assert 'puts("./name.c")' in ann.text


# Issue 32: libclang ends a node whose last token comes from a macro argument where the
# invocation begins, so these decisions were wrapped without their last invocation and the
# labelled file did not compile. (p[1])AND(p[0]): an operand that ends where a macro begins.
ENDS_IN_ARGUMENTS = r"""#include <stdio.h>
#define T(x) x
#define CHAR_X 'x'
#define NEST(x) T(T(x))
#define FIRST_IS(p, c) p[0] == T(c)
#define AND &&
int f(const char *p) {
  if (p && p[0] == T('x')) return 1;
  if (T('x') == p[0] && p[1]) return 2;
  if (p[1] == NEST(CHAR_X) || p[2] == T(
        'y'
      )) return 3;
  if (p[1] && FIRST_IS(p, 'q')) return 4;
  if (p[2] != 'c' && (p[1])AND(p[0])) return 5;
  return (p != 0) && p[0] == T('z');
}
int main(void) {
  printf("%d %d %d %d %d\n", f("xy"), f("az"), f("zxy"), f("z\0\0"), f("qq"));
  return 0;
}
"""
DECISIONS = ["p && p[0] == T('x')", "T('x') == p[0] && p[1]",
             "p[1] == NEST(CHAR_X) || p[2] == T( 'y' )", "p[1] && FIRST_IS(p, 'q')",
             "p[2] != 'c' && (p[1])", "(p != 0) && p[0] == T('z')"]
COMPARISONS = ["p[0] == T('x')", "T('x') == p[0]", "p[1] == NEST(CHAR_X)", "p[2] == T( 'y' )",
               "p[2] != 'c'", "p[0] == T('z')"]


def test_decisions_ending_in_a_macro_argument_are_labelled_whole(tmp_path, cc):
    ann = annotate_code(tmp_path, ENDS_IN_ARGUMENTS,
                        LabelOptions(mcc=True, wm_ops=frozenset({"ROR"})))
    mcc = [label.original for label in ann.labels if label.operator == "mcc"]
    assert sorted(mcc) == sorted(DECISIONS * 3)  # three combinations each
    ror = [label.original for label in ann.labels if label.operator.startswith("wm.ror")]
    assert sorted(ror) == sorted(COMPARISONS * 4)  # the four live mutants of == or !=
    assert run(build(tmp_path, ann.text, cc, "-O0", "prog")).stdout == b"1 5 3 1 4\n"


INC = "#define INC(x) x + 1\n#define INC_P(x) (x) + 1\nint next(void);\n"


def test_a_node_spanning_an_invocation_it_does_not_hold_gets_no_labels(tmp_path):
    """``y * INC(z)`` is ``(y * z) + 1``: no node is ``y * z`` spelled ``y * INC(z)``, and a
    label capturing ``INC_P(z)`` as the right operand of ``*`` would compute
    ``next() * (z + 1)``. The comparison holding all of it is a site."""
    code = INC + "int f(int y, int z) {\n  return y * INC(z) > next() * INC_P(z);\n}\n"
    ann = annotate_code(tmp_path, code, LabelOptions(wm_ops=frozenset({"ROR", "AOR"})))
    assert {label.original for label in ann.labels} == {"y * INC(z) > next() * INC_P(z)"}


def test_an_operand_from_a_macro_argument_ends_after_the_invocation(tmp_path):
    source = tmp_path / "spans.c"
    source.write_text("#define T(x) x\nint f(int y, int z) {\n  return y + T(z\n    ) * 2;\n}\n")
    unit = Unit(str(source), [])
    spelled = {unit.text(node): unit.spelled(node) for node in _descendants(unit.functions()[0])}
    assert spelled["T(z\n    )"] and spelled["T(z\n    ) * 2"] and spelled["y + T(z\n    ) * 2"]


def _descendants(node: Cursor) -> Iterator[Cursor]:
    for child in children(node):
        yield child
        yield from _descendants(child)
