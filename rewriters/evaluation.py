"""Short-circuit evaluation of a decision as a graph over its atoms, and the MCC combinations
it can reach. Free of libclang, so that estimate.py counts with the same rules as mcc.py.

C evaluates a decision's atoms left to right and stops as soon as the outcome is known: after
atom i takes value v, evaluation goes on at one later atom or ends. A combination of atom values
that evaluation can reach is a path in this graph from the first atom to an end; atoms off the
path are not evaluated and take no value. ``a || b || c`` has four: (a), (!a, b), (!a, !b, c),
(!a, !b, !c), so a chain of n atoms has n + 1 combinations, not 2^n.

Other shapes still have exponentially many (an ``||`` of ``&&`` pairs doubles them with each
pair). With a bound K, a decision with more than 2^K combinations is covered instead by the
paths through each window of K consecutive atoms that start at the window's first atom and
stop where evaluation leaves the window (seed 004 §6.5 bounded MCC to three conditions per
combination), when those are fewer. Paths are counted before they are made, and made
depth-first one at a time: memory stays linear in the number of atoms whatever the decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

Next = int | None  # the atom evaluated next; None once the outcome is known
Path = tuple[tuple[int, bool], ...]  # (atom, value) in evaluation order
Node = TypeVar("Node")
# A decision node seen as ("atom", ()), ("!", (child,)), or ("&&" | "||", (left, right)).
Shape = Callable[[Node], tuple[str, Sequence[Node]]]
_Exits = list[tuple[int, int]]  # (atom, value) whose successor is not known yet


@dataclass(frozen=True)
class Flow:
    """Where evaluation goes after each atom: ``after[i][v]`` for atom i with value v."""

    after: tuple[tuple[Next, Next], ...]

    @property
    def atoms(self) -> int:
        return len(self.after)


def flow_of(root: Node, shape: Shape[Node]) -> Flow:
    """The evaluation graph of a decision; atoms numbered left to right, as C evaluates them."""
    after: list[list[Next]] = []

    def visit(node: Node) -> tuple[int, _Exits, _Exits]:
        """(first atom evaluated, exits when the node is false, exits when it is true)."""
        kind, parts = shape(node)
        if kind == "!":
            entry, false, true = visit(parts[0])
            return entry, true, false
        if kind in ("&&", "||"):
            entry, left_false, left_true = visit(parts[0])
            right, right_false, right_true = visit(parts[1])
            if kind == "&&":
                _go_on(after, left_true, right)
                return entry, left_false + right_false, right_true
            _go_on(after, left_false, right)
            return entry, right_false, left_true + right_true
        atom = len(after)
        after.append([None, None])
        return atom, [(atom, 0)], [(atom, 1)]

    visit(root)
    return Flow(tuple((false, true) for false, true in after))


def _go_on(after: list[list[Next]], exits: _Exits, atom: int) -> None:
    for source, value in exits:
        after[source][value] = atom


def count_paths(flow: Flow, window: range) -> int:
    """Paths from the window's first atom until evaluation ends or leaves the window."""
    counts: dict[int, int] = {}
    for atom in reversed(window):
        counts[atom] = sum(1 if nxt is None or nxt not in window else counts[nxt]
                           for nxt in flow.after[atom])
    return counts[window.start]


def paths(flow: Flow, window: range) -> Iterator[Path]:
    """The paths ``count_paths`` counts, depth-first, true before false at each atom."""
    path: list[tuple[int, bool]] = []
    pending = [(0, window.start, False), (0, window.start, True)]
    while pending:
        depth, atom, value = pending.pop()
        del path[depth:]
        path.append((atom, value))
        nxt = flow.after[atom][value]
        if nxt is None or nxt not in window:
            yield tuple(path)
        else:
            pending += [(depth + 1, nxt, False), (depth + 1, nxt, True)]


def windows(flow: Flow, bound: int) -> list[range]:
    """The windows whose paths are a decision's MCC combinations: the whole decision, or with
    ``bound`` K (0: no bound) each run of K atoms, when the decision has more than 2^K
    combinations and the runs have fewer paths in all."""
    whole = [range(flow.atoms)]
    if not bound or flow.atoms <= bound:
        return whole
    combinations = count_paths(flow, whole[0])
    if combinations <= 2 ** bound:
        return whole
    runs = [range(start, start + bound) for start in range(flow.atoms - bound + 1)]
    if sum(count_paths(flow, run) for run in runs) >= combinations:
        return whole
    return runs


def combination_count(flow: Flow, bound: int) -> int:
    """How many combinations (labels) MCC gives the decision under ``bound``."""
    return sum(count_paths(flow, window) for window in windows(flow, bound))
