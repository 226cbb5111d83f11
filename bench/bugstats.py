"""Bugs found by fuzzer configurations over repeated campaigns: the statistics, table and plots.

Target-family neutral: bench/lava_bench.py feeds it LAVA-M's campaigns, and a second family
(Magma, say) only has to produce the same ``Run`` records.  A run knows which bug ids it
found and when (seconds from the campaign's start), which of those ids its family counts as
validated, a few campaign figures (execs/s, queue, edges, labels) and, for a family whose
bugs tell reaching a bug from triggering it (Magma's canaries: bench/magma_bench.py), the ids
some saved input reached; this module turns a list of them into medians with min-max,
Mann-Whitney U comparisons between configurations, a Markdown table and one bugs-over-time
plot per program (bugs reached over time too, for such a family).  Every file it writes is
replaced atomically, so a reader never sees half a table while a long matrix is still running.
"""
from __future__ import annotations

import io
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ffcc.runtime.files import write_atomic

# The figures of a run that the table summarises, in its column order: (key, heading).
FIGURES = (("execs_per_sec", "execs/s"), ("queue", "queue"), ("edges", "edges"),
           ("labels_covered", "labels"))


@dataclass
class Run:
    """One campaign of one configuration on one program, as the table and plots need it."""

    program: str
    config: str
    run: int
    seconds: float
    bugs: dict[str, float] = field(default_factory=dict)  # bug id -> first found, s from start
    validated: list[str] = field(default_factory=list)     # the ids of ``bugs`` that count
    figures: dict[str, float | None] = field(default_factory=dict)  # FIGURES' keys
    error: str | None = None                                # why the campaign has no results
    reached: dict[str, float] = field(default_factory=dict)  # bug id -> first reached (Magma)


def spread(values: Sequence[float]) -> tuple[float, float, float] | None:
    """Median, min and max, or None for no values: the one summary every cell shows."""
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def cell(values: Sequence[float], digits: int = 0) -> str:
    """'median (min-max)' of ``values``, or '-' when there are none (a figure the
    configuration has not, such as labels of an unlabelled build)."""
    summary = spread(values)
    if summary is None:
        return "-"
    median, low, high = (f"{v:.{digits}f}" for v in summary)
    return median if low == high else f"{median} ({low}-{high})"


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Mann-Whitney U p-value of two samples of runs; None when either has fewer
    than two runs, where no test can say anything.  Samples that are all one value give 1.0
    rather than scipy's nan: no evidence of a difference."""
    if len(a) < 2 or len(b) < 2:
        return None
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def ok_runs(runs: Iterable[Run], program: str, config: str) -> list[Run]:
    """The runs of one program and configuration that produced results."""
    return [r for r in runs if r.program == program and r.config == config and r.error is None]


def counts(runs: Sequence[Run], validated: bool) -> list[float]:
    """Distinct bugs per run (only the validated ones when ``validated``)."""
    return [float(len(r.validated) if validated else len(r.bugs)) for r in runs]


def reached_counts(runs: Sequence[Run]) -> list[float]:
    """Distinct bugs reached per run."""
    return [float(len(r.reached)) for r in runs]


def figure(runs: Sequence[Run], key: str) -> list[float]:
    """One FIGURES value per run, leaving out runs that have none."""
    return [float(v) for r in runs if (v := r.figures.get(key)) is not None]


def union(ids: Iterable[Iterable[str]]) -> str:
    """How many distinct ids the runs' ``ids`` hold between them, or '-' for no runs."""
    sets = [set(i) for i in ids]
    return str(len(set().union(*sets))) if sets else "-"


def config_rows(runs: Sequence[Run], program: str, configs: Sequence[str],
                validated: bool = True, reached: bool = False) -> list[str]:
    """The Markdown table of one program: a row per configuration.  Without ``validated``
    (a family whose every bug counts) the validated columns give way to the bugs of all
    runs; with ``reached``, the bugs reached per run and over all runs follow."""
    head = ["config", "runs", "bugs",
            *(("validated", "validated, all runs") if validated else ("bugs, all runs",)),
            *(("reached", "reached, all runs") if reached else ()),
            *(name for _, name in FIGURES)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        done = ok_runs(runs, program, config)
        failed = sum(r.program == program and r.config == config and r.error is not None
                     for r in runs)
        cells = [config, f"{len(done)}" + (f" ({failed} failed)" if failed else ""),
                 cell(counts(done, False)),
                 *((cell(counts(done, True)), union(r.validated for r in done)) if validated
                   else (union(r.bugs for r in done),)),
                 *((cell(reached_counts(done)), union(r.reached for r in done)) if reached
                   else ()),
                 *(cell(figure(done, key)) for key, _ in FIGURES)]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def best(runs: Sequence[Run], program: str, configs: Sequence[str]) -> str | None:
    """The configuration of ``configs`` with the most validated bugs (median, then mean): the
    rival a configuration has to beat."""
    scored = [(statistics.median(v), statistics.mean(v), c) for c in configs
              if (v := counts(ok_runs(runs, program, c), True))]
    return max(scored)[2] if scored else None


def comparison(runs: Sequence[Run], program: str, ours: str, theirs: str,
               validated: bool = True, reached: bool = False) -> str:
    """One line: validated and all distinct bugs of two configurations (all only, without
    ``validated``; bugs reached too, with ``reached``), medians and the Mann-Whitney U
    two-sided p-value of each."""
    kinds: list[tuple[Callable[[Sequence[Run]], list[float]], str]] = []
    if validated:
        kinds.append((lambda rs: counts(rs, True), "validated"))
    kinds.append((lambda rs: counts(rs, False), "all" if validated else "triggered"))
    if reached:
        kinds.append((reached_counts, "reached"))
    parts = []
    for count, name in kinds:
        a = count(ok_runs(runs, program, ours))
        b = count(ok_runs(runs, program, theirs))
        if not a or not b:
            return f"- {ours} vs {theirs}: no runs of one of them"
        p = mann_whitney(a, b)
        parts.append(f"{name} {statistics.median(a):g} vs {statistics.median(b):g}, "
                     + ("p n/a (fewer than 2 runs)" if p is None else f"p = {p:.3g}"))
    return f"- {ours} vs {theirs}: " + "; ".join(parts)


def markdown(runs: Sequence[Run], programs: Sequence[str], configs: Sequence[str],
             comparisons: Sequence[tuple[str, str | Sequence[str]]], title: str,
             notes: dict[str, list[str]] | None = None, validated: bool = True,
             reached: bool = False) -> str:
    """The whole table.md: per program a row per configuration, then each comparison of
    ``comparisons``, (ours, theirs) where theirs is one configuration or several, of which
    the best (most validated bugs) is taken, then the program's ``notes`` (the family's
    checks of its builds, say).  ``validated`` and ``reached`` as in config_rows: a family
    whose every bug counts leaves the validated columns out; one that tells reached bugs from
    triggered ones adds them."""
    caption = ("Cells: median (min-max) over runs.  bugs: distinct bug ids triggered; "
               + ("validated: those the family lists as validated; validated, all runs: the "
                  "union over the runs.  " if validated
                  else "bugs, all runs: the union over the runs.  ")
               + ("reached: distinct bug ids some saved input reached (and the union over the "
                  "runs).  " if reached else "")
               + "labels: labels covered on the labelled build.  p: Mann-Whitney U, two-sided.")
    lines = [f"# {title}", "", caption, ""]
    for program in programs:
        lines += [f"## {program}", "",
                  *config_rows(runs, program, configs, validated, reached), ""]
        for ours, theirs in comparisons:
            rival = theirs if isinstance(theirs, str) else best(runs, program, theirs)
            if ours in configs and rival is not None and rival in configs and rival != ours:
                lines.append(comparison(runs, program, ours, rival, validated, reached)
                             + ("" if isinstance(theirs, str) else " (best rival)"))
        extra = (notes or {}).get(program, [])
        lines += [*([""] if lines[-1] else []), *extra, ""] if extra else [""]
    return "\n".join(lines)


def curve(runs: Sequence[Run], horizon: float, points: int = 200, reached: bool = False
          ) -> tuple[list[float], list[float], list[float], list[float]]:
    """Times, and the median, min and max over ``runs`` of distinct bugs found (``reached``:
    reached) by each time."""
    times = [horizon * i / (points - 1) for i in range(points)]
    per_run = [[sum(t <= at for t in (r.reached if reached else r.bugs).values())
                for at in times] for r in runs]
    columns = list(zip(*per_run))
    return (times, [statistics.median(c) for c in columns], [min(c) for c in columns],
            [max(c) for c in columns])


def plot(runs: Sequence[Run], program: str, configs: Sequence[str], path: Path,
         reached: bool = False) -> None:
    """bugs-<program>.png: median distinct bugs over time per configuration, min-max shaded
    (``reached``: the bugs reached instead of those triggered)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for config in configs:
        done = ok_runs(runs, program, config)
        if not done:
            continue
        times, median, low, high = curve(done, max(r.seconds for r in done), reached=reached)
        line, = ax.step(times, median, where="post", label=f"{config} ({len(done)} runs)")
        ax.fill_between(times, low, high, step="post", alpha=0.2, color=line.get_color())
    ax.set_xlabel("seconds")
    what = "distinct bugs reached" if reached else "distinct bugs"
    ax.set_ylabel(what)
    ax.set_title(f"{program}: {what} over time (median, min-max shaded)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_atomic(path, buffer.getvalue())
