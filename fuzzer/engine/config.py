"""A campaign's settings, as parsed from the command line and the AFL_* environment."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ffcc.fuzzer.engine.phases import PhasePolicy
from ffcc.fuzzer.engine.scheduler import Bootstrap
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.parallel.sync import SyncSettings

DEFAULT_TIMEOUT_MS = 1000
DEFAULT_HANG_TIMEOUT_MS = 1000  # AFL++'s: a suspected hang is re-run with this timeout


@dataclass(frozen=True)
class Config:
    input_dir: Path | None          # None: resume from the output directory (-i -)
    output_dir: Path
    target_argv: tuple[str, ...]
    timeout_ms: int | None = None   # None: derive from the seeds' speed, up to 1 s
    mem_limit_mb: int = 0
    dictionaries: tuple[Path, ...] = ()
    max_seconds: float | None = None
    max_execs: int | None = None
    seed: int = 0
    schedule: str = "fairfuzz"      # or "afl"
    deterministic: bool = False     # -D
    target_trim: bool = False       # -r
    bootstrap: Bootstrap = Bootstrap.OFF  # -q
    use_mask: bool = True           # -b turns it off
    shadow: bool = False            # -s
    batches: bool = True            # --no-batch turns them off
    stop_on_crash: bool = False     # AFL_BENCH_UNTIL_CRASH
    hang_timeout_ms: int = DEFAULT_HANG_TIMEOUT_MS  # AFL_HANG_TMOUT
    argv: tuple[str, ...] = field(default=())  # our own command line, for fuzzer_setup
    sync: SyncSettings | None = None  # -M/-S NAME: an instance in the sync dir -o
    cmplog: str | None = None       # -c: the cmplog build of the target, or "0": the target
    labels_binary: Path | None = None  # --labels-binary: phase 2's build (phases.py)
    phase_policy: PhasePolicy | None = None  # when phase 1 ends; None: no phase switch
    labelled_phase: bool = False  # this run is phase 2, on --labels-binary
    retire: str = "first"           # --retire: when a covered label stops counting (retire.py)
    rebuild_retired: float | None = None  # --rebuild-retired: label stall before a lean rebuild
    lean_binary: Path | None = None  # runs in place of the target: a lean rebuild (lean.py)

    @property
    def instance(self) -> str:
        """The output directory's subdirectory: the -M/-S name, or default."""
        return self.sync.name if self.sync is not None else "default"


def hang_timeout_ms(environ: Mapping[str, str] = os.environ) -> int:
    """AFL_HANG_TMOUT in ms (as afl-fuzz reads it), or the default."""
    text = environ.get("AFL_HANG_TMOUT")
    if not text:
        return DEFAULT_HANG_TIMEOUT_MS
    if not text.strip().isdigit() or int(text) < 1:
        raise FuzzerError(f"AFL_HANG_TMOUT must be a number of milliseconds, not {text!r}")
    return int(text)
