"""`ffuzz -j N`: N instances of ffuzz in one sync directory on this machine, run as one.

The instances are ordinary `ffuzz -M main` / `-S secK` processes over the sync directory
`-o`, so the campaign is exactly what N hand-started instances make (afl-whatsup reads it);
the launcher only starts them, pins each to a free CPU, shows their summed numbers and
stops them together.  As AFL++'s docs advise for several cores, the secondaries vary:
unless `-p` is given, main runs FairFuzz and the secondaries alternate plain AFL and
FairFuzz, and `-c PROG` (input-to-state) goes to one or two secondaries only.  -V and -E
bound each instance, as for afl-fuzz.  `-i -` resumes every instance from its directory.

An instance that ends on its own before the others (killed, crashed) is reported in one
line and the others go on; the launcher then ends with an error once they are done.  Each
instance's own messages go to SYNCDIR/NAME/ffuzz.log.  The instances die with the
launcher (PR_SET_PDEATHSIG), so even a SIGKILLed launcher leaves no fuzzer behind, and
each fuzzer's targets die with it.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ffcc.fuzzer.engine.config import AflEnvironment
from ffcc.fuzzer.engine.scheduler import Schedule
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import FUZZER_STATS
from ffcc.fuzzer.output.status import _count, _duration
from ffcc.fuzzer.parallel.affinity import pinned_cpus

MAIN_NAME = "main"
LOG_NAME = "ffuzz.log"
STOP_GRACE = 30.0      # seconds the instances get to stop after SIGINT before SIGKILL
POLL = 0.1             # seconds between two looks at the instances
STATUS_EVERY = 5.0     # seconds between two status lines (a terminal gets one per second)
JOBS_OPTIONS = ("-j", "--jobs")
CMPLOG_OPTIONS = ("-c",)
CMPLOG_SECONDARIES = 2  # AFL++'s docs: "one or two" secondaries with CMPLOG
PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


def instance_names(jobs: int) -> list[str]:
    """main, then sec1 .. sec{jobs-1}."""
    return [MAIN_NAME] + [f"sec{k}" for k in range(1, jobs)]


def instance_schedule(position: int) -> Schedule:
    """Main runs FairFuzz; the secondaries alternate plain AFL and FairFuzz."""
    return Schedule.AFL if position % 2 else Schedule.FAIRFUZZ


def cmplog_positions(jobs: int) -> range:
    """The instances that get -c: AFL++'s docs advise one or two secondaries with CMPLOG,
    so sec1, and sec2 too from four instances on (never more than half of them); a lone
    instance runs it itself.  Input-to-state costs each new entry its colorization and
    candidate runs: the others keep fuzzing at full speed and import what it solves."""
    if jobs == 1:
        return range(1)
    return range(1, 1 + min(CMPLOG_SECONDARIES, jobs // 2))


def take_option(options: Sequence[str], names: tuple[str, ...]) -> tuple[str | None, list[str]]:
    """The last value given to one of these options (`-c prog`, `-cprog`, `--schedule afl`,
    `--schedule=afl`), and the options without them."""
    value, kept = None, []
    words = iter(options)
    for word in words:
        glued = [v for name in names if (v := _glued_value(word, name)) is not None]
        if word in names:
            value = next(words, None)
        elif glued:
            value = glued[0]
        else:
            kept.append(word)
    return value, kept


def _glued_value(word: str, name: str) -> str | None:
    """The value written in one word with its option: `--name=value`, or `-nvalue`."""
    glue = name + "=" if name.startswith("--") else name
    return word[len(glue):] if word.startswith(glue) and word != name else None


def split_command_line(argv: Sequence[str], target: Sequence[str]) -> list[str]:
    """ffuzz's own options in argv (the words before `--`, or before the target)."""
    if "--" in argv:
        return list(argv[:list(argv).index("--")])
    if list(argv[len(argv) - len(target):]) != list(target):
        raise FuzzerError("with -j, put the target command after --")
    return list(argv[:len(argv) - len(target)])


@dataclass(frozen=True)
class InstancePlan:
    name: str
    argv: list[str]      # ffuzz's arguments for this instance
    cpu: int | None      # the CPU it is pinned to, None when not pinned


def plan_instances(argv: Sequence[str], target: Sequence[str], jobs: int,
                   schedule: str | None, seed: int | None,
                   cpus: Sequence[int | None]) -> list[InstancePlan]:
    """One command line per instance: the user's options less -j and -c, plus the
    instance's role and name, its schedule (unless -p chose one for all), -c PROG where
    cmplog_positions says and, with --seed S, seed S+k so that the instances do not repeat
    each other."""
    _, options = take_option(split_command_line(argv, target), JOBS_OPTIONS)
    cmplog, options = take_option(options, CMPLOG_OPTIONS)
    plans = []
    for position, name in enumerate(instance_names(jobs)):
        role = ["-M" if position == 0 else "-S", name]
        chosen = ["-p", schedule or str(instance_schedule(position))]
        solving = ["-c", cmplog] if cmplog is not None and position in cmplog_positions(jobs) \
            else []
        seeded = [] if seed is None else ["--seed", str(seed + position)]
        plans.append(InstancePlan(name, [*options, *role, *chosen, *solving, *seeded, "--",
                                         *target], cpus[position]))
    return plans


def free_cpus(jobs: int, no_affinity: bool) -> list[int | None]:
    """A CPU per instance, none pinned by another process; None where there are too few
    (those instances share) or with no_affinity (AFL_NO_AFFINITY)."""
    if no_affinity or not hasattr(os, "sched_getaffinity"):
        return [None] * jobs
    free: list[int | None] = list(sorted(os.sched_getaffinity(0) - pinned_cpus()))
    return (free + [None] * jobs)[:jobs]


_libc = ctypes.CDLL(None, use_errno=True)


def child_setup(cpu: int | None) -> Callable[[], None]:
    """What a child runs between fork and exec: die with its parent (SIGTERM, which ffuzz
    answers with a clean stop) and take its CPU, so ffuzz's own binding keeps it.  The
    signal mask is inherited through exec: a parent thread that blocks signals (Ray's
    worker threads block SIGINT) would leave ffuzz deaf to the stop."""
    parent = os.getpid()

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the line above
            os.kill(os.getpid(), signal.SIGTERM)
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
    return setup


def spawn_ffuzz(argv: Sequence[str], cpu: int | None, log: IO[bytes],
                env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """An ffuzz process with these arguments, its output to log, tied to this process."""
    return subprocess.Popen([sys.executable, "-m", "ffcc.fuzzer.cli", *argv],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "AFL_NO_UI": "1", **(env or {})},
                            preexec_fn=child_setup(cpu), start_new_session=True)


# -- the combined numbers ----------------------------------------------------

def read_stats(path: Path) -> dict[str, str]:
    """A fuzzer_stats file as key -> value; empty while it does not exist yet."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    return {key.strip(): value.strip() for key, sep, value in
            (line.partition(":") for line in lines) if sep}


@dataclass(frozen=True)
class Combined:
    """The instances of a sync directory summed: executions and finds add up; corpus and
    edges are those of the instance that has most (after syncs, each holds nearly the
    union of the others)."""

    instances: int
    execs: int
    execs_per_sec: float
    corpus: int
    edges: int
    total_edges: int
    crashes: int
    hangs: int

    @staticmethod
    def of(stats: Sequence[dict[str, str]]) -> Combined:
        def ints(key: str) -> list[int]:
            return [int(float(s.get(key, "0") or 0)) for s in stats] or [0]
        return Combined(len(stats), sum(ints("execs_done")),
                        sum(float(s.get("execs_per_sec", "0") or 0) for s in stats),
                        max(ints("corpus_count")), max(ints("edges_found")),
                        max(ints("total_edges")), sum(ints("saved_crashes")),
                        sum(ints("saved_hangs")))

    def line(self, alive: int, seconds: float) -> str:
        return (f"[{_duration(int(seconds))}] {alive}/{self.instances} instances  "
                f"execs {_count(self.execs)} ({self.execs_per_sec:.0f}/s)  "
                f"corpus {self.corpus}  edges {self.edges}/{self.total_edges}  "
                f"crashes {self.crashes}  hangs {self.hangs}")


def combined(sync_dir: Path, names: Sequence[str]) -> Combined:
    return Combined.of([read_stats(sync_dir / name / FUZZER_STATS) for name in names])


class StatusLine:
    """The combined numbers: one line in place on a terminal (unless no_ui: AFL_NO_UI),
    else a line every STATUS_EVERY seconds."""

    def __init__(self, no_ui: bool, prefix: str = "ffuzz -j", stream: IO[str] = sys.stderr) -> None:
        self.prefix = prefix
        self.stream = stream
        self.tty = stream.isatty() and not no_ui
        self.every = 1.0 if self.tty else STATUS_EVERY
        self._next = 0.0

    def show(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now < self._next:
            return
        self._next = now + self.every
        if self.tty:
            self.stream.write("\r\x1b[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        self.stream.write(("\r\x1b[K" if self.tty else "") + f"[{self.prefix}] {text}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# -- running them ------------------------------------------------------------

@dataclass
class Instance:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    reported: bool = False


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def last_line(path: Path) -> str:
    """The instance's last message, for the line that reports its end."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@contextmanager
def stop_signals() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP noted (in the list yielded) instead of ending us."""
    received: list[int] = []
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in handled}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Launcher:
    """Started instances, watched until all have ended."""

    def __init__(self, sync_dir: Path, status: StatusLine) -> None:
        self.sync_dir = sync_dir
        self.status = status
        self.instances: list[Instance] = []
        self.started = time.monotonic()

    def start(self, plans: Sequence[InstancePlan]) -> None:
        for plan in plans:
            directory = self.sync_dir / plan.name
            directory.mkdir(parents=True, exist_ok=True)
            log_path = directory / LOG_NAME
            with open(log_path, "ab") as log:
                process = spawn_ffuzz(plan.argv, plan.cpu, log)
            self.instances.append(Instance(plan.name, process, log_path))
            where = f"CPU {plan.cpu}" if plan.cpu is not None else "no CPU of its own"
            self.status.message(f"{plan.name}: pid {process.pid}, {where}, "
                                f"{' '.join(plan.argv)}")

    def alive(self) -> list[Instance]:
        return [i for i in self.instances if i.process.poll() is None]

    def watch(self, received: list[int]) -> list[str]:
        """Show the numbers until every instance has ended; a stop signal is passed on to
        them.  Returns the names of the instances that failed."""
        stop_sent: float | None = None
        while True:
            running = self.alive()
            self.report_ended()
            if not running:
                break
            if received and stop_sent is None:
                stop_sent = time.monotonic()
                self.signal_all(signal.SIGINT)
            if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE:
                self.signal_all(signal.SIGKILL)
            self.show(len(running))
            time.sleep(POLL)
        self.show(0, force=True)
        return [i.name for i in self.instances if i.process.returncode != 0]

    def report_ended(self) -> None:
        """One line per instance that failed (killed, crashed, an error), as it ends."""
        still = len(self.alive())
        for instance in self.instances:
            code = instance.process.poll()
            if not code or instance.reported:
                continue
            instance.reported = True
            why = last_line(instance.log)
            self.status.message(f"{instance.name} ended ({how_it_ended(code)})"
                                + (f": {why}" if why and code > 0 else "")
                                + (f"; {still} still running" if still else ""))

    def signal_all(self, sig: int) -> None:
        for instance in self.alive():
            try:
                instance.process.send_signal(sig)
            except ProcessLookupError:
                pass

    def show(self, alive: int, force: bool = False) -> None:
        numbers = combined(self.sync_dir, [i.name for i in self.instances])
        self.status.show(numbers.line(alive, time.monotonic() - self.started), force)

    def kill_all(self) -> None:
        self.signal_all(signal.SIGKILL)
        for instance in self.instances:
            instance.process.wait()


def launch(argv: Sequence[str], target: Sequence[str], sync_dir: Path, jobs: int,
           schedule: str | None, seed: int | None, env: AflEnvironment) -> None:
    """Run `jobs` instances over sync_dir until all have ended (-V, -E, a signal); a
    FuzzerError names those that failed."""
    plans = plan_instances(argv, target, jobs, schedule, seed, free_cpus(jobs, env.no_affinity))
    status = StatusLine(env.no_ui)
    launcher = Launcher(sync_dir, status)
    try:
        with stop_signals() as received:
            launcher.start(plans)
            failed = launcher.watch(received)
    finally:
        launcher.kill_all()  # only left when the launcher itself failed
        status.close()
    if failed:
        raise FuzzerError(f"{len(failed)} of {jobs} instances failed ({', '.join(failed)}): "
                          f"see {sync_dir}/NAME/{LOG_NAME}")
