"""`ffuzz cluster`: one campaign over every core of a Ray cluster.

    ffuzz cluster [--address ADDR] [-j N] -i seeds -o out [--sync-seconds S]
                  [--working-dir DIR] [ffuzz options] -- prog [args] @@

Each instance is a Ray actor holding one CPU (Ray places them over the nodes, one per core)
that runs `ffuzz -M main` or `-S secK` on its node's local disk (cluster_worker.py).
Instances exchange queue entries and FairFuzz hit counts only through Ray, by way of one
hub actor on this machine (cluster_hub.py); no shared filesystem, no protocol of our own.
This process, the head, copies every instance's queue, crashes, hangs, plot_data and
fuzzer_stats from the hub into `-o out/NAME/`, so `out` is an AFL++ sync directory
(afl-whatsup, afl-plot, `ffuzz report` read it), shows the summed numbers and stops the
instances together.  Without --address, a Ray instance is started on this machine for the
campaign.  The hub's traffic counters are saved in out/ffuzz_cluster.json.
docs/CLUSTER.md says what each node needs.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from ffcc.fuzzer.cluster_hub import MAIN, Gathered, Hub
from ffcc.fuzzer.cluster_worker import Ended, Worker, node_cores, node_cpu
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.launcher import (
    StatusLine,
    combined,
    how_it_ended,
    plan_instances,
    stop_signals,
)
from ffcc.fuzzer.outdir import append_line, id_of
from ffcc.fuzzer.seeds import read_seeds
from ffcc.fuzzer.sync import MAIN_MARK
from ffcc.runtime.files import write_atomic

METRICS_FILE = "ffuzz_cluster.json"
NOT_PASSED = {"-i", "-o", "-M", "-S", "-F", "-j", "--jobs"}  # the cluster decides these
GATHER_EVERY = 1.0
STOP_GRACE = 60.0
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
    """`-o out`: every instance's files as the hub gathered them, in AFL++'s layout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cursors: dict[str, tuple[int, int, int, int]] = {}

    def open(self) -> None:
        if self.root.exists() and any(id_of(p.name) is not None
                                      for p in self.root.glob("*/queue/*")):
            raise FuzzerError(f"{self.root} holds a previous campaign: choose another "
                              "output directory (ffuzz cluster does not resume)")
        self.root.mkdir(parents=True, exist_ok=True)

    def take(self, gathered: Gathered) -> None:
        for name, report in gathered.reports.items():
            directory = self.root / name
            for folder, files in (("queue", report.queue), ("crashes", report.crashes),
                                  ("hangs", report.hangs)):
                (directory / folder).mkdir(parents=True, exist_ok=True)
                for file_name, data in files:
                    write_atomic(directory / folder / file_name, data)
            if name == MAIN:
                write_atomic(directory / MAIN_MARK, b"")
            if report.plot_tail:
                append_line(directory / "plot_data", report.plot_tail.decode())
            for file_name, data in report.files.items():
                write_atomic(directory / file_name, data)
        self.cursors = gathered.cursors


# -- the campaign ------------------------------------------------------------

def option_value(options: Sequence[str], names: tuple[str, ...]) -> str | None:
    """The last value given to one of these options (`-p afl`, `--schedule=afl`)."""
    value = None
    for position, word in enumerate(options):
        if word in names and position + 1 < len(options):
            value = options[position + 1]
        for name in names:
            if word.startswith(name + "="):
                value = word[len(name) + 1:]
    return value


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

    def __init__(self, ray: ModuleType, out: HeadOutput, names: list[str]) -> None:
        self.ray = ray
        self.out = out
        self.names = names
        self.status = StatusLine("ffuzz cluster")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.hub = ray.remote(Hub).options(num_cpus=0, scheduling_strategy=here).remote()
        actor = ray.remote(WorkerActor).options(num_cpus=1, max_concurrency=2,
                                                scheduling_strategy="SPREAD")
        self.workers = {name: actor.remote(name, HubCaller(self.hub)) for name in names}
        self.started = time.monotonic()
        self.failed: list[str] = []

    def start(self, seeds: list[tuple[str, bytes]], argvs: dict[str, list[str]],
              sync_seconds: float) -> dict[Any, str]:
        """Start every instance, each on its own core of its node."""
        hosts = self.ray.get([w.host.remote() for w in self.workers.values()])
        slots: dict[str, int] = {}
        running = {}
        env = instance_env()
        for (name, worker), (host, cores) in zip(self.workers.items(), hosts):
            slots[host] = slots.get(host, -1) + 1
            cpu = node_cpu(slots[host], cores, env)
            running[worker.run.remote(seeds, argvs[name], cpu, env, sync_seconds)] = name
            where = f"core {cpu}" if cpu is not None else "no core of its own"
            self.status.message(f"{name}: {host}, {where}, ffuzz {' '.join(argvs[name])}")
        self.status.message(f"{len(self.names)} instances on {len({h for h, _ in hosts})} nodes")
        return running

    def watch(self, running: dict[Any, str], received: list[int]) -> None:
        """Gather and show until every instance has ended; a stop signal is passed on."""
        stop_sent: float | None = None
        next_gather = 0.0
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
            if time.monotonic() >= next_gather or not running:
                next_gather = time.monotonic() + GATHER_EVERY
                self.gather()
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

    def gather(self) -> None:
        self.out.take(self.ray.get(self.hub.gather.remote(self.out.cursors)))

    def finish(self) -> None:
        self.gather()
        metrics = asdict(self.ray.get(self.hub.counters.remote()))
        metrics["instances"] = len(self.names)
        write_atomic(self.out.root / METRICS_FILE, json.dumps(metrics, indent=1).encode())
        self.status.close()


def run_cluster(address: str | None, jobs: int | None, seeds: list[tuple[str, bytes]],
                out: HeadOutput, options: list[str], target: list[str], sync_seconds: float,
                working_dir: Path | None) -> None:
    ray = import_ray()
    start_ray(ray, address, working_dir)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        jobs = jobs or cpus
        if jobs > cpus:
            raise FuzzerError(f"-j {jobs}: the Ray cluster has {cpus} CPUs")
        plans = plan_instances([*options, "--sync-seconds", str(sync_seconds), "--", *target],
                               target, jobs, option_value(options, ("-p", "--schedule")),
                               _int(option_value(options, ("--seed",))), [None] * jobs)
        head = Head(ray, out, [plan.name for plan in plans])
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
              help="Seed directory (read here, sent to every instance).")
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
    if working_dir is None and Path(target[0]).exists():
        target[0] = str(Path(target[0]).resolve())  # the same path on every node
    seeds = [(path.name, data) for path, data in read_seeds(input_dir)]
    out = HeadOutput(output_dir)
    out.open()
    run_cluster(address, jobs, seeds, out, list(ffuzz_options), target, sync_seconds,
                working_dir)

