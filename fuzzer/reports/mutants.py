"""What a weak-mutation label's mutant looks like in source, from its label record alone.

A record names its operator by id (``wm.<group>.<what>_<by>``, ffcc.rewriters.operators owns
the list) and carries the original expression's text; the fuzzer does not import the
rewriters, so the mutated text is rebuilt here: the group is the id's middle part, the C
operators are spelled out from the short names, and the operator to replace is found in the
original text as its last top-level binary occurrence (the operators mutated are all
left-associative, so that one is the expression's root).  COR records of a chain
(``a || b || c``) all carry the whole chain, so there only a single ``||`` is unambiguous.
ABS mutants replace an operand: which one is read from the kill condition (``e < 0``,
``e > 0``, ``e == 0``, or for floating operands ``isless(e, 0)``, ``isgreater(e, 0)``).  When
the text cannot be rebuilt, a mutant has no replacement and only its description.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ffcc.runtime.abi import LabelRecord

C_OPERATOR = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
              "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "and": "&&", "or": "||",
              "band": "&", "bor": "|", "xor": "^", "shl": "<<", "shr": ">>",
              "preinc": "++", "postinc": "++", "predec": "--", "postdec": "--", "neg": "-",
              "noop": ""}
C_OPERATOR.update({f"{name}eq": f"{C_OPERATOR[name]}=" for name in (
    "add", "sub", "mul", "div", "mod", "band", "bor", "xor", "shl", "shr")})  # wm.asr
ABS_FORM = {"abs": "abs({})", "neg": "-abs({})", "zero": "failOnZero({})"}
ABS_KILL = {"abs": "<", "neg": ">", "zero": "=="}
ABS_FLOAT_KILL = {"abs": "isless", "neg": "isgreater"}  # the same on floating operands

_TOKEN = re.compile(r"""\s*(?:
    (?P<word>[A-Za-z_0-9.]+)
  | (?P<literal>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<punct><<=|>>=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>?:;,~(){}\[\]#])
  | (?P<other>\S))""", re.X)
_OPERAND_END = {")", "]"}


@dataclass(frozen=True)
class Mutant:
    group: str                # ROR, AOR, COR, ABS
    replacement: str | None   # the original expression as mutated, when it could be rebuilt
    description: str          # what was replaced by what, and when the mutant is killed


def tokens(text: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, text, ends an operand) of each C token of ``text``."""
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        token = match.group(kind)
        found.append((match.start(kind), match.end(kind), token,
                      kind in ("word", "literal") or token in _OPERAND_END))
    return found


def binary_occurrences(text: str, operator: str) -> list[tuple[int, int]]:
    """Where the binary ``operator`` occurs in expression ``text`` outside brackets (after
    an operand, so not a unary minus or a dereference)."""
    depth, found, previous_ends_operand = 0, [], False
    for start, end, token, ends_operand in tokens(text):
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth -= 1
        elif depth == 0 and token == operator and previous_ends_operand:
            found.append((start, end))
        previous_ends_operand = ends_operand
    return found


def _binary(original: str, old: str, new: str) -> str | None:
    found = binary_occurrences(original, old)
    if not found or (old in ("&&", "||") and len(found) > 1):
        return None
    start, end = found[-1]
    return original[:start] + new + original[end:]


def _operand_only(original: str, operator: str, side: str) -> str | None:
    found = binary_occurrences(original, operator)
    if len(found) != 1:
        return None
    start, end = found[0]
    return (original[:start] if side == "lhs" else original[end:]).strip()


def _unwrapped(text: str) -> str:
    """``text`` without one pair of parentheses around all of it."""
    depths, depth = [], 0
    for _, _, token, _ in tokens(text):
        depth += (token in "([{") - (token in ")]}")
        depths.append(depth)
    if text.startswith("(") and depths and 0 not in depths[:-1] and depths[-1] == 0:
        return text[1:-1].strip()
    return text


def _killed_operand(predicate: str, kind: str) -> str | None:
    """e of an ABS kill condition ``e < 0`` or ``isless(e, 0)`` (its first conjunct)."""
    text = predicate.replace("`", "")
    head, found, _ = text.partition(f" {ABS_KILL[kind]} 0")
    if not found and kind in ABS_FLOAT_KILL and text.startswith(ABS_FLOAT_KILL[kind] + "("):
        head, found, _ = text[len(ABS_FLOAT_KILL[kind]) + 1:].partition(", 0)")
    return _unwrapped(head.strip()) if found else None


def _abs(original: str, predicate: str, kind: str) -> str | None:
    operand = _killed_operand(predicate, kind)
    if not operand:
        return None
    at = [m.start() for m in re.finditer(re.escape(operand), original)]
    if len(at) != 1:
        return None
    return original[:at[0]] + ABS_FORM[kind].format(operand) + original[at[0] + len(operand):]


def describe(record: LabelRecord) -> Mutant:
    """The mutant of a WM label record."""
    _, group, what = record.operator.split(".", 2)
    old, _, new = what.partition("_")
    original, predicate = record.original, record.predicate
    if group == "abs":
        replacement = _abs(original, predicate, old)
        change = f"operand replaced by {ABS_FORM[old].format('e')}"
    elif new in ("lhs", "rhs"):
        replacement = _operand_only(original, C_OPERATOR[old], new)
        change = f"a {C_OPERATOR[old]} b replaced by {'a' if new == 'lhs' else 'b'}"
    else:
        replacement = _binary(original, C_OPERATOR[old], C_OPERATOR[new])
        change = f"{C_OPERATOR[old]} replaced by {C_OPERATOR[new]}"
    return Mutant(group.upper(), replacement,
                  f"{record.operator}: {change}; killed when {predicate}")
