"""`ffuzz report` and `ffuzz plot`: the sub-commands that read a campaign instead of running one.

    ffuzz report OUT [-o DIR] [--edges-binary PROG] [-t ms] [-- prog [args] @@]
    ffuzz plot OUT [OUT ...] [-o DIR]

cli.py hands them the command line when its first word is their name.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.reports.plots import plot_campaigns
from ffcc.fuzzer.reports.report import (
    PLOTS_FOLDER,
    build_report,
    campaign_series,
    campaign_target,
    find_campaign,
    write_report,
)
from ffcc.fuzzer.reports.report_summary import print_summary

SETTINGS = {"help_option_names": ["-h", "--help"]}
WIDE = 120


@click.command(context_settings=SETTINGS)
@click.argument("out", type=click.Path(path_type=Path))
@click.option("-o", "report_dir", type=click.Path(path_type=Path),
              help="Where to write the report (default: OUT/default/report; for a sync "
                   "directory of -j or -M/-S instances, OUT/report, beside them).")
@click.option("--edges-binary", type=click.Path(path_type=Path),
              help="An unlabelled build of the target: count the original program's edges on it.")
@click.option("-t", "timeout_ms", type=click.IntRange(min=5),
              help="Timeout per input in ms (default: the campaign's, at least 1000).")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
def report_command(out: Path, report_dir: Path | None, edges_binary: Path | None,
                   timeout_ms: int | None, target: tuple[str, ...]) -> None:
    """Replay OUT's queue, crashes and hangs on its target (OUT/default/cmdline, or TARGET
    after --) and report the labels they cover: a summary here, and mutation.json
    (Stryker), index.html, labels.info (lcov) and plots in the report directory.

    OUT may be a sync directory (ffuzz -j, -M/-S, a cluster; afl-fuzz instances included):
    the report is then of the union of every instance's queue, crashes and hangs (entries
    one imported from another counted once), on the target all their cmdline files name,
    with each instance's own figures, in OUT/report.  OUT/NAME reports one instance alone."""
    campaign = find_campaign(out)
    directory = report_dir or campaign.report_dir
    report = build_report(campaign, campaign_target(campaign, target, timeout_ms), directory,
                          edges_binary)
    # Tables need more than the 80 columns rich assumes when the output is not a terminal.
    console = Console(width=None if sys.stdout.isatty() else WIDE)
    print_summary(report, console)
    written = write_report(report, directory)
    console.print(f"report in {directory}: "
                  + ", ".join(str(path.relative_to(directory)) for path in written)
                  + f"\nopen {directory / 'index.html'} in a browser", highlight=False, markup=False)


@click.command(context_settings=SETTINGS)
@click.argument("outs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "plot_dir", type=click.Path(path_type=Path),
              help="Where to write the pictures (default, for one OUT: its report directory's "
                   "plots/, OUT/default/report/plots or OUT/report/plots).")
def plot_command(outs: tuple[Path, ...], plot_dir: Path | None) -> None:
    """Plot edges, labels covered, executions per second and corpus size over time for one
    or several output directories, one line each (a sync directory: one per instance), as
    PNG and SVG."""
    if plot_dir is None and len(outs) > 1:
        raise click.UsageError("several output directories: say where the pictures go with -o")
    curves = []
    for out in outs:
        campaign = find_campaign(out)
        try:
            report = build_report(campaign, campaign_target(campaign), campaign.report_dir)
        except FuzzerError as exc:
            print(f"ffuzz: {out}: no labels plotted: {exc}", file=sys.stderr)
            report = None
        found = campaign_series(campaign, str(out), report)
        if not found:
            raise FuzzerError(f"{out}: no plot_data to plot")
        curves += found
    directory = plot_dir or find_campaign(outs[0]).report_dir / PLOTS_FOLDER
    for path in plot_campaigns(curves, directory):
        print(path)


SUBCOMMANDS = {"report": report_command, "plot": plot_command}
