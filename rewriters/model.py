"""Public records of the rewriters library and the request a criterion emits per label."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .operators import MCC, WM_GROUPS, Operator

# The laundering of a value that only comparison groups read (rewrite.py ``__FFCC_COMPARE``,
# opaque.launder): the driver defines it as nothing where it compiles a group as one asm
# statement, whose operands the compiler cannot see through anyway, and as register_launder
# where a group is its labels' own C statements.  Launders are not free: each costs the
# optimiser and register allocator more than its text (bench/RESULTS.md).
COMPARED_LAUNDER = "__FFCC_LAUNDER_COMPARED"
# How an arithmetic group names each label's operators (rewrite.py ``__FFCC_AOR(ADD, DIV, i)``),
# which the driver's asm reads (instrument/labels.py).
ARITHMETIC_NAMES = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD"}


def register_launder(name: str) -> str:
    """An empty asm statement after which the integer or pointer lvalue ``name`` holds an
    unknown value."""
    return f'__asm__ volatile("" : "+r"({name}));'


# MCC's default bound (LabelOptions.mcc_max): only decisions with more than 2^6 combinations of
# atom values that evaluation can reach are cut, which ordinary code's decisions stay below and
# character tables' exceed; a larger window multiplies a huge decision's labels and its compile
# time (bench/RESULTS.md, "MCC bound").
MCC_MAX_DEFAULT = 6

if TYPE_CHECKING:  # libclang-free at run time, so that estimate.py can take LabelOptions
    from .logic import Decision
    from .sites import Binop, Function

# (start, end, text): the bytes of the unit's source from start to end replaced by text (an
# insertion where start == end, a deletion where text is empty)
Edit = tuple[int, int, str]

# The driver's preprocessor command for in_macros: (compile args, the file as the compile
# command spells it, the marked copy to preprocess) -> argv that writes the preprocessed
# copy to stdout without line markers (the rewriters never choose a compiler).
PreprocessCommand = Callable[[Sequence[str], str, str], list[str]]


@dataclass(frozen=True)
class LabelOptions:
    """Which labels to make. Extra fields beyond the driver contract are optional."""

    mcc: bool = True
    mcc_max: int = MCC_MAX_DEFAULT  # bound MCC by windows of this many atoms (0: no bound)
    wm_ops: frozenset[str] = frozenset()  # subset of operators.WM_GROUPS
    only_funcs: frozenset[str] = frozenset()  # empty: every function
    in_macros: bool = False  # label the code macros expand to (macro_expansion.py)
    macro_preprocessor: PreprocessCommand | None = None  # expands them; required with in_macros
    mcc_min_atoms: int = 2  # decisions with fewer atoms get no MCC labels (edges cover them)

    def __post_init__(self) -> None:
        unknown = set(self.wm_ops) - set(WM_GROUPS)
        if unknown:
            raise ValueError(f"unknown WM operators {sorted(unknown)}; known: {sorted(WM_GROUPS)}")
        if self.mcc_max < 0:
            raise ValueError("mcc_max must be 0 (no bound) or more")
        if self.in_macros and self.macro_preprocessor is None:
            raise ValueError("in_macros needs a macro_preprocessor")

    @property
    def groups(self) -> frozenset[str]:
        """The operator groups asked for (operators.GROUPS keys)."""
        return frozenset(self.wm_ops).union([MCC.group] if self.mcc else [])


@dataclass(frozen=True)
class Label:
    """One label as the label database records it."""

    index: int
    gate: int  # the label's site, numbered in the unit: its labels share one gate (rewrite.py)
    criterion: str  # "mcc" | "wm"
    operator: str  # stable id, a key of operators.OPERATORS: "mcc", "wm.ror.lt_le", ...
    file: str
    line: int
    column: int
    function: str
    original: str  # source text of the decision / expression
    predicate: str  # C text of the coverage or kill predicate over the operands' values
    # (an operand with side effects in backquotes: its value, display.py)


@dataclass(frozen=True)
class MutatedLabel(Label):
    """A label that is a weak-mutation objective, its own operator's or one in ``also``:
    ``mutants`` gives each such operator's mutant as source text (``original`` as the operator
    mutates it, spaced alike: display.mutated_text), so that reports show mutants without
    knowing C's operators. A subclass, so that MCC labels' records stay as they were."""

    # operator id -> text, the label's own operator first; a dict, left out of the hash
    mutants: dict[str, str] = field(hash=False)


@dataclass(frozen=True)
class MergedLabel(MutatedLabel):
    """A label that also stands for other operators' objectives at its site: their requests had
    the same predicate (an MCC combination and a COR mutant; ROR and ABS on ``x < 0``), so it is
    emitted once and each operator counts it. A subclass, not a field of every label, so that
    only such records carry ``also``. One of the operators is always a WM operator (MCC is the
    only other), hence a MutatedLabel."""

    also: tuple[str, ...]  # operator ids, each once, in emission order


@dataclass(frozen=True)
class BoundedDecision:
    """A decision whose MCC labels cover windows of ``window`` atoms, not whole combinations."""

    line: int
    atoms: int
    window: int


@dataclass
class Annotation:
    text: str
    labels: list[Label] = field(default_factory=list)
    left_out: int = 0  # combinations / mutants not emitted because an operand can't be guarded
    skipped: int = 0  # labels dropped because their site's edits conflicted with another site's
    bounded: list[BoundedDecision] = field(default_factory=list)  # in source order
    headers: list[str] = field(default_factory=list)  # every file the unit includes


@dataclass(frozen=True)
class LabelRequest:
    """A label a criterion wants at a site, before ``annotate`` gives it an index.

    ``code`` is a C predicate over the site's values written as ``string.Template``
    placeholders: ``$c<i>`` atom i, ``$l<k>``/``$r<k>`` operands of logical node k (tri-state:
    0, 1, or 2 when unknown) for decisions; ``$x0``/``$x1`` operands for binary expressions.
    ``needs`` lists the placeholders used, so the site rewriter captures only those.
    ``predicate`` is the record's text; at a binary expression a template over ``$x0``/``$x1``
    too, which ``annotate`` writes with the operands' text (display.py). ``key``: requests at
    one site with the same key are one objective (ROR's ``x == 0.0`` and ABS's ``x == 0``);
    empty: the predicate is the key. ``relation``: ``code`` as (left, operator, right) when it is
    just a relational operator on operands of integer types of at most 64 bits (placeholders or
    numbers), so that labels comparing the same two values can share one comparison
    (rewrite.py). ``arithmetic``: (original, mutant), the operators of an AOR label whose
    ``code`` says that ``$x0 ORIGINAL $x1`` and ``$x0 MUTANT $x1`` differ as integers of 32 or
    64 bits (their type's whole width), so that the driver may compute both values itself
    (rewrite.py ``__FFCC_ARITH``). ``mutation``: how a WM operator's mutant differs from the
    original in source, as edits of the site's text (mutation.py), from which the label
    record's ``mutants`` text is made; empty for MCC. ``held``: the floating values ``code``
    compares, as (scratch, expression) pairs that a site's labels compute together in one
    region with the floating-point environment held (opaque.held_region, wm_aor.py); empty for
    the others.
    """

    site: Decision | Binop
    operator: Operator
    predicate: str
    code: str
    needs: frozenset[str] = frozenset()
    key: str = ""
    relation: tuple[str, str, str] | None = None
    arithmetic: tuple[str, str] | None = None
    mutation: tuple[Edit, ...] = ()
    held: tuple[tuple[str, str], ...] = ()


class Emitter(Protocol):
    def label(self, request: LabelRequest) -> None: ...

    def left_out(self, count: int = 1) -> None: ...

    def bounded(self, decision: Decision, window: int) -> None: ...


class Criterion(Protocol):
    """A module labelling one operator group: ``apply`` emits its label requests."""

    group: str  # a key of operators.GROUPS
    reads_binops: bool  # reads ``Function.binops``: the walk finds operator sites only for these

    def apply(self, function: Function, options: LabelOptions, emit: Emitter) -> None: ...
