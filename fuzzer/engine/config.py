"""A campaign's settings, as parsed from the command line and the AFL_* environment.

The environment is read once, at start-up, by read_afl_environment (as afl-fuzz's function
of that name does) into an AflEnvironment that Config holds; the modules that act on an
AFL_* variable are given its value, so none of them reads os.environ for one.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ffcc.fuzzer.engine.phases import PhasePolicy
from ffcc.fuzzer.engine.retire import RetirePolicy
from ffcc.fuzzer.engine.scheduler import Bootstrap, Schedule
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import DEFAULT_INSTANCE

DEFAULT_TIMEOUT_MS = 1000
DEFAULT_HANG_TIMEOUT_MS = 1000  # AFL++'s: a suspected hang is re-run with this timeout
SYNC_MINUTES = 30        # AFL++'s SYNC_TIME: minutes between two syncs with the peers


@dataclass(frozen=True)
class AflEnvironment:
    """The AFL_* variables ffuzz acts on, as read at start-up."""

    autoresume: bool = False        # AFL_AUTORESUME=1: -i DIR resumes a campaign left in -o
    no_ui: bool = False             # AFL_NO_UI: plain status lines, even on a terminal
    no_affinity: bool = False       # AFL_NO_AFFINITY: no instance is bound to a CPU
    hang_timeout_ms: int = DEFAULT_HANG_TIMEOUT_MS  # AFL_HANG_TMOUT
    sync_seconds: float = SYNC_MINUTES * 60.0  # AFL_SYNC_TIME, which gives minutes
    bench_until_crash: bool = False  # AFL_BENCH_UNTIL_CRASH: stop at the first saved crash
    crash_exitcode: int | None = None  # AFL_CRASH_EXITCODE: a target exit status that is a crash
    debug_child: bool = False       # AFL_DEBUG_CHILD: the target's output is shown
    variables: tuple[tuple[str, str], ...] = ()  # every AFL_* variable, for fuzzer_setup


def read_afl_environment(environ: Mapping[str, str] = os.environ) -> AflEnvironment:
    """The AFL_* variables, read as afl-fuzz reads them; a one-line error for a value that
    cannot be one (AFL_HANG_TMOUT)."""
    return AflEnvironment(
        autoresume=environ.get("AFL_AUTORESUME") == "1",
        no_ui=bool(environ.get("AFL_NO_UI")),
        no_affinity=bool(environ.get("AFL_NO_AFFINITY")),
        hang_timeout_ms=_hang_timeout_ms(environ.get("AFL_HANG_TMOUT")),
        sync_seconds=_sync_minutes(environ.get("AFL_SYNC_TIME", "")) * 60.0,
        bench_until_crash=bool(environ.get("AFL_BENCH_UNTIL_CRASH")),
        crash_exitcode=_exit_status(environ.get("AFL_CRASH_EXITCODE")),
        debug_child=bool(environ.get("AFL_DEBUG_CHILD")),
        variables=tuple(sorted((k, v) for k, v in environ.items() if k.startswith("AFL_"))))


def _hang_timeout_ms(text: str | None) -> int:
    """AFL_HANG_TMOUT in ms, or the default."""
    if not text:
        return DEFAULT_HANG_TIMEOUT_MS
    if not text.strip().isdigit() or int(text) < 1:
        raise FuzzerError(f"AFL_HANG_TMOUT must be a number of milliseconds, not {text!r}")
    return int(text)


def _sync_minutes(text: str) -> int:
    """AFL_SYNC_TIME when it is a positive number of minutes, else SYNC_MINUTES."""
    return int(text) if text.isdigit() and int(text) > 0 else SYNC_MINUTES


def _exit_status(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


@dataclass(frozen=True)
class SyncSettings:
    """-M/-S NAME: this instance's place in a sync directory (parallel/sync.py)."""

    name: str                        # this instance's directory in the sync dir
    main: bool                       # -M
    interval: float                  # seconds between syncs (a main node: half of it)
    foreign: tuple[Path, ...] = ()   # -F


def sync_settings(main: str | None, secondary: str | None, foreign: tuple[Path, ...],
                  seconds: float | None, default_seconds: float) -> SyncSettings | None:
    """The -M/-S/-F/--sync-seconds options as settings, default_seconds (AFL_SYNC_TIME's)
    between syncs unless --sync-seconds is given; None for a lone instance."""
    if main is not None and secondary is not None:
        raise FuzzerError("-M and -S exclude each other")
    name = main if main is not None else secondary
    if name is None:
        if foreign:
            raise FuzzerError("-F needs -M")
        return None
    if not name or name.startswith(".") or "/" in name:
        raise FuzzerError(f"not an instance name: {name!r}")
    if foreign and main is None:
        raise FuzzerError("-F needs -M")
    if seconds is not None and seconds <= 0:
        raise FuzzerError("--sync-seconds must be positive")
    return SyncSettings(name, main is not None,
                        seconds if seconds is not None else default_seconds, foreign)


def resumes(input_dir: str, env: AflEnvironment, has_campaign: Callable[[], bool]) -> bool:
    """Whether a campaign resumes the output directory rather than start from seeds: with
    -i -, or with AFL_AUTORESUME=1 when the output directory holds a campaign already."""
    return input_dir == "-" or (env.autoresume and has_campaign())


class CmplogTarget(Enum):
    """-c 0: the target itself is an ffcc --cmplog build (any other -c names one)."""

    ITSELF = "0"


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
    # What earlier runs of this campaign (phase 1, the build before a lean rebuild) used of
    # -V and -E: a run stops at the user's limits counted from the campaign's start.
    seconds_spent: float = 0.0
    execs_spent: int = 0
    seed: int = 0
    schedule: Schedule = Schedule.FAIRFUZZ  # -p
    deterministic: bool = False     # -D
    target_trim: bool = False       # -r
    bootstrap: Bootstrap = Bootstrap.OFF  # -q
    use_mask: bool = True           # -b turns it off
    shadow: bool = False            # -s
    batches: bool = True            # --no-batch turns them off
    env: AflEnvironment = field(default_factory=AflEnvironment)  # the AFL_* variables
    argv: tuple[str, ...] = field(default=())  # our own command line, for fuzzer_setup
    sync: SyncSettings | None = None  # -M/-S NAME: an instance in the sync dir -o
    cmplog: str | CmplogTarget | None = None  # -c: the target's cmplog build (cmplog.py)
    labels_binary: Path | None = None  # --labels-binary: phase 2's build (phases.py)
    phase_policy: PhasePolicy | None = None  # when phase 1 ends; None: no phase switch
    labelled_phase: bool = False  # this run is phase 2, on --labels-binary
    retire: RetirePolicy = RetirePolicy.RARE  # --retire: when a covered label stops counting
    rebuild_retired: float | None = None  # --rebuild-retired: seconds a build runs before a
    # lean rebuild; None: the default (lean.DEFAULT_PERIOD if ffcc can rebuild), inf: off
    lean_binary: Path | None = None  # runs in place of the target: a lean rebuild (lean.py)

    @property
    def instance(self) -> str:
        """The output directory's subdirectory: the -M/-S name, or default."""
        return self.sync.name if self.sync is not None else DEFAULT_INSTANCE
