"""Pictures of campaigns over time, as afl-plot draws them, one line per campaign.

The numbers come from each campaign's plot_data (AFL++ 4.x columns, which ffuzz writes too):
edges found, executions per second, corpus size; labels covered over time come from the
replay (label_coverage.py): a label counts from the time its first saved input was saved.
Each picture is written as PNG and SVG.  Matplotlib draws on a Figure of its own (no pyplot
state, no display needed), imported only when drawing.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.files import write_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# picture name -> (plot_data column, axis label, whether the column counts things)
METRICS = {
    "edges": ("edges_found", "edges found", True),
    "execs": ("execs_per_sec", "executions per second", False),
    "corpus": ("corpus_count", "corpus entries", True),
}
LABELS_PICTURE = "labels"
FORMATS = ("png", "svg")


@dataclass(frozen=True)
class CampaignSeries:
    """One campaign's curves: plot_data columns by name, seconds on the x axis."""

    name: str
    columns: dict[str, list[float]]
    label_times: list[float] | None = None  # seconds at which each covered label was first lit
    label_goals: int = 0                     # labels that can be covered (not pruned)

    @property
    def seconds(self) -> list[float]:
        return self.columns["relative_time"]


def read_plot_data(path: Path) -> dict[str, list[float]]:
    """plot_data's columns by header name ('%' stripped from percentages)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise FuzzerError(f"cannot read {path}: {exc.strerror}") from None
    if not lines or not lines[0].startswith("#"):
        raise FuzzerError(f"{path}: no header line: not an AFL++ plot_data file")
    names = [name.strip() for name in lines[0].lstrip("# ").split(",")]
    if "relative_time" not in names:
        raise FuzzerError(f"{path}: no relative_time column: not an AFL++ 4.x plot_data file")
    columns: dict[str, list[float]] = {name: [] for name in names}
    for line in lines[1:]:
        values = [value.strip().rstrip("%") for value in line.split(",")]
        if len(values) != len(names):
            continue  # a line being written
        for name, value in zip(names, values):
            columns[name].append(float(value))
    return columns


def _labels_curve(series: CampaignSeries) -> tuple[list[float], list[float]]:
    """Step curve of labels covered, from 0 s to the end of plot_data."""
    times = sorted(series.label_times or [])
    end = max([*series.seconds, *times, 0.0])
    return [0.0, *times, end], [0.0, *range(1, len(times) + 1), float(len(times))]


def _save(figure: Figure, directory: Path, name: str) -> list[Path]:
    written = []
    for fmt in FORMATS:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        path = directory / f"{name}.{fmt}"
        write_atomic(path, buffer.getvalue())
        written.append(path)
    return written


def _figure(title: str, ylabel: str, counts: bool) -> tuple[Figure, Axes]:
    """A figure with one axes; a count (``counts``) gets integer ticks only."""
    # Imported here: matplotlib takes a second to import, which every ffuzz start would pay.
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.set_xlabel("fuzzing time (s)")
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    if counts:
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return figure, axes


def figures(campaigns: list[CampaignSeries]) -> dict[str, Figure]:
    """One picture per metric, by name, each with a line per campaign (labels covered: for the
    campaigns whose labels are known, none without).  Counts are drawn as steps, each sample's
    value until the next sample: plot_data samples them every few seconds, and a straight line
    between two samples would spread a jump found at once over the interval.  A rate
    (executions per second) is drawn as a line."""
    drawn = {}
    for name, (column, ylabel, counts) in METRICS.items():
        figure, axes = _figure(ylabel, ylabel, counts)
        for series in campaigns:
            if column in series.columns:
                axes.plot(series.seconds, series.columns[column], label=series.name,
                          drawstyle="steps-post" if counts else "default")
        axes.legend(loc="best")
        drawn[name] = figure
    with_labels = [series for series in campaigns if series.label_times is not None]
    if with_labels:
        figure, axes = _figure("labels covered", "labels covered", True)
        for series in with_labels:
            x, y = _labels_curve(series)
            axes.plot(x, y, drawstyle="steps-post",
                      label=f"{series.name} ({len(x) - 2} of {series.label_goals})")
        axes.legend(loc="best")
        drawn[LABELS_PICTURE] = figure
    return drawn


def plot_campaigns(campaigns: list[CampaignSeries], directory: Path) -> list[Path]:
    """Write ``figures`` as PNG and SVG in ``directory``; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    return [path for name, figure in figures(campaigns).items()
            for path in _save(figure, directory, name)]
