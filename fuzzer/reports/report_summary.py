"""The terminal summary of `ffuzz report`: rich tables of labels covered, then the scores.

Tables: per criterion and operator, the objectives the labels stand for (mutants for wm,
combinations for mcc; a label whose record lists operators in ``also`` stands for one of
each, so wm can count more mutants than WM labels were built) next to the labels built; per
file and function, labels (total, covered, pruned as infeasible or trivial, uncovered); MCC
combinations per decision (source text escaped: ``a[i]`` is not rich markup); then the
weak-mutation score (killed / (mutants - pruned)), the edges covered, and what was replayed
(with the saved crashes and hangs that no longer crash or hang).  A parallel campaign's
summary starts by saying so, with a table of what each instance found itself.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ffcc.fuzzer.engine.executor import RunStatus
from ffcc.fuzzer.output.outdir import CRASHES, HANGS
from ffcc.fuzzer.reports.label_coverage import (
    FAULT_KINDS,
    Counts,
    LabelResult,
    count,
    decision_of,
    grouped,
    objectives,
)
from ffcc.fuzzer.reports.replay import KINDS, SavedInput
from ffcc.fuzzer.reports.report import CampaignReport
from ffcc.fuzzer.reports.stryker import project_root
from ffcc.runtime.abi import INFEASIBLE, TRIVIAL

FAULT_STATUS = {CRASHES: RunStatus.CRASH, HANGS: RunStatus.TIMEOUT}  # what each did when saved
COUNT_COLUMNS = ("covered", INFEASIBLE, TRIVIAL, "uncovered", "%")  # after what is counted


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _count_cells(counts: Counts) -> list[str]:
    return [str(counts.total), str(counts.covered), str(counts.infeasible), str(counts.trivial),
            str(counts.uncovered), _percent(counts.score)]


def _table(title: str, key: str, counted: str = "labels") -> Table:
    """A counts table: ``key``, then ``counted`` (what its rows count), then COUNT_COLUMNS."""
    table = Table(title=title, title_justify="left")
    table.add_column(key)
    table.add_column(counted, justify="right")
    for column in COUNT_COLUMNS:
        table.add_column(column, justify="right")
    return table


def _add_groups(table: Table, labels: list[LabelResult], key: Callable[[LabelResult], Hashable],
                total_name: str, built: Counter[Hashable] | None = None) -> None:
    """A bold row for all ``labels``, then one per group by ``key`` (unless there is one).
    With ``built`` (labels built, by group name), each row ends with its group's count, the
    bold row with their sum."""
    groups = grouped(labels, key)

    def built_cells(names: Iterable[Hashable]) -> list[str]:
        return [] if built is None else [str(sum(built[name] for name in names))]

    table.add_row(f"[bold]{escape(total_name)}[/]",
                  *(f"[bold]{cell}[/]" for cell in [*_count_cells(count(labels)),
                                                     *built_cells(groups)]))
    for name, group in sorted(groups.items()) if len(groups) > 1 else ():
        table.add_row(f"  {escape(str(name))}", *_count_cells(count(group)), *built_cells([name]))
    table.add_section()


def operator_table(labels: list[LabelResult]) -> Table:
    """Objectives per criterion and operator (what covered and the rest count), then the
    labels built for them: a label counts once, for its record's own operator, and stands
    for one more objective per operator in its ``also``."""
    table = _table("Labels per criterion and operator: the mutants (wm) and combinations (mcc) "
                   "they stand for", "criterion / operator", "mutants or\ncombinations")
    table.add_column("labels\nbuilt", justify="right")
    built = Counter[Hashable](label.record.operator for label in labels)
    for criterion, group in sorted(grouped(objectives(labels),
                                           lambda label: label.record.criterion).items()):
        _add_groups(table, group, lambda label: label.record.operator, criterion, built)
    if any(label.record.also for label in labels):
        table.caption = ("a label stands for its record's operator and for each operator its "
                         "`also` lists (the same predicate, asked for by both), so a row can count "
                         "more mutants or combinations than labels built")
        table.caption_justify = "left"
    return table


def function_table(labels: list[LabelResult]) -> Table:
    root = project_root(sorted({label.record.file for label in labels}))
    table = _table("Labels per file and function", "file / function")
    for path, group in sorted(grouped(labels, lambda label: label.record.file).items()):
        _add_groups(table, group, lambda label: label.record.function or "?",
                    os.path.relpath(path, root) if root else path)
    return table


def decision_table(labels: list[LabelResult]) -> Table | None:
    mcc = [label for label in objectives(labels) if label.record.criterion == "mcc"]
    if not mcc:
        return None
    table = Table(title="MCC combinations per decision", title_justify="left")
    for column in ("where", "decision", "combinations", "covered", "pruned"):
        table.add_column(column, justify="right" if column in ("combinations", "covered", "pruned")
                         else "left")
    for (path, line, column, original), group in grouped(mcc, decision_of).items():
        counts = count(group)
        table.add_row(escape(f"{Path(path).name}:{line}:{column}"), escape(original), str(counts.goals),
                      str(counts.covered), str(counts.infeasible + counts.trivial))
    return table


def score_lines(report: CampaignReport) -> list[str]:
    every = objectives(report.labels)
    wm = count(label for label in every if label.record.criterion == "wm")
    mcc = count(label for label in every if label.record.criterion == "mcc")
    edges = report.edges
    only_faults = sum(label.covered and not label.by_queue for label in report.labels)
    per_kind = {kind: sum(saved.kind == kind for saved in report.inputs) for kind in KINDS}
    lines = []
    if wm.total:
        lines.append(f"weak-mutation score: {wm.covered} killed / ({wm.total} mutants - "
                     f"{wm.total - wm.goals} pruned) = {_percent(wm.score)}%")
    if mcc.total:
        lines.append(f"MCC: {mcc.covered} of {mcc.goals} combinations covered "
                     f"({_percent(mcc.score)}%)")
    lines.append(f"edges: {edges.found} of {edges.total} map bytes of {edges.measured} "
                 f"({_percent(100.0 * edges.found / edges.total if edges.total else None)}%)")
    lines.append(f"labels covered only by {' or '.join(FAULT_KINDS)}: {only_faults}")
    changed = [saved.test_id for saved in report.inputs if saved.kind in FAULT_STATUS
               and report.replay.traces[saved.test_id].status != FAULT_STATUS[saved.kind]]
    if changed:
        lines.append(f"{len(changed)} saved crashes or hangs did not crash or hang when replayed, "
                     f"e.g. {changed[0]}")
    lines.append(f"replayed {report.replay.replayed} new of {len(report.inputs)} saved inputs ("
                 + ", ".join(f"{number} {kind}" for kind, number in per_kind.items())
                 + f") in {report.replay_seconds:.2f} s")
    return lines


def parallel_lines(report: CampaignReport) -> list[str]:
    """What a sync directory's report is of (nothing for a single instance's)."""
    sync_dir = report.campaign.sync_dir
    if sync_dir is None:
        return []
    names = [instance.part.name for instance in report.instances]
    return [f"parallel campaign in {sync_dir}: {len(names)} instance(s) ({', '.join(names)}); "
            f"this report is of the union of their queues, crashes and hangs, each entry "
            f"imported from another instance counted once, at the instance that found it"]


def _found_cells(inputs: list[SavedInput], labels: list[LabelResult], imported: int) -> list[str]:
    """Queue entries, crashes and hangs among ``inputs``, the labels they cover, ``imported``."""
    per_kind = Counter(saved.kind for saved in inputs)
    return [*(str(per_kind[kind]) for kind in KINDS), str(sum(label.covered for label in labels)),
            str(imported)]


def instance_table(report: CampaignReport) -> Table:
    """What each instance of a parallel campaign found itself, and the union (all)."""
    table = Table(title="Instances: what each found itself (imported: queue entries it copied "
                        "from the others, counted where they were found)", title_justify="left")
    table.add_column("instance")
    for column in (*KINDS, "labels covered", "imported"):
        table.add_column(column, justify="right")
    for instance in report.instances:
        table.add_row(escape(instance.part.name),
                      *_found_cells(instance.part.inputs, instance.labels, instance.part.imported))
    table.add_section()
    union = _found_cells(report.inputs, report.labels,
                         sum(instance.part.imported for instance in report.instances))
    table.add_row("[bold]all[/]", *(f"[bold]{cell}[/]" for cell in union))
    return table


def print_summary(report: CampaignReport, console: Console) -> None:
    for line in parallel_lines(report):
        console.print(line, highlight=False, markup=False)
    if report.instances:
        console.print(instance_table(report))
    console.print(operator_table(report.labels))
    console.print(function_table(report.labels))
    decisions = decision_table(report.labels)
    if decisions is not None:
        console.print(decisions)
    for line in score_lines(report):
        console.print(line, highlight=False, markup=False)
