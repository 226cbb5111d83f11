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
    REPORT_FOLDER,
    build_report,
    campaign_target,
    output_dir,
    series,
    write_report,
)
from ffcc.fuzzer.reports.report_summary import print_summary

SETTINGS = {"help_option_names": ["-h", "--help"]}
WIDE = 120


@click.command(context_settings=SETTINGS)
@click.argument("out", type=click.Path(path_type=Path))
@click.option("-o", "report_dir", type=click.Path(path_type=Path),
              help="Where to write the report (default: OUT/default/report).")
@click.option("--edges-binary", type=click.Path(path_type=Path),
              help="An unlabelled build of the target: count the original program's edges on it.")
@click.option("-t", "timeout_ms", type=click.IntRange(min=5),
              help="Timeout per input in ms (default: the campaign's, at least 1000).")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
def report_command(out: Path, report_dir: Path | None, edges_binary: Path | None,
                   timeout_ms: int | None, target: tuple[str, ...]) -> None:
    """Replay OUT's queue, crashes and hangs on its target (OUT/default/cmdline, or TARGET
    after --) and report the labels they cover: a summary here, and mutation.json
    (Stryker), index.html, labels.info (lcov) and plots in the report directory."""
    outdir = output_dir(out)
    directory = report_dir or outdir.root / REPORT_FOLDER
    report = build_report(outdir, campaign_target(outdir, target, timeout_ms), directory,
                          edges_binary)
    # Tables need more than the 80 columns rich assumes when the output is not a terminal.
    console = Console(width=None if sys.stdout.isatty() else WIDE)
    print_summary(report, console)
    written = write_report(report, outdir, directory)
    console.print(f"report in {directory}: "
                  + ", ".join(str(path.relative_to(directory)) for path in written)
                  + f"\nopen {directory / 'index.html'} in a browser", highlight=False, markup=False)


@click.command(context_settings=SETTINGS)
@click.argument("outs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "plot_dir", type=click.Path(path_type=Path),
              help="Where to write the pictures (default, for one OUT: OUT/default/report/plots).")
def plot_command(outs: tuple[Path, ...], plot_dir: Path | None) -> None:
    """Plot edges, labels covered, executions per second and corpus size over time for one
    or several output directories, one line each (PNG and SVG)."""
    if plot_dir is None and len(outs) > 1:
        raise click.UsageError("several output directories: say where the pictures go with -o")
    campaigns = []
    for out in outs:
        outdir = output_dir(out)
        try:
            report = build_report(outdir, campaign_target(outdir), outdir.root / REPORT_FOLDER)
        except FuzzerError as exc:
            print(f"ffuzz: {out}: no labels plotted: {exc}", file=sys.stderr)
            report = None
        campaigns.append(series(outdir, str(out), report))
    directory = plot_dir or output_dir(outs[0]).root / REPORT_FOLDER / PLOTS_FOLDER
    for path in plot_campaigns(campaigns, directory):
        print(path)


SUBCOMMANDS = {"report": report_command, "plot": plot_command}
