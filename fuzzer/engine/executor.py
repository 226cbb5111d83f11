"""Running the target: the Executor protocol and its native implementation.

The campaign only talks to an Executor: calibrate an input, run a stage (a
batch of executions in C that yields only findings), trim, and read the
coverage maps as numpy views.  Tests substitute a fake executor.

A stage call returns to Python at least every SLICE_SECONDS, and at once when
a signal arrives (Ctrl-C, SIGTERM): Python's signal handlers only run between C
calls, so the C core watches the signal wakeup fd and kills the running child.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Protocol

import numpy as np

from ffcc.fuzzer.engine.shm import SharedSegment
from ffcc.fuzzer.errors import FuzzerError
from ffcc.native import ffi, lib
from ffcc.runtime.abi import MODULES_SHM_SIZE, ModuleTable, module_table


class StageKind(IntEnum):
    """The C core's stages (ffcc_native.h)."""

    HAVOC = lib.FFCC_STAGE_HAVOC
    MASK = lib.FFCC_STAGE_MASK
    FLIP1 = lib.FFCC_STAGE_FLIP1
    FLIP2 = lib.FFCC_STAGE_FLIP2
    FLIP4 = lib.FFCC_STAGE_FLIP4
    FLIP16 = lib.FFCC_STAGE_FLIP16
    FLIP32 = lib.FFCC_STAGE_FLIP32
    ARITH8 = lib.FFCC_STAGE_ARITH8
    ARITH16 = lib.FFCC_STAGE_ARITH16
    ARITH32 = lib.FFCC_STAGE_ARITH32
    INTEREST8 = lib.FFCC_STAGE_INTEREST8
    INTEREST16 = lib.FFCC_STAGE_INTEREST16
    INTEREST32 = lib.FFCC_STAGE_INTEREST32
    TOKEN_OVERWRITE = lib.FFCC_STAGE_TOKEN_OVERWRITE
    TOKEN_INSERT = lib.FFCC_STAGE_TOKEN_INSERT


class RunStatus(IntEnum):
    OK = lib.FFCC_RUN_OK
    TIMEOUT = lib.FFCC_RUN_TIMEOUT
    CRASH = lib.FFCC_RUN_CRASH
    ERROR = lib.FFCC_RUN_ERROR


class FindingKind(IntEnum):
    NEW_PATH = lib.FFCC_STOP_NEW_PATH
    CRASH = lib.FFCC_STOP_CRASH
    HANG = lib.FFCC_STOP_HANG


@dataclass(frozen=True)
class Finding:
    """A child worth keeping: new coverage, or a crash/hang with new coverage."""

    kind: FindingKind
    data: bytes
    new_edges: bool = False      # AFL's "+cov": a map byte never seen before
    signal: int = 0
    position: int | None = None  # deterministic stages: the mutated byte
    edges: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    partner: int | None = None   # splicing: the index of the second parent in the request


@dataclass
class StageRequest:
    """One stage on one parent; execs and target_hits are filled in as it runs."""

    kind: StageKind
    data: bytes
    budget: int = 0                  # havoc: executions (with splice_with, per second parent)
    plain: int = 0                   # havoc with splice_with: children of data alone, first
    mask: np.ndarray | None = None   # len + 1 bytes; the MASK stage fills it
    target: int | None = None
    also: np.ndarray | None = None   # MASK stage: more branches (int64) to make masks for
    also_masks: np.ndarray | None = None  # theirs, one row of len + 1 bytes each
    splice_with: tuple[bytes, ...] = ()  # havoc: second parents, budget children from each
    shadow: bool = False             # no side effects (FairFuzz -s)
    cycle: int = 1
    execs: int = 0
    target_hits: int = 0


@dataclass(frozen=True)
class Calibration:
    status: RunStatus
    signal: int
    new_bits: int
    variable: bool
    exec_us: int
    checksum: int
    bitmap_size: int
    edges: np.ndarray


@dataclass(frozen=True)
class Counters:
    execs: int
    crashes: int
    hangs: int
    slowest_exec_ms: int


class Executor(Protocol):
    """What the campaign needs from whatever runs the target."""

    map_size: int
    timeout_ms: int

    def calibrate(self, data: bytes, runs: int, count_hits: bool) -> Calibration: ...

    def run_stage(self, request: StageRequest) -> Iterator[Finding | None]:
        """Yield findings, and None between slices so the caller can stop."""
        ...

    def trim(self, data: bytes, target: int | None, checksum: int) -> tuple[bytes, int]: ...

    def note_fault(self, data: bytes) -> RunStatus: ...

    def branch_hits(self) -> np.ndarray: ...

    def virgin(self) -> np.ndarray: ...

    def virgin_crash(self) -> np.ndarray:
        """Virgin bits of crash traces: 0x80 is cleared where some crash hit."""
        ...

    def variable_bytes(self) -> np.ndarray: ...

    def counters(self) -> Counters: ...

    def token_counts(self) -> tuple[int, int]: ...

    def modes(self) -> tuple[str, ...]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class TargetCommand:
    """The target's argv; `@@` is replaced by the test-case file, else stdin."""

    argv: tuple[str, ...]

    @property
    def binary(self) -> Path:
        return Path(self.argv[0])

    @property
    def uses_stdin(self) -> bool:
        return not any("@@" in arg for arg in self.argv[1:])

    def with_input(self, path: Path) -> list[str]:
        return [arg.replace("@@", str(path)) for arg in self.argv]


def _string(constant: object) -> str:
    return ffi.string(constant).decode()


# Bytes of the map kept for the labels of shared objects a target dlopen()s (runtime/
# ffcc_protocol.h, modules), when the target names dlopen and the user set no other size.
DLOPEN_LABELS = 65536


def target_environment(binary: Path, shm_id: int, shm_fuzz_id: int,
                       batch_shm_id: int | None = None) -> dict[str, str]:
    """The environment AFL++ gives a target: map ids, mode switches, sanitizers; and
    ffcc's batch segment, which only an ffcc runtime takes up; and room in the map for the
    labels of shared objects the target may dlopen()."""
    env = dict(os.environ)
    env[_string(lib.FFCC_ENV_SHM_ID)] = str(shm_id)
    env[_string(lib.FFCC_ENV_SHM_FUZZ_ID)] = str(shm_fuzz_id)
    if batch_shm_id is not None:
        env[_string(lib.FFCC_ENV_BATCH_SHM_ID)] = str(batch_shm_id)
    content = binary.read_bytes()
    reserve = _string(lib.FFCC_ENV_LABEL_RESERVE)
    if b"dlopen" in content and reserve not in env:
        env[reserve] = str(DLOPEN_LABELS)
    if _string(lib.FFCC_SIG_PERSISTENT).encode() in content:
        env[_string(lib.FFCC_ENV_PERSISTENT)] = "1"
    if _string(lib.FFCC_SIG_DEFER).encode() in content:
        env[_string(lib.FFCC_ENV_DEFER)] = "1"
    env.setdefault("ASAN_OPTIONS", "abort_on_error=1:detect_leaks=0:symbolize=0:"
                   "allocator_may_return_null=1:handle_segv=0:handle_abort=0")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=1:symbolize=0")
    env.setdefault("MSAN_OPTIONS", "exit_code=86:abort_on_error=1:symbolize=0")
    return env


_interrupt_fd: int | None = None


def interrupt_fd() -> int:
    """The read end of the pipe Python writes to when a signal arrives (its wakeup fd),
    made once per process and shared by every engine; -1 when it cannot be had."""
    global _interrupt_fd
    if _interrupt_fd is None:
        _interrupt_fd = _wakeup_pipe()
    return _interrupt_fd


def _wakeup_pipe() -> int:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        previous = None
    if previous == -1:
        return read_end
    if previous is not None:  # someone else's wakeup fd: theirs it stays
        signal.set_wakeup_fd(previous)
    os.close(read_end)
    os.close(write_end)
    return -1


def check_target(binary: Path) -> None:
    """Refuse, in one line, a target that cannot be fuzzed."""
    if not binary.exists():
        raise FuzzerError(f"target not found: {binary}")
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise FuzzerError(f"target is not an executable file: {binary}")
    if _string(lib.FFCC_ENV_SHM_ID).encode() not in binary.read_bytes():
        raise FuzzerError(f"target is not instrumented (no {_string(lib.FFCC_ENV_SHM_ID)} in "
                          f"{binary}): build it with ffcc or afl-clang-fast")


class NativeExecutor:
    """The C engine behind the Executor protocol: one forkserver, one map."""

    SLICE_SECONDS = 0.1

    def __init__(self, command: TargetCommand, input_path: Path, timeout_ms: int,
                 seed: int, mem_limit_mb: int = 0, show_child_output: bool = False,
                 crash_exitcode: int | None = None, batches: bool = True,
                 extra_env: dict[str, str] | None = None) -> None:
        check_target(command.binary)
        self.command = command
        self._batches = batches
        self._extra_env = extra_env or {}  # e.g. the comparison log of a cmplog build
        self.timeout_ms = timeout_ms
        self._execs_per_slice = 64
        self._counters = ffi.new("struct ffcc_counters *")  # read at every stop check
        self._module_table = SharedSegment(MODULES_SHM_SIZE, "module table")
        size = lib.FFCC_MAX_HELLO_MAPSIZE
        for _ in range(2):
            engine = lib.ffcc_engine_new(size, seed)
            if engine == ffi.NULL:
                raise FuzzerError("cannot allocate the shared-memory coverage map")
            self._engine = ffi.gc(engine, lib.ffcc_engine_free)
            lib.ffcc_engine_set_interrupt_fd(self._engine, interrupt_fd())
            if crash_exitcode is not None:
                lib.ffcc_engine_set_crash_exitcode(self._engine, crash_exitcode)
            needed = self._start(input_path, mem_limit_mb, show_child_output)
            if needed is None:
                break
            size = needed
        self._bind_views()

    def _start(self, input_path: Path, mem_limit_mb: int, show_output: bool) -> int | None:
        env = target_environment(self.command.binary, lib.ffcc_engine_shm_id(self._engine),
                                 lib.ffcc_engine_shm_fuzz_id(self._engine),
                                 lib.ffcc_engine_batch_shm_id(self._engine)
                                 if self._batches else None)
        env[_string(lib.FFCC_ENV_MODULES_SHM_ID)] = str(self._module_table.shm_id)
        env.update(self._extra_env)
        keep = [ffi.new("char[]", a.encode()) for a in self.command.with_input(input_path)]
        argv = ffi.new("char *[]", keep + [ffi.NULL])
        env_keep = [ffi.new("char[]", f"{k}={v}".encode()) for k, v in env.items()]
        envp = ffi.new("char *[]", env_keep + [ffi.NULL])
        map_size = ffi.new("uint32_t *")
        err = ffi.new("char[]", 512)
        init_timeout = max(10 * self.timeout_ms, 10_000)
        rc = lib.ffcc_fsrv_start(self._engine, argv, envp, str(input_path).encode(),
                                 int(self.command.uses_stdin), mem_limit_mb, init_timeout,
                                 int(show_output), map_size, err, len(err))
        if rc == lib.FFCC_START_MAP_TOO_BIG:
            return int(map_size[0])
        if rc != lib.FFCC_START_OK:
            raise FuzzerError(ffi.string(err).decode(errors="replace"))
        self.map_size = int(map_size[0])
        self._persistent = _string(lib.FFCC_ENV_PERSISTENT) in env
        self._deferred = _string(lib.FFCC_ENV_DEFER) in env
        return None

    def _bind_views(self) -> None:
        views = ffi.new("struct ffcc_views *")
        lib.ffcc_engine_views(self._engine, views)
        n = views.map_size

        def view(ptr: object, dtype: type, count: int) -> np.ndarray:
            return np.frombuffer(ffi.buffer(ptr, count * np.dtype(dtype).itemsize), dtype=dtype)

        self._trace = view(views.trace, np.uint8, n)
        self._calibrated = view(views.calibrated, np.uint8, n)
        self._virgin = view(views.virgin, np.uint8, n)
        self._virgin_crash = view(views.virgin_crash, np.uint8, n)
        self._var_bytes = view(views.var_bytes, np.uint8, n)
        self._hits = view(views.branch_hits, np.uint32, n)

    # -- Executor protocol -------------------------------------------------

    def calibrate(self, data: bytes, runs: int, count_hits: bool) -> Calibration:
        out = ffi.new("struct ffcc_calibration *")
        buf = ffi.from_buffer("uint8_t[]", data)
        lib.ffcc_calibrate(self._engine, buf, len(data), runs, self.timeout_ms, int(count_hits), out)
        status = RunStatus(out.status)
        if status == RunStatus.ERROR:
            raise FuzzerError(f"{self._error()} (while calibrating an input)")
        edges = np.flatnonzero(self._calibrated).astype(np.uint32) if status == RunStatus.OK \
            else np.zeros(0, np.uint32)
        return Calibration(status, out.signal, out.new_bits, bool(out.variable), out.exec_us,
                           out.checksum, out.bitmap_size, edges)

    def run_stage(self, request: StageRequest) -> Iterator[Finding | None]:
        st = ffi.new("struct ffcc_stage *")
        # data, the masks and splice must outlive the loop: C borrows their buffers.
        data = ffi.from_buffer("uint8_t[]", request.data)
        st.kind = int(request.kind)
        st.flags = lib.FFCC_STAGE_SHADOW if request.shadow else 0
        st.input = data
        st.len = len(request.data)
        mask = None
        if request.mask is not None:
            if len(request.mask) != len(request.data) + 1:
                raise ValueError("a mask has one byte per input position plus one")
            mask = ffi.from_buffer("uint8_t[]", request.mask, require_writable=True)
            st.mask = mask
        also = also_masks = None
        if request.also is not None and request.also_masks is not None:
            if request.also_masks.shape != (len(request.also), len(request.data) + 1):
                raise ValueError("one mask of len + 1 bytes per further branch")
            also = ffi.from_buffer("int64_t[]", request.also)
            also_masks = ffi.from_buffer("uint8_t[]", request.also_masks, require_writable=True)
            st.also, st.also_masks, st.also_count = also, also_masks, len(request.also)
        splice = splice_lens = None
        st.budget = request.budget
        if request.splice_with:
            splice = ffi.from_buffer("uint8_t[]", b"".join(request.splice_with))
            splice_lens = ffi.new("uint32_t[]", [len(p) for p in request.splice_with])
            st.splice, st.splice_lens = splice, splice_lens
            st.splices, st.per_splice = len(request.splice_with), request.budget
            st.plain = request.plain
            st.budget = request.plain + request.budget * len(request.splice_with)
        st.target = -1 if request.target is None else request.target
        st.timeout_ms = self.timeout_ms
        st.cycle = request.cycle
        st.call_ms = int(self.SLICE_SECONDS * 1000)
        while True:
            st.call_limit = self._execs_per_slice
            started, execs_before = time.monotonic(), st.execs
            stop = lib.ffcc_stage_run(self._engine, st)
            self._adapt_slice(st.execs - execs_before, time.monotonic() - started)
            request.execs, request.target_hits = int(st.execs), int(st.target_hits)
            if stop == lib.FFCC_STOP_ERROR:
                raise FuzzerError(self._error())
            if stop == lib.FFCC_STOP_FINISHED:
                return
            if stop == lib.FFCC_STOP_LIMIT:
                yield None
                continue
            kind = FindingKind(stop)
            # A copy first: a process the target left behind may still write the shared map.
            edges = np.flatnonzero(self._trace.copy()).astype(np.uint32) \
                if kind == FindingKind.NEW_PATH else np.zeros(0, np.uint32)
            yield Finding(kind, bytes(ffi.buffer(st.out, st.out_len)), st.new_bits == 2,
                          int(st.signal), None if request.kind == StageKind.HAVOC else int(st.position),
                          edges, int(st.partner) if st.partner >= 0 else None)

    def _error(self) -> str:
        """The C core's one line on why the target could not be run."""
        return ffi.string(lib.ffcc_engine_error(self._engine)).decode(errors="replace") \
            or "the forkserver died (target killed from outside, or out of memory?)"

    def _adapt_slice(self, execs: int, seconds: float) -> None:
        """Size C calls to about SLICE_SECONDS so Ctrl-C and -V stay prompt."""
        if execs >= self._execs_per_slice and seconds > 0:
            rate = execs / seconds
            self._execs_per_slice = int(min(max(rate * self.SLICE_SECONDS, 16), 100_000))

    def trim(self, data: bytes, target: int | None, checksum: int) -> tuple[bytes, int]:
        buf = ffi.new("uint8_t[]", data)
        length = ffi.new("uint32_t *", len(data))
        execs = ffi.new("uint64_t *")
        lib.ffcc_trim(self._engine, buf, length, -1 if target is None else target, checksum,
                      self.timeout_ms, execs)
        return bytes(ffi.buffer(buf, length[0])), int(execs[0])

    def run_inputs(self, inputs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Each input's status and its trace's hit-count classes (one row per input), the
        inputs run in order, as many per native call as the target's batches take; crashes
        and hangs leave their traces too.  For runs outside the campaign's judgement: they
        change no virgin map and no hit count."""
        lens = np.array([len(data) for data in inputs], dtype=np.uint32)
        statuses = np.zeros(len(inputs), dtype=np.intc)
        traces = np.zeros((len(inputs), self.map_size), dtype=np.uint8)
        done = ffi.new("uint32_t *")
        rc = lib.ffcc_replay(self._engine, ffi.from_buffer("uint8_t[]", b"".join(inputs)),
                             ffi.from_buffer("uint32_t[]", lens), len(inputs), self.timeout_ms,
                             ffi.from_buffer("int[]", statuses, require_writable=True),
                             ffi.from_buffer("uint8_t[]", traces, require_writable=True), done)
        if rc == lib.FFCC_RUN_ERROR:
            raise FuzzerError(f"{self._error()} (while replaying saved inputs)")
        return statuses, traces

    def note_fault(self, data: bytes) -> RunStatus:
        status = ffi.new("int *")
        lib.ffcc_note_fault(self._engine, ffi.from_buffer("uint8_t[]", data), len(data),
                            self.timeout_ms, status)
        return RunStatus(status[0])

    def last_fault_is_new(self, status: RunStatus) -> bool:
        """Whether the crash or hang the last ``calibrate`` of one run ended in (``status``)
        left a trace new to the crash or hang virgin map (which it then joins), as a stage
        judges its children; judged on that run's trace, not a second run."""
        return bool(lib.ffcc_last_fault_is_new(self._engine, int(status)))

    def branch_hits(self) -> np.ndarray:
        return self._hits

    def virgin(self) -> np.ndarray:
        return self._virgin

    def virgin_crash(self) -> np.ndarray:
        return self._virgin_crash

    def variable_bytes(self) -> np.ndarray:
        return self._var_bytes

    def counters(self) -> Counters:
        c = self._counters
        lib.ffcc_engine_counters(self._engine, c)
        return Counters(int(c.execs), int(c.crashes), int(c.hangs), int(c.slowest_exec_ms))

    def add_tokens(self, tokens: list[bytes]) -> None:
        for token in tokens:
            lib.ffcc_engine_add_token(self._engine, ffi.from_buffer("uint8_t[]", token), len(token))

    def token_counts(self) -> tuple[int, int]:
        """(all tokens, of which from the target's auto-dictionary)."""
        return (int(lib.ffcc_engine_token_count(self._engine)),
                int(lib.ffcc_engine_auto_token_count(self._engine)))

    def uses_shared_memory_input(self) -> bool:
        return bool(lib.ffcc_fsrv_uses_shm_input(self._engine))

    def batch_size(self) -> int:
        """Children run per request: above 1 when the target's runtime runs batches."""
        return int(lib.ffcc_fsrv_batch_size(self._engine))

    def modes(self) -> tuple[str, ...]:
        """How the target runs, in the words of AFL++'s target_mode, and ffcc's batch."""
        return tuple(word for word, on in (
            ("persistent", self._persistent), ("shmem_testcase", self.uses_shared_memory_input()),
            ("deferred", self._deferred), ("batch", self.batch_size() > 1)) if on)

    def modules(self) -> ModuleTable | None:
        """Where the target's labelled shared objects keep their labels in the map: its
        runtime writes the table as the forkserver starts, and again whenever a run places an
        object it dlopen()ed."""
        return module_table(self._module_table.view)

    def close(self) -> None:
        lib.ffcc_fsrv_stop(self._engine)
        self._module_table.close()
