"""How many havoc executions an entry earns (AFL's calculate_score).

Faster entries with more coverage, found late (handicap) and deep in the
queue, get more; the score is a percentage of HAVOC_CYCLES.
"""
from __future__ import annotations

from ffcc.fuzzer.engine.queue import Queue, QueueEntry

HAVOC_CYCLES = 256
HAVOC_CYCLES_AFTER_DET = 1024  # AFL spends more havoc on an entry's first full det pass
HAVOC_MIN = 16
MAX_SCORE = 6400
SPLICE_CYCLES = 15
SPLICE_HAVOC = 32
SMALL_BLOCKS_SECONDS = 600


def havoc_block_level(session_seconds: float, stalled_cycles: int) -> int:
    """Havoc inserts, overwrites and deletes blocks of at most 32 bytes for the first
    ten minutes (as AFL++ 4 does) and while cycles find entries; each cycle in a row
    without a new entry allows larger ones.  Small blocks keep children small and fast;
    larger ones are for when small changes have stopped finding anything."""
    if session_seconds < SMALL_BLOCKS_SECONDS:
        return 1
    return 1 + stalled_cycles


def performance_score(entry: QueueEntry, queue: Queue) -> int:
    score = 100.0
    avg_us, avg_bits = queue.mean_exec_us(), queue.mean_bitmap_size()
    us = entry.exec_us
    if us * 0.1 > avg_us:
        score = 10
    elif us * 0.25 > avg_us:
        score = 25
    elif us * 0.5 > avg_us:
        score = 50
    elif us * 0.75 > avg_us:
        score = 75
    elif us * 4 < avg_us:
        score = 300
    elif us * 3 < avg_us:
        score = 200
    elif us * 2 < avg_us:
        score = 150

    bits = entry.bitmap_size
    if bits * 0.3 > avg_bits:
        score *= 3
    elif bits * 0.5 > avg_bits:
        score *= 2
    elif bits * 0.75 > avg_bits:
        score *= 1.5
    elif bits * 3 < avg_bits:
        score *= 0.25
    elif bits * 2 < avg_bits:
        score *= 0.5
    elif bits * 1.5 < avg_bits:
        score *= 0.75

    if entry.handicap >= 4:
        score *= 4
        entry.handicap -= 4
    elif entry.handicap:
        score *= 2
        entry.handicap -= 1

    depth = entry.depth
    score *= 1 if depth <= 3 else 2 if depth <= 7 else 3 if depth <= 13 else 4 if depth <= 25 else 5
    return int(min(score, MAX_SCORE))


def havoc_budget(score: int, after_deterministic: bool) -> int:
    cycles = HAVOC_CYCLES_AFTER_DET if after_deterministic else HAVOC_CYCLES
    return max(cycles * score // 100, HAVOC_MIN)


def splice_budget(score: int) -> int:
    return max(SPLICE_HAVOC * score // 100, HAVOC_MIN)
