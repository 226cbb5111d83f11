"""The mutation stages of one fuzz_one pass, each a small function.

A stage builds a StageRequest, lets the executor run it in C, and hands every
finding to the context.  The context (the campaign) owns saving, timing and
stopping; stages only decide what to run with which mask and target.
"""
from __future__ import annotations

import random
from typing import Protocol

import numpy as np
from ffcc.fuzzer.executor import Executor, Finding, StageKind, StageRequest
from ffcc.fuzzer.mask import empty_mask
from ffcc.fuzzer.queue import Queue, QueueEntry

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


class StageContext(Protocol):
    executor: Executor
    queue: Queue
    block_level: int  # havoc block sizes: 1 small, 2 up to medium, 3 up to 32 KiB
    rng: random.Random

    def record(self, finding: Finding, op: str, parent: QueueEntry,
               partner: QueueEntry | None = None) -> None: ...

    def stopping(self) -> bool: ...

    def set_stage(self, name: str) -> None: ...


def drive(ctx: StageContext, request: StageRequest, op: str, parent: QueueEntry,
          partner: QueueEntry | None = None) -> StageRequest:
    """Run one stage to its end, or until the campaign stops."""
    ctx.set_stage(op)
    for finding in ctx.executor.run_stage(request):
        if finding is not None:
            ctx.record(finding, op, parent, partner)
        if ctx.stopping():
            break
    return request


def compute_mask(ctx: StageContext, entry: QueueEntry, target: int) -> np.ndarray | None:
    """FairFuzz Algorithm 3, cached on the entry per target.

    Every probe is a real execution, judged for new coverage like any other.
    Returns None if the campaign stopped before the mask was complete.
    """
    if entry.mask is not None and entry.mask_target == target:
        return entry.mask
    mask = empty_mask(len(entry.data))
    request = StageRequest(StageKind.MASK, entry.data, mask=mask, target=target,
                           cycle=ctx.block_level)
    drive(ctx, request, "mask", entry)
    if ctx.stopping():
        return None
    entry.mask, entry.mask_target = mask, target
    return mask


def deterministic(ctx: StageContext, entry: QueueEntry, mask: np.ndarray | None,
                  target: int | None, tokens: int, shadow: bool = False) -> tuple[int, int]:
    """AFL's deterministic stages; the C side skips masked positions except in
    bit flips.  Returns (executions, children hitting the target)."""
    execs = hits = 0
    for kind, op in DETERMINISTIC_STAGES:
        if kind in TOKEN_STAGES and not tokens:
            continue
        request = StageRequest(kind, entry.data, mask=mask, target=target, shadow=shadow,
                               cycle=ctx.block_level)
        drive(ctx, request, op, entry)
        execs, hits = execs + request.execs, hits + request.target_hits
        if ctx.stopping():
            break
    return execs, hits


def havoc(ctx: StageContext, entry: QueueEntry, mask: np.ndarray | None, target: int | None,
          budget: int, shadow: bool = False) -> StageRequest:
    """Stacked random mutations; with a mask, only at positions it allows."""
    request = StageRequest(StageKind.HAVOC, entry.data, budget=budget, mask=mask, target=target,
                           shadow=shadow, cycle=ctx.block_level)
    return drive(ctx, request, "havoc", entry)


def pick_splice_partner(ctx: StageContext, entry: QueueEntry) -> QueueEntry | None:
    """A random other entry of at least two bytes: a few random draws (AFL's way; listing
    the queue for each of an entry's splice cycles cost more than the splices), then a scan."""
    queue = ctx.queue
    for _ in range(8):
        other = queue[ctx.rng.randrange(len(queue))]
        if other is not entry and len(other.data) >= 2:
            return other
    candidates = [e for e in queue if e is not entry and len(e.data) >= 2]
    return ctx.rng.choice(candidates) if candidates else None


def splice(ctx: StageContext, entry: QueueEntry, mask: np.ndarray | None, target: int | None,
           budget: int, partner: QueueEntry) -> StageRequest:
    """Havoc on entry's head + partner's tail; the head keeps entry's mask."""
    request = StageRequest(StageKind.HAVOC, entry.data, budget=budget, mask=mask, target=target,
                           splice_with=partner.data, cycle=ctx.block_level)
    return drive(ctx, request, "splice", entry, partner)
