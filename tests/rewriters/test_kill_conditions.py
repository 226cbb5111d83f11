"""Brute force: every WM kill condition against the mutant it stands for, over value grids.

For each operand type (int, unsigned, long long, unsigned char, short, _Bool, double, float), one
C file holds a function per site (``a OP b`` for every relational, arithmetic and bitwise
operator, ``a OP c`` for constants c, ``c OP a`` for relational operators and zero,
``a OP (b > 0)``, ``1 << a``, ``a && b``, ``a || b``, every compound assignment ``a OP= b`` and
``a OP= c``, ``a++``, ``--a`` ..., ``-a``), annotated with every WM group; it is compiled once
(with UBSan, no recovery: a label must not add undefined behaviour) with the original functions
beside the labelled ones, and run over every grid point (INT_MIN/MAX, 0, +-1, 2, 2^(N-1), NaN,
+-inf, -0.0, ...; shift amounts over 0 to the width + 1 and negative ones). At each point
where the original is defined it prints, for each mutant the
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
A compound assignment's mutant differs where the values stored (converted to the object's type)
differ; ``++``/``--`` likewise; ``-a`` -> ``a`` where the two values differ.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rewriter_harness import ALL_WM, COMPILERS, annotate_code

from ffcc.rewriters import LabelOptions
from ffcc.rewriters.operators import ABS, AOR, ASR, BOR, COR, IDR, ROR, UOD, by_original

RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = ("+", "-", "*", "/", "%")
BITWISE = ("&", "|", "^", "<<", ">>")
ROR_OF, AOR_OF, COR_OF = by_original(ROR), by_original(AOR), by_original(COR)
BOR_OF, ASR_OF, IDR_OF = by_original(BOR), by_original(ASR), by_original(IDR)
ABS_IDS = tuple(m.id for m in ABS)
UOD_ID = UOD[0].id
# One character per binary operator for the C helpers ('<' and '>' shift).
CHAR = {"<<": "<", ">>": ">"}
VALUE_KINDS = ("aor", "bor", "asr", "idr", "uod")  # sites whose value is a number

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

INCLUDES = r"""#define _GNU_SOURCE
#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
"""
# The label macros as ffcc's runtime header would define them, a label setting its byte of hits[].
LABEL_MACROS = r"""#define __FFCC_LABEL(i, p) (hits[i] |= (unsigned char)!!(p))
#define __FFCC_COMPARE(a, b, asked, labels) labels
#define __FFCC_COUNTS(asked, labels, ...) labels
#define __FFCC_ARITH(a, b, asked, labels) labels
#define __FFCC_LAUNDER_COMPARED(x) __asm__ volatile("" : "+r"(x))
#define __FFCC_TEMP
#define __FFCC_GATE_OPEN(g)
#define __FFCC_GATE_CLOSE(g)
"""
HEAD = INCLUDES + "static unsigned char hits[%(labels)d + 1];\n" + LABEL_MACROS
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
  %(bitwise)s
  if (y == 0) return %(by_zero)s;
  if (%(signed)d && y == -1 && %(negation_overflows)s) return 1;
  *out = op == '/' ? x / y : %(remainder)s;
  return 0;
}
/* The value x OP= y stores, as x's type: 0 defined, 1 undefined, 2 division by zero. */
static int stored(char op, t x, r y, t *out) {
  r value_r;
  int status = value(op, (r)x, (r)y, &value_r);
  *out = (t)value_r;
  return status;
}
/* Does x MUTANT= y store another value than x OP= y: 1, 0, or -1 (mutant undefined). */
static int asr(char op, char mutant, t x, r y) {
  t a, b;
  stored(op, x, y, &a);
  int status = stored(mutant, x, y, &b);
  return status == 1 ? -1 : status == 2 ? 1 : !same(a, b);
}
/* x++ (increment) or x-- as the value stored: 0 defined, 1 undefined. */
static int update(int increment, t x, t *out) {
  %(update_overflows)s
  t copy = x;
  if (increment) copy++; else copy--;
  *out = copy;
  return 0;
}
static int idr(int increment, t x) {
  t a, b;
  update(increment, x, &a);
  return update(!increment, x, &b) ? -1 : !same(a, b);
}
static int negation_undefined(t x) {
  r negated;
  return %(signed)d && %(negation_of_x_overflows)s;
}
static int uod(t x) { return !same(-(r)x, (r)x); }
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


BITWISE_VALUES = r"""switch (op) {
    case '&': *out = x & y; return 0;
    case '|': *out = x | y; return 0;
    case '^': *out = x ^ y; return 0;
    case '<': case '>':
      if (y < 0 || y >= (r)(sizeof(r) * CHAR_BIT)) return 1;
      if (op == '>') { *out = x >> y; return 0; }
      if (%(signed)d && (x < 0 || (x >> (sizeof(r) * CHAR_BIT - 1 - y)) != 0)) return 1;
      *out = x << y; return 0;
  }"""
UPDATE_OVERFLOWS = ("t ignored; if (increment ? __builtin_add_overflow(x, 1, &ignored) : "
                    "__builtin_sub_overflow(x, 1, &ignored)) return 1;")


def helpers(c_type: str) -> str:
    floating = c_type in ("double", "float")
    signed = floating or not c_type.startswith("unsigned") or c_type == "unsigned char"  # r
    if floating:
        arithmetic = {op: f"*out = x {c} y; return 0;" for op, c in
                      (("add", "+"), ("sub", "-"), ("mul", "*"))}
        return HELPERS % {**arithmetic, "by_zero": "(*out = x / y, 0)", "signed": 0,
                          "negation_overflows": "0", "remainder": "0", "abs_overflows": "0",
                          "bitwise": "", "update_overflows": "",
                          "negation_of_x_overflows": "0"}
    wide = c_type in ("int", "unsigned", "long long")  # no promotion: ++ may overflow
    extra = {"bitwise": BITWISE_VALUES % {"signed": int(signed)},
             "update_overflows": UPDATE_OVERFLOWS if wide and c_type != "unsigned" else "",
             "negation_of_x_overflows": "__builtin_sub_overflow((r)0, (r)x, &negated)"}
    if signed:
        arithmetic = {op: f"return __builtin_{op}_overflow(x, y, out);"
                      for op in ("add", "sub", "mul")}
    else:
        arithmetic = {op: f"*out = x {c} y; return 0;" for op, c in
                      (("add", "+"), ("sub", "-"), ("mul", "*"))}
    return HELPERS % {**arithmetic, "by_zero": "2", "signed": int(signed),
                      "negation_overflows": "__builtin_sub_overflow((r)0, x, &negated)",
                      "remainder": "x % y",
                      "abs_overflows": "__builtin_sub_overflow((__typeof__(e))0, e, &negated)",
                      **extra}


@dataclass
class Site:
    name: str
    text: str  # the expression, over a and b
    operands: tuple[str, ...]  # the function's parameters
    kind: str  # "ror", "aor", "cor", "bor", "asr", "idr", "uod"
    op: str
    right: str  # the right operand's C text
    generic: bool  # two variable operands
    mutants: list[tuple[str, str]] = field(default_factory=list)  # (operator id, ABS operand)
    left: str = "a"  # the left operand's C text
    value: str = ""  # the function's result, when not the site's text

    @property
    def shifts(self) -> bool:
        """b runs over shift amounts."""
        return self.op in ("<<", ">>", "<<=", ">>=") and self.right == "b"


def sites(type_name: str) -> list[Site]:
    _, _, constants, zero = TYPES[type_name]
    floating = type_name in ("double", "float")
    found: list[Site] = []

    def add(text, operands, kind, op, right, generic=False, left="a", value=""):
        found.append(Site(f"s{len(found)}", text, operands, kind, op, right, generic,
                          left=left, value=value))

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
    if not floating:
        for op in BITWISE:
            add(f"a {op} b", ("a", "b"), "bor", op, "b", True)
            for constant in constants:
                add(f"a {op} {constant}", ("a",), "bor", op, constant)
        for op in ("<<", ">>"):
            add(f"1 {op} a", ("a",), "bor", op, "a", left="1")
    for op in ARITHMETIC + (() if floating else BITWISE):
        if (floating and op == "%") or type_name == "bool":
            continue  # _Bool objects have no ASR mutants (stored as != 0)
        add(f"a {op}= b", ("a", "b"), "asr", f"{op}=", "b", True, value="a")
        for constant in dict.fromkeys((*constants[:4], *constants[-3:])):  # 0, 1, -1, 2, extremes
            add(f"a {op}= {constant}", ("a",), "asr", f"{op}=", constant, value="a")
    for op in ("++x", "x++", "--x", "x--"):
        add(op.replace("x", "a"), ("a",), "idr", op, "a", value="a")
    add("-a", ("a",), "uod", "-", "a")
    for site in found:
        site.mutants = registry_mutants(site, floating)
    return found


def registry_mutants(site: Site, floating: bool, variables: tuple[str, ...] = ("a", "b")
                     ) -> list[tuple[str, str]]:
    """(operator id, ABS operand) of every mutant the registry has for a site; ``floating``:
    an operand is floating (no ``%``); ``variables``: the operand texts that are not constants
    (ABS mutates those)."""
    if site.kind == "cor":
        return [(m.id, "") for m in COR_OF[site.op]]
    if site.kind == "idr":
        return [(m.id, "") for m in IDR_OF[site.op]]
    if site.kind == "uod":
        return [(UOD_ID, "")] + [(id, site.right) for id in ABS_IDS]
    if site.kind == "bor":
        return [(m.id, "") for m in BOR_OF[site.op]]
    if site.kind == "asr":
        found = [(m.id, "") for m in ASR_OF[site.op] if not (floating and m.mutant == "%=")]
        if site.op[:-1] in ARITHMETIC and site.right in variables:
            found += [(id, site.right) for id in ABS_IDS]
        return found
    table = ROR_OF if site.kind == "ror" else AOR_OF
    found = [(m.id, "") for m in table[site.op] if not (floating and m.mutant == "%")]
    left, right = site.text.split(f" {site.op} ", 1)
    return found + [(id, operand) for operand in (left, right) if operand in variables
                    for id in ABS_IDS]


def source(type_name: str, prefix: str) -> str:
    """A function per site, all of one signature: (a, b, where the value goes)."""
    return "".join(
        f"void {prefix}{site.name}(t a, t b, {'r' if site.kind in VALUE_KINDS else 'int'} "
        f"*out) {{\n  *out = {f'({site.text}, {site.value})' if site.value else site.text};\n}}\n"
        for site in sites(type_name))


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
    if site.kind == "uod":
        return "uod(a)"
    if site.kind == "idr":
        return f"idr({int('++' in site.op)}, a)"
    if site.kind == "asr":
        mutant = next(m.mutant for m in ASR_OF[site.op] if m.id == operator_id)
        op, by = CHAR.get(site.op[:-1], site.op[0]), CHAR.get(mutant[:-1], mutant[0])
        return f"asr('{op}', '{by}', a, (r)({site.right}))"
    table = BOR_OF if site.kind == "bor" else AOR_OF
    mutant = next(m.mutant for m in table[site.op] if m.id == operator_id)
    op, by = CHAR.get(site.op, site.op), CHAR.get(mutant, mutant)
    return f"aor('{op}', '{by}', (r)({site.left}), (r)({site.right}))"


def precondition(site: Site) -> str:
    """C: is the original undefined at (a, b)? (Such points are skipped.)"""
    if site.kind == "uod":
        return "negation_undefined(a)"
    if site.kind == "idr":
        return f"update({int('++' in site.op)}, a, &(t){{0}})"
    op = CHAR.get(site.op.rstrip("=") if site.kind == "asr" else site.op, site.op[0])
    return f"value('{op}', (r)({site.left}), (r)({site.right}), &out1.value)"


def program(type_name: str, annotated: str, labels: dict[tuple[str, str, str], int]) -> str:
    """The test program: the labelled functions (``f``), the original ones (``p``), and a main
    printing, per site and grid point where the original is defined, whether flags and results
    differ, then for each mutant whether it differs and whether its label fired (2: none)."""
    c_type, grid, _, _ = TYPES[type_name]
    body = [f"static const t grid[] = {{{', '.join(grid)}}};",
            "static const int n = sizeof grid / sizeof grid[0];",
            f"static const t shifts[] = {{{', '.join(shift_grid(type_name))}}};",
            "static const int n_shifts = sizeof shifts / sizeof shifts[0];"]
    for site in sites(type_name):  # a function per site: one huge main takes long to compile
        body += [f"static void check_{site.name}(void) {{",
                 "  union { r value; int truth; } out1, out2;",
                 "  site_function *volatile labelled, *volatile original;  /* opaque calls */"]
        second = ("shifts[j]" if site.shifts else "grid[j]") if "b" in site.text else "0"
        bound = "n_shifts" if site.shifts else "n"
        loops = (f"for (int i = 0; i < n; i++) for (int j = 0; j < {bound}; j++) {{"
                 if second != "0" else "for (int i = 0; i < n; i++) { int j = 0;")
        compare = "!same(out1.value, out2.value)" if site.kind in VALUE_KINDS else \
            "out1.truth != out2.truth"
        body += [f"  labelled = (site_function *)f{site.name}; "
                 f"original = (site_function *)p{site.name};",
                 f"  {loops}", f"    t a = grid[i], b = {second}; (void)b;"]
        if site.kind in VALUE_KINDS:
            body.append(f"    if ({precondition(site)}) continue;")
        body += [
            "    memset(hits, 0, sizeof hits);",
            "    feclearexcept(FE_ALL_EXCEPT); original(a, b, &out1);",
            "    int env1 = fetestexcept(FE_ALL_EXCEPT);",
            "    feclearexcept(FE_ALL_EXCEPT); labelled(a, b, &out2);",
            "    int env2 = fetestexcept(FE_ALL_EXCEPT);",
            f'    printf("{site.name} %d %d %d %d %d ", i, j, env1 != env2, {compare}, '
            f'{"0" if site.kind in VALUE_KINDS else "out1.truth"});',
        ]
        for operator_id, operand in site.mutants:
            index = labels.get((site.name, operator_id, operand), -1)
            hit = f"hits[{index}]" if index >= 0 else "2"
            body.append(f'    printf("%d%d,", {mutant_value(site, operator_id, operand)}, {hit});')
        body += ['    printf("\\n");', "  }", "}"]
    body += ["int main(void) {", *(f"  check_{site.name}();" for site in sites(type_name)),
             "  return 0;", "}"]
    return (HEAD % {"labels": len(labels)} + annotated + helpers(c_type) + "\n".join(body)
            + "\n")


def shift_grid(type_name: str) -> list[str]:
    """Shift amounts: 0 to the promoted width + 1, and negative ones."""
    width = 64 if type_name == "long_long" else 32
    return [str(amount) for amount in range(width + 2)] + ["-1", "-5"]


def label_indices(type_name: str, annotation) -> dict[tuple[str, str, str], int]:
    """(site, operator id, ABS operand) -> label index, from the records."""
    return indices_by_site({f"f{site.name}": site for site in sites(type_name)}, annotation)


def indices_by_site(by_function: dict[str, Site], annotation) -> dict[tuple[str, str, str], int]:
    """(site, operator id, ABS operand) -> label index; ``by_function``: the site of each
    labelled function. An ABS label's operand is the variable its predicate reads (``a``,
    ``b``, a bit-field ``a.x``), or ``(b > 0)``."""
    found = {}
    for label in annotation.labels:
        site = by_function[label.function]
        operand = ""
        if label.operator in ABS_IDS:
            operand = "(b > 0)" if "(b > 0)" in label.predicate else re.search(
                r"\b[ab](?:\.x)?\b", label.predicate).group()
        assert (site.name, label.operator, operand) not in found, label
        found[(site.name, label.operator, operand)] = label.index
    return found


@dataclass
class Rows:
    """What a site's program says at each grid point where the original is defined."""

    site: Site
    points: list[str] = field(default_factory=list)  # each point, as a failure names it
    truths: list[int] = field(default_factory=list)  # the site's value, for a comparison
    differs: list[list[int]] = field(default_factory=list)  # per mutant: 1, 0, -1 (undefined)
    hits: list[list[int]] = field(default_factory=list)  # per mutant: 1, 0, 2 (no label)
    live: set[int] = field(default_factory=set)  # mutants a denser search shows not constant

    def __post_init__(self) -> None:
        if not self.differs:
            self.differs = [[] for _ in self.site.mutants]
            self.hits = [[] for _ in self.site.mutants]


def judge(rows: Rows, excused: frozenset[tuple[str, str]] = frozenset()
          ) -> list[tuple[int, str, str]]:
    """(mutant's position, rule, failure) for each rule a site breaks (the module's docstring):
    "kill", a label firing where its mutant does not differ or not firing where it does;
    "unlabelled", a live mutant with no label whose objective no other one shows (unless
    ``excused``: (operator id, ABS operand) of mutants left out on purpose); "trivial", a
    label constant at a generic site."""
    site, failures = rows.site, []
    for position, (operator_id, operand) in enumerate(site.mutants):
        if rows.hits[position] == rows.differs[position]:
            continue  # fires exactly where it differs (the common case, at C speed)
        for point, differ, hit in zip(rows.points, rows.differs[position], rows.hits[position]):
            if hit != 2 and differ != -1 and differ != hit:
                failures.append((position, "kill", f"{operator_id} {operand} kill {hit} but "
                                                   f"differs {differ}: {point}"))
    if not rows.points:
        return failures
    for position, (operator_id, operand) in enumerate(site.mutants):
        values = rows.differs[position]
        defined = {d for d in values if d != -1}
        if rows.hits[position][0] == 2:  # no label: constant, or an emitted label's objective
            emitted = [hits for hits in rows.hits if hits[0] != 2]
            if site.kind == "ror":  # a constant mutant is killed where the branch goes the other way
                emitted += [rows.truths, [1 - t for t in rows.truths]]
            alike = any(all(d in (-1, h) for d, h in zip(values, other)) for other in emitted)
            if len(defined) > 1 and not alike and (operator_id, operand) not in excused:
                failures.append((position, "unlabelled", f"no label for live mutant {operator_id} "
                                                         f"{operand} at {site.name} `{site.text}`"))
        elif site.generic and len(defined) < 2 and position not in rows.live:
            failures.append((position, "trivial", f"trivial label {operator_id} {operand} at "
                                                  f"{site.name} `{site.text}`: differs {defined} "
                                                  "everywhere"))
    return failures


def check_output(type_name: str, output: str, labelled_sites: set[str]) -> list[str]:
    by_name = {site.name: site for site in sites(type_name)}
    found: dict[str, Rows] = {}
    failures = []
    for line in output.splitlines():
        name, i, j, env_differs, result_differs, truth, cells = line.split(" ", 6)
        rows = found.get(name) or found.setdefault(name, Rows(by_name[name]))
        point = f"{name} `{rows.site.text}` at grid[{i}], grid[{j}]"
        if env_differs != "0":
            failures.append(f"floating-point flags differ: {point}")
        if result_differs != "0":
            failures.append(f"result differs: {point}")
        rows.points.append(point)
        rows.truths.append(int(truth))
        for position, cell in enumerate(cells.rstrip(",").split(",")):
            rows.differs[position].append(int(cell[:-1]))
            rows.hits[position].append(int(cell[-1]))
    for name in labelled_sites - set(found):
        failures.append(f"labels at {name} `{by_name[name].text}`, never defined on the grid")
    return failures + [failure for rows in found.values() for _, _, failure in judge(rows)]


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
