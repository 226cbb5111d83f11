"""Replaying a campaign's saved inputs: which map bytes each queue entry, crash and hang lights.

The report (report.py) and the plots need every saved input's own trace, crashes and hangs
included, while the campaign keeps only the union (virgin maps).  Each input runs once through
the target's forkserver (no exec per input), many inputs per native call (in batches when the
target runs them), and its classified trace is kept as the list of non-zero map indices.
Traces are cached in the report directory, keyed by file name and size, so a report after more
fuzzing runs only the inputs saved since; a changed binary or map size empties the cache.
"""
from __future__ import annotations

import io
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.executor import NativeExecutor, RunStatus, TargetCommand
from ffcc.fuzzer.output.outdir import INPUT_KINDS, id_of
from ffcc.runtime.abi import NAMES, Module, ModuleTable
from ffcc.runtime.files import write_atomic

KINDS = INPUT_KINDS  # the output directory's input folders, in report order
_TIME = re.compile(r"(?:^|,)time:(\d+)")


@dataclass(frozen=True)
class SavedInput:
    """One file of queue/, crashes/ or hangs/."""

    kind: str        # one of KINDS
    name: str        # AFL's file name, id:NNNNNN,...
    path: Path
    size: int
    time_ms: int     # fuzzing time at which it was saved (its time: field; 0 when absent)
    instance: str = ""  # its instance in a parallel campaign's report; "" in a single one's

    @property
    def test_id(self) -> str:
        """How the reports and the trace cache name it: kind/name, or instance/kind/name when
        several instances' files (each with its own id:000000) are reported together."""
        return f"{self.instance}/{self.kind}/{self.name}" if self.instance \
            else f"{self.kind}/{self.name}"

    @property
    def saved_order(self) -> tuple[int, int, str, int]:
        """Sort key of the order inputs were saved in: by fuzzing time, then queue before
        crashes before hangs, then instance, then id (a label's first input is the first
        in this order)."""
        return self.time_ms, KINDS.index(self.kind), self.instance, id_of(self.name) or 0


@dataclass(frozen=True)
class Trace:
    status: RunStatus
    indices: np.ndarray  # map indices the run lit, ascending (uint32)


def saved_inputs(instance: Path, name: str = "") -> list[SavedInput]:
    """The inputs of an instance's directory (OUT/default, OUT/main), in the order they were
    saved; ``name`` is the instance's name in the report (test_id)."""
    found = []
    for kind in KINDS:
        folder = instance / kind
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if id_of(path.name) is None or not path.is_file():
                continue
            match = _TIME.search(path.name)
            found.append(SavedInput(kind, path.name, path, path.stat().st_size,
                                    int(match.group(1)) if match else 0, name))
    return sorted(found, key=lambda saved: saved.saved_order)


class ReplayExecutor(NativeExecutor):
    """The native executor, asked for what a replay needs: each input's status and the trace
    it left, crashes and hangs included, many inputs per native call (batches when the
    target runs them)."""

    CHUNK = 256  # inputs per native call: bounds the traces held at once (CHUNK x map size)

    def trace(self, data: bytes) -> Trace:
        return self.traces([data])[0]

    def traces(self, inputs: list[bytes]) -> list[Trace]:
        """Each input's trace, in order."""
        found: list[Trace] = []
        for start in range(0, len(inputs), self.CHUNK):
            found += self._run_chunk(inputs[start:start + self.CHUNK])
        return found

    def _run_chunk(self, chunk: list[bytes]) -> list[Trace]:
        statuses, traces = self.run_inputs(chunk)
        rows, indices = np.nonzero(traces)
        bounds = np.searchsorted(rows, np.arange(len(chunk) + 1))
        return [Trace(RunStatus(int(status)), indices[bounds[i]:bounds[i + 1]].astype(np.uint32))
                for i, status in enumerate(statuses)]


@dataclass(frozen=True)
class Target:
    """What was run: the command, and what identifies its binary's build."""

    command: TargetCommand
    timeout_ms: int

    def identity(self) -> str:
        """The binary's build, and the room its runtime keeps for dlopen()ed labels (which
        decides where they are in the map)."""
        stat = self.command.binary.stat()
        reserve = os.environ.get(NAMES["FFCC_ENV_LABEL_RESERVE"], "")
        return f"{self.command.binary.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{reserve}"


class TraceCache:
    """Traces by (kind/name, size), in one .npz file, tied to one binary build."""

    def __init__(self, path: Path, identity: str) -> None:
        self.path = path
        self.identity = identity
        self.map_size = 0
        self.modules: ModuleTable | None = None  # the labelled shared objects the target loaded
        self.traces: dict[tuple[str, int], Trace] = {}

    def load(self) -> None:
        if not self.path.exists():
            return
        with np.load(self.path, allow_pickle=False) as npz:
            stored = {name: npz[name] for name in npz.files}  # each read decompresses
        if str(stored["identity"]) != self.identity:
            return
        self.map_size = int(stored["map_size"])
        self.modules = _modules_of(str(stored["modules"])) if "modules" in stored else None
        bounds = np.concatenate(([0], np.cumsum(stored["lengths"])))
        indices = stored["indices"]
        for i, (test_id, size, status) in enumerate(zip(stored["names"], stored["sizes"],
                                                        stored["statuses"])):
            self.traces[str(test_id), int(size)] = Trace(RunStatus(int(status)),
                                                         indices[bounds[i]:bounds[i + 1]])

    def save(self) -> None:
        keys = list(self.traces)
        traces = [self.traces[key] for key in keys]
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer, identity=np.array(self.identity), map_size=np.array(self.map_size),
            modules=np.array(json.dumps(asdict(self.modules) if self.modules else None)),
            names=np.array([name for name, _ in keys], dtype=str),
            sizes=np.array([size for _, size in keys], dtype=np.int64),
            statuses=np.array([int(t.status) for t in traces], dtype=np.int8),
            lengths=np.array([len(t.indices) for t in traces], dtype=np.int64),
            indices=np.concatenate([t.indices for t in traces]) if traces
            else np.zeros(0, np.uint32))
        write_atomic(self.path, buffer.getvalue())


def _modules_of(text: str) -> ModuleTable | None:
    """The module table a cache stored as JSON (null: none)."""
    table = json.loads(text)
    if table is None:
        return None
    return ModuleTable(table["region"], tuple(Module(**module) for module in table["modules"]))


@dataclass(frozen=True)
class Replay:
    map_size: int
    traces: dict[str, Trace]  # by SavedInput.test_id
    replayed: int             # inputs run now (the others came from the cache)
    modules: ModuleTable | None = None  # labelled shared objects the target loaded


def replay(target: Target, inputs: list[SavedInput], cache_path: Path) -> Replay:
    """Every input's trace: from the cache when its name and size are known, else by running
    it (then the cache is updated).  The target is started only when something must run."""
    cache = TraceCache(cache_path, target.identity())
    cache.load()
    missing = [saved for saved in inputs if (saved.test_id, saved.size) not in cache.traces]
    if missing:
        input_path = cache_path.with_name(".cur_input")
        executor = ReplayExecutor(target.command, input_path, target.timeout_ms, seed=0)
        try:
            if executor.map_size != cache.map_size:
                cache.traces.clear()
                cache.map_size = executor.map_size
                missing = inputs
            for start in range(0, len(missing), executor.CHUNK):
                chunk = missing[start:start + executor.CHUNK]
                for saved, trace in zip(chunk, executor.traces([saved.path.read_bytes()
                                                                for saved in chunk]), strict=True):
                    cache.traces[saved.test_id, saved.size] = trace
            cache.modules = executor.modules()
        finally:
            executor.close()
            input_path.unlink(missing_ok=True)
    traces = {(saved.test_id, saved.size): cache.traces[saved.test_id, saved.size]
              for saved in inputs}
    if missing or len(traces) != len(cache.traces):
        cache.traces = traces
        cache.save()
    return Replay(cache.map_size, {test_id: trace for (test_id, _), trace in traces.items()},
                  len(missing), cache.modules)
