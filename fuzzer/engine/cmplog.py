"""ffuzz -c: input-to-state comparison solving (AFL++'s cmplog / Redqueen), once per entry.

A ``ffcc --cmplog`` build of the target logs the operands of its comparisons (integer
compares, switch cases, memcmp/strcmp-like calls) into a segment the fuzzer hands it
(runtime/ffcc_cmplog.c, layout in ffcc_protocol.h).  For each new queue entry:

1. colorization: the entry's bytes are replaced by random ones, range by range, keeping
   the ranges whose replacement leaves the path (the trace checksum) as it was: those
   bytes can change freely (``Colorizer``);
2. the cmplog binary runs the entry and its colorized copy (``CmplogRunner.log``);
3. input-to-state: where an operand of a comparison is found in the input (as the same
   bytes, byte-swapped, narrower, as decimal or hex text, or as a string's bytes), and the
   colorized run's operand is found at the same place in the colorized copy (so the bytes
   really flow into the comparison), the other operand (and it +/- 1) is written there and
   the result runs on the main target (``candidates``).  What is new is saved as usual.

The solved operands join the havoc dictionary.  Python works per entry here; each
colorization and candidate run is one execution through the executor, and the stage yields
after each so that the campaign saves what it found and may stop it.
"""
from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from ffcc.fuzzer.engine.config import CmplogTarget, Config
from ffcc.fuzzer.engine.dictionary import solved_tokens
from ffcc.fuzzer.engine.executor import (
    Calibration,
    Finding,
    FindingKind,
    NativeExecutor,
    RunStatus,
    TargetCommand,
)
from ffcc.fuzzer.engine.shm import SharedSegment
from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.abi import (
    CMPLOG_HITS,
    CMPLOG_INT,
    CMPLOG_RTN,
    CMPLOG_SHM_SIZE,
    NAMES,
    CmpRecord,
    cmplog_records,
)

ENV_CMPLOG = NAMES["FFCC_ENV_CMPLOG_SHM_ID"]
STAGE_NAME = "input-to-state"  # AFL++'s name for this stage (op: of what it finds)
COLORIZE_EXECS = 1000          # colorization runs per entry at most (and 2 per input byte)
CANDIDATES = 4096              # input-to-state runs per entry at most
MIN_STRING = 2                 # shorter string operands only where colorization shows them

class CmplogSegment:
    """The comparison-log segment the cmplog build writes its records into."""

    def __init__(self) -> None:
        self._segment = SharedSegment(CMPLOG_SHM_SIZE, f"{CMPLOG_SHM_SIZE >> 20} MiB "
                                      "comparison log")
        self.shm_id = self._segment.shm_id
        self.view = self._segment.view

    def clear(self) -> None:
        """Forget the last run's records (their hit counts)."""
        self.view[:CMPLOG_HITS.size] = bytes(CMPLOG_HITS.size)

    def records(self) -> list[CmpRecord]:
        return cmplog_records(self.view)

    def close(self) -> None:
        self._segment.close()


def check_cmplog_binary(binary: Path) -> None:
    """Refuse, in one line, a -c binary that does not log comparisons."""
    if not binary.is_file():
        raise FuzzerError(f"cmplog binary not found: {binary}")
    if ENV_CMPLOG.encode() not in binary.read_bytes():
        raise FuzzerError(f"{binary} does not log comparisons: build it with ffcc --cmplog")


class CmplogRunner:
    """The cmplog build of the target behind a forkserver of its own, with the segment."""

    def __init__(self, command: TargetCommand, input_path: Path, timeout_ms: int, seed: int,
                 mem_limit_mb: int = 0, batches: bool = True) -> None:
        check_cmplog_binary(command.binary)
        self.segment = CmplogSegment()
        try:
            self.executor = NativeExecutor(command, input_path, timeout_ms, seed, mem_limit_mb,
                                           batches=batches,
                                           extra_env={ENV_CMPLOG: str(self.segment.shm_id)})
        except BaseException:
            self.segment.close()
            raise

    def log(self, data: bytes, timeout_ms: int) -> list[CmpRecord] | None:
        """The comparisons one run of ``data`` makes; None when it does not finish."""
        self.segment.clear()
        self.executor.timeout_ms = timeout_ms
        if self.executor.calibrate(data, 1, False).status != RunStatus.OK:
            return None
        return self.segment.records()

    def close(self) -> None:
        self.executor.close()
        self.segment.close()


class CaseRunner(Protocol):
    """What the stage needs of the main target's executor."""

    timeout_ms: int

    def calibrate(self, data: bytes, runs: int, count_hits: bool) -> Calibration: ...

    def last_fault_is_new(self, status: RunStatus) -> bool: ...

    def add_tokens(self, tokens: list[bytes]) -> None: ...


# -- colorization -----------------------------------------------------------------------

def _random_like(byte: int, rng: random.Random) -> int:
    """A random byte of the same class (digit, letter, other), so text stays text-shaped."""
    for low, high in ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)):
        if low <= byte <= high:
            return low + (byte - low + rng.randrange(1, high - low + 1)) % (high - low + 1)
    return (byte + rng.randrange(1, 256)) % 256


@dataclass
class Colorized:
    """The entry with its freely changing bytes randomised, and which bytes those are."""

    data: bytes
    free: bytearray  # 1 per input byte that colorization changed without changing the path


class Colorizer:
    """AFL++'s colorization: randomise a range; if the path stays, keep it, else split it in
    halves and try each, biggest first, until the ranges or the budget run out."""

    def __init__(self, data: bytes, checksum: int, rng: random.Random, budget: int) -> None:
        self.original = data
        self.checksum = checksum
        self.result = Colorized(data, bytearray(len(data)))
        self._rng = rng
        self._budget = budget  # runs at most
        self._ranges = [(0, len(data))] if data else []

    def runs(self, probe: _Probe) -> Iterator[Finding | None]:
        """Run the colorization, yielding what each run finds (None: nothing)."""
        current = bytearray(self.original)
        for _ in range(self._budget):
            if not self._ranges:
                break
            self._ranges.sort(key=lambda r: r[1] - r[0])
            start, end = self._ranges.pop()
            trial = bytearray(current)
            for i in range(start, end):
                trial[i] = _random_like(trial[i], self._rng)
            outcome = probe.run(bytes(trial))
            yield outcome.finding
            if outcome.checksum == self.checksum:
                current = trial
                self.result.free[start:end] = b"\x01" * (end - start)
            elif end - start > 1:
                middle = (start + end) // 2
                self._ranges += [(start, middle), (middle, end)]
        self.result.data = bytes(current)


# -- running one case on the main target ------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    checksum: int | None     # the path's checksum when the run finished normally
    finding: Finding | None  # new coverage or a new crash: for the campaign to save


class _Probe:
    """One execution on the main target, judged as stage children are: new coverage (it
    updates the virgin map, so the campaign must save it), or a crash or hang new to the
    crash or hang map (the campaign confirms a hang at the hang timeout before saving it)."""

    def __init__(self, runner: CaseRunner) -> None:
        self.runner = runner

    def run(self, data: bytes) -> Outcome:
        cal = self.runner.calibrate(data, 1, False)
        if cal.status == RunStatus.OK:
            finding = Finding(FindingKind.NEW_PATH, data, new_edges=cal.new_bits == 2,
                              edges=cal.edges) if cal.new_bits else None
            return Outcome(cal.checksum, finding)
        fault = FAULTS.get(cal.status)
        if fault is not None and self.runner.last_fault_is_new(cal.status):
            return Outcome(None, Finding(fault, data, signal=cal.signal))
        return Outcome(None, None)


FAULTS = {RunStatus.CRASH: FindingKind.CRASH, RunStatus.TIMEOUT: FindingKind.HANG}


# -- input-to-state ---------------------------------------------------------------------

Encoding = Callable[[int, int], "bytes | None"]


def _fixed(width: int, order: Literal["little", "big"]) -> Encoding:
    def encode(value: int, operand_width: int) -> bytes | None:
        if width > operand_width or value >> (8 * width):
            return None
        return value.to_bytes(width, order)
    return encode


def _text(form: str) -> Encoding:
    def encode(value: int, operand_width: int) -> bytes | None:
        return format(value, form).encode()
    return encode


# How an integer operand may sit in the input, and the shortest such pattern looked for:
# its own width or a narrower one that holds it, little- or big-endian, or as decimal or
# hex text (of two digits or more: one digit is everywhere in text).
ENCODINGS: tuple[tuple[Encoding, int], ...] = (
    *((_fixed(width, order), 1) for width in (8, 4, 2, 1) for order in ("little", "big")),
    (_text("d"), 2), (_text("x"), 2),
)


@dataclass(frozen=True)
class Candidate:
    data: bytes
    token: bytes | None  # the operand it writes, for the dictionary


@dataclass(frozen=True)
class _Places:
    """The entry and its colorized copy as arrays, made once per entry: a short operand (a
    zero byte, a one) sits at hundreds of places of a binary input, for each of hundreds of
    comparisons, so places are found and judged a whole array at a time."""

    original: np.ndarray
    colored: np.ndarray
    free_before: np.ndarray  # how many bytes before each index colorization freed

    @classmethod
    def of(cls, original: bytes, colorized: Colorized) -> _Places:
        free = np.frombuffer(bytes(colorized.free), dtype=np.uint8).astype(np.int64)
        return cls(np.frombuffer(original, dtype=np.uint8),
                   np.frombuffer(colorized.data, dtype=np.uint8),
                   np.concatenate(([0], np.cumsum(free))))


def _sitting(data: np.ndarray, pattern: bytes) -> np.ndarray:
    """Every place ``pattern`` starts at in ``data``, overlapping ones too, in order."""
    if len(pattern) > len(data):
        return np.zeros(0, dtype=np.intp)
    at = np.flatnonzero(data[:len(data) - len(pattern) + 1] == pattern[0])
    return at[_matching(data, pattern, at)]


def _matching(data: np.ndarray, pattern: bytes, at: np.ndarray) -> np.ndarray:
    """Which of the places ``at`` (each with room for it) ``pattern`` sits at."""
    matched = np.ones(len(at), dtype=bool)
    for offset, byte in enumerate(pattern):
        matched &= data[at + offset] == byte
    return matched


def _flowing(places: _Places, pattern: bytes, color_pattern: bytes | None,
             shown_only: bool = False) -> Iterator[int]:
    """Where ``pattern`` sits in the entry and the bytes flow into the comparison: where
    colorization changed them, the colorized run's operand (``color_pattern``) sits at the
    same place of the colorized copy; with ``shown_only``, only such places."""
    at = _sitting(places.original, pattern)
    free = places.free_before[at + len(pattern)] > places.free_before[at]
    shown = _matching(places.colored, color_pattern, at) \
        if color_pattern is not None and len(color_pattern) == len(pattern) \
        else np.zeros(len(at), dtype=bool)
    kept = at[(free & shown) | (~free & (not shown_only))]
    return (int(place) for place in kept)


def candidates(original: bytes, colorized: Colorized, plain: list[CmpRecord],
               colored: list[CmpRecord] | None) -> Iterator[Candidate]:
    """The input-to-state replacements of ``plain`` (the entry's comparisons), each checked
    against the colorized run's record of the same call (when it has one)."""
    twins = _pair_records(plain, colored or [])
    places = _Places.of(original, colorized)
    distinct = {(_operands(record), _operands(twins.get(id(record)))): record
                for record in plain}  # a loop logs the same comparison again and again
    runs = [(_int_candidates if record.kind == CMPLOG_INT else _string_candidates)(
                original, places, record, twins.get(id(record)))
            for record in distinct.values() if record.kind in (CMPLOG_INT, CMPLOG_RTN)]
    return _in_turn(runs)


def _in_turn(runs: list[Iterator[Candidate]]) -> Iterator[Candidate]:
    """One candidate of each comparison in turn while the stage's CANDIDATES last: a small
    value sits at hundreds of places of an input, and in the order of their sites the
    comparisons first in line took the whole budget."""
    waiting = deque(runs)
    while waiting:
        run = waiting.popleft()
        candidate = next(run, None)
        if candidate is not None:
            yield candidate
            waiting.append(run)


def _operands(record: CmpRecord | None) -> tuple[int, bytes, bytes, bool] | None:
    return (record.kind, record.v0, record.v1, record.const0) if record is not None else None


def _pair_records(plain: list[CmpRecord], colored: list[CmpRecord]) -> dict[int, CmpRecord]:
    """Each plain record's counterpart in the colorized run: the n-th record of the same
    site (when that site logged as many, of the same kind)."""
    by_site: dict[int, list[CmpRecord]] = {}
    for record in colored:
        by_site.setdefault(record.site, []).append(record)
    pairs: dict[int, CmpRecord] = {}
    seen: dict[int, int] = {}
    for record in plain:
        n = seen.get(record.site, 0)
        seen[record.site] = n + 1
        twins = by_site.get(record.site, [])
        if n < len(twins) and twins[n].kind == record.kind:
            pairs[id(record)] = twins[n]
    return pairs


def _sides(record: CmpRecord, twin: CmpRecord | None) -> Iterator[tuple[bytes, bytes, bytes | None]]:
    """(operand to look for in the input, operand to put there, the looked-for operand in
    the colorized run), for each side of the comparison that may come from the input."""
    yield record.v1, record.v0, twin.v1 if twin else None
    if not record.const0:
        yield record.v0, record.v1, twin.v0 if twin else None


def _int_candidates(original: bytes, places: _Places, record: CmpRecord,
                    twin: CmpRecord | None) -> Iterator[Candidate]:
    width = len(record.v0)
    mask = (1 << (8 * width)) - 1
    for seen_bytes, wanted_bytes, color_bytes in _sides(record, twin):
        seen, wanted = int.from_bytes(seen_bytes, "little"), int.from_bytes(wanted_bytes, "little")
        color = int.from_bytes(color_bytes, "little") if color_bytes is not None else None
        if seen == wanted:
            continue
        found = []  # (encoding, pattern, its colorized twin) of each encoding in the input
        for encode, shortest in ENCODINGS:
            pattern = encode(seen, width)
            if pattern is not None and len(pattern) >= shortest and pattern in original:
                found.append((encode, pattern,
                              encode(color, width) if color is not None else None))
        for delta in (0, 1, -1):  # equal, and just past either side (for < and >)
            target = (wanted + delta) & mask
            for encode, pattern, color_pattern in found:
                replacement = encode(target, width)
                if replacement is None:
                    continue
                token = replacement if len(replacement) > 1 and not delta else None
                for at in _flowing(places, pattern, color_pattern):
                    yield Candidate(original[:at] + replacement + original[at + len(pattern):],
                                    token)


def _string_candidates(original: bytes, places: _Places, record: CmpRecord,
                       twin: CmpRecord | None) -> Iterator[Candidate]:
    """The other string in place of the one seen: spliced in (the rest moves), and written
    over it, also with the NUL that ends a C string (the rest stays where it is)."""
    for seen, wanted, color in _sides(record, twin):
        if not seen or not wanted or seen == wanted:
            continue
        for at in _flowing(places, seen, color, len(seen) < MIN_STRING):
            yield Candidate(original[:at] + wanted + original[at + len(seen):], wanted)
            for written in (wanted, wanted + b"\0"):
                if at + len(written) <= len(original):
                    yield Candidate(original[:at] + written + original[at + len(written):],
                                    wanted)


# -- the stage --------------------------------------------------------------------------

@dataclass
class CmplogStats:
    """What the stage did, all entries: shown in fuzzer_stats and the status line."""

    entries: int = 0      # entries the stage ran on
    execs: int = 0        # its executions on the main target
    finds: int = 0        # queue entries and crashes it found
    tokens: int = 0       # operands it added to the dictionary


class CmplogStage:
    """Input-to-state for each queue entry once, in the order they join the queue: the
    campaign runs it on the entries added since its last call before it fuzzes the next."""

    def __init__(self, runner: CmplogRunner, main: CaseRunner, rng: random.Random) -> None:
        self.runner = runner
        self.main = main
        self.rng = rng
        self.stats = CmplogStats()
        self._next = 0  # the first queue index the stage has not run on
        self._tokens: set[bytes] = set()

    def next_entry(self, queue_length: int) -> int | None:
        """The queue index to run on next (taken: it is not offered again), or None."""
        if self._next >= queue_length:
            return None
        self._next += 1
        return self._next - 1

    def run(self, data: bytes, checksum: int) -> Iterator[Finding | None]:
        """Colorize, log, replace: yields what each run finds (None: nothing)."""
        self.stats.entries += 1
        plain = self.runner.log(data, self.main.timeout_ms)
        if not plain:
            return
        probe = _Probe(self.main)
        colorizer = Colorizer(data, checksum, self.rng, min(COLORIZE_EXECS, 2 * len(data) + 1))
        yield from self._counted(colorizer.runs(probe))
        colorized = colorizer.result
        colored = self.runner.log(colorized.data, self.main.timeout_ms) \
            if colorized.data != data else None
        tried = {data}
        solved = []
        for candidate in candidates(data, colorized, plain, colored):
            if len(tried) > CANDIDATES:
                break
            if candidate.data in tried:
                continue
            tried.add(candidate.data)
            finding = probe.run(candidate.data).finding
            if finding is not None and candidate.token is not None:
                solved.append(candidate.token)
            yield from self._counted((finding,))
        self._learn([*solved, *_operand_tokens(plain, data)])

    def _counted(self, runs: Iterable[Finding | None]) -> Iterator[Finding | None]:
        for finding in runs:
            self.stats.execs += 1
            self.stats.finds += finding is not None
            yield finding

    def _learn(self, operands: list[bytes]) -> None:
        new = solved_tokens(operands, self._tokens)
        if new:
            self.main.add_tokens(new)
            self._tokens.update(new)
            self.stats.tokens += len(new)

    def close(self) -> None:
        self.runner.close()


def _operand_tokens(records: list[CmpRecord], data: bytes) -> list[bytes]:
    """Constants the program compares with: the sides of routine calls that are not in the
    input, and the constant side of integer comparisons whose value needs two bytes."""
    found = []
    for record in records:
        if record.kind == CMPLOG_RTN:
            found += [side for side in (record.v0, record.v1) if side and side not in data]
        elif record.const0 and int.from_bytes(record.v0, "little") > 0xFF:
            found.append(record.v0)
    return found


def open_cmplog(config: Config, command: TargetCommand, input_path: Path,
                main: NativeExecutor) -> CmplogStage | None:
    """The -c stage of a campaign: the cmplog build (``-c 0``: the target itself) behind its
    own forkserver, run on the target's arguments; None without -c."""
    if config.cmplog is None:
        return None
    binary = command.argv[0] if config.cmplog is CmplogTarget.ITSELF else config.cmplog
    runner = CmplogRunner(TargetCommand((binary, *command.argv[1:])),
                          input_path.with_name(input_path.name + "_cmplog"),
                          main.timeout_ms, config.seed, config.mem_limit_mb, config.batches)
    return CmplogStage(runner, main, random.Random(config.seed ^ 0xC0105))
