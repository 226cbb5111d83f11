"""--in-macros: function bodies' macro invocations replaced by their expansions, then labelled."""

from __future__ import annotations

from functools import partial

import pytest
from rewriter_harness import ALL_WM, annotate_code, build, cc, run  # noqa: F401 (cc is a fixture)

from ffcc.instrument.plan import preprocess_argv
from ffcc.instrument.toolchain import select_backend
from ffcc.rewriters import LabelOptions, annotate
from ffcc.rewriters.macro_expansion import Expansion, expand_macros
from ffcc.rewriters.unit import Unit

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
