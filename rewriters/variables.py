"""What one function does with its variables: what a label may read out of turn, and what an
expression's evaluation may change or depend on.

Labels evaluate an operand the program skipped (docs/DESIGN.md, rule 2), so they read its
variables where the program did not: in ``found && best > 3``, ``best`` holds a value only
when ``found`` says so. ``initialised_reads`` allows only reads of values that exist whatever
the path taken:

- scalar parameters, and scalar variables of static or thread storage duration (initialised
  before the program starts);
- members and constant-index elements of ``const`` objects of static storage duration;
- scalar automatic variables initialised at that point: a point I initialising the variable
  precedes it in the same block or an enclosing one (its declaration with an initializer, an
  expression statement assigning it, also in a comma list or a chain of assignments, or the init
  of a ``for`` statement), and no jump from elsewhere lands between I and the end of the
  statements known to run after I (a ``goto`` to a label there, a ``case`` or ``default`` of a
  switch that begins before I; with a computed ``goto``, any label).

Everything else is refused: automatic aggregates (a member may never have been set, and a
structure copy carries unset members along), structure parameters, aggregates that are not
``const`` and of static storage duration.

Labels also must not change the order in which the compiler evaluates operands the program left
unsequenced (rule 1; sites.py). ``writes`` tells whether evaluating an expression may change
state, ``reads`` whether it reads state that such a change elsewhere could alter: anything but
constants and automatic variables whose address the function never takes. ``Neighbours`` works
them out for what is evaluated around an expression, and only when asked: most sites neither
write nor sit next to something that does.

What a label may read is worked out from one walk of the function's body, made on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from clang.cindex import Cursor, CursorKind, LinkageKind, StorageClass, TypeKind

from .ops import binary_op, unary_op
from .safety import changes_state, is_unevaluated
from .unit import (
    EXPRESSION_KINDS,
    STATEMENT_KINDS,
    Unit,
    canonical_kind,
    children,
    is_arithmetic,
    strip_implicit,
    type_kind,
    unparenthesised,
)

ADDRESS_TYPES = frozenset({  # a name of such a type stands for an address: no memory is read
    TypeKind.CONSTANTARRAY, TypeKind.INCOMPLETEARRAY, TypeKind.VARIABLEARRAY,
    TypeKind.DEPENDENTSIZEDARRAY, TypeKind.FUNCTIONPROTO, TypeKind.FUNCTIONNOPROTO,
})
LABELLED = frozenset({CursorKind.LABEL_STMT, CursorKind.CASE_STMT, CursorKind.DEFAULT_STMT})
Region = tuple[int, int]  # [start, end) byte offsets


class Variables:
    """Facts about the variables of one function definition."""

    def __init__(self, unit: Unit, body: Cursor) -> None:
        self.unit = unit
        self.body = body
        self._writes: dict[bytes, bool] = {}
        self._reads: dict[bytes, bool] = {}

    # -- reading skipped operands ----------------------------------------------------------

    def initialised_reads(self, cursor: Cursor) -> bool:
        """Does every value ``cursor`` reads exist wherever the program is when it gets here?"""
        at = self.unit.span(cursor)[0]
        return all(self._may_read(read, at) for read in _accesses(cursor))

    def _may_read(self, access: Cursor, at: int) -> bool:
        base = _base_name(access)
        ref = base.referenced if base is not None else None
        if ref is None:
            return False
        if ref.kind in (CursorKind.ENUM_CONSTANT_DECL, CursorKind.FUNCTION_DECL):
            return True
        whole = access.kind == CursorKind.DECL_REF_EXPR
        if whole and canonical_kind(base) in ADDRESS_TYPES:
            return True
        static = ref.kind == CursorKind.VAR_DECL and _static_storage(ref)
        if not whole:
            return static and _const_object(ref)
        if not _scalar(canonical_kind(access)):
            return False
        if ref.kind == CursorKind.PARM_DECL or static:
            return True
        return ref.kind == CursorKind.VAR_DECL and self.initialised(ref, at)

    def initialised(self, variable: Cursor, at: int) -> bool:
        """Is the automatic ``variable`` initialised at offset ``at`` on every path?"""
        return any(start <= at < end and not self._entered(start, end)
                   for start, end in self._facts.initialising.get(variable, ()))

    def _entered(self, start: int, end: int) -> bool:
        """Can a jump from outside [start, end) land inside it?"""
        facts = self._facts

        def outside(source: int) -> bool:
            return not start <= source < end

        for label, name in facts.labels:
            if start <= label < end and (facts.computed_goto
                                         or any(map(outside, facts.gotos.get(name, ())))):
                return True
        return any(start <= case < end and outside(switch) for case, switch in facts.cases)

    # -- evaluation order ------------------------------------------------------------------

    def writes(self, cursor: Cursor) -> bool:
        """May evaluating ``cursor`` change state (or do something this analysis does not know)?"""
        key = bytes(cursor)
        found = self._writes.get(key)
        if found is None:
            found = self._writes[key] = not is_unevaluated(cursor) and (
                changes_state(cursor) or any(self.writes(child) for child in children(cursor)))
        return found

    def reads(self, cursor: Cursor) -> bool:
        """Does evaluating ``cursor`` read state that a write elsewhere could change? (True too
        where it writes: what it does is then not known.)"""
        key = bytes(cursor)
        found = self._reads.get(key)
        if found is None:
            found = self._reads[key] = self.writes(cursor) or not is_unevaluated(cursor) and (
                self._reads_changeable(cursor) or any(self.reads(kid) for kid in children(cursor)))
        return found

    def place(self, cursor: Cursor) -> Sequence[Cursor]:
        """The values evaluated to find the object ``cursor`` designates, without reading it
        (the left operand of ``=``): none for a name, the pointer for ``*p`` or ``p->f``."""
        node = unparenthesised(cursor)
        if node.kind == CursorKind.DECL_REF_EXPR:
            return []
        kids = children(node)
        if node.kind == CursorKind.MEMBER_REF_EXPR and kids and not _through_pointer(kids[0]):
            return self.place(kids[0])
        if node.kind in (CursorKind.MEMBER_REF_EXPR, CursorKind.ARRAY_SUBSCRIPT_EXPR) or \
                unary_op(node) == "*":
            return kids
        return [node]

    def _reads_changeable(self, cursor: Cursor) -> bool:
        """Does this node itself read memory that a write elsewhere could change?"""
        if cursor.kind == CursorKind.DECL_REF_EXPR:
            ref = cursor.referenced
            if ref is None:
                return True
            if ref.kind not in (CursorKind.VAR_DECL, CursorKind.PARM_DECL):
                return False  # enumerators, functions
            if canonical_kind(cursor) in ADDRESS_TYPES:
                return False
            if ref.kind == CursorKind.VAR_DECL and _static_storage(ref):
                return not _const_object(ref)
            return ref in self._facts.addressed
        if cursor.kind == CursorKind.MEMBER_REF_EXPR:
            kids = children(cursor)
            return not kids or _through_pointer(kids[0])
        if cursor.kind == CursorKind.ARRAY_SUBSCRIPT_EXPR:
            base = _base_name(cursor)
            ref = base.referenced if base is not None else None
            return not (ref is not None and ref.kind == CursorKind.VAR_DECL
                        and _static_storage(ref) and _const_object(ref))
        return unary_op(cursor) == "*"

    @cached_property
    def _facts(self) -> _Facts:
        facts = _Facts(self.unit)
        facts.statement(self.body, self.unit.span(self.body)[1], -1)
        return facts


class Neighbours:
    """What the compiler may evaluate before or after an expression, in an order the program
    leaves to it: ``cursors`` and the neighbours of the enclosing expression (``outer``)."""

    def __init__(self, variables: Variables, cursors: Sequence[Cursor] = (),
                 outer: Neighbours | None = None) -> None:
        self.variables = variables
        self.cursors = cursors
        self.outer = outer
        self.none: bool = not cursors and (outer is None or outer.none)  # nothing at all

    @cached_property
    def writes(self) -> bool:
        return (self.outer is not None and self.outer.writes) or any(
            map(self.variables.writes, self.cursors))

    @cached_property
    def reads(self) -> bool:
        return (self.outer is not None and self.outer.reads) or any(
            map(self.variables.reads, self.cursors))

    def clash_with(self, cursor: Cursor) -> bool:
        """Could evaluating ``cursor`` before or after these give different results?"""
        if self.none:
            return False
        if self.variables.writes(cursor):
            return self.writes or self.reads
        return self.writes and self.variables.reads(cursor)


class _Facts:
    """One walk of a function body: initialising points, jumps, variables whose address is taken."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.initialising: dict[Cursor, list[Region]] = {}
        self.labels: list[tuple[int, str]] = []  # (offset, name)
        self.gotos: dict[str, list[int]] = {}  # label name -> offsets of the gotos to it
        self.cases: list[tuple[int, int]] = []  # (offset of case/default, offset of its switch)
        self.computed_goto = False
        self.addressed: set[Cursor] = set()

    def statement(self, node: Cursor, follow_end: int, switch: int) -> None:
        """``follow_end``: where the statements known to run after ``node`` (when it completes
        normally) end; ``switch``: the offset of the innermost enclosing switch."""
        kind = node.kind
        start, end = self.unit.span(node)
        if kind in EXPRESSION_KINDS:
            self.expression(node)
            self._assignments(node, end, follow_end)
            return
        if kind == CursorKind.DECL_STMT:
            self._declarations(node, follow_end)
            return
        if kind == CursorKind.LABEL_STMT:
            self.labels.append((start, node.spelling))
        elif kind in (CursorKind.CASE_STMT, CursorKind.DEFAULT_STMT):
            self.cases.append((start, switch))
        elif kind == CursorKind.GOTO_STMT:
            for ref in children(node):
                self.gotos.setdefault(ref.spelling, []).append(start)
            return
        elif kind == CursorKind.INDIRECT_GOTO_STMT:
            self.computed_goto = True
        elif kind == CursorKind.SWITCH_STMT:
            switch = start
        elif kind == CursorKind.FOR_STMT:
            self._for(node, follow_end, switch)
            return
        kids = children(node)
        if kind == CursorKind.COMPOUND_STMT:
            for child in kids:  # each runs after the one before, then what follows the block
                self.statement(child, follow_end, switch)
        elif kind in LABELLED:  # case values first, the labelled statement last
            for child in kids[:-1]:
                self.expression(child)
            if kids:
                self.statement(kids[-1], follow_end, switch)
        else:
            for child in kids:
                self.statement(child, self.unit.span(child)[1], switch)

    def _for(self, node: Cursor, follow_end: int, switch: int) -> None:
        init = _for_init(node, self.unit)
        for child in children(node):
            child_end = self.unit.span(child)[1]
            if init is None or child != init:
                self.statement(child, child_end, switch)
            elif child.kind == CursorKind.DECL_STMT:  # in scope until the end of the for
                self._declarations(child, self.unit.span(node)[1])
            else:  # runs whenever the for statement does
                self.expression(child)
                self._assignments(child, child_end, follow_end)

    def _declarations(self, node: Cursor, follow_end: int) -> None:
        for decl in children(node):
            for part in children(decl):  # the initializer, and sizes of variable-length arrays
                if part.kind in EXPRESSION_KINDS:
                    self.expression(part)
            if _initializer(decl, self.unit) is not None:
                self.initialising.setdefault(decl, []).append((self.unit.span(decl)[1],
                                                               follow_end))

    def _assignments(self, node: Cursor, end: int, follow_end: int) -> None:
        """Record the variables an expression statement assigns on every evaluation."""
        for target in _assigned(node):
            ref = target.referenced
            if ref is not None and ref.kind == CursorKind.VAR_DECL:
                self.initialising.setdefault(ref, []).append((end, follow_end))

    def expression(self, node: Cursor) -> None:
        """Variables whose address is taken; statements inside statement expressions."""
        if node.kind == CursorKind.StmtExpr:
            for child in children(node):
                self.statement(child, self.unit.span(child)[1], -1)
            return
        if unary_op(node) == "&":
            base = _base_name(children(node)[0])
            if base is not None and base.referenced is not None:
                self.addressed.add(base.referenced)
        for child in children(node):
            if child.kind in EXPRESSION_KINDS:
                self.expression(child)
            elif child.kind in STATEMENT_KINDS:
                self.statement(child, self.unit.span(child)[1], -1)


def _accesses(cursor: Cursor) -> list[Cursor]:
    """The outermost variable accesses (names, ``.`` members, subscripts) an expression reads,
    outside ``&`` and unevaluated operands."""
    node = strip_implicit(cursor)
    if is_unevaluated(node) or unary_op(node) == "&":
        return []
    if node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.MEMBER_REF_EXPR,
                     CursorKind.ARRAY_SUBSCRIPT_EXPR):
        return [node]
    return [found for child in children(node) for found in _accesses(child)]


def _base_name(access: Cursor) -> Cursor | None:
    """The variable an access chain (``v``, ``v.m``, ``v[2].m``) starts from; None if the chain
    goes through a pointer."""
    node = unparenthesised(access)
    while node.kind != CursorKind.DECL_REF_EXPR:
        kids = children(node)
        if node.kind == CursorKind.MEMBER_REF_EXPR and kids and not _through_pointer(kids[0]):
            node = unparenthesised(kids[0])
        elif node.kind == CursorKind.ARRAY_SUBSCRIPT_EXPR and len(kids) == 2 \
                and canonical_kind(unparenthesised(kids[0])) in ADDRESS_TYPES:
            node = unparenthesised(kids[0])
        else:
            return None
    return node




def _through_pointer(base: Cursor) -> bool:
    return canonical_kind(base) == TypeKind.POINTER


def _scalar(kind: TypeKind) -> bool:
    return is_arithmetic(kind) or kind == TypeKind.POINTER


def _static_storage(variable: Cursor) -> bool:
    return (variable.storage_class in (StorageClass.STATIC, StorageClass.EXTERN)
            or variable.linkage != LinkageKind.NO_LINKAGE)


def _const_object(variable: Cursor) -> bool:
    """Declared const (an array: its elements)."""
    declared = variable.type
    while True:
        canonical = declared.get_canonical()  # an array's canonical type may hold the const
        if declared.is_const_qualified() or canonical.is_const_qualified():
            return True
        if type_kind(canonical) not in (TypeKind.CONSTANTARRAY, TypeKind.INCOMPLETEARRAY):
            return False
        declared = canonical.element_type


def _initializer(decl: Cursor, unit: Unit) -> Cursor | None:
    """The initializer of a variable declaration (the expression after its ``=``)."""
    if decl.kind != CursorKind.VAR_DECL:
        return None
    equals = [t.offset for t in unit.tokens_in(*unit.span(decl)) if t.spelling == "="]
    if not equals:
        return None
    return next((child for child in children(decl)
                 if child.kind in EXPRESSION_KINDS and unit.span(child)[0] > equals[0]), None)


def _assigned(node: Cursor) -> list[Cursor]:
    """Names an expression assigns whenever it is evaluated: ``x = e``, ``x = y = e``,
    ``x = 1, y = 2``."""
    node = unparenthesised(node)
    op = binary_op(node)
    if op == ",":
        return [found for child in children(node) for found in _assigned(child)]
    if op != "=":
        return []
    target, value = children(node)
    target = unparenthesised(target)
    named = [target] if target.kind == CursorKind.DECL_REF_EXPR else []
    return named + _assigned(value)


def _for_init(node: Cursor, unit: Unit) -> Cursor | None:
    """The init clause of a for statement (libclang leaves out empty clauses), or None."""
    start, end = unit.span(node)
    depth, semicolon = 0, None
    for tok in unit.tokens_in(start, end):
        if tok.spelling == "(":
            depth += 1
        elif tok.spelling == ")":
            depth -= 1
        elif tok.spelling == ";" and depth == 1:
            semicolon = tok.end
            break
    kids = children(node)
    if semicolon is None or not kids:
        return None
    first = kids[0]
    first_start, first_end = unit.span(first)
    return first if start < first_start and first_end <= semicolon else None
