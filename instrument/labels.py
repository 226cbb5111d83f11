"""What a label compiles to: the C and assembler text put in front of each annotated unit.

The rewriters return code whose labels read ``__FFCC_LABEL(i, (PRED));`` with a
unit-local index (groups of comparisons of the same two values inside one
``__FFCC_COMPARE``, other groups of a site's labels inside one ``__FFCC_COUNTS``).  This
module writes what that means at run time, in the layout ffcc.runtime.abi defines (section
names, unit header, map layout); labelled_compile.py puts its ``preamble`` in front of each
annotated unit and compiles it:

* each unit reserves ``abi.UNIT_HEADER_SIZE + N + G`` bytes in section
  ``abi.LABEL_SECTION``: the unit header (magic, unit id, label count), one
  slot byte per label and one gate byte per site (never counted); a label's map
  slot is its byte's offset from the section start, so slots are fixed when the
  program is linked;
* the unit's label records (``UnitLabel``) go, as JSON lines after a unit record
  (``UnitRecord``: unit id, label count, file), into the non-allocated section
  ``abi.LABELDB_SECTION``, which the linker concatenates and archives carry along
  (label_db.py reads both back from the linked binary and writes the label database
  through abi);
* a label adds its predicate's value to its slot, never wrapping to zero, at the
  slot's section address plus ``__ffcc_label_delta``, which ffcc's runtime sets so
  that the address falls in the label region of the coverage map.  Two forms
  (docs/LABELS.md): for ffcc's runtime the update is branch-free and gated by the
  label's retirement byte (``__ffcc_retire_delta``, set by the runtime to the
  fuzzer's retirement region), so a label is no edge and has no twin edge; for a
  foreign fuzzer (afl-clang-fast) it is a branch to a cold per-unit ``__ffcc_hit``
  behind an ``asm volatile``, so the label is an AFL++ edge.  Without ffcc's
  runtime both deltas stay 0 and labels count in the section itself.  For ffcc's
  runtime under clang on x86-64, a site whose labels are all retired skips them
  behind its gate (``GATE_FORM``), which reads the retirement byte of its gate slot.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from ffcc.rewriters.model import ARITHMETIC_NAMES, COMPARED_LAUNDER, Label, register_launder
from ffcc.runtime.abi import LABEL_SECTION, LABELDB_SECTION, UNIT_HEADER_SIZE, unit_header

from .invocation import Invocation

# Warning groups that label code can trigger (GNU extensions under -pedantic, C99's variadic
# macros, long long and compound literals in C89, temporaries, casts in kill conditions).
# They are silenced in labelled units so that a project's -Werror keeps building; a labelled
# build is for fuzzing, its plain build still reports these groups for the project's own code.
LABEL_WARNINGS = (
    "-Wpedantic", "-Wdeclaration-after-statement", "-Wshadow", "-Wconversion",
    "-Wsign-conversion", "-Wsign-compare", "-Wtype-limits", "-Wunused-value",
    "-Wunused-variable", "-Wmissing-variable-declarations", "-Wmissing-declarations",
    "-Wcomma", "-Wgnu-statement-expression", "-Wgnu-auto-type", "-Wc99-extensions",
    "-Wlanguage-extension-token", "-Wtautological-compare", "-Wtautological-constant-compare",
    "-Wtautological-unsigned-zero-compare", "-Wbad-function-cast", "-Wdouble-promotion",
    "-Wfloat-equal", "-Wfloat-conversion", "-Wshorten-64-to-32", "-Wimplicit-int-conversion",
    "-Wcast-qual", "-Wc++-compat", "-Wlogical-op", "-Wduplicated-cond", "-Wparentheses",
    "-Wstrict-overflow", "-Wnull-dereference", "-Wuninitialized", "-Wmaybe-uninitialized",
    "-Wunreachable-code", "-Wused-but-marked-unused", "-Wunused-macros", "-Wvariadic-macros",
    "-Wlong-long", "-Wc90-c99-compat",
)


# Temporaries of label code carry no debug information under clang (gcc has no such attribute).
TEMP_DEFINITION = """#if defined(__clang__)
#define __FFCC_TEMP __attribute__((nodebug))
#else
#define __FFCC_TEMP
#endif
"""

# The branch form's hit is a call to one cold function per unit, not inline code behind the
# branch, so that a foreign fuzzer's label edge costs what its own edges cost.  The function
# itself is not an edge.
_HIT_ATTRIBUTES = """#if defined(__clang__)
#define __FFCC_HIT_ATTRIBUTES __attribute__((noinline, cold, unused, no_sanitize("coverage")))
#elif defined(__has_attribute)
#if __has_attribute(no_sanitize_coverage)
#define __FFCC_HIT_ATTRIBUTES __attribute__((noinline, cold, unused, no_sanitize_coverage))
#endif
#endif
#ifndef __FFCC_HIT_ATTRIBUTES
#define __FFCC_HIT_ATTRIBUTES __attribute__((noinline, cold, unused))
#endif
"""


def _diagnostics() -> str:
    """Pragmas silencing LABEL_WARNINGS, tolerating groups a compiler does not know."""
    lines = ["#ifdef __clang__", '#pragma clang diagnostic ignored "-Wunknown-warning-option"',
             "#else", '#pragma GCC diagnostic ignored "-Wpragmas"', "#endif"]
    lines += [f'#pragma GCC diagnostic ignored "{w}"' for w in LABEL_WARNINGS]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class UnitLabel:
    """A label record of one unit, as its object holds it: written by ``preamble`` into
    abi.LABELDB_SECTION after the unit record, made an abi.LabelRecord by label_db.py once the
    link has placed the unit.  It is the rewriters' Label without its file, which the unit
    record names, and without its gate where sites have no gate bytes (``gated``), plus why
    the label compiles to nothing if it does: the pruner's verdict (prune/) or RETIRED
    (``--retired``).  Frozen: the pruner and ``--retired`` give new values."""

    label: Label
    gated: bool = False  # --label-gates: the label's site has a gate byte in the unit
    pruned: str | None = None  # abi.INFEASIBLE, abi.TRIVIAL or abi.RETIRED

    @property
    def gate(self) -> int | None:
        """The label's gate, numbered in the unit; None where sites have no gate bytes."""
        return self.label.gate if self.gated else None

    def to_json(self) -> str:
        """The record's line: the label's fields in their order (a subclass's last:
        ``mutants``, ``also``), then ``pruned``; compact, as a unit may hold thousands."""
        # vars, not dataclasses.asdict: the fields are plain values, and asdict deep-copies
        # every record.
        dropped = ("file",) if self.gated else ("file", "gate")
        values = {name: value for name, value in vars(self.label).items() if name not in dropped}
        if self.pruned is not None:
            values["pruned"] = self.pruned
        return json.dumps(values, ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True)
class UnitRecord:
    """The unit record, in front of a unit's label records in abi.LABELDB_SECTION: the unit
    id and label count of its slots' header, by which label_db.py finds the unit's slots after
    the link, its source, why a unit built without labels has none (``unlabelled``,
    which label_db.py's build summary lists), and the drop-in ffcc run that compiled it
    (``compiled``: how relink.py compiles it again)."""

    unit: int
    count: int
    file: str  # absolute path
    unlabelled: str | None = None
    compiled: Invocation | None = None

    def to_json(self) -> str:
        """The record's line (``unlabelled`` and ``compiled`` left out when None)."""
        values: dict[str, Any] = {"unit": self.unit, "count": self.count, "file": self.file}
        if self.unlabelled is not None:
            values["unlabelled"] = self.unlabelled
        if self.compiled is not None:
            values["compiled"] = self.compiled.to_dict()
        return json.dumps(values, ensure_ascii=True)

    @classmethod
    def from_json(cls, line: str) -> UnitRecord:
        """The unit record of a line ``to_json`` wrote."""
        values = json.loads(line)
        compiled = values.get("compiled")
        return cls(values["unit"], values["count"], values["file"], values.get("unlabelled"),
                   Invocation.from_dict(compiled) if compiled is not None else None)


def unit_id(path: str, text: str) -> int:
    digest = hashlib.blake2b(f"{os.path.abspath(path)}\0{text}".encode(errors="surrogateescape"),
                             digest_size=4).digest()
    return int.from_bytes(digest, "little")


def _asm_string(line: str) -> str:
    return line.replace("\\", "\\\\").replace('"', '\\"')


def _slot(delta: str, index: str = f"{UNIT_HEADER_SIZE} + (i)") -> str:
    """The address, as ``unsigned char *``, of the unit's byte ``index`` (label ``i``'s slot)
    moved by ``delta``."""
    return f"((unsigned char *)((__UINTPTR_TYPE__)&__ffcc_unit_slots[{index}] + {delta}))"


def _list_macro(name: str, fixed: list[str], item: list[str], body: list[str]) -> list[str]:
    """An assembler macro ``name FIXED..., ITEM..., ITEM..., ...``: ``body`` for its first
    item, then itself for the rest.  A group's asm text then names each of its operands once
    (``__ffcc_compare %[a], %[b], ..., <label>, <label>``): clang finds the source location of
    each operand reference by re-reading the string's pieces from the first one, so references
    repeated per label cost the group's compile a time square in its labels."""
    forwarded = ", ".join(f"\\{param}" for param in fixed)
    return [f".macro {name} {', '.join(fixed + item)}, more:vararg", *body, ".ifnb \\more",
            f"{name} {forwarded}, \\more", ".endif", ".endm"]


def _once(guard: str, lines: list[str]) -> str:
    """Assembler text defined once per assembly (link-time optimisation joins units'
    top-level asm)."""
    return "\n".join((f".ifndef {guard}", f".set {guard}, 1", *lines, ".endif"))


# Branch-free: the slot gains 1 when the predicate holds and the label is not retired (its
# retirement byte is 0), and stays at 255 once there: never back to "not hit", and a label in
# a loop that counted 128 times or more in one run shows the top hit-count class whatever the
# run's count (retire.py finds hot sites by the top two classes; a count wrapping past 255 would
# put a loop of 1,024 runs in the class of 4).  The predicate's own
# guards still short-circuit; the update is no branch of the compiler's, so the label is no
# edge of its own and nothing but its slot has its hit pattern.  On x86-64 the update is one
# asm statement whose jumps the compiler never sees and which names no memory (the slot
# bytes are nothing the program reads): a false predicate costs a test and a jump, and only
# a true one computes the addresses, in r11 (clobbered: caller-saved and no argument register;
# an output operand would need a C variable, which at -O0 takes a stack slot per label, so that
# a label-dense function's frame would grow with its labels).  A C store through an
# ``unsigned char *``, which may alias anything, makes label-dense units compile and run
# markedly slower.  Elsewhere the update is that C.  Under clang the
# instructions are an assembler macro, so that each label's asm statement is one short line:
# clang works through an asm statement's text for every label, a real share of a label-dense
# unit's compile, and the assembler expands the macro into the same code (defined
# once per assembly: _once).
# gcc gets the instructions themselves: it estimates an asm statement's size from its text,
# and a one-line label made it inline more, so that a label-dense unit's code grew.  No asm
# statement of label code names the flags: on x86 every asm statement clobbers them (gcc and
# clang add the clobber themselves), and clang resolves each clobber it is given by searching
# every register class by name, a cost per label for nothing.  The figures behind these choices:
# bench/RESULTS.md, "The figures behind instrument/'s code".
_CLOBBERS = ': "r11"'  # the count's and comparison's scratch register (above)
# Set by every count of a branch-free label: the runtime scans the label region at the end of
# a case only when it is set (ffcc_map.c), as a lean build's labels rarely count.
LABELS_WRITTEN = "__ffcc_labels_written"
# The count stores as little as it can, since a label in a hot loop counts on every turn and
# stores are what it waits on: the slot is read against 255 (the carry says whether it is
# below) and gains that carry in one read-modify-write, and LABELS_WRITTEN is stored only
# while it is 0.  One store, not the three of an add, a subtract of its carry and the flag:
# some 0.55-0.6 of their time for a label that holds (bench/count_bench.py; bench/RESULTS.md,
# "One store a count").
_COUNT_ASM = ("testb HIT, HIT", "jz 1f", "leaq SLOT(%rip), %r11",
              "addq __ffcc_retire_delta(%rip), %r11", "cmpb $0, (%r11)", "jne 1f",
              "leaq SLOT(%rip), %r11", "addq __ffcc_label_delta(%rip), %r11",
              "cmpb $-1, (%r11)", "adcb $0, (%r11)", f"cmpb $0, {LABELS_WRITTEN}(%rip)",
              "jne 1f", f"movb $1, {LABELS_WRITTEN}(%rip)", "1:")
_COUNT_MACRO = _once(".L__ffcc_count", [
    ".macro __ffcc_count hit, slot",
    *(line.replace("HIT", "\\hit").replace("SLOT", "\\slot") for line in _COUNT_ASM), ".endm"])
_COUNT_INLINE = "\n\t".join(line.replace("%", "%%").replace("HIT", "%[hit]")
                             .replace("SLOT", "%c[slot]") for line in _COUNT_ASM)
_COUNT_OPERANDS = (": : [hit] \"q\"((unsigned char)!!(p)), "
                   f"[slot] \"i\"(&__ffcc_unit_slots[{UNIT_HEADER_SIZE} + (i)]) {_CLOBBERS}")
COUNT_FORM = (
    "#if defined(__x86_64__) && defined(__clang__)\n"
    f"__asm__({json.dumps(_COUNT_MACRO)});\n"
    "#define __FFCC_COUNT(i, p) __asm__ volatile(\"__ffcc_count %[hit], %c[slot]\" "
    f"{_COUNT_OPERANDS})\n"
    "#elif defined(__x86_64__)\n"
    f"#define __FFCC_COUNT(i, p) __asm__ volatile({json.dumps(_COUNT_INLINE)} "
    f"{_COUNT_OPERANDS})\n"
    "#else\n"
    "#define __FFCC_COUNT(i, p) do { unsigned char *__ffcc_slot = "
    + _slot("__ffcc_label_delta") + "; "
    "unsigned char __ffcc_add = (unsigned char)(!!(p) > *" + _slot("__ffcc_retire_delta") + "); "
    "unsigned char __ffcc_sum = (unsigned char)(*__ffcc_slot + __ffcc_add); "
    "*__ffcc_slot = (unsigned char)(__ffcc_sum - (__ffcc_sum < __ffcc_add)); "
    f"{LABELS_WRITTEN} |= __ffcc_add; }} while (0)\n"
    "#endif\n")

# Labels that compare the same two integer values (``__FFCC_COMPARE((a), (b), ASKED,
# STATEMENTS);``, rewriters/rewrite.py: ROR, ABS and UOD ask up to ten such questions of a
# site's operands) are one asm statement on x86-64.  It takes the two values converted to the
# type C compares them in and, per label, compares them and counts as above where the label's
# relation holds, the jump signed or unsigned as that type is (the assembler's ``.if``).  A
# label statement costs the compiler about as much as a line of C, so a group's one statement
# costs about what one of its labels cost.  A site's other labels, up to six at a time
# (``__FFCC_COUNTS(ASKED, STATEMENTS, __FFCC_HIT(i, (PRED)), ...);``), are one asm statement too,
# with each predicate's value an operand: clang's costs of an asm statement (its checks, IR,
# constraint and clobber lookups, an assembler parser for its text) are mostly per statement,
# so fewer statements compile faster.  Not under gcc, which at -O0 gives the predicates' values
# stack slots of their own (label-dense frames grew far past their plain size).  Elsewhere,
# and in a unit with labels compiled out, a group is its labels' own statements
# (GROUPS_AS_LABELS).  As for the count, clang gets assembler macros, one invocation per group
# that lists its labels (_list_macro), and gcc the instructions.
_SKIPS = {"LT": ("ge", "ae"), "LE": ("g", "a"), "GT": ("le", "be"), "GE": ("l", "b"),
          "EQ": ("ne", "ne"), "NE": ("e", "e")}  # the jumps past a count: signed, unsigned
_COMPARE_ASM = ("cmp {b}, {a}", ".if {signed}", "j{skip_signed} 1f", ".else",
                "j{skip_unsigned} 1f", ".endif",
                *(line.replace("SLOT", "{slot}") for line in _COUNT_ASM[2:]))
_COMPARE_MACRO = _once(".L__ffcc_compare", _list_macro(
    "__ffcc_compare", ["a", "b", "signed", "slots"], ["skip_signed", "skip_unsigned", "index"],
    [line.format(a="\\a", b="\\b", signed="\\signed", skip_signed="\\skip_signed",
                 skip_unsigned="\\skip_unsigned", slot="\\slots+\\index")
     for line in _COMPARE_ASM]))
_COUNTS_MACRO = _once(".L__ffcc_counts", _list_macro(
    "__ffcc_counts", ["slots"], ["hit", "index"], ["__ffcc_count \\hit, \\slots+\\index"]))
_SLOT_MARK = "\0"  # where a label's index is spliced into its text (``#i``)
_COMPARED = "__typeof__((left) + (right))"  # the type C compares the two values in
_COMPARE_OPERANDS = (
    f": : [a] \"r\"(({_COMPARED})(left)), [b] \"re\"(({_COMPARED})(right)), "
    f"[sgn] \"i\"(({_COMPARED})-1 < 0), "
    f"[slots] \"i\"(&__ffcc_unit_slots[{UNIT_HEADER_SIZE}]) {_CLOBBERS}")


def _asked(text: str) -> str:
    """C string literals of one label's asm text, its index spliced in at _SLOT_MARK."""
    return " #i ".join(json.dumps(piece) for piece in text.split(_SLOT_MARK)).removesuffix(' ""')


_COMPARED_OPAQUE = f"#define {COMPARED_LAUNDER}(x) ((void)0)\n"  # a group's operands, as asm


def _compare_form(per_label, head: str = "") -> str:
    """``__FFCC_CMP_<R>(i)`` for each relation R, from ``per_label(skip_signed,
    skip_unsigned)``: label i's text; and ``__FFCC_COMPARE``, whose asm text is ``head``
    followed by its labels' texts."""
    lines = [f"#define __FFCC_CMP_{name}(i) {_asked(per_label(*skips))}"
             for name, skips in _SKIPS.items()]
    lines.append(f"#define __FFCC_COMPARE(left, right, asked, labels) __asm__ volatile("
                 f"{json.dumps(head) + ' ' if head else ''}asked {_COMPARE_OPERANDS})")
    return "\n".join(lines) + "\n" + _COMPARED_OPAQUE


def _compare_inline(skip_signed: str, skip_unsigned: str) -> str:
    return "\n\t".join(line.replace("%", "%%").format(
        a="%[a]", b="%[b]", signed="%c[sgn]", skip_signed=skip_signed,
        skip_unsigned=skip_unsigned, slot=f"%c[slots]+{_SLOT_MARK}")
        for line in _COMPARE_ASM) + "\n\t"


# __FFCC_COUNTS and its parts under clang: label i's text and its hit, the operand
# %[__ffcc_h<i>].
_COUNTS_FORM = (
    f"__asm__({json.dumps(_COUNTS_MACRO)});\n"
    "#define __FFCC_CNT(i) " + _asked(f", %[__ffcc_h{_SLOT_MARK}], {_SLOT_MARK}") + "\n"
    "#define __FFCC_HIT(i, p) [__ffcc_h##i] \"q\"((_Bool)(p))\n"
    "#define __FFCC_COUNTS(asked, labels, hits...) __asm__ volatile(\"__ffcc_counts %c[slots]\" "
    "asked : : "
    f"[slots] \"i\"(&__ffcc_unit_slots[{UNIT_HEADER_SIZE}]), hits {_CLOBBERS})\n")


# A site's AOR labels whose values are integers of 32 or 64 bits (``__FFCC_ARITH((a), (b), ASKED,
# STATEMENTS);``, ASKED ``__FFCC_AOR(ADD, DIV, i)`` per label, rewriters/rewrite.py) are one asm
# statement under clang on x86-64 that computes each label's two values itself, after the
# label's retirement check: a C predicate costs clang about three times these instructions, and
# a retired label no longer computes its values (bench/RESULTS.md, "AOR labels in the
# assembler").  It takes the two operands converted to the type C computes in; as the C
# predicates have it (rewriters/wm_aor.py), a zero divisor is no label where the original
# divides (its value is undefined) and a kill where the mutant does, and a signed division by
# -1 is the dividend negated (wrapping) with a remainder of 0.  It clobbers rax and rdx (the
# division's), r10 (the original's value) and r11 (the mutant's, then the count's).  Elsewhere
# the group is its labels' own statements.
_ARITH_VALUE = [
    ".macro __ffcc_arith_value op, a, b, signed, r, ax, dx, sfx, ext",
    *(line for op, instruction in (("+", "add"), ("-", "sub"), ("*", "imul"))
      for line in (f".ifc \\op, {ARITHMETIC_NAMES[op]}", "mov\\sfx \\a, \\r",
                   f"{instruction}\\sfx \\b, \\r", ".endif")),
    *(line for op, result in (("/", "\\ax"), ("%", "\\dx"))
      for line in (f".ifc \\op, {ARITHMETIC_NAMES[op]}",
                   "__ffcc_arith_divide \\a, \\b, \\signed, \\ax, \\dx, \\sfx, \\ext",
                   f"mov\\sfx {result}, \\r", ".endif")),
    ".endm"]
_ARITH_DIVIDE = [
    ".macro __ffcc_arith_divide a, b, signed, ax, dx, sfx, ext", "mov\\sfx \\a, \\ax",
    ".if \\signed", "cmp\\sfx $-1, \\b", "jne 2f", "neg\\sfx \\ax", "xor\\sfx \\dx, \\dx", "jmp 3f",
    "2:", "\\ext", "idiv\\sfx \\b", "3:",
    ".else", "xor\\sfx \\dx, \\dx", "div\\sfx \\b", ".endif", ".endm"]
_ARITH_WIDTHS = (("%r10", "%r11", "%rax", "%rdx", "q", "cqto"),
                 ("%r10d", "%r11d", "%eax", "%edx", "l", "cltd"))


def _arith_values(original: str, mutant: str, ax: str, dx: str, suffix: str, extend: str
                  ) -> list[str]:
    """The original's value into ``original``, the mutant's into ``mutant``, compared."""
    return [f"__ffcc_arith_value \\{op}, \\a, \\b, \\signed, {register}, {ax}, {dx}, {suffix}, {extend}"
            for op, register in (("op", original), ("mutant", mutant))] \
        + [f"cmp{suffix} {original}, {mutant}"]


_ARITH_MACRO = _once(".L__ffcc_arith", _ARITH_DIVIDE + _ARITH_VALUE + _list_macro(
    "__ffcc_arith", ["a", "b", "wide", "signed", "slots"], ["op", "mutant", "index"], [
        *(line.replace("SLOT", "\\slots+\\index") for line in _COUNT_ASM[2:6]),
        # a zero divisor: no label where the original divides, before a kill where the mutant does
        *(line for operand, past in (("op", "1f"), ("mutant", "4f")) for op in "/%"
          for line in (f".ifc \\{operand}, {ARITHMETIC_NAMES[op]}", "test \\b, \\b", f"jz {past}",
                       ".endif")),
        ".if \\wide", *_arith_values(*_ARITH_WIDTHS[0]), ".else", *_arith_values(*_ARITH_WIDTHS[1]),
        ".endif", "je 1f", "4:",
        *(line.replace("SLOT", "\\slots+\\index") for line in _COUNT_ASM[6:])]))
_ARITH_FORM = (
    f"__asm__({json.dumps(_ARITH_MACRO)});\n"
    '#define __FFCC_AOR(op, mutant, i) ", " #op ", " #mutant ", " #i\n'
    "#define __FFCC_ARITH(left, right, asked, labels) __asm__ volatile(\"__ffcc_arith %[a], "
    "%[b], %c[wide], %c[sgn], %c[slots]\" asked : : "
    f"[a] \"r\"(({_COMPARED})(left)), [b] \"r\"(({_COMPARED})(right)), "
    f"[wide] \"i\"(sizeof({_COMPARED}) == 8), [sgn] \"i\"(({_COMPARED})-1 < 0), "
    f"[slots] \"i\"(&__ffcc_unit_slots[{UNIT_HEADER_SIZE}]) : \"rax\", \"rdx\", \"r10\", \"r11\")\n")

# The hits are a named variadic parameter (GNU), not ``...``: under -Wc90-c99-compat gcc reports
# an anonymous variadic macro with no option that a pragma could silence.
COUNTS_AS_LABELS = (
    "#define __FFCC_COUNTS(asked, labels, hits...) labels\n"
    "#define __FFCC_ARITH(left, right, asked, labels) labels\n")
GROUPS_AS_LABELS = (
    "#define __FFCC_COMPARE(left, right, asked, labels) labels\n"
    f"#define {COMPARED_LAUNDER}(x) {register_launder('x').removesuffix(';')}\n"
    + COUNTS_AS_LABELS)
GROUP_FORM = (
    "#if defined(__x86_64__) && defined(__clang__)\n"
    f"__asm__({json.dumps(_COMPARE_MACRO)});\n"
    + _compare_form(lambda signed, unsigned: f", {signed}, {unsigned}, {_SLOT_MARK}",
                    "__ffcc_compare %[a], %[b], %c[sgn], %c[slots]")
    + _COUNTS_FORM + _ARITH_FORM +
    "#elif defined(__x86_64__)\n"
    + _compare_form(_compare_inline) + COUNTS_AS_LABELS +
    "#else\n" + GROUPS_AS_LABELS + "#endif\n")

# Branch: the label is the then-branch of an ``if``, an edge to foreign fuzzers; the hit is a
# call, behind a memory barrier, to one cold function per unit that is no edge itself.
_BRANCH = (
    "static __FFCC_HIT_ATTRIBUTES void __ffcc_hit(__SIZE_TYPE__ i) {\n"
    "  unsigned char *slot = " + _slot("__ffcc_label_delta") + ";\n"
    "  *slot = (unsigned char)(*slot + 1 + (*slot == 255));\n}\n"
    "#define __FFCC_COUNT(i, p) if (p) do { __asm__ volatile(\"\" ::: \"memory\"); "
    "__ffcc_hit(i); } while (0)\n")
BRANCH_FORM = _HIT_ATTRIBUTES + _BRANCH


# A site's gate: its label block (rewriters/rewrite.py) runs unless the retirement byte of the
# site's gate slot is set, which the fuzzer does once every label of the site is retired
# (fuzzer/engine/retire.py); a retired site then costs a load, a compare and a jump.  Only for
# clang's trace-pc-guard on x86-64 (clang 9 and later): the jump is an ``asm goto``, whose
# edges sanitizer coverage cannot split, so skipping the block reaches no new guard.  The
# block itself gets a guard counting the site's runs, which stops counting with the site;
# the gate's second, never taken target (a block that ends in ``unreachable``) keeps the
# join after the block from post-dominating the gate, so that the join, not the skippable
# block, carries the guard of the code around the site (docs/LABELS.md).  ``__label__``
# makes both labels local to the block, so a site's text may occur twice in a function
# (macro arguments).  gcc's trace-pc would hash the skip as a new block pair, and a foreign
# fuzzer never sets the byte: there, and for pruning analysis, gates are nothing (NO_GATES).
NO_GATES = "#define __FFCC_GATE_OPEN(g)\n#define __FFCC_GATE_CLOSE(g)\n"
GATE_FORM = (
    "#if defined(__clang__) && defined(__x86_64__) && __clang_major__ >= 9\n"
    "#define __FFCC_GATE_OPEN(g) __label__ __ffcc_gate_skip, __ffcc_gate_never; "
    "__asm__ goto(\"cmpb $0, (%[at])\\n\\tjne %l[__ffcc_gate_skip]\" : : [at] \"r\"("
    + _slot("__ffcc_retire_delta", "__FFCC_GATE_SLOT(g)")
    + ") : : __ffcc_gate_skip, __ffcc_gate_never);\n"
    "#define __FFCC_GATE_CLOSE(g) goto __ffcc_gate_skip; "
    "__ffcc_gate_never: __builtin_unreachable(); __ffcc_gate_skip: ;\n"
    "#else\n" + NO_GATES + "#endif\n")


def gate_count(records: list[UnitLabel]) -> int:
    """Gates of a unit: one per site, numbered from 0 (records without one: none)."""
    return 1 + max((r.gate for r in records if r.gate is not None), default=-1)


def _label_macros(records: list[UnitLabel], group_form: str) -> str:
    """``__FFCC_LABEL(i, p)``: label i counts when p holds; a pruned label is nothing (per-label
    macros, so this holds at -O0 too; prune/), and in a unit with one, a group of labels
    (``__FFCC_COMPARE``, ``__FFCC_COUNTS``) is its labels' own statements, else
    ``group_form``."""
    if not any(r.pruned for r in records):
        return "#define __FFCC_LABEL(i, p) __FFCC_COUNT(i, p)\n" + group_form
    lines = [GROUPS_AS_LABELS.rstrip("\n"), "#define __FFCC_LABEL(i, p) __FFCC_LABEL_##i(p)"]
    lines += [f"#define __FFCC_LABEL_{r.label.index}(p) "
              + ("((void)0)" if r.pruned else f"__FFCC_COUNT({r.label.index}, p)")
              for r in records]
    return "\n".join(lines) + "\n"


# Macros of the preamble: a reserved name, perhaps never used, __BASE_FILE__ redefined.
_MACRO_WARNINGS = ("-Wbuiltin-macro-redefined", "-Wunused-macros", "-Wreserved-id-macro",
                   "-Wreserved-macro-identifier")


def _quiet_macros(definitions: str) -> str:
    """``definitions`` (preprocessor lines) with _MACRO_WARNINGS off for them alone."""
    ignored = "".join(f'#pragma GCC diagnostic ignored "{w}"\n' for w in _MACRO_WARNINGS)
    return "#pragma GCC diagnostic push\n" + ignored + definitions + "#pragma GCC diagnostic pop\n"


def _base_file(source: str) -> str:
    """__BASE_FILE__ names the file the compiler was given (gcc ignores #line for it): the
    original."""
    return f"#undef __BASE_FILE__\n#define __BASE_FILE__ {json.dumps(source)}\n"


def unit_db(uid: int, source: str, records: list[UnitLabel],
            compiled: Invocation | None = None) -> str:
    """The unit's part of ``abi.LABELDB_SECTION``: its unit record (with the drop-in run that
    ``compiled`` it), then one JSON line per label."""
    lines = [UnitRecord(uid, len(records), os.path.abspath(source), compiled=compiled).to_json()]
    lines += [record.to_json() for record in records]
    return "".join(f"{line}\n" for line in lines)


def preamble(uid: int, source: str, records: list[UnitLabel], db_file: str,
             branch_free: bool = True) -> str:
    """The C text put in front of an annotated unit, ending with ``#line 1`` back to the
    source as the compiler was given it (so __FILE__ and diagnostics are unchanged);
    ``__BASE_FILE__`` is the source's name too.  ``branch_free``: labels for ffcc's runtime;
    else branches, for a foreign fuzzer.  A group of comparisons is an asm statement under
    ``--cmplog`` too, out of the comparison log: input-to-state would try their operands
    again, or derived values, for no label more (bench/RESULTS.md, "Label comparisons out
    of the comparison log").  Sites are behind gates when the records name them
    (``--label-gates``).  A source that includes itself (MPFR's tcmp_ui.c, inside
    ``main``) finds the annotated copy, next to which it is compiled: the copy's own
    definitions are guarded, so they come once, at file scope.  ``db_file`` holds the unit's
    ``unit_db`` text, which the assembler copies into the object."""
    count = len(records)
    gate_bytes = gate_count(records)
    initialiser = ", ".join(str(b) for b in unit_header(uid, count))
    deltas = "".join(f'__attribute__((weak, used, visibility("hidden"))) __UINTPTR_TYPE__ {name} = 0;\n'
                     for name in ("__ffcc_label_delta", "__ffcc_retire_delta")) \
        + f'__attribute__((weak, used, visibility("hidden"))) unsigned char {LABELS_WRITTEN} = 0;\n'
    guard = f"__FFCC_UNIT_{uid:08x}"
    return (
        f"#ifndef {guard}\n/* ffcc labels: see instrument/labels.py */\n" + _diagnostics()
        + _quiet_macros(f"#define {guard}\n" + _base_file(source)) +
        deltas +
        f"static unsigned char __ffcc_unit_slots[{UNIT_HEADER_SIZE + count + gate_bytes}] "
        f'__attribute__((used, aligned(1), section("{LABEL_SECTION}"))) = {{{initialiser}}};\n'
        f"#define __FFCC_GATE_SLOT(g) ({UNIT_HEADER_SIZE + count} + (g))\n"
        + TEMP_DEFINITION + (COUNT_FORM if branch_free else BRANCH_FORM)
        + (GATE_FORM if branch_free and gate_bytes else NO_GATES)
        + _label_macros(records, GROUP_FORM if branch_free else GROUPS_AS_LABELS)
        + labeldb_incbin(db_file) +
        "#endif\n"
        f"#line 1 {json.dumps(source)}\n")


def labeldb_incbin(db_file: str) -> str:
    """A top-level asm statement that appends the file ``db_file`` to the object's
    ``abi.LABELDB_SECTION``.  A label-dense unit's records are megabytes (SQLite's amalgamation:
    27 MB for 73,000 labels), which as string literals the compiler would parse, keep in its
    AST and IR and assemble: about 10% of the labelled compile's time and memory."""
    asm = (f".pushsection {LABELDB_SECTION},\"\",@progbits\n"
           f'.incbin "{_asm_string(db_file)}"\n.popsection\n')
    return f"__asm__({json.dumps(asm)});\n"


def labeldb_asm(db_lines: list[str]) -> str:
    """A top-level asm statement that appends ``db_lines`` (JSON records) to the object's
    ``abi.LABELDB_SECTION``, which the linker concatenates and archives carry along."""
    asm = f".pushsection {LABELDB_SECTION},\"\",@progbits\n" + "".join(
        f'.ascii "{_asm_string(line)}\\n"\n' for line in db_lines) + ".popsection\n"
    return f"__asm__({json.dumps(asm)});\n"


def unlabelled_record(source: str, reason: str) -> UnitRecord:
    """The unit record of a unit built without labels: a unit of no labels whose
    ``unlabelled`` says why (label_db.py's build summary lists it)."""
    return UnitRecord(0, 0, os.path.abspath(source), reason)
