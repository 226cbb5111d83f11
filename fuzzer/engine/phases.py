"""Two-phase campaigns: fuzz the edge-only build at full speed, then the labelled build.

Seed 004 (section 6.6) found labels profitable where they sample subtle local behaviour, and
costly in throughput while the fuzzer is still exploring.  With `--labels-binary L`, ffuzz runs
its target (an edge-only build) until edge coverage stalls, then resumes the same output
directory on L: every queue entry is calibrated again on the labelled build, so phase 2 starts
from everything phase 1 found, and crashes and hangs stay where they are.

When edges have stalled is a policy, `--phase-switch`, a comma-separated list of conditions of
which the first to hold ends phase 1:

    cycles:N    N queue cycles in a row added no entry (AFL++'s cycles_wo_finds)
    stall:S     S seconds without a new queue entry (counted from the start of phase 1)
    execs:N     N executions in phase 1
    time:S      S seconds of phase 1

The default, `cycles:1,stall:600`, switches after one full pass over the queue that found
nothing, or ten minutes without a find, whichever comes first.
"""
from __future__ import annotations

from dataclasses import dataclass

from ffcc.fuzzer.errors import FuzzerError

DEFAULT_POLICY = "cycles:1,stall:600"
CONDITIONS = ("cycles", "stall", "execs", "time")


@dataclass(frozen=True)
class PhaseProgress:
    """What the switch is judged on, as of now."""

    stalled_cycles: int   # queue cycles in a row without a new entry
    seconds: float        # seconds since phase 1 started
    since_find: float     # seconds since the last new entry, or since phase 1 started
    execs: int            # executions in phase 1


@dataclass(frozen=True)
class PhasePolicy:
    """The conditions of `--phase-switch`; None for a condition not given."""

    cycles: int | None = None
    stall: float | None = None
    execs: int | None = None
    time: float | None = None

    def due(self, now: PhaseProgress) -> str | None:
        """Why phase 1 is over (for the status message), or None while it is not."""
        if self.cycles is not None and now.stalled_cycles >= self.cycles:
            return f"{now.stalled_cycles} queue cycle(s) without a new entry"
        if self.stall is not None and now.since_find >= self.stall:
            return f"no new entry for {now.since_find:.0f} s"
        if self.execs is not None and now.execs >= self.execs:
            return f"{now.execs} executions"
        if self.time is not None and now.seconds >= self.time:
            return f"{now.seconds:.0f} s of phase 1"
        return None


class PhaseSwitch:
    """Which phase a run of a two-phase campaign is in: 2 on the labelled build; on the
    edge-only build, 1 until ``policy`` says it is over (``over`` says why)."""

    def __init__(self, policy: PhasePolicy | None, labelled: bool) -> None:
        self.policy = policy      # None: this run never switches
        self.labelled = labelled  # this run is phase 2, on --labels-binary
        self.over: str | None = None

    def judge(self, now: PhaseProgress) -> None:
        if self.policy is not None:
            self.over = self.policy.due(now)

    @property
    def number(self) -> int:
        """The phase the state file records, for a resumed campaign to pick its build."""
        return 2 if self.over or self.labelled else 1


def parse_policy(text: str) -> PhasePolicy:
    """`cycles:1,stall:600` -> PhasePolicy; a one-line error for anything else."""
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, number = part.partition(":")
        if name not in CONDITIONS:
            raise FuzzerError(f"--phase-switch: unknown condition {name!r} "
                              f"(one of {', '.join(CONDITIONS)})")
        try:
            value = float(number)
        except ValueError:
            raise FuzzerError(f"--phase-switch: {part!r} needs a number, as in {name}:10") from None
        if value <= 0:
            raise FuzzerError(f"--phase-switch: {part!r} must be positive")
        values[name] = value
    if not values:
        raise FuzzerError("--phase-switch: give at least one condition, e.g. " + DEFAULT_POLICY)
    return PhasePolicy(cycles=_whole(values.get("cycles")), stall=values.get("stall"),
                       execs=_whole(values.get("execs")), time=values.get("time"))


def _whole(value: float | None) -> int | None:
    return None if value is None else max(int(value), 1)
