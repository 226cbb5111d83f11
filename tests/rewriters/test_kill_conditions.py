"""Brute force: every WM kill condition against the mutant it stands for, over value grids.

For each operand type (int, unsigned, long long, unsigned char, short, _Bool, double, float), one
C file holds a function per site (``a OP b`` for every relational and
arithmetic operator, ``a OP c`` for constants c, ``c OP a`` for relational operators and zero,
``a OP (b > 0)``, ``a && b``, ``a || b``), annotated with every WM group; it is compiled once
(with UBSan, no recovery: a label must not add undefined behaviour) with the original functions
beside the labelled ones, and run over every grid point (INT_MIN/MAX, 0, +-1, 2, 2^(N-1), NaN,
+-inf, -0.0, ...). At each point where the original is defined it prints, for each mutant the
registry has for the site, whether the mutant's value differs from the original's and whether
its label fired. The test then demands:

- a label fires exactly where its mutant differs, at every point where the mutant is defined
  too (a mutant with undefined behaviour there, such as signed overflow, has no defined value:
  nothing to compare; a mutant dividing by zero traps, which counts as differing);
- a mutant with no label differs at no point or at every point of the grid, or exactly where an
  emitted label of the site fires (the same objective, emitted once), or, for a relational
  mutant that is a constant (``n >= 0u``), exactly where the original is false or true (the
  branch it controls already shows that);
- at generic sites (two variable operands) every label is live on the grid (not trivial);
- the labelled function returns what the original returns and leaves exactly the same
  floating-point exception flags.

Values differ as C values: integers by ``!=``; floating values unless they compare equal or are
both NaN (so -0.0 equals 0.0), as wm_aor.py defines. ABS mutants replace the operand e by
abs(e) (undefined for the most negative integer), -abs(e), and fail-on-zero (differs iff e == 0).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rewriter_harness import ALL_WM, COMPILERS, annotate_code

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.operators import ABS, AOR, COR, ROR, by_original

RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = ("+", "-", "*", "/", "%")
ROR_OF, AOR_OF, COR_OF = by_original(ROR), by_original(AOR), by_original(COR)
ABS_IDS = tuple(m.id for m in ABS)

SIGNED_GRID = ("0", "1", "-1", "2", "-2", "3", "-3", "4", "-5", "8", "-17", "100")
# type -> (C type, grid values, constant right operands, constant zero)
TYPES = {
    "int": ("int", (*SIGNED_GRID, "46341", "-65536", "INT_MAX", "INT_MAX - 1", "INT_MIN",
                    "INT_MIN + 1"),
            ("0", "1", "-1", "2", "3", "4", "7", "16", "INT_MAX", "(-INT_MAX - 1)"), "0"),
    "unsigned": ("unsigned", ("0", "1", "2", "3", "4", "5", "16", "17", "65536", "0x7fffffffu",
                              "0x80000000u", "0x80000001u", "0xfffffffeu", "0xffffffffu"),
                 ("0", "1", "-1", "2", "3", "4", "16", "0x80000000u", "65536u", "0xffffffffu"),
                 "0u"),
    "long_long": ("long long", (*SIGNED_GRID, "3037000500LL", "4294967296LL", "INT_MIN",
                                "LLONG_MAX", "LLONG_MAX - 1", "LLONG_MIN", "LLONG_MIN + 1"),
                  ("0", "1", "-1", "2", "3", "16", "LLONG_MAX"), "0"),
    "unsigned_char": ("unsigned char", ("0", "1", "2", "3", "4", "17", "127", "128", "254", "255"),
                      ("0", "1", "-1", "2", "3", "255"), "0"),
    "short": ("short", (*SIGNED_GRID, "128", "-256", "SHRT_MAX", "SHRT_MIN", "SHRT_MIN + 1"),
              ("0", "1", "-1", "2", "3"), "0"),
    "double": ("double", ("0.0", "-0.0", "1.0", "-1.0", "2.0", "0.5", "3.0", "1e16", "1e308",
                          "-1e308", "DBL_MIN", "4.9e-324", "DBL_MAX", "INFINITY", "-INFINITY",
                          "NAN"),
               ("0.0", "1.0", "-1.0", "2.0", "0.5", "1e308"), "0.0"),
    "bool": ("_Bool", ("0", "1"), ("0", "1", "2", "-1"), "0"),
    "float": ("float", ("0.0f", "-0.0f", "1.0f", "-1.0f", "2.0f", "0.5f", "3.0f", "1e8f",
                        "1e38f", "-1e38f", "FLT_MIN", "1e-45f", "FLT_MAX", "INFINITY",
                        "-INFINITY", "NAN"),
              ("0.0f", "1.0f", "-1.0f", "2.0f", "0.5f"), "0.0f"),
}

HEAD = r"""#define _GNU_SOURCE
#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
static unsigned char hits[%(labels)d + 1];
#define __FFCC_LABEL(i) { __asm__ volatile("" ::: "memory"); hits[i] = 1; }
#define __FFCC_TEMP
"""
# What the annotated file declares before its functions.
TYPEDEFS = ("#include <float.h>\n#include <limits.h>\n#include <math.h>\ntypedef %s t;\n"
            "typedef __typeof__((t)0 + (t)0) r;  /* the arithmetic result type */\n")
# After the functions: the reference values. value(): 0 defined, 1 undefined, 2 division by 0.
HELPERS = r"""
static int same(r x, r y) { return x == y || (x != x && y != y); }
static int value(char op, r x, r y, r *out) {
  r negated;
  switch (op) {
    case '+': %(add)s
    case '-': %(sub)s
    case '*': %(mul)s
  }
  if (y == 0) return %(by_zero)s;
  if (%(signed)d && y == -1 && %(negation_overflows)s) return 1;
  *out = op == '/' ? x / y : %(remainder)s;
  return 0;
}
/* Does x MUTANT y differ from x OP y: 1, 0, or -1 where the mutant is undefined. */
static int aor(char op, char mutant, r x, r y) {
  r a, b;
  value(op, x, y, &a);
  int status = value(mutant, x, y, &b);
  return status == 1 ? -1 : status == 2 ? 1 : !same(a, b);
}
/* ABS on e: 'a' abs(e), 'n' -abs(e), 'z' fail-on-zero. */
static int abs_mutant(char kind, __typeof__(+(t)0) e) {
  __typeof__(e) negated;
  if (kind == 'z') return e == 0;
  if (%(signed)d && %(abs_overflows)s) return -1;
  __typeof__(e) magnitude = e < 0 ? -e : e;
  return !same(e, kind == 'a' ? magnitude : -magnitude);
}
typedef void site_function(t, t, void *);
"""


def helpers(c_type: str) -> str:
    floating = c_type in ("double", "float")
    signed = floating or not c_type.startswith("unsigned") or c_type == "unsigned char"  # r
    if floating:
        arithmetic = {op: f"*out = x {c} y; return 0;" for op, c in
                      (("add", "+"), ("sub", "-"), ("mul", "*"))}
        return HELPERS % {**arithmetic, "by_zero": "(*out = x / y, 0)", "signed": 0,
                          "negation_overflows": "0", "remainder": "0", "abs_overflows": "0"}
    if signed:
        arithmetic = {op: f"return __builtin_{op}_overflow(x, y, out);"
                      for op in ("add", "sub", "mul")}
    else:
        arithmetic = {op: f"*out = x {c} y; return 0;" for op, c in
                      (("add", "+"), ("sub", "-"), ("mul", "*"))}
    return HELPERS % {**arithmetic, "by_zero": "2", "signed": int(signed),
                      "negation_overflows": "__builtin_sub_overflow((r)0, x, &negated)",
                      "remainder": "x % y",
                      "abs_overflows": "__builtin_sub_overflow((__typeof__(e))0, e, &negated)"}


@dataclass
class Site:
    name: str
    text: str  # the expression, over a and b
    operands: tuple[str, ...]  # the function's parameters
    kind: str  # "ror", "aor", "cor"
    op: str
    right: str  # the right operand's C text
    generic: bool  # two variable operands
    mutants: list[tuple[str, str]] = field(default_factory=list)  # (operator id, ABS operand)


def sites(type_name: str) -> list[Site]:
    _, _, constants, zero = TYPES[type_name]
    floating = type_name in ("double", "float")
    found: list[Site] = []

    def add(text, operands, kind, op, right, generic=False):
        found.append(Site(f"s{len(found)}", text, operands, kind, op, right, generic))

    for op in RELATIONAL:
        add(f"a {op} b", ("a", "b"), "ror", op, "b", True)
        add(f"a {op} {zero}", ("a",), "ror", op, zero)
        add(f"{zero} {op} a", ("a",), "ror", op, "a")
    for op in ARITHMETIC:
        if floating and op == "%":
            continue
        add(f"a {op} b", ("a", "b"), "aor", op, "b", True)
        for constant in constants:
            add(f"a {op} {constant}", ("a",), "aor", op, constant)
        if not floating:
            add(f"a {op} (b > 0)", ("a", "b"), "aor", op, "(b > 0)")
    for op in ("&&", "||"):
        add(f"a {op} b", ("a", "b"), "cor", op, "b", True)
    for site in found:
        if site.kind == "cor":
            site.mutants = [(m.id, "") for m in COR_OF[site.op]]
            continue
        table = ROR_OF if site.kind == "ror" else AOR_OF
        site.mutants = [(m.id, "") for m in table[site.op] if not (floating and m.mutant == "%")]
        left, right = site.text.split(f" {site.op} ", 1)
        site.mutants += [(id, operand) for operand in (left, right) if operand in ("a", "b")
                         for id in ABS_IDS]
    return found


def source(type_name: str, prefix: str) -> str:
    """A function per site, all of one signature: (a, b, where the value goes)."""
    return "".join(
        f"void {prefix}{site.name}(t a, t b, {'r' if site.kind == 'aor' else 'int'} *out) {{\n"
        f"  *out = {site.text};\n}}\n" for site in sites(type_name))


def mutant_value(site: Site, operator_id: str, operand: str) -> str:
    """C expression: does the mutant differ at (a, b): 1, 0, or -1 (mutant undefined)."""
    if operand:
        return f"abs_mutant('{operator_id[7]}', {operand})"
    if site.kind == "ror":
        mutant = next(m.mutant for m in ROR_OF[site.op] if m.id == operator_id)
        return f"(({site.text}) != ({site.text.replace(f' {site.op} ', f' {mutant} ', 1)}))"
    if site.kind == "cor":
        left, right = "!!(a)", "!!(b)"
        mutant = {"or": f"({left} || {right})", "and": f"({left} && {right})",
                  "lhs": left, "rhs": right}[operator_id.split("_")[-1]]
        return f"(({site.text}) != {mutant})"
    mutant = next(m.mutant for m in AOR_OF[site.op] if m.id == operator_id)
    return f"aor('{site.op}', '{mutant}', (r)(a), (r)({site.right}))"


def program(type_name: str, annotated: str, labels: dict[tuple[str, str, str], int]) -> str:
    """The test program: the labelled functions (``f``), the original ones (``p``), and a main
    printing, per site and grid point where the original is defined, whether flags and results
    differ, then for each mutant whether it differs and whether its label fired (2: none)."""
    c_type, grid, _, _ = TYPES[type_name]
    body = [f"static const t grid[] = {{{', '.join(grid)}}};",
            "static const int n = sizeof grid / sizeof grid[0];",
            "int main(void) {",
            "  union { r value; int truth; } out1, out2;",
            "  site_function *volatile labelled, *volatile original;  /* opaque calls */"]
    for site in sites(type_name):
        second = "grid[j]" if "b" in site.text else "0"
        loops = ("for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {" if second != "0"
                 else "for (int i = 0; i < n; i++) { int j = 0;")
        compare = "!same(out1.value, out2.value)" if site.kind == "aor" else \
            "out1.truth != out2.truth"
        body += [f"  labelled = (site_function *)f{site.name}; "
                 f"original = (site_function *)p{site.name};",
                 f"  {loops}", f"    t a = grid[i], b = {second}; (void)b;"]
        if site.kind == "aor":
            body.append(f"    if (value('{site.op}', (r)(a), (r)({site.right}), &out1.value)) "
                        "continue;")
        body += [
            "    memset(hits, 0, sizeof hits);",
            "    feclearexcept(FE_ALL_EXCEPT); original(a, b, &out1);",
            "    int env1 = fetestexcept(FE_ALL_EXCEPT);",
            "    feclearexcept(FE_ALL_EXCEPT); labelled(a, b, &out2);",
            "    int env2 = fetestexcept(FE_ALL_EXCEPT);",
            f'    printf("{site.name} %d %d %d %d %d ", i, j, env1 != env2, {compare}, '
            f'{"0" if site.kind == "aor" else "out1.truth"});',
        ]
        for operator_id, operand in site.mutants:
            index = labels.get((site.name, operator_id, operand), -1)
            hit = f"hits[{index}]" if index >= 0 else "2"
            body.append(f'    printf("%d%d,", {mutant_value(site, operator_id, operand)}, {hit});')
        body += ['    printf("\\n");', "  }"]
    body += ["  return 0;", "}"]
    return (HEAD % {"labels": len(labels)} + annotated + helpers(c_type) + "\n".join(body)
            + "\n")


def label_indices(type_name: str, annotation) -> dict[tuple[str, str, str], int]:
    """(site, operator id, ABS operand) -> label index, from the records."""
    by_function = {f"f{site.name}": site for site in sites(type_name)}
    found = {}
    for label in annotation.labels:
        site = by_function[label.function]
        operand = ""
        if label.operator in ABS_IDS:
            operand = "(b > 0)" if "(b > 0)" in label.predicate else re.search(
                r"\b[ab]\b", label.predicate).group()
        assert (site.name, label.operator, operand) not in found, label
        found[(site.name, label.operator, operand)] = label.index
    return found


def check_output(type_name: str, output: str, labelled_sites: set[str]) -> list[str]:
    by_name = {site.name: site for site in sites(type_name)}
    differs: dict[tuple[str, int], list[int]] = {}
    hits: dict[tuple[str, int], list[int]] = {}
    truths: dict[str, list[int]] = {}  # a relational site's own value
    failures = []
    for line in output.splitlines():
        name, i, j, env_differs, result_differs, truth, cells = line.split(" ", 6)
        site = by_name[name]
        point = f"{name} `{site.text}` at grid[{i}], grid[{j}]"
        if env_differs != "0":
            failures.append(f"floating-point flags differ: {point}")
        if result_differs != "0":
            failures.append(f"result differs: {point}")
        for position, cell in enumerate(cells.rstrip(",").split(",")):
            differ, hit = int(cell[:-1]), int(cell[-1])
            operator_id, operand = site.mutants[position]
            if hit != 2 and differ != -1 and differ != hit:
                failures.append(f"{operator_id} {operand} kill {hit} but differs {differ}: "
                                f"{point}")
            differs.setdefault((name, position), []).append(differ)
            hits.setdefault((name, position), []).append(hit)
        truths.setdefault(name, []).append(int(truth))
    for name in labelled_sites - {name for name, _ in differs}:
        failures.append(f"labels at {name} `{by_name[name].text}`, never defined on the grid")
    for (name, position), values in differs.items():
        site = by_name[name]
        operator_id, operand = site.mutants[position]
        defined = {d for d in values if d != -1}
        if hits[name, position][0] == 2:  # no label: constant, or an emitted label's objective
            emitted = [hits[name, p] for p in range(len(site.mutants)) if hits[name, p][0] != 2]
            if site.kind == "ror":  # a constant mutant is killed where the branch goes the other way
                emitted += [truths[name], [1 - t for t in truths[name]]]
            alike = any(all(d in (-1, h) for d, h in zip(values, other)) for other in emitted)
            if len(defined) > 1 and not alike:
                failures.append(f"no label for live mutant {operator_id} {operand} at {name} "
                                f"`{site.text}`")
        elif site.generic and len(defined) < 2:
            failures.append(f"trivial label {operator_id} {operand} at {name} `{site.text}`: "
                            f"differs {defined} everywhere")
    return failures


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("type_name", sorted(TYPES))
def test_kill_conditions_match_mutants(tmp_path: Path, cc: str, type_name: str):
    typedefs = TYPEDEFS % TYPES[type_name][0]
    annotation = annotate_code(tmp_path, typedefs + source(type_name, "f"),
                               LabelOptions(mcc=False, wm_ops=ALL_WM))
    assert annotation.skipped == 0 and annotation.left_out == 0
    labels = label_indices(type_name, annotation)
    (tmp_path / "kills.c").write_text(
        program(type_name, annotation.text + source(type_name, "p"), labels))
    binary = tmp_path / "kills"
    build = subprocess.run([cc, "-O2", "-w", "-fsanitize=undefined", "-fno-sanitize-recover=all",
                            str(tmp_path / "kills.c"), "-o", str(binary), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    labelled_sites = {name for name, _, _ in labels}
    failures = check_output(type_name, done.stdout, labelled_sites)
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:40])
