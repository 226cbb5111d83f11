"""Where labels may go: decisions, binary expressions (relational, arithmetic, bitwise), and
updates (compound assignments, ``++``/``--``, unary minus).

Only expressions that are evaluated at run time inside a function body and spelled in the file
qualify. Skipped on purpose, because a statement expression there would not compile or would
change meaning: constant-expression contexts (case labels, static or extern locals, declarator
sizes), unevaluated operands (sizeof, _Alignof, _Generic, typeof, __builtin_constant_p ...),
asm statements, and code inside macro expansions.

Labels must not change the order in which the compiler evaluates operands the program leaves
unsequenced (``count + next()`` where ``next()`` changes ``count``: gcc calls first, clang reads
first). Wrapping a site in a statement expression, or capturing its operands one after the other,
can change that order (gcc evaluates an operand with side effects first, and a statement
expression has them). So a site is marked ``order_exposed``, and gets no labels (the driver
counts them as left out), when its evaluation and that of an operand it is unsequenced with
could give different results in either order (``variables.Neighbours.clash_with``), or, for a
binary expression whose operands are captured, when its two operands could.

Labels read an operand of a binary expression again, instead of capturing the value the
program computes, where that cannot differ and adds nothing the program would not do right
after: a variable, a constant, or a read of memory without operations that can be undefined or
raise floating-point exceptions (``safety.repeatable_value``; ``Binop.rereadable``). Both
operands are evaluated whatever their values, and a site where one operand could change what
the other reads gets no labels (above).

A function that calls itself and returns the result (``return n * fact(n - 1);``, or
``r = walk(n - 1); return r + x;``) is one an optimiser turns into a loop (tail recursion with
an accumulator, gcc and clang at -O2), so that it recurses as deep as the program asks on a
small stack.  Label code between that call and the return would keep the calls: so the sites
of such a return statement (one that holds a call of the function, or follows a statement
that does) get no labels, counted as left out (``unlabelled``: "recursion").

Under ``-ffast-math`` (or ``-Ofast``, ``-fassociative-math``, ``-funsafe-math-optimizations``)
the optimiser may reassociate a floating accumulation in a loop (``sum += a[i]``: a vectorised
sum adds in another order), and label code in the loop changes what it does (clang vectorises
the plain loop, not the labelled one, and the sums differ in their last bits).  So a loop
whose body accumulates into a floating object gets no labels anywhere in it, counted as left
out (``unlabelled``: "reassociation").

An update (``x += e``, ``x++``, ``-e``) is a site only where its operands are pure and spelled in
the file: the site rewriter then reads them for its labels just before the site evaluates them
itself (a ``Binop`` whose operands are ``plain``), so the program's own expression stays as it
is and its store happens once, where it did. The operands are read where the program reads them
anyway: a label adds no fault and no undefined behaviour of its own (``p->n++`` reads ``p->n``
twice, both times where the program does). An update with side effects in an operand
(``a[i++] += 2``, ``x += f()``) or a volatile or atomic object gets no labels: its operands
would have to be captured as an address and a value, which the binary expression form cannot
express.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from clang.cindex import Cursor, CursorKind, StorageClass, TypeKind

from .logic import Decision, build_decision
from .opaque import in_register, reread
from .operators import ARITHMETIC, BITWISE, COMPOUND, INCREMENTS, LOGICAL, RELATIONAL, SHIFT
from .ops import binary_op, unary_op
from .safety import (
    is_bitfield_ref,
    is_constant,
    is_plain_operand,
    repeatable_value,
    side_effect_free,
)
from .unit import (
    EXPRESSION_KINDS,
    FLOAT_KINDS,
    INTEGER_KINDS,
    STATEMENT_KINDS,
    Span,
    Token,
    Unit,
    canonical_kind,
    children,
    function_body,
    preorder,
    strip_implicit,
    unparenthesised,
)
from .variables import Neighbours, Variables

UNEVALUATED_LEADS = frozenset({
    "sizeof", "_Alignof", "__alignof__", "__alignof", "alignof", "_Generic", "typeof",
    "__typeof__", "__typeof", "__builtin_offsetof", "__builtin_choose_expr",
    "__builtin_types_compatible_p", "_Static_assert",
})
COMPILE_TIME_CALLS = frozenset({
    "__builtin_constant_p", "__builtin_object_size", "__builtin_dynamic_object_size",
})
SKIPPED_STATEMENTS = frozenset({CursorKind.ASM_STMT, CursorKind.MS_ASM_STMT})
# Expressions without operands: no site in them (a third of a function's expression nodes,
# and as many again are the implicit conversions of one, which the walk skips with them).
LEAVES = frozenset({CursorKind.DECL_REF_EXPR, CursorKind.INTEGER_LITERAL,
                    CursorKind.FLOATING_LITERAL, CursorKind.IMAGINARY_LITERAL,
                    CursorKind.CHARACTER_LITERAL, CursorKind.STRING_LITERAL})
LOCAL_STORAGE = frozenset({StorageClass.NONE, StorageClass.AUTO, StorageClass.REGISTER})
# Operators whose operands are evaluated in a fixed order, or not both.
SEQUENCED_OPERATORS = frozenset({"&&", "||", ","})
SEQUENCED_KINDS = frozenset({CursorKind.CONDITIONAL_OPERATOR, CursorKind.StmtExpr})
BINOP_OPERATORS = frozenset(RELATIONAL + ARITHMETIC + BITWISE + SHIFT)
UNARY_OPERATORS = frozenset((*INCREMENTS, "-"))  # ops.UNARY_SPELLING names
BINARY, ASSIGNMENT, UNARY = "binary", "assignment", "unary"  # Binop.form
LOOPS = frozenset({CursorKind.FOR_STMT, CursorKind.WHILE_STMT, CursorKind.DO_STMT})
ACCUMULATING = frozenset({"+=", "-=", "*="})


@dataclass
class Binop:
    """``lhs OP rhs`` with OP relational, arithmetic or bitwise, both operands spelled in the
    file; or an update (``form``): ``lhs OP rhs`` assigning lhs (OP ``+=`` ... ``>>=``), or
    ``OP lhs`` (OP ``-``, ``++x``, ``x--`` ..., and rhs is lhs)."""

    cursor: Cursor
    op: str
    lhs: Cursor
    rhs: Cursor
    lhs_text: str
    rhs_text: str
    plain: bool  # both operands can be re-read verbatim (no captures needed)
    bitfield: tuple[bool, bool]  # operands that are bit-fields (need promotion in temporaries)
    constant: tuple[bool, bool]  # operands known at compile time (labels read them as they are)
    in_register: tuple[bool, bool]  # integer or pointer operands (opaque.launder)
    token: Token | None  # the operator as spelled (None: a unary one a macro spells)
    spans: tuple[Span, Span]  # where lhs and rhs are in the unit
    order_exposed: bool = False  # labels here could change evaluation order: none
    form: str = BINARY  # BINARY, ASSIGNMENT or UNARY
    rereadable: tuple[bool, bool] = (True, True)  # operands labels may evaluate again
    full_expression: int | None = None  # where its temporaries live (frame.py): None, its own
    unlabelled: str | None = None  # why a site like any other gets no labels (above)

    @property
    def text(self) -> str:
        if self.form == UNARY:
            before, _, after = self.op.partition("x") if "x" in self.op else (self.op, "", "")
            return f"{before}{self.lhs_text}{after}"
        return f"{self.lhs_text} {self.op} {self.rhs_text}"


@dataclass
class Function:
    cursor: Cursor
    decisions: list[Decision] = field(default_factory=list)
    binops: list[Binop] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.cursor.spelling


def find_sites(unit: Unit, only_funcs: frozenset[str], find_binops: bool) -> Iterator[Function]:
    """Every function definition of the file with its label sites, in source order, each
    found when the one before has been dealt with (labelling.py).  ``find_binops``: whether to
    find operator sites at all: judging one is most of the walk's work on every operator,
    and the criteria of decisions alone (MCC, COR) never read them."""
    for cursor in unit.functions():
        if only_funcs and cursor.spelling not in only_funcs:
            continue
        function = Function(cursor)
        body = function_body(cursor)
        if body is not None:
            walker = _Walker(unit, function, Variables(unit, body), find_binops)
            walker.statement(body, walker.calm)
        yield function


class _Walker:
    """Finds the sites of one function. ``around``: what the compiler may evaluate before or
    after an expression, in an order the program leaves to it."""

    def __init__(self, unit: Unit, function: Function, variables: Variables,
                 find_binops: bool) -> None:
        self.unit = unit
        self.find_binops = find_binops  # operator sites too (find_sites)
        self.function = function
        self.variables = variables
        self.calm = Neighbours(variables)  # a full expression's: nothing
        self.outermost = True  # not inside an expression
        self.full_expression: int | None = None  # the outermost expression's offset
        self.usr = function.cursor.get_usr()  # what a call of the function itself refers to
        self.unlabelled: str | None = None  # why the sites being walked get no labels

    def statement(self, cursor: Cursor, around: Neighbours) -> None:
        if cursor.kind in SKIPPED_STATEMENTS or not self.unit.in_main_file(cursor):
            return
        if cursor.kind == CursorKind.CASE_STMT:
            self.any(children(cursor)[-1], around)
        elif cursor.kind == CursorKind.DECL_STMT:
            for decl in children(cursor):
                self.declaration(decl)
        else:
            kids = children(cursor)
            for n, child in enumerate(kids):
                why = self.unlabelled or self._why_unlabelled(cursor, kids, n)
                if why == self.unlabelled:
                    self.any(child, around)
                    continue
                self.unlabelled = why
                try:
                    self.any(child, around)
                finally:
                    self.unlabelled = None

    def _why_unlabelled(self, parent: Cursor, kids: Sequence[Cursor], n: int) -> str | None:
        """Why the sites of statement ``kids[n]`` of ``parent`` get no labels (above), or
        None."""
        child = kids[n]
        if child.kind == CursorKind.RETURN_STMT and (
                self._calls_itself(child) or parent.kind == CursorKind.COMPOUND_STMT and n
                and self._calls_itself(kids[n - 1])):
            return "recursion"
        if child.kind in LOOPS and self.unit.reassociates and _accumulates_floating(child):
            return "reassociation"
        return None

    def _calls_itself(self, cursor: Cursor) -> bool:
        """Whether ``cursor`` holds a call of the function being walked."""
        return any(node.kind == CursorKind.CALL_EXPR and node.referenced is not None
                   and node.referenced.get_usr() == self.usr for node in preorder(cursor))

    def any(self, cursor: Cursor, around: Neighbours) -> None:
        if cursor.kind in EXPRESSION_KINDS:
            self.expression(cursor, around)
        elif cursor.kind in STATEMENT_KINDS:
            self.statement(cursor, around)

    def declaration(self, decl: Cursor) -> None:
        """Visit only the initializer of an automatic variable (never sizes or types)."""
        if decl.kind != CursorKind.VAR_DECL or decl.storage_class not in LOCAL_STORAGE:
            return
        equals = [t for t in self.unit.tokens_in(*self.unit.span(decl)) if t.spelling == "="]
        if not equals:
            return
        for child in children(decl):
            if child.kind in EXPRESSION_KINDS and self.unit.span(child)[0] > equals[0].offset:
                self.expression(child, self.calm)

    def expression(self, cursor: Cursor, around: Neighbours) -> None:
        """Sites in ``cursor``, each knowing its full expression (frame.py)."""
        if not self.outermost:
            self._expression(cursor, around)
            return
        self.outermost = False
        self.full_expression = self.unit.span(cursor)[0]
        try:
            self._expression(cursor, around)
        finally:
            self.outermost = True
            self.full_expression = None

    def _expression(self, cursor: Cursor, around: Neighbours) -> None:
        unit = self.unit
        if _leaf(cursor) or unit.opaque(cursor) or not unit.in_main_file(cursor):
            return
        if cursor.kind == CursorKind.BLOCK_EXPR:  # no frame there: its code cannot assign one
            outer, self.full_expression = self.full_expression, None
            try:
                self._expression_parts(cursor, around)
            finally:
                self.full_expression = outer
            return
        self._expression_parts(cursor, around)

    def _expression_parts(self, cursor: Cursor, around: Neighbours) -> None:
        unit = self.unit
        if cursor.kind in (CursorKind.CXX_UNARY_EXPR, CursorKind.GENERIC_SELECTION_EXPR):
            return
        if unit.first_token(cursor) in UNEVALUATED_LEADS:
            return
        if cursor.kind == CursorKind.CALL_EXPR and cursor.spelling in COMPILE_TIME_CALLS:
            return
        if self._is_decision_root(cursor):
            decision = build_decision(cursor, unit, self.variables)
            if decision is not None:
                if not all(is_constant(a.cursor) for a in decision.atoms):
                    decision.order_exposed = around.clash_with(cursor)
                    decision.unlabelled = self.unlabelled
                    decision.full_expression = self.full_expression
                    self.function.decisions.append(decision)
                for atom in decision.atoms:
                    self.expression(atom.cursor, around)
                return
        if self.find_binops:
            self._note_binop(cursor, around)
        for child, child_around in self._operands(cursor, around):
            self.any(child, child_around)  # a GNU statement expression holds statements

    def _note_binop(self, cursor: Cursor, around: Neighbours) -> None:
        """Add the operator site ``cursor`` is, if it is one."""
        binop = self._binop(cursor, around) or self._update(cursor, around)
        if binop is not None:
            binop.unlabelled = self.unlabelled
            self.function.binops.append(binop)

    def _operands(self, cursor: Cursor, around: Neighbours) -> list[tuple[Cursor, Neighbours]]:
        """Each child, with what may be evaluated around it: for the operands of an operator
        that leaves their order to the compiler, also the other operands (of ``=``, only what
        locates the object assigned)."""
        kids = children(cursor)
        if len(kids) < 2:
            return [(kid, around) for kid in kids]
        positions = [i for i, kid in enumerate(kids) if kid.kind in EXPRESSION_KINDS]
        op = binary_op(cursor)
        if len(positions) < 2 or op in SEQUENCED_OPERATORS or cursor.kind in SEQUENCED_KINDS:
            return [(kid, around) for kid in kids]
        evaluated = [self.variables.place(kids[i]) if op == "=" and n == 0 else [kids[i]]
                     for n, i in enumerate(positions)]
        arounds = [around] * len(kids)
        for n, i in enumerate(positions):
            others = [value for m, values in enumerate(evaluated) if m != n for value in values]
            arounds[i] = Neighbours(self.variables, others, around)
        return list(zip(kids, arounds))

    def _is_decision_root(self, cursor: Cursor) -> bool:
        node = cursor
        while True:
            if binary_op(node) in LOGICAL:
                return True
            if node.kind in (CursorKind.PAREN_EXPR, CursorKind.UNEXPOSED_EXPR) or unary_op(node) == "!":
                kids = children(node)
                if len(kids) != 1:
                    return False
                node = kids[0]
                continue
            return False

    def _binop(self, cursor: Cursor, around: Neighbours) -> Binop | None:
        op = binary_op(cursor)
        if cursor.kind != CursorKind.BINARY_OPERATOR or op not in BINOP_OPERATORS:
            return None
        unit = self.unit
        lhs, rhs = children(cursor)
        if is_constant(cursor) or not (unit.spelled(lhs) and unit.spelled(rhs)):
            return None
        lhs_text, rhs_text = unit.flat_text(lhs), unit.flat_text(rhs)
        operator = unit.operator_between(lhs, rhs)
        if operator is None or lhs_text is None or rhs_text is None:
            return None
        kinds = canonical_kind(lhs), canonical_kind(rhs)
        if not all(_scalar(kind) for kind in kinds):
            return None
        rereadable = (self._rereadable_operand(lhs), self._rereadable_operand(rhs))
        lhs_text, rhs_text = (self._label_text(operand, text) for operand, text
                              in ((lhs, lhs_text), (rhs, rhs_text)))
        if lhs_text is None or rhs_text is None:
            return None
        plain = all(rereadable)
        order_exposed = around.clash_with(cursor) or (  # or captured one after the other:
            not plain and Neighbours(self.variables, [lhs]).clash_with(rhs))
        return Binop(cursor, op, lhs, rhs, lhs_text, rhs_text, plain,
                     (is_bitfield_ref(lhs), is_bitfield_ref(rhs)), (is_constant(lhs), is_constant(rhs)),
                     (in_register(kinds[0]), in_register(kinds[1])), operator,
                     (unit.span(lhs), unit.span(rhs)), order_exposed,
                     rereadable=rereadable, full_expression=self.full_expression)


    def _update(self, cursor: Cursor, around: Neighbours) -> Binop | None:
        """A compound assignment, ``++``/``--`` or unary minus whose operands are pure."""
        if cursor.kind == CursorKind.COMPOUND_ASSIGNMENT_OPERATOR:
            op, form = binary_op(cursor), ASSIGNMENT
        else:
            op, form = unary_op(cursor), UNARY
        if op not in COMPOUND and op not in UNARY_OPERATORS or is_constant(cursor):
            return None
        kids = children(cursor)
        lhs, rhs = (kids[0], kids[-1])
        unit = self.unit
        if not (self._rereadable(lhs) and self._rereadable(rhs)):
            return None
        operator = unit.operator_between(lhs, rhs) if form == ASSIGNMENT else \
            self._unary_token(cursor, op)
        if form == ASSIGNMENT and operator is None:
            return None
        lhs_text, rhs_text = unit.flat_text(lhs), unit.flat_text(rhs)
        kinds = canonical_kind(lhs), canonical_kind(rhs)
        if lhs_text is None or rhs_text is None or not all(_scalar(kind) for kind in kinds):
            return None
        return Binop(cursor, op, lhs, rhs, lhs_text, rhs_text, True,
                     (is_bitfield_ref(lhs), is_bitfield_ref(rhs)), (False, is_constant(rhs)),
                     (in_register(kinds[0]), in_register(kinds[1])), operator,
                     (unit.span(lhs), unit.span(rhs)), around.clash_with(cursor), form,
                     full_expression=self.full_expression)

    def _unary_token(self, cursor: Cursor, op: str) -> Token | None:
        """The token of a unary operator (``-``, ``++x``, ``x--`` ...): the expression's first
        token, or its last for a postfix one; None where it is not that operator (a macro's
        name)."""
        tokens = self.unit.tokens_in(*self.unit.span(cursor))
        token = (tokens[-1] if op.startswith("x") else tokens[0]) if tokens else None
        return token if token is not None and token.spelling == op.strip("x") else None

    def _rereadable_operand(self, cursor: Cursor) -> bool:
        """May labels read this operand of a binary expression again instead of capturing
        its value: a variable, constant, or a read of memory the program reads right after
        (``safety.repeatable_value``)? The operator evaluates both operands whatever their
        values, and sites.py gives no labels where the other operand could change it."""
        if is_plain_operand(cursor, self.unit):
            return True
        return self._rereadable(cursor) and (is_constant(cursor) or repeatable_value(cursor)
                                             or self._floating_arithmetic(cursor))

    def _label_text(self, cursor: Cursor, text: str) -> str | None:
        """The text labels evaluate for an operand they read again: floating arithmetic from
        opaque copies of its variables (``opaque.reread``), anything else as written."""
        if is_plain_operand(cursor, self.unit) or not self._floating_arithmetic(cursor):
            return text
        return reread(cursor, self.unit, f"__ffcc_r{self.unit.span(cursor)[0]}_")

    def _floating_arithmetic(self, cursor: Cursor) -> bool:
        """Floating ``+``, ``-``, ``*`` or negation of operands that are plain or such
        arithmetic themselves: labels evaluate it again rather than capture it, because a
        capture rounds the value the program goes on with. ``a*b + c`` with ``a*b`` captured
        is a multiply and an add where the original is one fused multiply-add under
        ``-ffp-contract`` (an FMA target; gcc's default at -O2). Evaluating it again cannot
        fault and raises only the exception flags the program's own evaluation raises."""
        node = unparenthesised(strip_implicit(cursor))
        if canonical_kind(node) not in FLOAT_KINDS:
            return False
        if binary_op(node) in ("+", "-", "*") or unary_op(node) in ("-", "+"):
            return all(is_plain_operand(child, self.unit) or self._floating_arithmetic(child)
                       for child in children(node))
        return False

    def _rereadable(self, cursor: Cursor) -> bool:
        """May a label evaluate this operand again just before the program does (the text
        copied means the same, and evaluating it changes nothing)?"""
        unit = self.unit
        return (unit.spelled(cursor) and unit.repeatable(cursor) and side_effect_free(cursor)
                and unit.flat_text(cursor) is not None)


def _accumulates_floating(loop: Cursor) -> bool:
    """Whether ``loop`` adds into or multiplies a floating object (``s += e``, ``s = s + e``):
    an accumulation the optimiser may reassociate under -ffast-math."""
    for node in preorder(loop):
        op = binary_op(node)
        if op in ACCUMULATING or op == "=" and _reads_itself(node):
            if canonical_kind(children(node)[0]) in FLOAT_KINDS:
                return True
    return False


def _reads_itself(assignment: Cursor) -> bool:
    """``v = ... v ...`` for a variable v."""
    target = unparenthesised(strip_implicit(children(assignment)[0]))
    if target.kind != CursorKind.DECL_REF_EXPR or target.referenced is None:
        return False
    usr = target.referenced.get_usr()
    return any(node.kind == CursorKind.DECL_REF_EXPR and node.referenced is not None
               and node.referenced.get_usr() == usr for node in preorder(children(assignment)[1]))


def _leaf(cursor: Cursor) -> bool:
    """An operand-free expression, or an implicit conversion of one: nothing to label."""
    kind = cursor.kind
    if kind == CursorKind.UNEXPOSED_EXPR:
        kids = children(cursor)
        return len(kids) == 1 and kids[0].kind in LEAVES
    return kind in LEAVES


def _scalar(kind: TypeKind) -> bool:
    return kind in INTEGER_KINDS or kind in FLOAT_KINDS or kind == TypeKind.POINTER
