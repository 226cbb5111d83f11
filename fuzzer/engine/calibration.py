"""How often an input is run before it is trusted, and with which timeout (AFL++ 4.04c).

An input is calibrated CAL_RUNS times; as soon as its map varies between runs
it is run up to CAL_RUNS_VARIABLE times in all, so the variable bytes and the
mean run time come from more samples.  Finds and resumed entries are
calibrated with a more generous timeout than the fuzzing one (intermittent
latency should not fail them).  A suspected hang is run once more with the
hang timeout (AFL_HANG_TMOUT, 1 s by default) before it is saved.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from ffcc.fuzzer.engine.executor import Calibration, Executor, RunStatus

CAL_RUNS = 7
CAL_RUNS_VARIABLE = 12
CAL_TIMEOUT_ADD_MS = 50
CAL_TIMEOUT_PERCENT = 125


@contextmanager
def timeout(executor: Executor, ms: int) -> Iterator[None]:
    """Run with timeout `ms` inside the block, the fuzzing timeout again after it."""
    fuzzing = executor.timeout_ms
    executor.timeout_ms = ms
    try:
        yield
    finally:
        executor.timeout_ms = fuzzing


def generous_timeout_ms(fuzzing_ms: int) -> int:
    return max(fuzzing_ms + CAL_TIMEOUT_ADD_MS, fuzzing_ms * CAL_TIMEOUT_PERCENT // 100)


def calibrate(executor: Executor, data: bytes, count_hits: bool,
              generous: bool = False) -> Calibration:
    """CAL_RUNS runs, up to CAL_RUNS_VARIABLE when the map varies.  The first run gives
    the status, checksum and edges; exec_us is the mean over all runs.  count_hits:
    count the input once in FairFuzz's branch hits."""
    ms = generous_timeout_ms(executor.timeout_ms) if generous else executor.timeout_ms
    with timeout(executor, ms):
        first = executor.calibrate(data, CAL_RUNS, count_hits)
        if first.status != RunStatus.OK or not first.variable:
            return first
        more = executor.calibrate(data, CAL_RUNS_VARIABLE - CAL_RUNS, False)
    if more.status != RunStatus.OK:
        return first
    mean_us = (first.exec_us * CAL_RUNS + more.exec_us * (CAL_RUNS_VARIABLE - CAL_RUNS)) \
        // CAL_RUNS_VARIABLE
    return replace(first, exec_us=mean_us, new_bits=max(first.new_bits, more.new_bits))


def confirm_hang(executor: Executor, data: bytes, hang_timeout_ms: int) -> tuple[RunStatus, int]:
    """The input's status (and signal, if it crashed) when run with the hang timeout;
    TIMEOUT without a run when the fuzzing timeout is already at least that generous.
    A run that finishes leaves the virgin map as it was, as in afl-fuzz: the input was
    not saved, so its coverage must stay new for a faster input to claim it."""
    if executor.timeout_ms >= hang_timeout_ms:
        return RunStatus.TIMEOUT, 0
    with timeout(executor, hang_timeout_ms):
        status = executor.note_fault(data)
        if status != RunStatus.CRASH:
            return status, 0
        again = executor.calibrate(data, 1, False)  # note_fault does not tell the signal
    return RunStatus.CRASH, again.signal if again.status == RunStatus.CRASH else 0
