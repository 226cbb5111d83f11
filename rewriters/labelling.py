"""The driver side of the library: run criteria, number labels, place edits, build records."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from .criteria import selected
from .display import mutated_text, source_text, value_text, wrapped, written
from .edits import EditConflict, EditSet
from .frame import Frame, Slots, frame_of
from .logic import Decision
from .macro_expansion import expand_macros
from .model import (
    Annotation,
    BoundedDecision,
    Label,
    LabelOptions,
    LabelRequest,
    MergedLabel,
    MutatedLabel,
)
from .preamble import Preambles
from .rewrite import Indexed, rewrite_binop, rewrite_decision
from .sites import Binop, Function, find_sites
from .unit import ParseError, Unit, unparenthesised


@dataclass
class _Collector:
    """Receives the label requests of criteria (the ``Emitter`` protocol) in one function."""

    requests: list[LabelRequest]
    bounds: list[tuple[Decision, int]]  # decisions MCC bounded, and the window
    left_out_count: int = 0

    def label(self, request: LabelRequest) -> None:
        site = request.site
        if site.order_exposed or site.unlabelled:  # would reorder or change it (sites.py)
            self.left_out_count += 1
        else:
            self.requests.append(request)

    def left_out(self, count: int = 1) -> None:
        self.left_out_count += count

    def bounded(self, decision: Decision, window: int) -> None:
        self.bounds.append((decision, window))


def annotate(path: str, compile_args: list[str], options: LabelOptions | None = None,
             compiled_out: frozenset[int] = frozenset(), preamble_dir: str | None = None
             ) -> Annotation:
    """Rewrite one C file with labels for the selected criteria.  ``compiled_out``: the
    positions of labels the build compiles to nothing (pruned or retired); their records stay,
    so that every label keeps its position, but the text carries only the other labels'
    code (``_UnitLabels.lean``).  ``preamble_dir``: where preambles that units share are
    precompiled (preamble.py), if anywhere.  Functions are labelled one at a time, and the unit forgets
    the nodes each one asked about before the next: a 244,000-line unit kept some 300 MB
    of them."""
    options = options or LabelOptions()
    unit = Unit(path, compile_args,
                preambles=None if preamble_dir is None else Preambles(preamble_dir))
    headers = unit.headers
    if options.in_macros:
        unit = _with_macros_expanded(unit, path, compile_args, options)
    labelled = _UnitLabels(unit, compiled_out)
    find_binops = any(criterion.reads_binops for criterion in selected(options))
    for function in find_sites(unit, options.only_funcs, find_binops):
        labelled.add(function, options)
        unit.forget_nodes()
    return labelled.annotation(headers)


class _UnitLabels:
    """The labels of a unit's functions so far: their records, and the edits that place
    them (and, for a lean build, those that place only the labels not compiled out)."""

    def __init__(self, unit: Unit, compiled_out: frozenset[int]) -> None:
        self.unit = unit
        self.compiled_out = compiled_out
        self.edits = EditSet(unit.source)
        self.lean: EditSet | None = EditSet(unit.source) if compiled_out else None
        self.labels: list[Label] = []
        self.placed = 0  # sites placed: the next one's number
        self.left_out = 0
        self.skipped = 0
        self.bounded: list[BoundedDecision] = []

    def add(self, function: Function, options: LabelOptions) -> None:
        """Run the criteria on one function and place its sites in source order, outer sites
        first; a site whose edits conflict with an earlier site's is skipped."""
        unit = self.unit
        emitted: list[LabelRequest] = []
        bounds: list[tuple[Decision, int]] = []
        collector = _Collector(emitted, bounds)
        for criterion in selected(options):
            criterion.apply(function, options, collector)
        self.left_out += collector.left_out_count
        self.bounded += [BoundedDecision(unit.line_col(unit.span(decision.cursor)[0])[0],
                                         len(decision.atoms), window)
                         for decision, window in bounds]
        keys = _Keys(unit)
        by_site, also = _group_unique(emitted, keys)
        frame, lean_frame = _FunctionFrame(unit, function), _FunctionFrame(unit, function)
        for site in sorted((requests[0].site for requests in by_site.values()),
                           key=lambda s: _site_order(unit, s)):
            placement = _Placement(site, [(len(self.labels) + i, request)
                                          for i, request in enumerate(by_site[id(site)])],
                                   self.placed)
            if not frame.place(self.edits, placement):
                continue
            del by_site[id(site)]
            self.labels += _records(unit, function, site, placement.indexed, also,
                                    placement.number, keys)
            self.placed += 1
            self._place_lean(lean_frame, placement)
        frame.declare(self.edits)
        if self.lean is not None:
            lean_frame.declare(self.lean)
        self.skipped += sum(len(requests) for requests in by_site.values())

    def _place_lean(self, frame: _FunctionFrame, placement: _Placement) -> None:
        """Place the labels of ``placement`` not compiled out in the lean text: a site none of
        whose labels is left keeps its original text, and one with some left captures only
        what they read.  Compiled to nothing, a label still left its site's captures,
        laundering and temporaries in the code (a lean build of cJSON's harness with every
        label compiled out ran 1.4 times as long per execution as the unlabelled build).
        Where the placements conflict without the sites left out, which the full text's did
        not, there is no lean text: the full text stands."""
        if self.lean is None:
            return
        indexed = [(index, request) for index, request in placement.indexed
                   if index not in self.compiled_out]
        if indexed and not frame.place(self.lean, _Placement(placement.site, indexed,
                                                             placement.number)):
            self.lean = None

    def annotation(self, headers: list[str]) -> Annotation:
        source = self.unit.source
        placed = self.lean if self.lean is not None and self.labels else self.edits
        text = (placed.apply() if self.labels else source).decode(errors="surrogateescape")
        return Annotation(text=text, labels=self.labels, left_out=self.left_out,
                          skipped=self.skipped, bounded=self.bounded, headers=headers)


@dataclass(frozen=True)
class _Placement:
    """A site placed in the unit: its labels with their positions, and its number (the tag
    of its temporaries, its gate)."""

    site: Decision | Binop
    indexed: Indexed
    number: int


class _FunctionFrame:
    """The frame of one function's temporaries (frame.py), made when its first site is
    placed."""

    def __init__(self, unit: Unit, function: Function) -> None:
        self.unit = unit
        self.function = function
        self._frame: Frame | None = None
        self._made = False

    def place(self, edits: EditSet, placement: _Placement) -> bool:
        """Edit the placement's site, its temporaries in the frame; False, with ``edits`` and
        the frame as they were, when its edits conflict with earlier ones."""
        if not self._made:
            self._frame, self._made = frame_of(self.unit, self.function.cursor), True
        frame, site = self._frame, placement.site
        slots = None if frame is None or site.full_expression is None else frame.slots(
            site.full_expression)
        mark = edits.checkpoint()
        try:
            _place(self.unit, edits, placement, slots)
        except EditConflict:
            edits.rollback(mark)
            if frame is not None:
                frame.discard()
            return False
        if frame is not None:
            frame.commit()
        return True

    def declare(self, edits: EditSet) -> None:
        """The temporaries, declared at the top of the function body."""
        if self._frame is not None and (declarations := self._frame.declarations()):
            edits.replace(self._frame.brace, 1, f"{{ {declarations}")


def _with_macros_expanded(unit: Unit, path: str, compile_args: list[str],
                          options: LabelOptions) -> Unit:
    """The unit re-parsed with its function bodies' macros expanded (``--in-macros``), or as it
    is when there is nothing to expand or the expanded text does not parse."""
    assert options.macro_preprocessor is not None  # LabelOptions requires it with in_macros
    expansion = expand_macros(unit, compile_args, options.macro_preprocessor,
                              options.only_funcs, spelled_path=path)
    if expansion is None:
        return unit
    try:
        return Unit(unit.path, compile_args, expansion)
    except ParseError:
        return unit


# A parenthesised identifier, member chain (``p->n.v``) or number that is neither a call's
# argument list nor a cast.
_PARENTHESISED_ATOM = re.compile(
    r"(?<![\w\])])\(\s*([A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*|\d[\w.]*)\s*\)(?!\s*[\w(])")
_NO_PARENTHESES_OR_SPACE = str.maketrans("", "", "() \t`")
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


def predicate_key(predicate: str) -> str:
    """The predicate without what cannot change its meaning (criteria spell the same condition
    in different ways): backquotes, which only mark a value the labels do not evaluate again;
    parentheses around a lone identifier, member chain or number (ROR's ``(x) < (0)`` is ABS's
    ``(x) < 0``), around the whole, and around the terms of a chain of ``&&`` or of ``||``,
    whose grouping does not matter (MCC's ``!((a)) && !((b))`` is COR's
    ``((!((a))) && !((b)))``)."""
    key = _PARENTHESISED_ATOM.sub(r"\1", predicate.replace("`", "")).strip()
    return _logic_key(key)


def _logic_key(text: str) -> str:
    """``text`` without parentheses around it, its ``&&``/``||`` chains flattened and their
    terms written the same way.  Text with a conditional or a comma outside parentheses, or
    parentheses that do not balance, is left as it is after the outer parentheses."""
    while _wrapped_code(text):
        text = text[1:-1].strip()
    split = _split_logic(text)
    if split is None:
        return text
    op, terms = split
    flat: list[str] = []
    for term in (_logic_key(term) for term in terms):
        inner = _split_logic(term)
        if inner is not None and inner[0] == op:
            flat += inner[1]
        else:
            flat.append(f"({term})" if inner is not None else term)
    return f" {op} ".join(flat)


def _split_logic(text: str) -> tuple[str, list[str]] | None:
    """(``||`` or ``&&``, the terms) of the lowest-precedence logical chain outside parentheses
    and literals; None when there is none, or the text has a conditional, a comma or
    unbalanced parentheses outside them."""
    depth = 0
    cuts: dict[str, list[int]] = {"||": [], "&&": []}
    code = _LITERAL.sub(lambda m: "_" * len(m.group()), text)
    i = 0
    while i < len(code):
        char, pair = code[i], code[i:i + 2]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and char in "?,":
            return None
        elif depth == 0 and pair in cuts:
            cuts[pair].append(i)
            i += 1
        i += 1
    if depth:
        return None
    op = "||" if cuts["||"] else "&&" if cuts["&&"] else None
    if op is None:
        return None
    bounds = [-2, *cuts[op], len(text)]
    return op, [text[a + 2:b].strip() for a, b in zip(bounds, bounds[1:])]


def _wrapped_code(text: str) -> bool:
    """``wrapped``, reading string and character literals as opaque."""
    return wrapped(_LITERAL.sub(lambda m: "_" * len(m.group()), text))


Place = tuple[int, int]  # the span of the expression an objective is about


class _Keys:
    """What tells two label requests' objectives apart: the expression they are about, and
    their predicate written with the site's operands (or their own key).  A condition over
    the first atom of a decision alone (MCC's ``(n == 0)`` where the rest short-circuits) is
    about that atom, which is also a comparison site of its own (ABS zero on ``n``), and is
    evaluated once for both.  Operands spelled the same are one value (``x != x``): a site
    with side effects in both operands, where they could differ, has no labels (sites.py,
    ``order_exposed``)."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self._operands: dict[int, dict[str, str]] = {}

    def keys(self, request: LabelRequest) -> list[tuple[Place, str]]:
        """(expression, key) pairs: the predicate as written, and the request's own key
        where it has one."""
        site = request.site
        place = self.unit.span(site.cursor)
        if isinstance(site, Decision):
            keys = [(place, request.predicate)]
            if request.needs == {"c0"}:
                keys.append((self.unit.span(unparenthesised(site.atoms[0].cursor)),
                             request.predicate))
            return keys + [(place, request.key)] * bool(request.key)
        operands = self.operands(site)
        keys = [(place, written(request.predicate, operands))]
        if request.key:  # a semantic key over the slot names (wm_operands.zero_key)
            keys.append((place, _SLOT_NAME.sub(lambda m: operands[m.group()], request.key)))
        return keys

    def operands(self, site: Binop) -> dict[str, str]:
        """What the site's predicates write for ``$x0`` and ``$x1``."""
        texts = self._operands.get(id(site))
        if texts is None:
            texts = self._operands[id(site)] = {
                "x0": value_text(self.unit, site.lhs) or site.lhs_text,
                "x1": value_text(self.unit, site.rhs) or site.rhs_text}
        return texts


_SLOT_NAME = re.compile(r"\bx[01]\b")



def _group_unique(requests: list[LabelRequest], keys: _Keys
                  ) -> tuple[dict[int, list[LabelRequest]], dict[int, list[LabelRequest]]]:
    """Requests per site in emission order; a second request with the same key (by default
    its predicate) at the same expression is the same objective (e.g. ROR ``<`` -> ``<=`` and
    ABS zero on ``x < 0``; MCC's ``(n == 0)`` and ABS zero on ``n`` in the decision ``n ==
    0``): not a second label, but it is recorded with the first request (the second mapping,
    by ``id`` of the request kept: one request per other operator, for its id and its
    mutant). Keys are first told apart without any parentheses, backquotes or spaces (cheap,
    and exact keys can only be equal where those are); only those that then look alike get
    exact keys."""
    by_site: dict[int, list[LabelRequest]] = {}
    also: dict[int, list[LabelRequest]] = {}
    seen: defaultdict[tuple[Place, str], list[tuple[str, LabelRequest]]] = defaultdict(list)
    for request in requests:
        candidates = [(key, seen[place, key.translate(_NO_PARENTHESES_OR_SPACE)])
                      for place, key in keys.keys(request)]
        kept = next((first for key, alike in candidates if alike
                     for other, first in alike if predicate_key(other) == predicate_key(key)),
                    None)
        if kept is not None:
            merged = also.setdefault(id(kept), [])
            if request.operator is not kept.operator and \
                    all(request.operator is not other.operator for other in merged):
                merged.append(request)
            continue
        for key, alike in candidates:
            alike.append((key, request))
        by_site.setdefault(id(request.site), []).append(request)
    return by_site, also


def _site_order(unit: Unit, site: Decision | Binop) -> tuple[int, int]:
    """Source order, outer sites first: a site whose edits conflict with those of an earlier
    (enclosing) site is skipped, and its labels counted as skipped."""
    start, end = unit.span(site.cursor)
    return start, -end


def _place(unit: Unit, edits: EditSet, placement: _Placement, slots: Slots | None) -> None:
    """Edit the placement's site, its temporaries in ``slots`` when its function has a
    frame."""
    site, indexed, number = placement.site, placement.indexed, placement.number
    if isinstance(site, Decision):
        rewrite_decision(unit, edits, site, indexed, number, slots)
    else:
        rewrite_binop(unit, edits, site, indexed, number, slots)


def _records(unit: Unit, function: Function, site: Decision | Binop, indexed: Indexed,
             also: dict[int, list[LabelRequest]], number: int, keys: _Keys) -> list[Label]:
    """The records of one placed site's labels; position and original text are the site's,
    so they are worked out once, not once per label (a site has up to a dozen). A label whose
    objective other operators share names them (``MergedLabel.also``); one that is a mutant
    shows it (``MutatedLabel.mutants``)."""
    line, column = unit.line_col(unit.span(site.cursor)[0])
    original = source_text(unit, site.cursor) or site.text
    operands = {} if isinstance(site, Decision) else keys.operands(site)
    labels = []
    for index, request in indexed:
        label = Label(index=index, gate=number, criterion=request.operator.criterion,
                      operator=request.operator.id, file=unit.path, line=line, column=column,
                      function=function.name, original=original,
                      predicate=written(request.predicate, operands) if operands
                      else request.predicate)
        merged = also.get(id(request), [])
        mutants = {other.operator.id: text for other in (request, *merged) if other.mutation
                   and (text := mutated_text(unit, site.cursor, other.mutation)) is not None}
        if merged:
            label = MergedLabel(**vars(label), mutants=mutants,
                                also=tuple(other.operator.id for other in merged))
        elif mutants:
            label = MutatedLabel(**vars(label), mutants=mutants)
        labels.append(label)
    return labels
