"""`ffuzz report`: what a campaign's saved inputs cover, label by label.

The campaign's output directory names the target (default/cmdline), the target names its
label database (ffcc.runtime.abi); every saved input is replayed (replay.py) and the results
are written under OUT/default/report/: mutation.json (Stryker's schema), index.html (its
viewer plus the MCC view), labels.info (lcov), and the plots.  The terminal summary is
report_summary.py's.  Edges are counted on the labelled build's edge region, or, given an
unlabelled build of the same program, on that build's map (the inputs are replayed on it too).

A sync directory (ffuzz -j, -M/-S, a cluster, afl-fuzz instances beside ffuzz ones) is
reported as one campaign: the union of its instances' queues, crashes and hangs, replayed on
the one target they all fuzzed, written under SYNCDIR/report/, with each instance's own
figures beside it.  Queue entries an instance imported from another (``sync:PEER``) are
copies of the peer's entries and are counted once, at the instance that found them.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ffcc.fuzzer.engine.config import DEFAULT_TIMEOUT_MS
from ffcc.fuzzer.engine.executor import TargetCommand, check_target
from ffcc.fuzzer.engine.labels import label_database, with_modules
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import CMDLINE, FUZZER_STATS, QUEUE, OutputDir
from ffcc.fuzzer.reports.label_coverage import (
    EdgeCoverage,
    LabelResult,
    edge_coverage,
    label_results,
    line_hits,
)
from ffcc.fuzzer.reports.lcov import tracefile
from ffcc.fuzzer.reports.plots import CampaignSeries, plot_campaigns, read_plot_data
from ffcc.fuzzer.reports.replay import Replay, SavedInput, Target, replay, saved_inputs
from ffcc.fuzzer.reports.report_html import page
from ffcc.fuzzer.reports.stryker import mutation_report
from ffcc.runtime.abi import LabelDatabase, label_region_start
from ffcc.runtime.files import write_atomic

REPORT_FOLDER = "report"
TRACES = ".traces.npz"              # the labelled build's replay cache
EDGE_TRACES = ".edge-traces.npz"    # the unlabelled build's (--edges-binary)
PLOTS_FOLDER = "plots"
_SYNC_COPY = re.compile(r",sync:([^,]+)")  # in the name of a queue entry imported from a peer


@dataclass(frozen=True)
class Campaign:
    """What a report reads: one instance's directory, or every instance of a sync directory."""

    instances: tuple[OutputDir, ...]
    sync_dir: Path | None = None  # the sync directory, when the report is of its instances

    @property
    def report_dir(self) -> Path:
        """Where the report goes by default: in the instance (OUT/default/report), or for a
        sync directory beside its instances (SYNCDIR/report), in none of them."""
        return (self.sync_dir or self.instances[0].root) / REPORT_FOLDER


def is_instance(directory: Path) -> bool:
    """Whether a sync directory's sub-directory is a fuzzer instance: it holds a campaign
    (queue/ or fuzzer_stats) and the target it ran (cmdline), as ffuzz and afl-fuzz leave them."""
    return ((directory / QUEUE).is_dir() or (directory / FUZZER_STATS).is_file()) \
        and (directory / CMDLINE).is_file()


def find_campaign(path: Path) -> Campaign:
    """The campaign at ``path``: an instance's directory (OUT/default, as afl-plot takes it,
    or OUT/main), OUT holding default/ alone, or a sync directory of instances."""
    if (path / QUEUE).is_dir():
        return Campaign((OutputDir(path.parent, path.name),))
    names = sorted(sub.name for sub in path.iterdir() if is_instance(sub)) if path.is_dir() else []
    single = OutputDir(path)
    if single.queue.is_dir() and set(names) <= {single.root.name}:
        return Campaign((single,))
    if not names:
        raise FuzzerError(f"{path} holds no campaign (no {single.queue}, and no instance "
                          f"directories with {QUEUE}/ or {FUZZER_STATS}, and {CMDLINE})")
    return Campaign(tuple(OutputDir(path, name) for name in names), path)


def _cmdline(outdir: OutputDir) -> tuple[str, ...]:
    """The target argv an instance ran, as its cmdline file has it (empty without one)."""
    try:
        return tuple((outdir.root / CMDLINE).read_text().splitlines())
    except OSError:
        return ()


def _same_target(argv: tuple[str, ...]) -> tuple[str, ...]:
    """What two instances' argvs must agree on: ./prog and prog are one program."""
    return (os.path.normpath(argv[0]), *argv[1:]) if argv else ()


def _cmdline_target(campaign: Campaign) -> tuple[str, ...]:
    """The target every instance ran, from their cmdline files; one line if they differ."""
    named = {outdir.root.name: _cmdline(outdir) for outdir in campaign.instances}
    if len({_same_target(argv) for argv in named.values()}) > 1:
        raise FuzzerError("the instances fuzzed different targets ("
                          + "; ".join(f"{name}: {' '.join(argv) or 'none'}"
                                      for name, argv in named.items())
                          + "): give the target to report on after --")
    first = campaign.instances[0]
    source, argv = first.root / CMDLINE, named[first.root.name]
    if not argv:
        raise FuzzerError(f"{source} names no target: give it after --")
    if not Path(argv[0]).exists():
        raise FuzzerError(f"target {argv[0]} (from {source}) not found: run "
                          f"this where the campaign ran, or give the target after --")
    return argv


def campaign_target(campaign: Campaign, argv: tuple[str, ...] = (),
                    timeout_ms: int | None = None) -> Target:
    """The target the campaign ran (its cmdline) unless ``argv`` names one.  Unless
    ``timeout_ms`` is given, inputs get the campaign's timeout (its instances' longest) but at
    least a second, as afl-showmap gives them: a busy machine must not cut a queue entry's
    trace short."""
    argv = argv or _cmdline_target(campaign)
    check_target(Path(argv[0]))
    timeouts = [outdir.previous_stats().get("exec_timeout", "") for outdir in campaign.instances]
    campaign_timeout = max((int(value) for value in timeouts if value.isdigit()), default=0)
    return Target(TargetCommand(argv), timeout_ms or max(campaign_timeout, DEFAULT_TIMEOUT_MS))


@dataclass(frozen=True)
class InstanceInputs:
    """One instance's part of a parallel campaign."""

    outdir: OutputDir
    inputs: list[SavedInput]  # what it saved itself, in the order it saved them
    imported: int             # queue entries it copied from the other instances (left out)

    @property
    def name(self) -> str:
        return self.outdir.root.name


def instance_inputs(campaign: Campaign) -> list[InstanceInputs]:
    """Each instance's saved inputs, less the queue entries it imported from another instance
    of the campaign (copies of that instance's own).  A single instance keeps everything, named
    as in a report of its own (kind/name); entries imported from elsewhere (-F) stay."""
    if campaign.sync_dir is None:
        return [InstanceInputs(campaign.instances[0], saved_inputs(campaign.instances[0].root), 0)]
    names = {outdir.root.name for outdir in campaign.instances}
    found = []
    for outdir in campaign.instances:
        every = saved_inputs(outdir.root, outdir.root.name)
        own = [saved for saved in every if _copied_from(saved) not in names]
        found.append(InstanceInputs(outdir, own, len(every) - len(own)))
    return found


def _copied_from(saved: SavedInput) -> str | None:
    """The peer a queue entry was imported from (its ``sync:PEER``), None for its own finds."""
    copy = _SYNC_COPY.search(saved.name) if saved.kind == QUEUE else None
    return copy.group(1) if copy else None


def replayed_labels(target: Target, replayed: Replay) -> LabelDatabase | None:
    """The labels of the target and of the labelled shared objects it loaded in the replay."""
    return with_modules(label_database(target.command.binary), replayed.modules)


def edge_end(target: Target, replayed: Replay) -> int:
    """Where the build's edges end in its map: before its label regions, if it has labels."""
    database = replayed_labels(target, replayed)
    return replayed.map_size if database is None \
        else label_region_start(replayed.map_size, database.label_region)


@dataclass(frozen=True)
class InstanceReport:
    """What one instance of a parallel campaign found itself, and the labels that covers."""

    part: InstanceInputs
    labels: list[LabelResult]


@dataclass(frozen=True)
class CampaignReport:
    name: str                      # the target's file name
    target: Target
    database: LabelDatabase
    inputs: list[SavedInput]       # in the order they were saved (every instance's, merged)
    replay: Replay
    labels: list[LabelResult]
    edges: EdgeCoverage
    replay_seconds: float
    campaign: Campaign
    instances: tuple[InstanceReport, ...] = ()  # a sync directory's, each on its own inputs


def _edge_target(target: Target, edges_binary: Path) -> Target:
    check_target(edges_binary)
    return Target(TargetCommand((str(edges_binary), *target.command.argv[1:])), target.timeout_ms)


def _edges(target: Target, labelled: Replay, inputs: list[SavedInput], report_dir: Path,
           edges_binary: Path | None) -> EdgeCoverage:
    """Edges on the labelled build's replay, or on the unlabelled build's (replayed too)."""
    if edges_binary is None:
        return edge_coverage(labelled, edge_end(target, labelled),
                             "the labelled build (its label code's edges included)")
    edge_target = _edge_target(target, edges_binary)
    edge_replay = replay(edge_target, inputs, report_dir / EDGE_TRACES)
    return edge_coverage(edge_replay, edge_end(edge_target, edge_replay), str(edges_binary))


def build_report(campaign: Campaign, target: Target, report_dir: Path,
                 edges_binary: Path | None = None) -> CampaignReport:
    """Replay what is new and gather the results."""
    if label_database(target.command.binary) is None:
        raise FuzzerError(f"{target.command.binary} has no label database: build it with "
                          "ffcc --mcc and/or --wm")
    report_dir.mkdir(parents=True, exist_ok=True)
    parts = instance_inputs(campaign)
    inputs = sorted((saved for part in parts for saved in part.inputs),
                    key=lambda saved: saved.saved_order)
    started = time.monotonic()
    labelled = replay(target, inputs, report_dir / TRACES)
    database = replayed_labels(target, labelled)
    assert database is not None  # the target's own labels at least
    edges = _edges(target, labelled, inputs, report_dir, edges_binary)
    instances = tuple(InstanceReport(part, label_results(database, labelled, part.inputs))
                      for part in parts) if campaign.sync_dir is not None else ()
    return CampaignReport(target.command.binary.name, target, database, inputs, labelled,
                          label_results(database, labelled, inputs), edges,
                          time.monotonic() - started, campaign, instances)


def _series(name: str, outdir: OutputDir, labels: list[LabelResult] | None) -> CampaignSeries:
    """An instance's curves from its plot_data, with the labels its inputs covered when known."""
    if labels is None:
        return CampaignSeries(name, read_plot_data(outdir.plot_data))
    goals = [label for label in labels if not label.pruned]
    return CampaignSeries(name, read_plot_data(outdir.plot_data),
                          [label.first.time_ms / 1000 for label in goals if label.first],
                          len(goals))


def campaign_series(campaign: Campaign, name: str,
                    report: CampaignReport | None) -> list[CampaignSeries]:
    """The curves to plot, for each instance with a plot_data: the campaign's, named ``name``,
    or a sync directory's instances', named name/instance (the instance's name alone when
    ``name`` is empty), each with the labels its own inputs covered when the report is at hand."""
    labels: dict[str, list[LabelResult]] = {}
    if report is not None and campaign.sync_dir is None:
        labels[campaign.instances[0].root.name] = report.labels
    elif report is not None:
        labels.update((instance.part.name, instance.labels) for instance in report.instances)
    return [_series(name if campaign.sync_dir is None else os.path.join(name, outdir.root.name),
                    outdir, labels.get(outdir.root.name))
            for outdir in campaign.instances if outdir.plot_data.exists()]


def write_report(report: CampaignReport, report_dir: Path) -> list[Path]:
    """Write every report file; returns them."""
    stryker = mutation_report(report.labels, report.inputs, list(report.target.command.argv))
    files = {
        report_dir / "mutation.json": json.dumps(stryker, indent=1),
        report_dir / "index.html": page(f"{report.name}: ffuzz report", stryker, report.labels),
        report_dir / "labels.info": tracefile(report.labels, line_hits(report.database,
                                                                       report.replay, report.inputs)),
    }
    for path, text in files.items():
        write_atomic(path, text)
    written = list(files)
    curves = campaign_series(report.campaign,
                             "" if report.campaign.sync_dir else report.name, report)
    if curves:
        written += plot_campaigns(curves, report_dir / PLOTS_FOLDER)
    return written
