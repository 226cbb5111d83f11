"""A generator of small C programs in the styles Csmith does not write, for differential tests.

Csmith writes deep integer expressions through its safe_math functions; ffcc's rewriters break
elsewhere: function-like macros that start or end a decision, `&&`/`||` chains through macros,
float, double and long double arithmetic in `a*b+c` shapes (where contraction into fma depends
on the expression's shape), bit-fields of every width (gcc's wide ones such as `unsigned long
long x:40` too), mixed signed/unsigned operands, compound assignments, `++`/`--` on bit-fields,
guarded division and modulo, switch, ternaries and recursion.

Every program is free of undefined behaviour by construction, so any difference between two
builds is the builds' doing:
- integer arithmetic happens in unsigned int or unsigned long long (every leaf is converted to
  one of them first) and is converted back, which is implementation-defined, not undefined;
- signed operands meet arithmetic only where promotion makes overflow impossible (short and
  char operands, narrow bit-fields) or where the other operand makes it unsigned;
- divisors go through `NZ()`, shift counts through `SH()` (`& 31`), and only unsigned values
  are shifted left;
- floating values are clamped after each update, and converted to integers only inside a range
  check (`F2U`), so no conversion overflows and no division by zero happens.

The program prints every function's state (floating values with `%a`) and a final checksum.

    python bench/gen_c.py --seed 7 > prog.c          # one program
    python bench/gen_c.py --seed 7 --pedantic        # only int, unsigned and _Bool bit-fields
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

# Integer kinds: C type, signed, width in bits.
INT_KINDS: dict[str, tuple[str, bool, int]] = {
    "uc": ("unsigned char", False, 8), "s": ("short", True, 16), "i": ("int", True, 32),
    "u": ("unsigned", False, 32), "ll": ("long long", True, 64),
    "ull": ("unsigned long long", False, 64),
}
FLOAT_KINDS: dict[str, str] = {"f": "float", "d": "double", "ld": "long double"}
# Bit-field base types: C type, signed, largest width.  The first three are ISO C's; the
# others are GCC extensions (refused by -pedantic-errors).
BITFIELD_TYPES: list[tuple[str, bool, int]] = [
    ("_Bool", False, 1), ("unsigned", False, 32), ("int", True, 31),
    ("unsigned char", False, 8), ("signed char", True, 8), ("unsigned short", False, 16),
    ("short", True, 16), ("unsigned long long", False, 64), ("long long", True, 63),
]
ISO_BITFIELD_TYPES = 3

# Macros every program defines; several start or end a decision, some leave out parentheses.
PRELUDE = r"""#include <stdio.h>

#define NZ(x) ((x) != 0 ? (x) : 1u)
#define NZS(x) ((x) != 0 ? (x) : 1)
#define SH(x) ((x) & 31u)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ROTL(x, k) (((x) << SH(k)) | ((x) >> SH(32u - SH(k))))
#define IS_ODD(x) ((x) & 1u)
#define IS_ZERO(x) ((x) == 0)
#define IN_RANGE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))
#define BOTH(a, b) ((a) && (b))
#define EITHER(a, b) ((a) || (b))
#define GT(a, b) a > b
#define NOT_EQ(a, b) a != b
#define POS_AND(x) (x) > 0 &&
#define OR_ODD(x) || ((x) & 1u)
#define AND_NZ(x) && (x) != 0
#define F2U(x) ((x) > -1e9 && (x) < 1e9 ? (unsigned)(long)(x) : 7u)
#define CLAMP(x) do { if (!((x) < 1e6 && (x) > -1e6)) (x) = 0.5; } while (0)
#define MIX(v) (g_sum = g_sum * 1099511628211ull + (unsigned long long)(v))

static unsigned long long g_sum = 14695981039346656037ull;
"""

INT_LITERALS = ["0u", "1u", "2u", "3u", "7u", "100u", "255u", "65535u", "0x7fffffffu",
                "0x80000000u", "0xffffffffu", "0xdeadbeefu"]
WIDE_LITERALS = ["0x8000000000000000ull", "0xffffffffffffffffull", "1099511627776ull"]
FLOAT_LITERALS = ["0.5", "1.5", "-2.25", "3.0", "0.1", "1e-3", "-7.75", "1e5"]
RELOPS = ["<", "<=", ">", ">=", "==", "!="]


@dataclass(frozen=True)
class Var:
    """An lvalue the program may read and update: a local, a parameter or a bit-field."""

    name: str
    kind: str          # a key of INT_KINDS or FLOAT_KINDS, or "bf"
    signed: bool = False
    width: int = 0     # bit-field width; 0 for ordinary variables
    wide: bool = False  # a bit-field whose base type is a long long

    @property
    def is_float(self) -> bool:
        return self.kind in FLOAT_KINDS


@dataclass
class Style:
    """What the program may use: `pedantic` keeps to ISO bit-field types, `warn_clean` avoids
    what -Wall -Wextra warn about (signed/unsigned comparisons, fall-through)."""

    pedantic: bool = False
    warn_clean: bool = False


@dataclass
class Scope:
    """The variables a function body sees, and how deep its statements are nested."""

    ints: list[Var]
    floats: list[Var]
    callees: list[str] = field(default_factory=list)
    depth: int = 0
    loops: int = 0


class Generator:
    """One program from one seed: the same seed and style always give the same text."""

    def __init__(self, seed: int, style: Style) -> None:
        self.rng = random.Random(seed)
        self.style = style
        self.bitfields: list[Var] = []

    # -- expressions -------------------------------------------------------------------------

    def leaf(self, scope: Scope, cond: bool = False) -> tuple[str, bool]:
        """An unsigned operand: (text, whether it is unsigned long long).  In a condition of
        a warning-clean program no bit-field: -Wtype-limits knows their ranges."""
        r = self.rng.random()
        if self.style.warn_clean:
            r = max(r, 0.2)  # constants draw -Wtype-limits and constant-conversion warnings
        if r < 0.15:
            return self.rng.choice(INT_LITERALS), False
        if r < 0.2:
            return self.rng.choice(WIDE_LITERALS), True
        if r < 0.3 and scope.floats:
            return f"F2U({self.rng.choice(scope.floats).name})", False
        narrow = [] if cond and self.style.warn_clean else self.bitfields
        v = self.rng.choice(scope.ints + narrow)
        wide = v.kind in ("ll", "ull") or v.wide
        return (f"(unsigned long long){v.name}" if wide else f"(unsigned){v.name}"), wide

    def uexpr(self, scope: Scope, depth: int = 2, cond: bool = False) -> tuple[str, bool]:
        """An expression of type unsigned int or unsigned long long, free of undefined
        behaviour whatever its operands hold."""
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(scope, cond)
        a, wa = self.uexpr(scope, depth - 1, cond)
        b, wb = self.uexpr(scope, depth - 1, cond)
        wide = wa or wb
        shape = self.rng.randrange(10)
        if shape < 4:
            return f"({a} {self.rng.choice(['+', '-', '*', '&', '|', '^'])} {b})", wide
        if shape == 4:
            return f"({a} {self.rng.choice(['<<', '>>'])} SH({b}))", wa
        if shape == 5:
            return f"({a} {self.rng.choice(['/', '%'])} NZ({b}))", wide
        if shape == 6:
            return f"({self.cond(scope, 1)} ? {a} : {b})", wide
        if shape == 7:
            return f"{self.rng.choice(['MIN', 'MAX'])}({a}, {b})", wide
        if shape == 8 and not wa:
            return f"ROTL({a}, {b})", False
        return self.mixed(scope, a, wide)

    def mixed(self, scope: Scope, unsigned_text: str, wide: bool) -> tuple[str, bool]:
        """A signed variable meeting an unsigned operand: the signed side converts to
        unsigned, so the arithmetic wraps (a long long meets an unsigned long long)."""
        v = self.rng.choice([x for x in scope.ints if x.signed] or scope.ints)
        big = v.kind == "ll" or wide
        other = f"(unsigned long long)({unsigned_text})" if big else unsigned_text
        return f"({v.name} {self.rng.choice(['+', '-', '*', '^'])} {other})", big

    def compared(self, scope: Scope) -> str:
        """One comparison: of integers (of mixed signedness unless warnings must stay off),
        of floating values, or through a predicate macro."""
        r = self.rng.random()
        if r < 0.2 and scope.floats:
            fa = self.rng.choice(scope.floats).name
            fb = self.rng.choice(scope.floats + [Var(self.rng.choice(FLOAT_LITERALS), "d")]).name
            return f"({fa} {self.rng.choice(RELOPS)} {fb})"
        if r < 0.45:
            x, _ = self.uexpr(scope, 1, cond=True)
            macro = self.rng.choice(["IS_ODD({})", "IS_ZERO({})", "IN_RANGE({}, 3u, 1000u)",
                                     "GT({}, 5u)", "NOT_EQ({}, 0u)"])
            return macro.format(x)
        a = self.rng.choice(scope.ints + ([] if self.style.warn_clean else self.bitfields))
        if self.style.warn_clean or self.rng.random() < 0.4:
            b = self.same_signedness(scope, a)
        else:
            b, _ = self.uexpr(scope, 1)
        return f"({a.name} {self.rng.choice(RELOPS)} {b})"

    def same_signedness(self, scope: Scope, a: Var) -> str:
        """An operand that compares with `a` without -Wsign-compare's warning."""
        peers = [v for v in scope.ints
                 if self.promoted_signed(v) == self.promoted_signed(a) and v != a]
        if peers and self.rng.random() < 0.7:
            return self.rng.choice(peers).name
        return "3" if self.promoted_signed(a) else "3u"

    @staticmethod
    def promoted_signed(v: Var) -> bool:
        """Whether `v` is signed once promoted (narrow unsigned types promote to int)."""
        if v.width:
            return v.signed or (v.width < 32 and not v.wide)
        return v.signed or v.kind in ("uc",)

    def cond(self, scope: Scope, depth: int = 2) -> str:
        """A decision: comparisons joined by `&&`/`||`, some through macros that hold an
        operator of the chain at their start or end."""
        if depth <= 0 or self.rng.random() < 0.3:
            return self.compared(scope)
        a, b = self.cond(scope, depth - 1), self.cond(scope, depth - 1)
        shape = self.rng.randrange(8)
        if shape < 3:
            return f"({a} {self.rng.choice(['&&', '||'])} {b})"
        if shape == 3:
            return f"{self.rng.choice(['BOTH', 'EITHER'])}({a}, {b})"
        if shape == 4:
            return f"(POS_AND({self.rng.choice(scope.ints).name}) {b})"
        if shape == 5:
            return f"({a} OR_ODD({self.uexpr(scope, 1)[0]}))"
        if shape == 6:
            return f"({a} AND_NZ({self.rng.choice(scope.ints + self.bitfields).name}))"
        return f"(!{a} || {b} && {self.compared(scope)})" if not self.style.warn_clean \
            else f"(!({a}) || ({b} && {self.compared(scope)}))"

    def fexpr(self, scope: Scope) -> str:
        """A floating expression in the shapes contraction and reassociation care about."""
        def pick() -> str:
            if self.rng.random() < 0.25:
                return self.rng.choice(FLOAT_LITERALS)
            return self.rng.choice(scope.floats).name
        a, b, c = pick(), pick(), pick()
        shape = self.rng.randrange(7)
        if shape == 0:
            return f"{a} * {b} + {c}"
        if shape == 1:
            return f"{a} * {b} - {c}"
        if shape == 2:
            return f"{c} - {a} * {b}"
        if shape == 3:
            return f"({a} + {b}) * {c}"
        if shape == 4:
            return f"({b} != 0 ? {a} / {b} : {c})"
        if shape == 5:
            return f"{a} * {b} + {c} * {pick()}"
        return f"({self.cond(scope, 1)} ? {a} * {b} : {c}) + (double)({self.uexpr(scope, 1)[0]})"

    # -- statements --------------------------------------------------------------------------

    def statement(self, scope: Scope) -> list[str]:
        """One statement, as lines without indentation (blocks indent their own)."""
        r = self.rng.random()
        nested = scope.depth < 3
        if r < 0.18 and nested:
            return self.if_statement(scope)
        if r < 0.25 and nested:
            return self.switch_statement(scope)
        if r < 0.31 and nested and scope.loops < 2:
            return self.loop(scope)
        if r < 0.48 and scope.floats:
            v = self.rng.choice(scope.floats)
            return [f"{v.name} = {self.fexpr(scope)};", f"CLAMP({v.name});"]
        if r < 0.56:
            return [self.increment(scope)]
        if r < 0.62 and scope.callees and scope.loops == 0:
            callee = scope.callees.pop()
            return [f"MIX({callee}({self.uexpr(scope, 1)[0]}, {self.signed_arg(scope)}));"]
        if r < 0.68:
            v = self.rng.choice(scope.ints)
            return [f"{v.name} ^= (unsigned)rec({self.uexpr(scope, 1)[0]} % 24u, "
                    f"{self.uexpr(scope, 1)[0]});" if not v.signed else
                    f"{v.name} = ({INT_KINDS[v.kind][0]})rec({self.uexpr(scope, 1)[0]} % 24u, 1u);"]
        if r < 0.82:
            return [self.compound(scope)]
        return [self.assignment(scope)]

    def signed_arg(self, scope: Scope) -> str:
        return f"(int)({self.uexpr(scope, 1)[0]})"

    def block(self, scope: Scope, count: int) -> list[str]:
        inner = Scope(scope.ints, scope.floats, scope.callees, scope.depth + 1, scope.loops)
        lines: list[str] = []
        for _ in range(count):
            lines += self.statement(inner)
        return ["    " + line for line in lines]

    def if_statement(self, scope: Scope) -> list[str]:
        lines = [f"if {self.parenthesised(self.cond(scope))} {{", *self.block(scope, 2)]
        if self.rng.random() < 0.6:
            lines += ["} else {", *self.block(scope, 2)]
        return lines + ["}"]

    @staticmethod
    def parenthesised(text: str) -> str:
        return text if text.startswith("(") and text.endswith(")") else f"({text})"

    def switch_statement(self, scope: Scope) -> list[str]:
        lines = [f"switch ({self.uexpr(scope, 1)[0]} % 5u) {{"]
        for case in range(4):
            lines.append(f"case {case}u:")
            lines += self.block(scope, 1)
            if self.style.warn_clean or self.rng.random() < 0.7:
                lines.append("    break;")
        lines += ["default:", *self.block(scope, 1), "    break;", "}"]
        return lines

    def loop(self, scope: Scope) -> list[str]:
        counter = "k" if scope.loops == 0 else "k2"
        bound = self.rng.randint(2, 9)
        inner = Scope(scope.ints, scope.floats, scope.callees, scope.depth, scope.loops + 1)
        return [f"for ({counter} = 0; {counter} < {bound} && {self.cond(scope, 1)}; {counter}++) {{",
                *self.block(inner, 2), "}"]

    def increment(self, scope: Scope) -> str:
        """`++`/`--` on what cannot overflow: unsigned variables, short and char (promoted to
        int), narrow bit-fields and wide unsigned ones."""
        fits = [v for v in scope.ints + self.bitfields
                if (not v.width and v.kind in ("u", "ull", "s", "uc"))
                or (v.width and (v.width <= 16 or (not v.signed and v.width >= 32)))
                if not (self.style.warn_clean and v.width == 1)]  # -Wbool-operation
        v = self.rng.choice(fits)
        op = self.rng.choice(["++", "--"])
        return f"{op}{v.name};" if self.rng.random() < 0.5 else f"{v.name}{op};"

    def compound(self, scope: Scope) -> str:
        """A compound assignment whose arithmetic happens in an unsigned type, or in int on
        operands too narrow to overflow it."""
        v = self.rng.choice(scope.ints + self.bitfields)
        small = (v.kind in ("s", "uc") and not v.width) or (v.width and v.width <= 16)
        if small and self.rng.random() < 0.5:
            other = self.rng.choice([x for x in scope.ints if x.kind in ("s", "uc")] or scope.ints)
            if other.kind in ("s", "uc"):
                op = self.rng.choice(["+=", "-=", "*=", "/=", "%="])
                rhs = f"NZS({other.name})" if op in ("/=", "%=") else other.name
                return f"{v.name} {op} {rhs};"
        rhs, _ = self.uexpr(scope, 2)
        if v.kind == "ll" or (v.width and v.wide):
            rhs = f"(unsigned long long)({rhs})"
        op = self.rng.choice(["+=", "-=", "*=", "&=", "|=", "^=", "/=", "%=", ">>="]
                             + (["<<="] if self.shifts_unsigned(v) else []))
        if op in ("/=", "%="):
            rhs = f"NZ({rhs})"
        elif op in ("<<=", ">>="):
            rhs = f"SH({rhs})"
        return f"{v.name} {op} {rhs};"

    @staticmethod
    def shifts_unsigned(v: Var) -> bool:
        """Whether `v <<= n` shifts an unsigned value (narrow types promote to int)."""
        if v.width:
            return not v.signed and (v.wide or v.width >= 32)
        return v.kind in ("u", "ull")

    def assignment(self, scope: Scope) -> str:
        v = self.rng.choice(scope.ints + self.bitfields)
        rhs, _ = self.uexpr(scope, 3)
        if self.rng.random() < 0.3:
            rhs = f"{self.cond(scope, 2)} ? {rhs} : {self.uexpr(scope, 1)[0]}"
        if not v.width and v.signed:
            return f"{v.name} = ({INT_KINDS[v.kind][0]})({rhs});"
        return f"{v.name} = {rhs};"

    # -- the program -------------------------------------------------------------------------

    def struct(self) -> list[str]:
        """The bit-field struct: each chosen base type at a random width, sometimes a
        zero-width field between."""
        types = BITFIELD_TYPES[:ISO_BITFIELD_TYPES] if self.style.pedantic else BITFIELD_TYPES
        lines = ["struct bits {"]
        for n in range(self.rng.randint(5, 9)):
            ctype, signed, most = self.rng.choice(types)
            width = self.rng.choice([1, most, self.rng.randint(1, most)])
            lines.append(f"    {ctype} b{n} : {width};")
            self.bitfields.append(Var(f"g_bf.b{n}", "bf", signed, width, "long long" in ctype))
            if self.rng.random() < 0.15:
                lines.append("    unsigned : 0;")
        return lines + ["};", "static struct bits g_bf;", ""]

    def locals_of(self, index: int) -> tuple[list[Var], list[Var]]:
        ints = [Var(f"{k}{index}_{n}", k, INT_KINDS[k][1])
                for n, k in enumerate(self.rng.sample(list(INT_KINDS), 5))]
        floats = [Var(f"{k}{index}_{n}", k) for n, k in enumerate(self.rng.sample(list(FLOAT_KINDS), 2))]
        return ints, floats

    def function(self, index: int) -> list[str]:
        """`fN(p, q)`: locals seeded from the parameters, a body, every local mixed into the
        checksum and printed."""
        ints, floats = self.locals_of(index)
        params = [Var("p", "u"), Var("q", "i", True)]
        scope = Scope(ints + params, floats, [f"f{n}" for n in range(index)])
        lines = [f"static unsigned long long f{index}(unsigned p, int q)", "{"]
        for n, v in enumerate(ints):
            lines.append(f"    {INT_KINDS[v.kind][0]} {v.name} = ({INT_KINDS[v.kind][0]})"
                         f"(p * {2 * n + 3}u + (unsigned)q);")
        for n, v in enumerate(floats):
            lines.append(f"    {FLOAT_KINDS[v.kind]} {v.name} = ({FLOAT_KINDS[v.kind]})"
                         f"((double)(p % 1000u) * {FLOAT_LITERALS[n]} + q % 100);")
        lines.append("    int k, k2;")
        body: list[str] = []
        for _ in range(self.rng.randint(6, 12)):
            body += self.statement(scope)
        lines += ["    " + line for line in body]
        lines += ["    k = 0;", "    k2 = 0;", "    MIX(k + k2);"]
        lines += [f"    MIX({v.name});" for v in ints + params]
        fmt = " ".join("%a" if v.kind != "ld" else "%La" for v in floats)
        lines.append(f'    printf("f{index} %llx {fmt}\\n", g_sum, '
                     + ", ".join(f"(double){v.name}" if v.kind == "f" else v.name for v in floats) + ");")
        lines += [f"    MIX(F2U({v.name}));" for v in floats]
        return lines + ["    return g_sum ^ p;", "}", ""]

    def recursion(self) -> list[str]:
        return ["static unsigned long long rec(unsigned n, unsigned long long acc)", "{",
                "    if (n == 0u || acc > 1000000000ull)", "        return acc;",
                "    return IS_ODD(n) ? rec(n - 1u, acc * 3u + n) : rec(n / 2u, acc + 1u);",
                "}", ""]

    def main(self, functions: int) -> list[str]:
        lines = ["int main(void)", "{", "    unsigned long long r = 0;"]
        for bf in self.bitfields:
            # Through `r` (zero), so that no constant conversion draws -Woverflow.
            lines.append(f"    {bf.name} = r + {self.rng.choice(INT_LITERALS + WIDE_LITERALS)};")
        for n in range(functions):
            for call in range(2):
                lines.append(f"    r ^= f{n}({self.rng.randrange(1 << 32)}u, "
                             f"{self.rng.randrange(-1000, 1000) * (call + 1)});")
        for bf in self.bitfields:
            cast, fmt = ("(long long)", "%lld") if bf.signed else ("(unsigned long long)", "%llu")
            lines.append(f'    printf("{bf.name[5:]} {fmt}\\n", {cast}{bf.name});')
        lines += ['    printf("checksum %llx %llx\\n", g_sum, r);', "    return 0;", "}"]
        return lines

    def program(self) -> str:
        functions = self.rng.randint(3, 6)
        lines = PRELUDE.splitlines() + self.struct() + self.recursion()
        for n in range(functions):
            lines += self.function(n)
        return "\n".join(lines + self.main(functions)) + "\n"


def generate(seed: int, style: Style | None = None) -> str:
    """The program of `seed`: the same seed and style always give the same text."""
    return Generator(seed, style or Style()).program()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pedantic", action="store_true", help="ISO C bit-field types only")
    parser.add_argument("--warn-clean", action="store_true", help="nothing -Wall -Wextra warns about")
    args = parser.parse_args()
    print(generate(args.seed, Style(args.pedantic, args.warn_clean)), end="")


if __name__ == "__main__":
    main()
