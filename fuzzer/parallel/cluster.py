"""`ffuzz cluster`: one campaign over every core of a Ray cluster.

    ffuzz cluster [--address ADDR] [-j N] -i seeds -o out [--sync-seconds S]
                  [--working-dir DIR] [ffuzz options] -- prog [args] @@

Each instance is a Ray actor holding one CPU (Ray places them over the nodes, one per core)
that runs `ffuzz -M main` or `-S secK` on its node's local disk (cluster_worker.py).
Instances exchange queue entries and FairFuzz hit counts only through Ray, by way of one
hub actor on this machine (cluster_hub.py); no shared filesystem, no protocol of our own.
The hub writes every instance's queue, crashes, hangs, plot_data, fuzzer_stats and state
file into `-o out/NAME/`, so `out` is an AFL++ sync directory (afl-whatsup, afl-plot,
`ffuzz report` read it); this process, the head, shows the summed numbers and stops the
instances together.  `-i -` resumes a campaign from `out`: each instance from its
directory there, wherever Ray places it.  Without --address, a Ray instance is started on
this machine for the campaign.  The hub's traffic counters are saved in
out/ffuzz_cluster.json (summed over the sessions of a resumed campaign).
docs/CLUSTER.md says what each node needs.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from ffcc.fuzzer.engine.config import AflEnvironment, read_afl_environment, resumes
from ffcc.fuzzer.engine.seeds import read_seeds
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.parallel.cluster_hub import File, Hub
from ffcc.fuzzer.parallel.cluster_worker import Ended, Worker, node_cores, node_cpu
from ffcc.fuzzer.parallel.launcher import (
    CMPLOG_OPTIONS,
    InstancePlan,
    StatusLine,
    combined,
    how_it_ended,
    instance_names,
    plan_instances,
    stop_signals,
    take_option,
)
from ffcc.runtime.files import write_atomic

METRICS_FILE = "ffuzz_cluster.json"
NOT_PASSED = {"-i", "-o", "-M", "-S", "-F", "-j", "--jobs"}  # the cluster decides these
STOP_GRACE = 60.0
SHOW_EVERY = 1.0  # seconds between two readings of the instances' fuzzer_stats
ENV_PREFIXES = ("AFL_", "FFCC_")  # passed on to every instance, wherever it runs


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise FuzzerError("ffuzz cluster needs Ray: pip install 'ffcc[cluster]'") from None
    return ray


class HubCaller:
    """How a worker calls the hub: a method run by the hub actor, its result awaited."""

    def __init__(self, hub: Any) -> None:
        self.hub = hub

    def __call__(self, method: str, *args: object) -> Any:
        ray = import_ray()
        return ray.get(getattr(self.hub, method).remote(*args))


class WorkerActor(Worker):
    """Worker with what the head needs to know first: its node's name and cores."""

    def host(self) -> tuple[str, list[int]]:
        return socket.gethostname(), node_cores()


# -- the head's output directory -------------------------------------------

class HeadOutput:
    """`-o out`: the hub writes every instance's files into it, in AFL++'s layout; here
    it is checked before the campaign and its counters saved after."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def instances(self) -> list[str]:
        """The instances of a campaign saved here: those with queue entries."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and OutputDir(self.root, p.name).has_campaign())

    def open(self, resume: bool) -> list[str]:
        """Make sure `out` is what the campaign needs (a new one: nothing saved; a resumed
        one: something); the names of the instances saved there."""
        saved = self.instances()
        if resume and not saved:
            raise FuzzerError(f"nothing to resume: no instance in {self.root} has queue entries")
        if not resume and saved:
            raise FuzzerError(f"{self.root} holds a previous campaign: resume it with -i - "
                              "(or AFL_AUTORESUME=1), or choose another output directory")
        self.root.mkdir(parents=True, exist_ok=True)
        return saved

    def save_counters(self, metrics: dict[str, Any]) -> None:
        """The hub's counters, added to those of the campaign's earlier sessions."""
        path = self.root / METRICS_FILE
        if path.exists():
            earlier = json.loads(path.read_text())
            metrics = {key: value if key == "instances" else value + earlier.get(key, 0)
                       for key, value in metrics.items()}
        write_atomic(path, json.dumps(metrics, indent=1).encode())


# -- the campaign ------------------------------------------------------------

def instance_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}


def start_ray(ray: ModuleType, address: str | None, working_dir: Path | None) -> None:
    settings: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if working_dir is not None:
        settings["runtime_env"] = {"working_dir": str(working_dir)}
    if address is None:
        settings["include_dashboard"] = False
    ray.init(address=address, **settings)


class Head:
    """The running campaign as this process sees it: the hub, the workers, the output."""

    def __init__(self, ray: ModuleType, out: HeadOutput, names: list[str],
                 env: AflEnvironment) -> None:
        self.ray = ray
        self.out = out
        self.names = names
        self.env = env
        self.status = StatusLine(env.no_ui, "ffuzz cluster")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.hub = ray.remote(Hub).options(num_cpus=0, scheduling_strategy=here) \
            .remote(out.root.resolve())
        actor = ray.remote(WorkerActor).options(num_cpus=1, max_concurrency=2,
                                                scheduling_strategy="SPREAD")
        self.workers = {name: actor.remote(name, HubCaller(self.hub)) for name in names}
        self.started = time.monotonic()
        self.failed: list[str] = []

    def start(self, seeds: list[File] | None, argvs: dict[str, list[str]],
              sync_seconds: float) -> dict[Any, str]:
        """Start every instance, each on its own core of its node, from these seeds or
        (None) from what `out` holds of it."""
        hosts = self.ray.get([w.host.remote() for w in self.workers.values()])
        slots: dict[str, int] = {}
        running = {}
        env = instance_env()
        for (name, worker), (host, cores) in zip(self.workers.items(), hosts):
            slots[host] = slots.get(host, -1) + 1
            cpu = node_cpu(slots[host], cores, self.env.no_affinity)
            running[worker.run.remote(seeds, argvs[name], cpu, env, sync_seconds)] = name
            where = f"core {cpu}" if cpu is not None else "no core of its own"
            self.status.message(f"{name}: {host}, {where}, ffuzz {' '.join(argvs[name])}")
        self.status.message(f"{len(self.names)} instances on {len({h for h, _ in hosts})} nodes")
        return running

    def watch(self, running: dict[Any, str], received: list[int]) -> None:
        """Show the numbers until every instance has ended; a stop signal is passed on."""
        stop_sent: float | None = None
        next_show = 0.0
        while running:
            done, _ = self.ray.wait(list(running), num_returns=len(running), timeout=0.2)
            for ref in done:
                self.ended(running.pop(ref), ref, len(running))
            if received and stop_sent is None:
                stop_sent = time.monotonic()
                for worker in self.workers.values():
                    worker.stop.remote()
            if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE:
                for name in running.values():
                    self.ray.kill(self.workers[name])
            if time.monotonic() >= next_show or not running:
                next_show = time.monotonic() + SHOW_EVERY
                self.status.show(combined(self.out.root, self.names)
                                 .line(len(running), time.monotonic() - self.started),
                                 force=not running)

    def ended(self, name: str, ref: Any, still: int) -> None:
        """One line for an instance that failed or whose actor was lost."""
        try:
            ended: Ended = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.failed.append(name)
            self.status.message(f"{name} lost: {why}" + (f"; {still} still running" if still else ""))
            return
        if ended.returncode != 0:
            self.failed.append(name)
            self.status.message(f"{name} ended ({how_it_ended(ended.returncode)})"
                                + (f": {ended.last_line}" if ended.returncode > 0 else "")
                                + (f"; {still} still running" if still else ""))

    def finish(self) -> None:
        metrics = asdict(self.ray.get(self.hub.counters.remote()))
        self.out.save_counters({**metrics, "instances": len(self.names)})
        self.status.close()


def plan_cluster(jobs: int, options: list[str], target: list[str],
                 sync_seconds: float) -> list[InstancePlan]:
    """The instances' command lines, as `ffuzz -j` makes them (-c to one or two of them)."""
    return plan_instances([*options, "--sync-seconds", str(sync_seconds), "--", *target],
                          target, jobs, take_option(options, ("-p", "--schedule"))[0],
                          _int(take_option(options, ("--seed",))[0]), [None] * jobs)


def resumed_jobs(saved: list[str], jobs: int | None) -> int:
    """The instances of a resumed campaign: those it had, no more, no fewer."""
    jobs = jobs or len(saved)
    if sorted(instance_names(jobs)) != saved:
        raise FuzzerError(f"the campaign to resume has {len(saved)} instances "
                          f"({', '.join(saved)}): resume it with -j {len(saved)}")
    return jobs


def run_cluster(address: str | None, jobs: int | None, seeds: list[File] | None,
                out: HeadOutput, options: list[str], target: list[str], sync_seconds: float,
                working_dir: Path | None, env: AflEnvironment) -> None:
    """The campaign from these seeds, or (None) resumed from what out holds."""
    ray = import_ray()
    start_ray(ray, address, working_dir)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        jobs = jobs or cpus
        if jobs > cpus:
            raise FuzzerError(f"-j {jobs}: the Ray cluster has {cpus} CPUs")
        plans = plan_cluster(jobs, options, target, sync_seconds)
        head = Head(ray, out, [plan.name for plan in plans], env)
        with stop_signals() as received:
            running = head.start(seeds, {plan.name: plan.argv for plan in plans}, sync_seconds)
            head.watch(running, received)
        head.finish()
    finally:
        ray.shutdown()
    if head.failed:
        raise FuzzerError(f"{len(head.failed)} of {jobs} instances failed "
                          f"({', '.join(head.failed)})")


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


class _TargetAfterDashes(click.Command):
    """Everything after `--` is the target; before it, options click does not know are
    ffuzz's own and go to every instance."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            ctx.meta["target"] = args[args.index("--") + 1:]
            args = args[:args.index("--")]
        return super().parse_args(ctx, args)


@click.command(cls=_TargetAfterDashes, context_settings={
    "help_option_names": ["-h", "--help"], "ignore_unknown_options": True})
@click.option("--address", help="The Ray cluster to join (HOST:PORT, or auto for the one "
                                "`ray start` began here); default: start one on this machine.")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Instances, one per CPU (default: every CPU of the cluster).")
@click.option("-i", "input_dir", required=True, type=click.Path(path_type=Path),
              help="Seed directory (read here, sent to every instance), or - to resume "
                   "the campaign in -o.")
@click.option("-o", "output_dir", required=True, type=click.Path(path_type=Path),
              help="Output directory on this machine: OUT/main, OUT/sec1, ... as afl-fuzz's.")
@click.option("--sync-seconds", type=float, default=30.0, show_default=True,
              help="Seconds between two exchanges of an instance with the hub.")
@click.option("--working-dir", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Ship this directory to every node (Ray runtime_env); the instances run in "
                   "it, so the target may be a path relative to it.")
@click.argument("ffuzz_options", nargs=-1, type=click.UNPROCESSED)
def cluster_command(address: str | None, jobs: int | None, input_dir: Path, output_dir: Path,
                    sync_seconds: float, working_dir: Path | None,
                    ffuzz_options: tuple[str, ...]) -> None:
    """Fuzz TARGET with one ffuzz instance per CPU of a Ray cluster."""
    target = list(click.get_current_context().meta.get("target") or [])
    if not target:
        raise click.UsageError("put the target command after --")
    passed = [w.split("=")[0] for w in ffuzz_options if w.startswith("-")]
    if refused := sorted(set(passed) & NOT_PASSED):
        raise click.UsageError(f"ffuzz cluster sets {', '.join(refused)} itself")
    if sync_seconds <= 0:
        raise click.UsageError("--sync-seconds must be positive")
    options = list(ffuzz_options)
    if working_dir is None:  # the same paths on every node
        target[0] = node_path(target[0])
        cmplog, options = take_option(options, CMPLOG_OPTIONS)
        options += ["-c", node_path(cmplog)] if cmplog is not None else []
    out = HeadOutput(output_dir)
    env = read_afl_environment()
    resume = resumes(str(input_dir), env, lambda: bool(out.instances()))
    saved = out.open(resume)
    if resume:
        jobs = resumed_jobs(saved, jobs)
    seeds = None if resume else [(path.name, data) for path, data in read_seeds(input_dir)]
    run_cluster(address, jobs, seeds, out, options, target, sync_seconds, working_dir, env)


def node_path(path: str) -> str:
    """A path given on the head as every node sees it (a word that names no file here,
    such as -c 0, as it is)."""
    return str(Path(path).resolve()) if Path(path).exists() else path

