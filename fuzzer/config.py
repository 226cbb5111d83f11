"""A campaign's settings, as parsed from the command line."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ffcc.fuzzer.scheduler import Bootstrap

DEFAULT_TIMEOUT_MS = 1000


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
    argv: tuple[str, ...] = field(default=())  # our own command line, for fuzzer_setup
