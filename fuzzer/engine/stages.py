"""The mutation stages of one fuzz_one pass, and how a stage runs.

A stage is a list of executor requests, each named by its AFL op (the `op:`
of queue file names): one per deterministic kind, one for havoc, one for the
mask probes.  The builders below decide only what to run, on which input,
with which mask and target and budget.  `run` hands the requests to the
executor in order and yields what comes back: each finding with its op, and a
pause (a step without finding) after every slice of executions and at the end
of every request.  The campaign records each finding before it asks for the
next step, so nothing found waits in memory while the stage goes on, and it
may stop the stage at any pause.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ffcc.fuzzer.engine.executor import Executor, Finding, StageKind, StageRequest
from ffcc.fuzzer.engine.queue import Queue, QueueEntry

# AFL's deterministic stages in AFL's order, with their short names (op:...).
DETERMINISTIC_STAGES: tuple[tuple[StageKind, str], ...] = (
    (StageKind.FLIP1, "flip1"), (StageKind.FLIP2, "flip2"), (StageKind.FLIP4, "flip4"),
    (StageKind.FLIP16, "flip16"), (StageKind.FLIP32, "flip32"),
    (StageKind.ARITH8, "arith8"), (StageKind.ARITH16, "arith16"), (StageKind.ARITH32, "arith32"),
    (StageKind.INTEREST8, "int8"), (StageKind.INTEREST16, "int16"),
    (StageKind.INTEREST32, "int32"),
    (StageKind.TOKEN_OVERWRITE, "extras_uo"), (StageKind.TOKEN_INSERT, "extras_ui"),
)
TOKEN_STAGES = (StageKind.TOKEN_OVERWRITE, StageKind.TOKEN_INSERT)
SPLICE_PARTNER_DRAWS = 8


class Step(NamedTuple):
    """What running a stage yields: a finding and the op that made it, or a pause (None),
    with the request running (its executions so far, for the status screen)."""

    op: str
    finding: Finding | None
    request: StageRequest


@dataclass(frozen=True)
class Stage:
    """Requests run in order; the executor fills in their execs and target hits as they run."""

    requests: tuple[tuple[str, StageRequest], ...]

    @property
    def execs(self) -> int:
        return sum(request.execs for _, request in self.requests)

    @property
    def target_hits(self) -> int:
        """Children that hit the target branch."""
        return sum(request.target_hits for _, request in self.requests)


def run(executor: Executor, stage: Stage) -> Iterator[Step]:
    """Run the stage's requests in order, yielding findings and pauses."""
    for op, request in stage.requests:
        for finding in executor.run_stage(request):
            yield Step(step_op(op, request, finding), finding, request)
        yield Step(step_op(op, request, None), None, request)


def step_op(op: str, request: StageRequest, finding: Finding | None) -> str:
    """The op of a step: in a havoc request with splice cycles after its own children
    (havoc_then_splice), "splice" for what the splice cycles make."""
    if not request.splice_with:
        return op
    spliced = finding.partner is not None if finding is not None else request.execs > request.plain
    return "splice" if spliced else op


def planned_execs(request: StageRequest) -> int:
    """The executions a request will make when its budget says (havoc, splicing); 0 when the
    C core decides (deterministic stages, mask probes)."""
    return request.plain + request.budget * max(len(request.splice_with), 1)


def execs_by_op(stage: Stage) -> dict[str, int]:
    """What each op of a stage ran, for the status screen's yields: a havoc request with
    splice cycles after its own children counts those children as its op, the rest as
    splice (as step_op names their findings)."""
    execs: dict[str, int] = {}
    for op, request in stage.requests:
        own = min(request.execs, request.plain) if request.splice_with else request.execs
        execs[op] = execs.get(op, 0) + own
        if request.execs > own:
            execs["splice"] = execs.get("splice", 0) + request.execs - own
    return execs


def mask_probes(data: bytes, mask: np.ndarray, target: int, level: int,
                also: np.ndarray | None = None, also_masks: np.ndarray | None = None) -> Stage:
    """FairFuzz Algorithm 3: fills `mask` (len(data) + 1 bytes, all clear) with what kept
    `target` hit, and each row of `also_masks` with what kept the branch of `also` in the
    same place hit.  Every probe is a real execution, judged for new coverage like any
    other."""
    return Stage((("mask", StageRequest(StageKind.MASK, data, mask=mask, target=target,
                                        also=also, also_masks=also_masks, cycle=level)),))


def deterministic(data: bytes, mask: np.ndarray | None, target: int | None, tokens: int,
                  level: int, shadow: bool = False) -> Stage:
    """AFL's deterministic stages (the token stages only with tokens); the C side skips
    masked positions except in bit flips."""
    return Stage(tuple((op, StageRequest(kind, data, mask=mask, target=target, shadow=shadow,
                                         cycle=level))
                       for kind, op in DETERMINISTIC_STAGES if tokens or kind not in TOKEN_STAGES))


def havoc(data: bytes, mask: np.ndarray | None, target: int | None, budget: int, level: int,
          shadow: bool = False) -> Stage:
    """`budget` children of stacked random mutations; with a mask, only where it allows.
    level: havoc block sizes, 1 small, 2 up to medium, 3 and more up to 32 KiB."""
    return Stage((("havoc", StageRequest(StageKind.HAVOC, data, budget=budget, mask=mask,
                                         target=target, shadow=shadow, cycle=level)),))


def havoc_then_splice(data: bytes, partners: tuple[bytes, ...], mask: np.ndarray | None,
                      target: int | None, budget: int, per_splice: int, level: int) -> Stage:
    """havoc's `budget` children, then AFL's splice cycles (`per_splice` children from each
    partner), as one request: the C side runs whole batches across both, which on a fast
    target saves a batch hand-over and a Python round trip per fuzzed entry."""
    return Stage((("havoc", StageRequest(StageKind.HAVOC, data, budget=per_splice, plain=budget,
                                         mask=mask, target=target, splice_with=partners,
                                         cycle=level)),))


def splice(data: bytes, partners: tuple[bytes, ...], mask: np.ndarray | None,
           target: int | None, budget: int, level: int) -> Stage:
    """AFL's splice cycles, one per partner: havoc on data's head + the partner's tail
    (`budget` children each), the head keeping data's mask: havoc_then_splice without
    havoc's own children."""
    return havoc_then_splice(data, partners, mask, target, 0, budget, level)


def splice_partners(queue: Queue, entry: QueueEntry, rng: random.Random,
                    count: int) -> tuple[QueueEntry, ...]:
    """The second parents of `count` splice cycles, each a random other entry of at least
    two bytes (repeats allowed, as AFL draws each cycle's anew): twice as many indices in
    one draw (cheap per fuzzed entry), then one at a time for what they missed."""
    drawn = (queue[i] for i in rng.choices(range(len(queue)), k=2 * count))
    partners = [other for other in drawn if other is not entry and len(other.data) >= 2][:count]
    while len(partners) < count and (partner := pick_splice_partner(queue, entry, rng)):
        partners.append(partner)
    return tuple(partners)


def pick_splice_partner(queue: Queue, entry: QueueEntry, rng: random.Random) -> QueueEntry | None:
    """A random other entry of at least two bytes: a few random draws (AFL's way, and no
    listing of the queue for each of an entry's splice cycles), then a scan."""
    for _ in range(SPLICE_PARTNER_DRAWS):
        other = queue[rng.randrange(len(queue))]
        if other is not entry and len(other.data) >= 2:
            return other
    candidates = [e for e in queue if e is not entry and len(e.data) >= 2]
    return rng.choice(candidates) if candidates else None
