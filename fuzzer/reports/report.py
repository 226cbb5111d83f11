"""`ffuzz report`: what a campaign's saved inputs cover, label by label.

The campaign's output directory names the target (default/cmdline), the target names its
label database (ffcc.runtime.abi); every saved input is replayed (replay.py) and the results
are written under OUT/default/report/: mutation.json (Stryker's schema), index.html (its
viewer plus the MCC view), labels.info (lcov), and the plots.  The terminal summary is
report_summary.py's.  Edges are counted on the labelled build's edge region, or, given an
unlabelled build of the same program, on that build's map (the inputs are replayed on it too).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ffcc.fuzzer.engine.config import DEFAULT_TIMEOUT_MS
from ffcc.fuzzer.engine.executor import TargetCommand, check_target
from ffcc.fuzzer.engine.labels import label_database, with_modules
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
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


def output_dir(path: Path) -> OutputDir:
    """The campaign in OUT, also when given as OUT/default (as afl-plot takes it)."""
    root = path.parent if path.name == "default" and not (path / "default").is_dir() else path
    outdir = OutputDir(root)
    if not outdir.queue.is_dir():
        raise FuzzerError(f"{path} holds no campaign (no {outdir.queue})")
    return outdir


def campaign_target(outdir: OutputDir, argv: tuple[str, ...] = (),
                    timeout_ms: int | None = None) -> Target:
    """The target the campaign ran (its cmdline) unless ``argv`` names one.  Unless
    ``timeout_ms`` is given, inputs get the campaign's timeout but at least a second, as
    afl-showmap gives them: a busy machine must not cut a queue entry's trace short."""
    if not argv:
        try:
            argv = tuple((outdir.root / "cmdline").read_text().splitlines())
        except OSError:
            argv = ()
        if not argv:
            raise FuzzerError(f"{outdir.root / 'cmdline'} names no target: give it after --")
        if not Path(argv[0]).exists():
            raise FuzzerError(f"target {argv[0]} (from {outdir.root / 'cmdline'}) not found: run "
                              f"this where the campaign ran, or give the target after --")
    check_target(Path(argv[0]))
    stats_timeout = outdir.previous_stats().get("exec_timeout", "")
    campaign_timeout = int(stats_timeout) if stats_timeout.isdigit() else 0
    return Target(TargetCommand(argv), timeout_ms or max(campaign_timeout, DEFAULT_TIMEOUT_MS))


def replayed_labels(target: Target, replayed: Replay) -> LabelDatabase | None:
    """The labels of the target and of the labelled shared objects it loaded in the replay."""
    return with_modules(label_database(target.command.binary), replayed.modules)


def edge_end(target: Target, replayed: Replay) -> int:
    """Where the build's edges end in its map: before its label regions, if it has labels."""
    database = replayed_labels(target, replayed)
    return replayed.map_size if database is None \
        else label_region_start(replayed.map_size, database.label_region)


@dataclass(frozen=True)
class CampaignReport:
    name: str                      # the target's file name
    target: Target
    database: LabelDatabase
    inputs: list[SavedInput]       # in the order they were saved
    replay: Replay
    labels: list[LabelResult]
    edges: EdgeCoverage
    replay_seconds: float


def _edge_target(target: Target, edges_binary: Path) -> Target:
    check_target(edges_binary)
    return Target(TargetCommand((str(edges_binary), *target.command.argv[1:])), target.timeout_ms)


def build_report(outdir: OutputDir, target: Target, report_dir: Path,
                 edges_binary: Path | None = None) -> CampaignReport:
    """Replay what is new and gather the results."""
    if label_database(target.command.binary) is None:
        raise FuzzerError(f"{target.command.binary} has no label database: build it with "
                          "ffcc --mcc and/or --wm")
    report_dir.mkdir(parents=True, exist_ok=True)
    inputs = saved_inputs(outdir.root)
    started = time.monotonic()
    labelled = replay(target, inputs, report_dir / TRACES)
    database = replayed_labels(target, labelled)
    assert database is not None  # the target's own labels at least
    if edges_binary is None:
        edge_target, edge_replay = target, labelled
    else:
        edge_target = _edge_target(target, edges_binary)
        edge_replay = replay(edge_target, inputs, report_dir / EDGE_TRACES)
    edges = edge_coverage(edge_replay, edge_end(edge_target, edge_replay),
                          "the labelled build (its label code's edges included)" if edges_binary is None
                          else str(edges_binary))
    return CampaignReport(target.command.binary.name, target, database, inputs, labelled,
                          label_results(database, labelled, inputs), edges,
                          time.monotonic() - started)


def series(outdir: OutputDir, name: str, report: CampaignReport | None) -> CampaignSeries:
    """A campaign's curves; labels only when its report is at hand."""
    if report is None:
        return CampaignSeries(name, read_plot_data(outdir.plot_data))
    goals = [label for label in report.labels if not label.pruned]
    return CampaignSeries(name, read_plot_data(outdir.plot_data),
                          [label.first.time_ms / 1000 for label in goals if label.first],
                          len(goals))


def write_report(report: CampaignReport, outdir: OutputDir, report_dir: Path) -> list[Path]:
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
    if outdir.plot_data.exists():
        written += plot_campaigns([series(outdir, report.name, report)], report_dir / PLOTS_FOLDER)
    return written
