"""Brute force over operand-type pairs: every WM kill condition against its mutant where the two
operands have different types, so that the usual arithmetic conversions, the integer promotions
and the conversion of a compound assignment's value to its object are all exercised.

test_kill_conditions.py checks each operand type against itself; here the left operand has
type A and the right one type B, for A and B over ``KINDS``: every standard integer type,
``_Bool``, an enumeration with a signed and one with an unsigned type (an enumerator above
INT_MAX: unsigned int in gcc and clang), ``float``, ``double``, ``long double``, and bit-fields
(``unsigned``/``int`` of widths 1, 3, 31 and 32, and ``unsigned long long``/``long long`` of
40, which gcc computes in 40 bits and clang in 64). For each pair, functions hold ``a OP b``
for every relational, arithmetic, logical and bitwise operator the pair allows and ``a OP= b``
for every compound assignment; for each A alone, ``++a``, ``a++``, ``--a``, ``a--``, ``-a``.
One C file per left type holds all its pairs, annotated with every WM group once; each
compiler builds it with a checker (``build_options``: gcc under UBSan without recovery, so a
label must not add undefined behaviour) and runs every point of the two types' grids (0, small
values, each type's extremes; for a shift, every amount from 0 to 65 the right type holds,
negative ones and its extremes).

The reference is the compiler's own C: a mutant's value is its expression, compiled beside the
original from a table per pair, and compared only where it is defined. Undefinedness is decided
in the type the compiler gives the expression (``__typeof__``): signed overflow
(``__builtin_*_overflow`` into that type, which knows gcc's 40-bit types where its UBSan does
not), division by zero (a mutant dividing by zero traps: it differs), ``MIN / -1``, a shift by
a negative amount or one not below the width of the promoted left operand (measured: 40 for
gcc's 40-bit bit-fields), a signed left shift of a negative value or one that overflows, a
floating value out of the range of the integer object it is stored to. So each compiler's C
decides what a label must say, the wide bit-fields' included.

The rules are test_kill_conditions.judge's at every point where the original is defined: a
label fires exactly where its mutant differs; a mutant without a label is constant on the grid
or an emitted label's objective; no label is constant (where the grid shows a label constant,
denser grids, ``dense``, look for a point that is not before it counts as trivial); and the
labelled function returns what the original returns and leaves the same floating-point flags.
Mutants ffcc leaves out on purpose are not asked for (a label of theirs is still checked):
ASR where the object is ``_Bool`` or the value is floating and converted to another type on the
store (``PairSite.unwanted``: no label may appear), AOR, BOR, UOD and the unsigned negation ABS
on a wide bit-field, ASR's ``/=`` and ``%=`` (and mutants to them) of a wide unsigned bit-field
and an operand that can be negative, and COR mutants that read a bit-field right operand
``&&``/``||`` skips (``PairSite.left_out``).

Defects the brute force finds and ffcc does not fix yet go in ``KNOWN`` (none at present): the
main test leaves the failures each explains out, and ``test_known_defect`` checks each one's
examples alone, marked ``xfail(strict=True)`` so that a fix shows (then remove the entry)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from rewriter_harness import ALL_WM, COMPILERS, annotate_code
from test_kill_conditions import (
    AOR_OF,
    ARITHMETIC,
    ASR_OF,
    BITWISE,
    BOR_OF,
    INCLUDES,
    LABEL_MACROS,
    RELATIONAL,
    ROR_OF,
    Rows,
    Site,
    indices_by_site,
    judge,
    registry_mutants,
)

from ffcc.rewriters import LabelOptions


@dataclass(frozen=True)
class Kind:
    """An operand type: a plain object of type ``declared``, or a bit-field of that type."""

    name: str
    declared: str
    grid: tuple[str, ...]  # values, as C constant expressions of the declared type
    bounds: tuple[int, int] | None  # the values an integer object holds; None: floating
    width: int = 0  # a bit-field's width; 0: no bit-field

    @property
    def floating(self) -> bool:
        return self.bounds is None

    @property
    def param(self) -> str:
        return f"struct bf_{self.name}" if self.width else self.declared

    def operand(self, variable: str) -> str:
        return f"{variable}.x" if self.width else variable

    @property
    def wide(self) -> bool:
        """A bit-field of a type wider than int (gcc computes it in its own width)."""
        return self.width > 32


def _signed(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _unsigned(bits: int) -> tuple[int, int]:
    return 0, (1 << bits) - 1


SMALL = ("0", "1", "-1", "2", "-2", "3", "4", "-5", "8")
USMALL = ("0", "1", "2", "3", "4", "5", "8")
KINDS = {kind.name: kind for kind in (
    Kind("schar", "signed char", (*SMALL, "64", "SCHAR_MAX", "SCHAR_MIN", "SCHAR_MIN + 1"),
         _signed(8)),
    Kind("uchar", "unsigned char", (*USMALL, "17", "127", "128", "254", "255"),
         _unsigned(8)),
    Kind("short", "short", (*SMALL, "128", "-256", "SHRT_MAX", "SHRT_MIN", "SHRT_MIN + 1"),
         _signed(16)),
    Kind("ushort", "unsigned short", (*USMALL, "255", "256", "32767", "32768", "65534",
                                      "65535"), _unsigned(16)),
    Kind("int", "int", (*SMALL, "46341", "-65536", "INT_MAX", "INT_MIN", "INT_MIN + 1"),
         _signed(32)),
    Kind("unsigned", "unsigned", (*USMALL, "65536u", "0x7fffffffu", "0x80000000u", "0x80000001u",
                                  "0xfffffffeu", "0xffffffffu"), _unsigned(32)),
    Kind("long", "long", (*SMALL, "2147483647L", "2147483648L", "4294967295L", "-4294967296L",
                          "3037000500L", "LONG_MAX", "LONG_MIN", "LONG_MIN + 1"), _signed(64)),
    Kind("ulong", "unsigned long", (*USMALL, "2147483648ul", "4294967295ul",
                                    "4294967296ul", "0x8000000000000000ul", "ULONG_MAX - 1",
                                    "ULONG_MAX"), _unsigned(64)),
    Kind("llong", "long long", (*SMALL, "2147483647LL", "2147483648LL", "4294967295LL",
                                "-4294967296LL", "3037000500LL", "LLONG_MAX", "LLONG_MIN",
                                "LLONG_MIN + 1"), _signed(64)),
    Kind("ullong", "unsigned long long", (*USMALL, "2147483648ull",
                                          "4294967295ull", "4294967296ull",
                                          "0x8000000000000000ull", "ULLONG_MAX - 1", "ULLONG_MAX"),
         _unsigned(64)),
    Kind("bool", "_Bool", ("0", "1"), (0, 1)),
    # gcc and clang: an enumeration's type is unsigned int unless an enumerator is negative
    # (int then), or above INT_MAX (unsigned int, whatever C17 says of such an enumerator).
    Kind("enum_s", "enum es", (*SMALL, "46341", "INT_MAX", "INT_MIN", "INT_MIN + 1"),
         _signed(32)),
    Kind("enum_u", "enum eu", (*USMALL, "0x7fffffffu", "0x80000000u", "0x80000001u",
                               "0xffffffffu"), _unsigned(32)),
    Kind("float", "float", ("0.0f", "-0.0f", "1.0f", "-1.0f", "2.0f", "0.5f", "3.0f", "4.0f",
                            "8.0f", "2147483648.0f", "9223372036854775808.0f", "1e38f", "FLT_MAX",
                            "1e-45f", "INFINITY", "-INFINITY", "NAN"), None),
    Kind("double", "double", ("0.0", "-0.0", "1.0", "-1.0", "2.0", "0.5", "3.0", "4.0", "8.0",
                              "2147483648.0", "4294967295.0", "9223372036854775808.0",
                              "18446744073709551616.0", "1e308", "DBL_MAX", "4.9e-324", "INFINITY",
                              "-INFINITY", "NAN"), None),
    Kind("ldouble", "long double", ("0.0L", "-0.0L", "1.0L", "-1.0L", "2.0L", "0.5L", "3.0L",
                                    "4.0L", "8.0L", "9223372036854775807.0L",
                                    "18446744073709551615.0L", "18446744073709551616.0L", "1e4000L",
                                    "LDBL_MAX", "LDBL_MIN", "INFINITY", "-INFINITY", "NAN"), None),
    Kind("u1", "unsigned", ("0u", "1u"), _unsigned(1), 1),
    Kind("u3", "unsigned", ("0", "1", "2", "3", "4", "5", "6", "7"), _unsigned(3), 3),
    Kind("u31", "unsigned", (*USMALL, "0x3fffffffu", "0x40000000u", "0x7ffffffeu",
                             "0x7fffffffu"), _unsigned(31), 31),
    Kind("u32", "unsigned", (*USMALL, "0x7fffffffu", "0x80000000u", "0xfffffffeu",
                             "0xffffffffu"), _unsigned(32), 32),
    Kind("i1", "int", ("0", "-1"), _signed(1), 1),
    Kind("i3", "int", ("0", "1", "-1", "2", "-2", "3", "-3", "-4"), _signed(3), 3),
    Kind("i31", "int", (*SMALL, "0x3fffffff", "-0x40000000", "-0x3fffffff"), _signed(31), 31),
    Kind("i32", "int", (*SMALL, "INT_MAX", "INT_MIN", "INT_MIN + 1"), _signed(32), 32),
    Kind("u40", "unsigned long long", (*USMALL, "0xffffffffull",
                                       "0x100000000ull", "0x7fffffffffull", "0x8000000000ull",
                                       "0xfffffffffeull", "0xffffffffffull"), _unsigned(40), 40),
    Kind("i40", "long long", (*SMALL, "0x7fffffffLL", "-0x80000000LL", "0x7fffffffffLL",
                              "-0x8000000000LL", "-0x7fffffffffLL"), _signed(40), 40),
)}
DECLARATIONS = "".join(
    [  # no header: enumerators and types as literals
        "enum es { ES_MIN = -2147483647 - 1, ES_NEG = -1, ES_MAX = 2147483647 };\n",
        "enum eu { EU_ZERO, EU_BIG = 0x80000000u };\n",
        "struct value { __int128 i; long double f; };  /* a site's value */\n",
    ] + [f"struct bf_{kind.name} {{ {kind.declared} x : {kind.width}; }};\n"
         for kind in KINDS.values() if kind.width])
SHIFT_AMOUNTS = range(-5, 66)  # 0 to 65 and negative amounts, those the right type holds
SANITIZE = ("-fsanitize=undefined,float-cast-overflow", "-fno-sanitize-recover=all")


def build_options(cc: str, left: Kind) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The options of the labelled and original functions and those of the checker (which
    evaluates only what it has found defined). gcc builds with UBSan: no label may add undefined
    behaviour, and the original must be defined wherever the checker runs it. clang builds
    without, and optimises the labelled functions of a floating left operand (the x87
    environment a long double label holds, values kept across its asm statements). Each has
    its part only, so that the run stays short; test_kill_conditions builds every label shape
    optimised under both."""
    if cc == "gcc":
        return ("-O0", *SANITIZE), ("-O0",)
    return ("-O2" if left.floating else "-O0",), ("-O0",)

@dataclass(frozen=True)
class Failure:
    """A rule broken at a site of the pair (``left``, ``right``)."""

    cc: str
    left: str
    right: str
    op: str  # the site's C operator
    site_kind: str  # its Site.kind: "ror", "aor", ..., "idr", "uod"
    operator_id: str  # the mutant's ("" if the failure is the site's)
    operand: str  # the ABS mutant's operand: "a", "b" (with ".x" for a bit-field), or ""
    rule: str  # "kill", "unlabelled", "trivial" (judge's), "unwanted", "undefined", "result",
    # "flags"
    text: str


@dataclass(frozen=True)
class Defect:
    """A defect the brute force found: the failures it explains, left out of the main test,
    and the cases (compiler, left, right, site operator) test_known_defect checks alone,
    expected to fail (strict: a fix shows as an unexpected pass; then remove the entry)."""

    reason: str
    examples: tuple[tuple[str, str, str, str], ...]
    explains: Callable[[Failure], bool]


KNOWN: tuple[Defect, ...] = ()


def known(failure: Failure) -> Defect | None:
    return next((defect for defect in KNOWN if defect.explains(failure)), None)


@dataclass
class PairSite(Site):
    """A site of the pair (``left``, ``right``) kinds."""

    kinds: tuple[str, str] = ("", "")
    floating_value: bool = False  # the value is floating (else an integer)
    unwanted: frozenset[str] = frozenset()  # mutants ffcc leaves alone: no label, not compared
    left_out: frozenset[tuple[str, str]] = frozenset()  # (id, operand): left out on purpose

    @property
    def shifts(self) -> bool:
        """b runs over shift amounts."""
        return self.op in ("<<", ">>", "<<=", ">>=")


def pair_sites(left: Kind, right: Kind) -> list[PairSite]:
    """The sites of ``left OP right``, ``left OP= right``, and, for left == right, those of the
    unary operators on ``left``."""
    a, b = left.operand("a"), right.operand("b")
    floating = left.floating or right.floating
    found: list[PairSite] = []

    def add(text: str, kind: str, op: str, value: str = "", alone: bool = False,
            floating_value: bool = floating, **operands: str) -> None:
        site = PairSite(f"{left.name}__{right.name}__{len(found)}", text, ("a", "b"), kind, op,
                        operands.get("right", b), True, left=operands.get("left", a),
                        value=value, kinds=(left.name, right.name),
                        floating_value=floating_value)
        site.mutants = registry_mutants(site, floating, variables=(a, b))
        if alone:
            site.unwanted = frozenset(m.id for m in ASR_OF[op])
        site.left_out = frozenset(_left_out(site, left, right))
        found.append(site)

    for op in RELATIONAL:
        add(f"{a} {op} {b}", "ror", op, floating_value=False)
    for op in ARITHMETIC:
        if not (floating and op == "%"):
            add(f"{a} {op} {b}", "aor", op)
    for op in ("&&", "||"):
        add(f"{a} {op} {b}", "cor", op, floating_value=False)
    if not floating:
        for op in BITWISE:
            add(f"{a} {op} {b}", "bor", op)
    for op in ARITHMETIC + (() if floating else BITWISE):
        if floating and op == "%":
            continue
        # ffcc leaves alone a _Bool object (stored as != 0), and a floating value converted
        # to another type on the store (wm_asr.py)
        alone = left.name == "bool" or right.floating and right.declared != left.declared
        add(f"{a} {op}= {b}", "asr", f"{op}=", value=a, alone=alone,
            floating_value=left.floating)
    if left == right:
        for op in ("++x", "x++", "--x", "x--"):
            add(op.replace("x", a), "idr", op, value=a, floating_value=left.floating,
                right=a)
        add(f"-{a}", "uod", "-", floating_value=left.floating, right=a)
    return found


def _left_out(site: PairSite, left: Kind, right: Kind):
    """The mutants ffcc leaves out at a site on purpose (counted as left out): where a wide
    bit-field's arithmetic differs between gcc and clang (``w + 1``, ``w & a``, ``w << b``,
    ``-w``; for an unsigned one, -w == w at 2^63 in clang's arithmetic, at 2^39 in gcc's;
    ``w /= i`` for a negative int i, which converts to 2^40 + i in gcc's, to 2^64 + i in
    clang's); COR mutants that need the right operand where ``&&``/``||`` skips it, which a
    label does not read when it is a member of a struct (it may be uninitialised)."""
    for operator_id, operand in site.mutants:
        group = operator_id.split(".")[1]
        if group in ("aor", "bor") and (left.wide or right.wide) or group == "uod" and left.wide:
            yield operator_id, operand
        elif group == "cor" and right.width and operator_id.endswith(("_or", "_and", "_rhs")):
            yield operator_id, operand
        elif operator_id == "wm.abs.neg":
            if _wide_unsigned(left if operand == site.left else right):
                yield operator_id, operand
        elif group == "asr" and ("div" in operator_id or "mod" in operator_id) and (
                _wide_unsigned(left) and _negative(right) or _wide_unsigned(right)
                and _negative(left)):
            yield operator_id, operand


def _wide_unsigned(kind: Kind) -> bool:
    return kind.wide and kind.declared.startswith("unsigned")


def _negative(kind: Kind) -> bool:
    """Can it be negative (an integer)?"""
    return kind.bounds is not None and kind.bounds[0] < 0


def dense(kind: Kind) -> list[str]:
    """A denser grid, where a label constant on the grid looks for a point that is not: every
    small value, powers of two and their neighbours, the extremes and theirs, and the x where
    x + x / m is near 2^k + m, for m from 2 to 8 (``x += -m`` and ``x /= -m`` store the same
    in k bits there: an ``unsigned char`` 208 and -4)."""
    if kind.floating:
        suffix = {"float": "f", "double": "", "long double": "L"}[kind.declared]
        powers = [f"{sign}0x1p{k}{suffix}" for k in range(-4, 70, 3) for sign in ("", "-")]
        return [*kind.grid, *(f"{n}.0{suffix}" for n in range(-20, 21)), *powers]
    low, high = kind.bounds
    values = set(range(-20, 21)) | {low + d for d in range(4)} | {high - d for d in range(4)}
    values |= {sign * ((1 << k) + d) for k in range(1, 65) for d in range(-2, 3)
               for sign in (1, -1)}
    values |= {((1 << k) + m) * m // (m + 1) + d for k in range(1, 65) for m in range(2, 9)
               for d in range(-2, 3)}
    return [f"(-{-v - 1}LL - 1)" if v < 0 else f"{v}ull" for v in sorted(values)
            if low <= v <= high]


def shift_grid(left: Kind, right: Kind) -> list[str]:
    """Right operands of a shift: the amounts ``right`` holds, then its own grid."""
    low, high = right.bounds
    return [str(n) for n in SHIFT_AMOUNTS if low <= n <= high] + list(right.grid)


def site_function(prefix: str, site: PairSite) -> str:
    left, right = KINDS[site.kinds[0]], KINDS[site.kinds[1]]
    value = f"({site.text}, {site.value})" if site.value else site.text
    field = "f" if site.floating_value else "i"
    return (f"void {prefix}{site.name}({left.param} a, {right.param} b, struct value *out) "
            f"{{\n  out->{field} = {value};\n}}\n")


# The reference, generic over the operands' types (the checker's translation unit).
REFERENCE = r"""
extern unsigned char hits[];
#define SIGNED_T(T) ((T)-1 < (T)0)
/* Do two values differ: not equal, and not both NaN (-0.0 equals 0.0)? */
#define DIFFER(x, y) ({ __typeof__(x) u_ = (x); __typeof__(y) v_ = (y); \
  !(u_ == v_ || (u_ != u_ && v_ != v_)); })
/* Does x OP y overflow in its (signed integer) type? */
#define OVERFLOWS(op, x, y) ({ __typeof__((x) + (y)) r_; SIGNED_T(__typeof__(r_)) && \
  __builtin_##op##_overflow((__typeof__(r_))(x), (__typeof__(r_))(y), &r_); })
/* x / y and x % y: 0 defined, 1 undefined (MIN / -1), 2 division by zero. */
#define DIVIDES(x, y) ((y) == 0 ? 2 : ({ __typeof__((x) + (y)) r_; SIGNED_T(__typeof__(r_)) && \
  (__typeof__(r_))(y) == -1 && __builtin_sub_overflow((__typeof__(r_))0, (__typeof__(r_))(x), \
  &r_); }))
/* The width of an integer type: 32 for int, 40 for gcc's 40-bit bit-field types, ... */
#define WIDTH(T) ({ int k_ = 1; while ((T)((unsigned __int128)1 << k_) != 0) k_++; k_; })
/* x << y (left) or x >> y: 0 defined, 1 undefined. */
#define SHIFTS(left, x, y) ({ __typeof__(+(x)) l_ = (x); int w_ = WIDTH(__typeof__(l_)); \
  ((y) < 0 || (y) >= w_) ? 1 : (left) && SIGNED_T(__typeof__(l_)) && \
  (l_ < 0 || (l_ >> (w_ - 1 - (int)(y))) != 0); })
/* -x undefined? */
#define NEGATION_OVERFLOWS(x) ({ __typeof__(+(x)) r_; SIGNED_T(__typeof__(r_)) && \
  __builtin_sub_overflow((__typeof__(r_))0, +(x), &r_); })
#define NEVER(x) 0
/* ABS on e: 'a' abs(e), 'n' -abs(e), 'z' fail-on-zero: 1, 0, -1 (undefined). */
#define ABS_MUTANT(kind, e, overflows) ({ __typeof__(+(e)) e_ = (e); \
  kind == 'z' ? e_ == 0 : overflows(e_) ? -1 : \
  DIFFER(e_, kind == 'a' ? (e_ < 0 ? -e_ : e_) : -(e_ < 0 ? -e_ : e_)); })
/* Does a floating value convert to an integer type of these bounds? */
#define FITS(v, low, high) ({ long double v_ = (v); v_ > (low) - 1 && v_ < (high) + 1; })
static int same_value(const struct value *x, const struct value *y) {
  return x->i == y->i && !DIFFER(x->f, y->f);
}
/* COR: do a OP b ('a' &&, 'o' ||) and its mutant ('a', 'o', 'l' a alone, 'r' b alone) differ? */
static int cor(char op, char mutant, int a, int b) {
  int original = op == 'a' ? a && b : a || b;
  return original != (mutant == 'a' ? a && b : mutant == 'o' ? a || b : mutant == 'l' ? a : b);
}
/* A mutant: how it is computed ('v' value of a binary operator, 's' value stored by a compound
   assignment, 'r' relational, 'c' logical, 'A'/'B' ABS on a/b, 'i' ++/--, 'u' -a removed,
   'x' not compared), its operator (or ABS kind, or COR form), its label (-1: none). */
struct mutant { char how, op; int label; };
/* What the checks saw at each grid point of a site where the original is defined. */
enum { MAX_POINTS = 4096, MAX_MUTANTS = 16 };
static int n_points, point_i[MAX_POINTS], point_j[MAX_POINTS];
static char differs[MAX_MUTANTS][MAX_POINTS + 1], fired[MAX_MUTANTS][MAX_POINTS + 1];
static char truths[MAX_POINTS + 1], flags[MAX_POINTS + 1], results[MAX_POINTS + 1];
static int live[MAX_MUTANTS];  /* the mutant's label is constant on the grid, not on denser ones */
static void point(int i, int j, int flags_differ, int result_differs, int truth, int n,
                  const int *d, const int *h) {
  if (n_points == MAX_POINTS) { puts("too many points"); return; }
  point_i[n_points] = i; point_j[n_points] = j;
  flags[n_points] = '0' + flags_differ; results[n_points] = '0' + result_differs;
  truths[n_points] = '0' + truth;
  for (int m = 0; m < n; m++) {
    differs[m][n_points] = d[m] < 0 ? 'u' : '0' + d[m]; fired[m][n_points] = '0' + h[m];
  }
  n_points++;
}
static void report(const char *name, int n) {
  printf("S %s %d\n", name, n_points);
  if (n_points) {
    printf("P");
    for (int p = 0; p < n_points; p++) printf(" %d.%d", point_i[p], point_j[p]);
    truths[n_points] = flags[n_points] = results[n_points] = 0;
    printf("\nT %s\nE %s\nR %s\n", truths, flags, results);
    for (int m = 0; m < n; m++) {
      differs[m][n_points] = fired[m][n_points] = 0;
      printf("D %s %s\n", differs[m], fired[m]);
    }
    printf("L");
    for (int m = 0; m < n; m++) if (live[m]) printf(" %d", m);
    printf("\n");
  }
  n_points = 0;
}
"""
# One character per C operator in the checker's tables.
CODE = {"<": "<", "<=": "l", ">": ">", ">=": "g", "==": "=", "!=": "!", "+": "+", "-": "-",
        "*": "*", "/": "/", "%": "%", "&": "&", "|": "|", "^": "^", "<<": "L", ">>": "R",
        "&&": "a", "||": "o"}
COR_FORM = {"or": "o", "and": "a", "lhs": "l", "rhs": "r"}
STATUS = {"+": "OVERFLOWS(add, {x}, {y})", "-": "OVERFLOWS(sub, {x}, {y})",
          "*": "OVERFLOWS(mul, {x}, {y})", "/": "DIVIDES({x}, {y})", "%": "DIVIDES({x}, {y})",
          "<<": "SHIFTS(1, {x}, {y})", ">>": "SHIFTS(0, {x}, {y})"}


def _field(floating: bool) -> str:
    return "f" if floating else "i"


def kind_helpers(kind: Kind) -> str:
    """C: ABS on an operand of ``kind``; ++/-- and unary minus on an object of it."""
    v, o = kind.operand("v"), kind.operand("o")
    overflows = "NEVER" if kind.floating else "NEGATION_OVERFLOWS"
    out = _field(kind.floating)
    check = (lambda op: "0") if kind.floating else (
        lambda op: f"OVERFLOWS({op}, {v}, 1)")
    return f"""
static int abs_{kind.name}(char how, {kind.param} v) {{ return ABS_MUTANT(how, {v}, {overflows}); }}
/* The value ++ ('+') or -- stores: 0, or 1 where it is undefined. */
static int update_{kind.name}(char op, {kind.param} v, struct value *out) {{
  {kind.param} o = v;
  memset(out, 0, sizeof *out);
  if (op == '+') {{ if ({check("add")}) return 1; ++{o}; }}
  else {{ if ({check("sub")}) return 1; --{o}; }}
  out->{out} = {o};
  return 0;
}}
static int idr_{kind.name}(char op, {kind.param} v) {{
  struct value x, y;
  update_{kind.name}(op, v, &x);
  return update_{kind.name}(op == '+' ? '-' : '+', v, &y) ? -1 : !same_value(&x, &y);
}}
static int negate_{kind.name}({kind.param} v, struct value *out) {{
  memset(out, 0, sizeof *out);
  if ({overflows}({v})) return 1;
  out->{out} = -{v};
  return 0;
}}
static int uod_{kind.name}({kind.param} v) {{
  struct value x, y;
  negate_{kind.name}(v, &x);
  memset(&y, 0, sizeof y);
  y.{out} = +{v};
  return !same_value(&x, &y);
}}
"""


def pair_helpers(left: Kind, right: Kind) -> str:
    """C for one pair: the value of each binary operator and the value each compound assignment
    stores (0, 1 undefined, 2 division by zero), each comparison, each mutant's difference, and
    the loop over the grids that checks the pair's sites from a table."""
    pair = f"{left.name}__{right.name}"
    x, y, o = left.operand("a"), right.operand("b"), left.operand("o")
    integer = not (left.floating or right.floating)
    value = _field(left.floating or right.floating)
    stored = _field(left.floating)
    binary, compound = [], []
    for op in ARITHMETIC + (BITWISE if integer else ()):
        if op == "%" and not integer:
            continue
        check = (STATUS.get(op, "0") if integer else "0").format(x=x, y=y)
        binary.append(f"  case '{CODE[op]}': if ((status = {check})) return status; "
                      f"out->{value} = {x} {op} {y}; return 0;")
        if right.floating and not left.floating and left.declared != "_Bool":
            low, high = left.bounds  # a floating value stored must be in range
            check = f"!FITS((long double)({x} {op} {y}), {low}.0L, {high}.0L)"
        compound.append(f"  case '{CODE[op]}': if ((status = {check})) return status; "
                        f"{o} {op}= {y}; break;")
    relations = " ".join(f"case '{CODE[op]}': return {x} {op} {y};" for op in RELATIONAL)
    b_grid = f"grid_{right.name}"
    shifts = shift_grid(left, right) if integer else []
    return f"""
typedef void function_{pair}({left.param}, {right.param}, struct value *);
struct site_{pair} {{
  const char *name; char kind, op, shifts; int n;
  struct mutant m[MAX_MUTANTS]; function_{pair} *labelled, *original;
}};
static int value_{pair}(char op, {left.param} a, {right.param} b, struct value *out) {{
  int status;
  memset(out, 0, sizeof *out);
  switch (op) {{
{chr(10).join(binary)}
  }}
  return 1;
}}
static int stored_{pair}(char op, {left.param} a, {right.param} b, struct value *out) {{
  int status;
  {left.param} o = a;
  memset(out, 0, sizeof *out);
  switch (op) {{
{chr(10).join(compound)}
  default: return 1;
  }}
  out->{stored} = {o};
  return 0;
}}
static int relation_{pair}(char op, {left.param} a, {right.param} b) {{
  switch (op) {{ {relations} }}
  return 0;
}}
static int mutant_{pair}(const struct site_{pair} *s, const struct mutant *m,
                         {left.param} a, {right.param} b) {{
  struct value x, y;
  int status;
  switch (m->how) {{
    case 'v': case 's':
      status = m->how == 'v' ? value_{pair}(m->op, a, b, &y) : stored_{pair}(m->op, a, b, &y);
      if (status) return status == 1 ? -1 : 1;
      if (m->how == 'v') value_{pair}(s->op, a, b, &x); else stored_{pair}(s->op, a, b, &x);
      return !same_value(&x, &y);
    case 'r': return relation_{pair}(s->op, a, b) != relation_{pair}(m->op, a, b);
    case 'c': return cor(s->op, m->op, !!({x}), !!({y}));
    case 'A': return abs_{left.name}(m->op, a);
    case 'B': return abs_{right.name}(m->op, b);
    case 'i': return idr_{left.name}(s->op, a);
    case 'u': return uod_{left.name}(a);
  }}
  return -1;
}}
static const {right.declared} shifts_{pair}[] = {{{', '.join(shifts) or '0'}}};
/* Is the original defined at (a, b)? Its value in *out. */
static int defined_{pair}(const struct site_{pair} *s, {left.param} a, {right.param} b,
                          struct value *out) {{
  switch (s->kind) {{
    case 'v': return !value_{pair}(s->op, a, b, out);
    case 's': return !stored_{pair}(s->op, a, b, out);
    case 'i': return !update_{left.name}(s->op, a, out);
    case 'u': return !negate_{left.name}(a, out);
  }}
  return 1;
}}
/* Does mutant m differ as ``want`` says at some point of the denser grids? */
static int dense_{pair}(const struct site_{pair} *s, const struct mutant *m, int want) {{
  int n_a = (int)(sizeof dense_{left.name} / sizeof dense_{left.name}[0]);
  int n_b = s->kind == 'i' || s->kind == 'u' ? 1 : s->shifts
    ? (int)(sizeof shifts_{pair} / sizeof shifts_{pair}[0])
    : (int)(sizeof dense_{right.name} / sizeof dense_{right.name}[0]);
  for (int i = 0; i < n_a; i++) for (int j = 0; j < n_b; j++) {{
    {left.param} a; {right.param} b;
    struct value o;
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    {x} = dense_{left.name}[i]; {y} = s->shifts ? shifts_{pair}[j] : dense_{right.name}[j];
    if (defined_{pair}(s, a, b, &o) && mutant_{pair}(s, m, a, b) == want) return 1;
  }}
  return 0;
}}
static void check_{pair}(const struct site_{pair} *s) {{
  int d[MAX_MUTANTS], h[MAX_MUTANTS], seen[MAX_MUTANTS][2];
  int n_a = (int)(sizeof grid_{left.name} / sizeof grid_{left.name}[0]);
  int n_b = s->kind == 'i' || s->kind == 'u' ? 1 : s->shifts
    ? (int)(sizeof shifts_{pair} / sizeof shifts_{pair}[0])
    : (int)(sizeof {b_grid} / sizeof {b_grid}[0]);
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < n_a; i++) for (int j = 0; j < n_b; j++) {{
    {left.param} a; {right.param} b;
    struct value o1, o2;
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    {x} = grid_{left.name}[i]; {y} = s->shifts ? shifts_{pair}[j] : {b_grid}[j];
    if (!defined_{pair}(s, a, b, &o1)) continue;  /* the original is undefined */
    memset(&o1, 0, sizeof o1); memset(&o2, 0, sizeof o2);
    memset(hits, 0, N_LABELS + 1);
    feclearexcept(FE_ALL_EXCEPT); s->original(a, b, &o1);
    int env1 = fetestexcept(FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT); s->labelled(a, b, &o2);
    int env2 = fetestexcept(FE_ALL_EXCEPT);
    for (int m = 0; m < s->n; m++) {{
      d[m] = s->m[m].how == 'x' ? -1 : mutant_{pair}(s, &s->m[m], a, b);
      h[m] = s->m[m].label < 0 ? 2 : hits[s->m[m].label];
      if (d[m] >= 0) seen[m][d[m]] = 1;
    }}
    point(i, j, env1 != env2, !same_value(&o1, &o2),
          s->kind == 'r' || s->kind == 'c' ? (int)o1.i : 0, s->n, d, h);
  }}
  /* A label the grid shows constant: is it so on the denser grids too? */
  for (int m = 0; m < s->n; m++)
    live[m] = s->m[m].label >= 0 && seen[m][0] != seen[m][1]
      && dense_{pair}(s, &s->m[m], seen[m][0]);
  report(s->name, s->n);
}}
"""


def mutant_entry(site: PairSite, operator_id: str, operand: str, label: int) -> str:
    """C: a ``struct mutant`` of the site's table."""
    if operator_id in site.unwanted:
        how, op = "x", "0"
    elif operand:
        how, op = ("A" if operand == site.left else "B"), operator_id[7]
    elif site.kind in ("ror", "aor", "bor", "asr"):
        how = {"ror": "r", "aor": "v", "bor": "v", "asr": "s"}[site.kind]
        table = {"ror": ROR_OF, "aor": AOR_OF, "bor": BOR_OF, "asr": ASR_OF}[site.kind]
        mutant = next(m.mutant for m in table[site.op] if m.id == operator_id)
        op = CODE[mutant[:-1] if site.kind == "asr" else mutant]
    elif site.kind == "cor":
        how, op = "c", COR_FORM[operator_id.split("_")[-1]]
    else:
        how, op = site.kind[0], "0"
    return f"{{'{how}', '{op}', {label}}}"


SITE_KIND = {"ror": "r", "cor": "c", "aor": "v", "bor": "v", "asr": "s", "idr": "i", "uod": "u"}


def checker(sites: list[PairSite], labels: dict[tuple[str, str, str], int], n_labels: int) -> str:
    """The checker's translation unit: for each pair, the reference and a table of its sites,
    each run at every grid point with the original and the labelled function."""
    by_pair: dict[tuple[str, str], list[PairSite]] = {}
    for site in sites:
        by_pair.setdefault(site.kinds, []).append(site)
    used = {name for pair in by_pair for name in pair}
    body = [INCLUDES, DECLARATIONS, f"#define N_LABELS {n_labels}", REFERENCE]
    for name in sorted(used):
        kind = KINDS[name]
        body.append(f"static const {kind.declared} grid_{name}[] = {{{', '.join(kind.grid)}}};")
        body.append(f"static const {kind.declared} dense_{name}[] = {{{', '.join(dense(kind))}}};")
        body.append(kind_helpers(kind))
    main = []
    for (left_name, right_name), pair_sites_ in by_pair.items():
        left, right = KINDS[left_name], KINDS[right_name]
        pair = f"{left_name}__{right_name}"
        body.append(pair_helpers(left, right))
        table = []
        for site in pair_sites_:
            body.append(f"function_{pair} f{site.name}, p{site.name};")
            if site.kind in ("idr", "uod"):
                op = "+" if "++" in site.op else "-"
            else:
                op = CODE[site.op[:-1] if site.kind == "asr" else site.op]
            entries = ", ".join(mutant_entry(site, operator_id, operand,
                                             labels.get((site.name, operator_id, operand), -1))
                                for operator_id, operand in site.mutants)
            shifts = int(site.shifts)
            table.append(f'  {{"{site.name}", \'{SITE_KIND[site.kind]}\', \'{op}\', {shifts}, '
                         f"{len(site.mutants)}, {{{entries}}}, f{site.name}, p{site.name}}},")
        body += [f"static const struct site_{pair} sites_{pair}[] = {{", *table, "};"]
        main.append(f"  for (unsigned k = 0; k < sizeof sites_{pair} / sizeof sites_{pair}[0]; "
                    f"k++) check_{pair}(&sites_{pair}[k]);")
    body += ["int main(void) {", *main, "  return 0;", "}"]
    return "\n".join(body) + "\n"


def parse(output: str, sites: list[PairSite]
          ) -> tuple[dict[str, Rows], list[tuple[PairSite, str, str]]]:
    """The rows of each site from the checker's output, and the points where the labelled
    function's value or floating-point flags differ from the original's."""
    by_name = {site.name: site for site in sites}
    found: dict[str, Rows] = {}
    failures = []
    lines = iter(output.splitlines())
    value = {"0": 0, "1": 1, "2": 2, "u": -1}
    for line in lines:
        tag, name, count = line.split(" ")
        site = by_name[name]
        rows = found[name] = Rows(site)
        if count == "0":
            continue
        left, right = KINDS[site.kinds[0]], KINDS[site.kinds[1]]
        grid_b = shift_grid(left, right) if site.shifts else right.grid
        for token in next(lines)[2:].split(" "):
            i, j = token.split(".")
            rows.points.append(f"{name} `{site.text}` at a = {left.grid[int(i)]}"
                               + ("" if site.kind in ("idr", "uod")
                                  else f", b = {grid_b[int(j)]}"))
        rows.truths = [int(c) for c in next(lines)[2:]]
        for rule, what, flag in (("flags", "floating-point flags differ", next(lines)[2:]),
                                 ("result", "result differs", next(lines)[2:])):
            failures += [(site, rule, f"{what}: {point}")
                         for point, c in zip(rows.points, flag) if c != "0"]
        for position in range(len(site.mutants)):
            _, differ, hit = next(lines).split(" ")
            rows.differs[position] = [value[c] for c in differ]
            rows.hits[position] = [value[c] for c in hit]
        rows.live = {int(position) for position in next(lines)[1:].split()}
    return found, failures


def annotated(tmp_path: Path, left: Kind, rights: list[Kind]):
    """The sites of ``left`` against each of ``rights``, their annotation and label indices."""
    sites = [site for right in rights for site in pair_sites(left, right)]
    source = DECLARATIONS + "".join(site_function("f", site) for site in sites)
    annotation = annotate_code(tmp_path, source, LabelOptions(mcc=False, wm_ops=ALL_WM))
    labels = indices_by_site({f"f{site.name}": site for site in sites}, annotation)
    return sites, annotation, labels


def check_pairs(tmp_path: Path, left: Kind, rights: list[Kind], compilers: list[str],
                ops: frozenset[str] | None = None) -> list[Failure]:
    """Each rule broken by the sites of ``left`` against ``rights`` (those of the operators
    ``ops`` only, if given), under each compiler."""
    sites, annotation, labels = annotated(tmp_path, left, rights)
    if ops is not None:
        sites = [site for site in sites if site.op in ops]
    failures = []
    assert annotation.skipped == 0
    for site in sites:
        for operator_id, operand in site.mutants:
            if operator_id in site.unwanted and (site.name, operator_id, operand) in labels:
                failures.append(Failure("", left.name, site.kinds[1], site.op, site.kind,
                                        operator_id, operand, "unwanted",
                                        f"label {operator_id} at {site.name} `{site.text}`, "
                                        "which ffcc leaves alone"))
    labelled = {name for name, _, _ in labels}
    tu1 = tmp_path / "labelled.c"
    tu1.write_text(INCLUDES + f"unsigned char hits[{len(annotation.labels)} + 1];\n"
                   + LABEL_MACROS + annotation.text
                   + "".join(site_function("p", site) for site in sites))
    tu2 = tmp_path / "checker.c"
    tu2.write_text(checker(sites, labels, len(annotation.labels)))
    for cc in compilers:
        rows, flagged = parse(run_checker(tmp_path, cc, left, tu1, tu2), sites)
        failures += [Failure(cc, left.name, site.kinds[1], site.op, site.kind, "", "", rule,
                             text) for site, rule, text in flagged]
        for site in sites:
            if site.name in labelled and not rows[site.name].points:
                failures.append(Failure(cc, left.name, site.kinds[1], site.op, site.kind, "",
                                        "", "undefined",
                                        f"labels at {site.name} `{site.text}`, never defined"))
            excused = site.left_out | {(m, "") for m in site.unwanted}
            for position, rule, text in judge(rows[site.name], excused):
                operator_id, operand = site.mutants[position]
                failures.append(Failure(cc, left.name, site.kinds[1], site.op, site.kind,
                                        operator_id, operand, rule, text))
    return failures


def run_checker(tmp_path: Path, cc: str, left: Kind, labelled: Path, checker: Path) -> str:
    """Build the checker with ``cc`` (``build_options``) and run it: its output."""
    objects = []
    options = build_options(cc, left)
    for unit, unit_options in zip((labelled, checker), options):
        obj = tmp_path / f"{unit.stem}-{cc}.o"
        build = subprocess.run([cc, "-w", *unit_options, "-c", str(unit), "-o", str(obj)],
                               capture_output=True, text=True)
        assert build.returncode == 0, build.stderr[-3000:]
        objects.append(str(obj))
    binary = tmp_path / f"kills-{cc}"
    sanitize = [option for option in options[0] if option.startswith("-fsanitize")]
    link = subprocess.run([cc, *sanitize, *objects, "-o", str(binary), "-lm"],
                          capture_output=True, text=True)
    assert link.returncode == 0, link.stderr[-3000:]
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    return done.stdout


def _report(failures: list[Failure]) -> str:
    return f"{len(failures)} failures:\n" + "\n".join(
        f"{failure.cc} {failure.text}" for failure in failures[:40])


@pytest.mark.parametrize("left", sorted(KINDS))
def test_pair_kill_conditions_match_mutants(tmp_path: Path, left: str):
    failures = check_pairs(tmp_path, KINDS[left], list(KINDS.values()), COMPILERS)
    unexplained = [failure for failure in failures if known(failure) is None]
    assert not unexplained, _report(unexplained)


@pytest.mark.parametrize("cc, left, right, op", [
    pytest.param(*example, marks=pytest.mark.xfail(strict=True, reason=defect.reason))
    for defect in KNOWN for example in defect.examples if example[0] in COMPILERS])
def test_known_defect(tmp_path: Path, cc: str, left: str, right: str, op: str):
    failures = check_pairs(tmp_path, KINDS[left], [KINDS[right]], [cc], frozenset({op}))
    assert not failures, _report(failures)
