"""`ffuzz`: afl-fuzz's command line, FairFuzz's options, one-line errors.

    ffuzz -i seeds -o out [-t ms] [-m MB] [-x dict] [-V s] [-E n] [-D] [-c PROG_CMPLOG]
          [-p fairfuzz|afl] [-r] [-q 1|2|3] [-b] [-s] [--seed N]
          [-M NAME | -S NAME] [-F DIR] [--sync-seconds S]
          [--labels-binary PROG_LABELLED [--phase-switch POLICY]] [--retire rare|first|stall|never]
          [--rebuild-retired S] [-j N] -- prog [args] @@

-s is FairFuzz's shadow mode (as in FairFuzz), so the RNG seed is --seed.
-c is AFL++'s: input-to-state on each new entry with a `ffcc --cmplog` build (cmplog.py).
With --labels-binary, prog is an edge-only build fuzzed until edges stall, then the campaign
goes on in the same output directory on the labelled build (phases.py); with
--rebuild-retired, on builds of the labelled target without its retired labels (lean.py).
`ffuzz report OUT` and `ffuzz plot OUT...` read a campaign (report_cli.py).
"""
from __future__ import annotations

import math
import random
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import click

from ffcc.fuzzer.engine.campaign import Campaign, StopNote, stops_handled
from ffcc.fuzzer.engine.census import Census
from ffcc.fuzzer.engine.cmplog import open_cmplog
from ffcc.fuzzer.engine.config import (
    DEFAULT_TIMEOUT_MS,
    CmplogTarget,
    Config,
    read_afl_environment,
    resumes,
    sync_settings,
)
from ffcc.fuzzer.engine.dictionary import load_dictionary
from ffcc.fuzzer.engine.executor import NativeExecutor, TargetCommand, check_target
from ffcc.fuzzer.engine.focus import CarriedFocuses
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.labels import LabelMap, TargetLabels
from ffcc.fuzzer.engine.lean import (
    DEFAULT_PERIOD,
    LEAN_DIR,
    LeanBuilds,
    check_rebuildable,
    not_rebuildable,
)
from ffcc.fuzzer.engine.phases import DEFAULT_POLICY, parse_policy
from ffcc.fuzzer.engine.retire import Retirement, RetirePolicy
from ffcc.fuzzer.engine.scheduler import AflScheduler, Bootstrap, FairFuzzScheduler, Schedule, Scheduler
from ffcc.fuzzer.engine.seeds import read_seeds
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import DEFAULT_INSTANCE, OutputDir
from ffcc.fuzzer.output.state import load as load_state
from ffcc.fuzzer.output.stats import write_setup_files
from ffcc.fuzzer.output.status import Status, make_status
from ffcc.fuzzer.parallel.affinity import bind_to_free_cpu
from ffcc.fuzzer.parallel.cluster import cluster_command
from ffcc.fuzzer.parallel.launcher import launch
from ffcc.fuzzer.parallel.sync import SyncDir
from ffcc.fuzzer.reports.report_cli import SUBCOMMANDS


def parse_timeout(text: str | None) -> int | None:
    """`-t 200` -> 200.  AFL's `-t 200+` (skip seeds that time out) is accepted
    and means the same: ffuzz always skips such seeds, with a message."""
    if text is None:
        return None
    try:
        value = int(text.rstrip("+"))
    except ValueError:
        raise click.BadParameter(f"not a number of milliseconds: {text}") from None
    if value < 5:
        raise click.BadParameter("the timeout must be at least 5 ms")
    return value


def parse_cmplog(text: str | None) -> str | CmplogTarget | None:
    """-c PROG_CMPLOG: the cmplog build's path, or (-c 0) the target itself."""
    return CmplogTarget.ITSELF if text == CmplogTarget.ITSELF.value else text


def parse_rebuild(text: str | None) -> float | None:
    """--rebuild-retired SECONDS, or off (never: an infinite period); None: the default."""
    if text is None:
        return None
    if text.lower() == "off":
        return math.inf
    try:
        seconds = float(text)
    except ValueError:
        raise click.BadParameter(f"not a number of seconds or off: {text}") from None
    if not 0 <= seconds < math.inf:
        raise click.BadParameter(f"not a number of seconds or off: {text}")
    return seconds


def parse_memory(text: str) -> int:
    if text.lower() == "none":
        return 0
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    number, unit = (text[:-1], text[-1].lower()) if text[-1].isalpha() else (text, "m")
    try:
        return max(int(float(number) * units[unit]), 1)
    except (ValueError, KeyError):
        raise click.BadParameter(f"not a memory size: {text}") from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog="""\b
Other commands (each has --help):
  ffuzz report OUT           what a campaign's inputs cover: labels, mutants, edges
  ffuzz plot OUT... -o DIR   the campaigns over time, side by side
  ffuzz cluster ...          one campaign over the machines of a Ray cluster""")
@click.version_option(package_name="ffcc", prog_name="ffuzz", message="%(prog)s (ffcc) %(version)s")
@click.option("-i", "input_dir", required=True, help="Seed directory, or - to resume from -o.")
@click.option("-o", "output_dir", required=True, type=click.Path(path_type=Path),
              help="Output directory (results go to OUT/default).")
@click.option("-t", "timeout", help="Timeout per run in ms (N+ skips seeds that time out).")
@click.option("-m", "memory", default="none", show_default=True, help="Memory limit (MB) or none.")
@click.option("-x", "dictionaries", multiple=True, type=click.Path(path_type=Path),
              help="AFL dictionary file or directory (repeatable).")
@click.option("-V", "max_seconds", type=float, help="Stop after this many seconds.")
@click.option("-E", "max_execs", type=int, help="Stop after about this many executions.")
@click.option("-p", "--schedule", type=click.Choice([s.value for s in Schedule]), default="fairfuzz",
              show_default=True, help="Queue selection: FairFuzz rare branches, or plain AFL.")
@click.option("-D", "deterministic", is_flag=True, help="Run AFL's deterministic stages.")
@click.option("-c", "cmplog", metavar="PROG_CMPLOG",
              help="Input-to-state on each new entry with this ffcc --cmplog build of the "
                   "target (0: the target is one).")
@click.option("-r", "target_trim", is_flag=True, help="FairFuzz: trim inputs to their target branch.")
@click.option("-q", "bootstrap", type=click.Choice(["1", "2", "3"]),
              help="FairFuzz: fall back to AFL selection after a cycle without new branches.")
@click.option("-b", "no_mask", is_flag=True, help="FairFuzz: no mutation mask.")
@click.option("-s", "shadow", is_flag=True, help="FairFuzz: shadow runs without the mask, logged.")
@click.option("--seed", type=int, help="Seed of the random generator (default: random).")
@click.option("--no-batch", "no_batch", is_flag=True,
              help="One child per request even when the target's ffcc runtime runs batches.")
@click.option("-M", "main", help="Main instance NAME in the sync directory -o.")
@click.option("-S", "secondary", help="Secondary instance NAME in the sync directory -o.")
@click.option("-F", "foreign", multiple=True, type=click.Path(path_type=Path),
              help="With -M: also import from this foreign fuzzer's queue (repeatable).")
@click.option("--sync-seconds", type=float,
              help="Seconds between syncs with -M/-S (default: AFL_SYNC_TIME minutes, or 30).")
@click.option("--labels-binary", type=click.Path(path_type=Path),
              help="Two-phase campaign: fuzz prog (an edge-only build) until edges stall, then "
                   "this labelled build of the same program.")
@click.option("--phase-switch", default=DEFAULT_POLICY, show_default=True,
              help="With --labels-binary: when edges have stalled (cycles:N, stall:S, execs:N, "
                   "time:S; the first that holds).")
@click.option("--retire", type=click.Choice([p.value for p in RetirePolicy]),
              default=RetirePolicy.RARE.value, show_default=True,
              help="When a label stops counting: once the queue covers it and it had its turn "
                   "as a FairFuzz target (a minute at most), or is hit as often as a common "
                   "edge (rare); once covered (first); as rare, and every label left once none "
                   "was covered for 10 minutes (stall); or never.")
@click.option("--rebuild-retired", metavar="SECONDS|off",
              help="Once the running build has run SECONDS (twice as long after each rebuild) "
                   "and a tenth of its covered labels were retired, rebuild the labelled target "
                   "without its retired labels and go on with that build. Default: 15 where "
                   "the target is an ffcc project build (ffcc -o build/ ...), else off.")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Run N instances in the sync directory -o (main, sec1, ...), one per free CPU.")
@click.argument("target", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def command(own_argv: list[str], input_dir: str, output_dir: Path, timeout: str | None, memory: str,
            dictionaries: tuple[Path, ...], max_seconds: float | None, max_execs: int | None,
            schedule: str, deterministic: bool, target_trim: bool, bootstrap: str | None,
            no_mask: bool, shadow: bool, seed: int | None, no_batch: bool, main: str | None,
            secondary: str | None, foreign: tuple[Path, ...], sync_seconds: float | None,
            labels_binary: Path | None, phase_switch: str, retire: str,
            rebuild_retired: str | None, jobs: int | None, cmplog: str | None,
            target: tuple[str, ...]) -> None:
    """Fuzz TARGET (an ffcc or afl-clang-fast binary) with FairFuzz."""
    env = read_afl_environment()
    if jobs is not None and jobs > 1:
        if main is not None or secondary is not None:
            raise FuzzerError("-j names its instances itself: leave out -M and -S")
        given = click.get_current_context().get_parameter_source("schedule")
        launch(own_argv, target, output_dir, jobs,
               schedule if given == click.core.ParameterSource.COMMANDLINE else None, seed, env)
        return
    sync = sync_settings(main, secondary, foreign, sync_seconds, env.sync_seconds)
    resume = resumes(input_dir, env, lambda: OutputDir(
        output_dir, sync.name if sync else DEFAULT_INSTANCE).has_campaign())
    config = Config(
        input_dir=None if resume else Path(input_dir), output_dir=output_dir,
        target_argv=target, timeout_ms=parse_timeout(timeout),
        mem_limit_mb=parse_memory(memory), dictionaries=dictionaries,
        max_seconds=max_seconds, max_execs=max_execs,
        seed=seed if seed is not None else random.SystemRandom().randrange(2**63),
        schedule=Schedule(schedule), deterministic=deterministic, target_trim=target_trim,
        bootstrap=Bootstrap(int(bootstrap)) if bootstrap else Bootstrap.OFF,
        use_mask=not no_mask, shadow=shadow, batches=not no_batch, env=env,
        argv=("ffuzz", *own_argv), sync=sync, cmplog=parse_cmplog(cmplog),
        labels_binary=labels_binary, retire=RetirePolicy(retire),
        rebuild_retired=parse_rebuild(rebuild_retired),
        phase_policy=parse_policy(phase_switch) if labels_binary is not None else None)
    run(config)


def make_scheduler(config: Config) -> Scheduler:
    if config.schedule is Schedule.AFL:
        return AflScheduler()
    return FairFuzzScheduler(use_mask=config.use_mask, bootstrap=config.bootstrap)


@dataclass(frozen=True)
class Ended:
    """How one run of a campaign ended: why its phase 1 was over, or the lean rebuild to go
    on with (both None: it simply stopped), and the executions it made."""

    phase_over: str | None
    execs: int
    lean: Path | None = None
    summary: str = ""  # why it stopped and what it left, the campaign's last line
    focuses: CarriedFocuses | None = None  # for the next run, on another build


def run(config: Config) -> None:
    """The campaign, resumed in the same output directory, within what is left of -V and -E,
    on the labelled build once phase 1 of a two-phase campaign (--labels-binary) is over,
    and on each lean rebuild (--rebuild-retired) once it is ready."""
    labelled = None
    if config.labels_binary is not None:
        check_target(config.labels_binary)
        labelled = replace(config, input_dir=None, phase_policy=None, labelled_phase=True,
                           target_argv=(str(config.labels_binary), *config.target_argv[1:]))
        if config.input_dir is None and _saved_phase(config) == 2:
            config = labelled
    started, execs = time.monotonic(), 0
    current, opening, carried = config, None, None
    with stops_noted(labelled is not None or may_rebuild(config)) as stop:
        while True:
            ended = run_once(current, opening, stop, carried)
            carried = ended.focuses
            execs += ended.execs
            following, opening = _next_run(config, labelled, current, ended)
            if following is None or stop.requested:
                print(f"ffuzz: {ended.summary}", file=sys.stderr)
                return
            current = replace(following, seconds_spent=time.monotonic() - started,
                              execs_spent=execs)


def _next_run(config: Config, labelled: Config | None, current: Config,
              ended: Ended) -> tuple[Config | None, str | None]:
    """The run to go on with after ``ended`` (None: the campaign is over), and its opening
    message: phase 2 on the labelled build, or the lean rebuild."""
    if ended.phase_over is not None and labelled is not None:
        return labelled, (f"phase 2: edges stalled ({ended.phase_over}); fuzzing the labelled "
                          f"build {config.labels_binary} from phase 1's queue")
    if ended.lean is not None:
        return (replace(current, input_dir=None, lean_binary=ended.lean),
                f"going on with {ended.lean}, the labelled build without retired labels")
    return None, None


def may_rebuild(config: Config) -> bool:
    """Whether the campaign may go on with lean rebuilds: asked with --rebuild-retired, or by
    default on a target ffcc can rebuild (lean_builds decides once the labels are known)."""
    if config.rebuild_retired == math.inf or config.retire is RetirePolicy.NEVER:
        return False
    return config.rebuild_retired is not None \
        or not_rebuildable(Path(config.target_argv[0])) is None


def lean_builds(config: Config, labels: LabelMap | None, outdir: OutputDir) -> LeanBuilds | None:
    """The lean rebuilds of a labelled target under --rebuild-retired (on the lean build the
    last run went on with, or on resuming, the newest that still fits the target), each after
    a census of the sites on the full build; None when nothing is rebuilt.  By default a
    target ffcc cannot rebuild runs as it is."""
    period = config.rebuild_retired
    if labels is None or config.retire is RetirePolicy.NEVER or period == math.inf:
        return None
    full = Path(config.target_argv[0])
    if period is None:
        if not_rebuildable(full) is not None:
            return None
        period = DEFAULT_PERIOD
    check_rebuildable(full)
    where = outdir.root / LEAN_DIR
    census = Census(partial(start_executor, config, TargetCommand(tuple(config.target_argv)),
                            outdir, None))
    if config.lean_binary is not None:
        return LeanBuilds(full, where, period, config.lean_binary, census)
    if config.input_dir is None:
        return LeanBuilds.newest(full, where, period, census)
    return LeanBuilds(full, where, period, census=census)


def _saved_phase(config: Config) -> int:
    state = load_state(OutputDir(config.output_dir, config.instance).state_file)
    return state.phase if state is not None else 1


def run_once(config: Config, opening: str | None = None, stop: StopNote | None = None,
             carried: CarriedFocuses | None = None) -> Ended:
    """Set up the pieces, run the campaign, tear down in reverse order.  ``stop``: where a
    stop is noted, by the campaign while it runs and by stops_noted around it; ``carried``:
    the focuses of the run before, on another build."""
    stop = stop or StopNote()
    command_line = TargetCommand(tuple(config.target_argv))
    check_target(command_line.binary)
    tokens = [t for path in config.dictionaries for t in load_dictionary(path)]
    seeds = None if config.input_dir is None else read_seeds(config.input_dir)
    outdir = OutputDir(config.output_dir, config.instance)
    labels = LabelMap.load(command_line.binary)
    # Retirement and lean builds keep to the program's own labels; the campaign counts its
    # shared objects' too.  All are the full build's, whichever build runs.
    target_labels = TargetLabels(command_line.binary)
    lean = lean_builds(config, labels, outdir)
    outdir.open(resume=config.input_dir is None)
    bind_to_free_cpu(config.env.no_affinity)
    try:
        write_setup_files(outdir.root, list(config.argv), list(config.target_argv),
                          config.env.variables)
        if lean is not None and lean.running is not None:  # labels stay the full build's
            command_line = TargetCommand((str(lean.running), *config.target_argv[1:]))
        retirement = Retirement.for_target(config.retire, labels)
        executor = start_executor(config, command_line, outdir, retirement)
        executor.add_tokens(tokens)
        status = open_status(config, opening, executor)
        cmplog = open_cmplog(config, command_line, outdir.cur_input, executor)
        try:
            def current() -> LabelMap | None:
                return target_labels.current(executor.modules())

            peers = SyncDir(outdir, config.sync) if config.sync is not None else None
            campaign = Campaign(config, executor, outdir, make_scheduler(config), status,
                                Labelling(current(), current, retirement, lean),
                                cmplog=cmplog, peers=peers, stop=stop, carried=carried)
            with wake_at(None if config.max_seconds is None
                         else max(config.max_seconds - config.seconds_spent, 0.001)):
                campaign.run(seeds)
            return Ended(campaign.phases.over, executor.counters().execs, campaign.lean_ready,
                         ending(campaign, outdir), campaign.focuses_to_carry())
        finally:
            # A Ctrl-C or SIGTERM after the campaign stopped must not cut the teardown short
            # (it would leave the forkserver and segments behind and exit with a traceback).
            with stops_handled(stop.note):
                if lean is not None:
                    lean.close()
                status.close()
                if cmplog is not None:
                    cmplog.close()
                executor.close()
                if retirement is not None:
                    retirement.close()
    finally:
        outdir.close()


def ending(campaign: Campaign, outdir: OutputDir) -> str:
    """Why the campaign stopped and what it left where, as afl-fuzz says when it stops."""
    progress = campaign.progress
    crashes = f"{progress.saved_crashes} crash" + ("es" if progress.saved_crashes != 1 else "")
    hangs = f"{progress.saved_hangs} hang" + ("s" if progress.saved_hangs != 1 else "")
    return (f"stopped by {campaign.ended_by or 'no more work'}: "
            f"{len(campaign.queue)} inputs in the queue, {crashes} and {hangs} saved in "
            f"{outdir.root}")


def start_executor(config: Config, command_line: TargetCommand, outdir: OutputDir,
                   retirement: Retirement | None) -> NativeExecutor:
    """The target's forkserver, started with the retirement segment's id in its
    environment (retire.py)."""
    with retirement.exported() if retirement is not None else nullcontext():
        return NativeExecutor(command_line, outdir.cur_input,
                              config.timeout_ms or DEFAULT_TIMEOUT_MS, config.seed,
                              config.mem_limit_mb, show_child_output=config.env.debug_child,
                              crash_exitcode=config.env.crash_exitcode, batches=config.batches)


def open_status(config: Config, opening: str | None, executor: NativeExecutor) -> Status:
    """The status display, with the run's opening lines: why it starts (a phase switch, a
    lean build), and the target's batches."""
    status = make_status(config.env.no_ui)
    if opening is not None:
        status.message(opening)
    if executor.batch_size() > 1:
        status.message(f"the target's ffcc runtime runs batches of up to "
                       f"{executor.batch_size()} children per request")
    return status


@contextmanager
def stops_noted(between_runs: bool) -> Iterator[StopNote]:
    """A campaign of several runs (two phases, lean rebuilds) notes a stop that comes between
    them, from one run's end to the next run's start: it ends the campaign there, as a stop
    during a run does, instead of cutting the switch short with exit status 130."""
    note = StopNote()
    with stops_handled(note.note) if between_runs else nullcontext():
        yield note


@contextmanager
def wake_at(seconds: float | None) -> Iterator[None]:
    """A SIGALRM when -V is up.  Like any signal it makes the C core cut the running case
    short, so a slow or hanging case cannot hold the campaign past its time; the campaign's
    own clock then stops it."""
    if seconds is None:
        yield
        return
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    subcommand = {**SUBCOMMANDS, "cluster": cluster_command}.get(args[0]) if args else None
    try:
        if subcommand is not None:
            subcommand.main(args=args[1:], prog_name=f"ffuzz {args[0]}", standalone_mode=False)
        else:
            command.main(args=args, prog_name="ffuzz", standalone_mode=False, obj=args)
    except FuzzerError as exc:
        print(f"ffuzz: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"ffuzz: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
