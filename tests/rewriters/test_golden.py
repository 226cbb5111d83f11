"""Golden files: golden/case.c beside golden/case.c.expected (annotated text + label table, a
row per label ending with each mutant the label shows: ``| operator: text``).

The first line of a case names its options, e.g. ``// options: mcc mcc_max=2 wm=ROR,COR``.
Regenerate after an intended change with ``FFCC_UPDATE_GOLDEN=1 pytest tests/rewriters``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rewriter_harness import cc  # noqa: F401 (a fixture)

from ffcc.rewriters import LabelOptions, annotate

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*.c"))


def options_of(source: Path) -> LabelOptions:
    words = source.read_text().splitlines()[0].removeprefix("// options:").split()
    fields: dict = {"mcc": "mcc" in words}
    for word in words:
        key, _, value = word.partition("=")
        if key == "wm":
            fields["wm_ops"] = frozenset(value.split(","))
        elif key == "mcc_max":
            fields["mcc_max"] = int(value)
    return LabelOptions(**fields)


def render(source: Path) -> str:
    ann = annotate(str(source), [], options_of(source))
    table = "\n".join(f"{l.index} {l.operator} {l.line}:{l.column} {l.function} | {l.predicate}"
                      + "".join(f" | {operator}: {text}"
                                for operator, text in getattr(l, "mutants", {}).items())
                      for l in ann.labels)
    return f"{ann.text}/* left_out={ann.left_out}\n{table}\n*/\n"


@pytest.mark.parametrize("source", CASES, ids=[c.stem for c in CASES])
def test_golden(source: Path):
    expected = source.with_suffix(".c.expected")
    got = render(source)
    if os.environ.get("FFCC_UPDATE_GOLDEN"):
        expected.write_text(got)
    assert got == expected.read_text()


@pytest.mark.parametrize("source", CASES, ids=[c.stem for c in CASES])
def test_golden_output_compiles(source: Path, tmp_path: Path, cc: str):
    import subprocess

    out = tmp_path / "case.c"
    out.write_text(annotate(str(source), [], options_of(source)).text)
    done = subprocess.run([cc, "-c", "-Werror=implicit-function-declaration",
                           "-D__FFCC_LABEL(i,p)=if (p) __asm__ volatile(\"\":::\"memory\")",
                           "-D__FFCC_COMPARE(a,b,asked,labels)=labels",
                           "-D__FFCC_COUNTS(asked,labels,...)=labels",
                           "-D__FFCC_ARITH(a,b,asked,labels)=labels",
                           "-D__FFCC_LAUNDER_COMPARED(x)=__asm__ volatile(\"\" : \"+r\"(x))",
                           "-D__FFCC_TEMP=", "-D__FFCC_GATE_OPEN(g)=", "-D__FFCC_GATE_CLOSE(g)=",
                           str(out), "-o", str(tmp_path / "case.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
