"""mutation.json: weak-mutation labels as mutants in Stryker's mutation-testing-report-schema.

Each WM label is a mutant: Killed when a saved input covered it (killedBy names the first such
input, a queue entry, crash or hang: the report's "tests", listed under testFiles by folder),
Survived when none did, Ignored when ffcc --prune removed it.  The location spans the original
expression from the label record (1-based line and column; the end is exclusive); the
replacement is the record's text of the mutant (mutants.py), given where the source holds the
original text at that location.  Paths are relative to the sources' common directory
(projectRoot) and every file carries its source, as the viewer shows mutants in it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ffcc.fuzzer.reports.label_coverage import LabelResult, grouped, objectives
from ffcc.fuzzer.reports.mutants import describe
from ffcc.fuzzer.reports.replay import KINDS, SavedInput
from ffcc.runtime.abi import LabelRecord

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 80, "low": 60}  # Stryker's defaults


def location(record: LabelRecord) -> dict[str, dict[str, int]]:
    """Start and (exclusive) end of the record's original expression."""
    line, column = record.line, record.column
    lines = (record.original or " ").split("\n")
    end_column = len(lines[-1]) + (column if len(lines) == 1 else 1)
    return {"start": {"line": line, "column": column},
            "end": {"line": line + len(lines) - 1, "column": end_column}}


def _source_matches(source_lines: list[str], record: LabelRecord) -> bool:
    """Whether the source holds the record's original text where the record says."""
    first = record.line - 1
    original = record.original
    count = original.count("\n") + 1
    if first < 0 or first + count > len(source_lines):
        return False
    text = "\n".join(source_lines[first:first + count])[record.column - 1:]
    return text.startswith(original)


def mutant(label: LabelResult, source_lines: list[str]) -> dict[str, Any]:
    record = label.record
    described = describe(record)
    result: dict[str, Any] = {"id": label.name, "mutatorName": described.group,
                              "description": described.description, "location": location(record)}
    if described.replacement is not None and _source_matches(source_lines, record):
        result["replacement"] = described.replacement
    if label.pruned:
        result.update(status="Ignored", statusReason=f"pruned by ffcc --prune: {label.pruned}")
    elif label.first is not None:
        result.update(status="Killed", killedBy=[label.first.test_id],
                      statusReason=f"killed by {label.hits} saved input(s)")
    else:
        result["status"] = "Survived"
    return result


def project_root(paths: list[str]) -> str:
    return os.path.commonpath([os.path.dirname(path) for path in paths]) if paths else ""


def read_source(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def mutation_report(labels: list[LabelResult], inputs: list[SavedInput],
                    target: list[str]) -> dict[str, Any]:
    """The report as a JSON-ready dict."""
    wm = [label for label in objectives(labels) if label.record.criterion == "wm"]
    by_file = grouped(wm, lambda label: label.record.file)
    root = project_root(list(by_file))
    files = {}
    for path, file_labels in by_file.items():
        source = read_source(path)
        lines = source.split("\n")
        files[os.path.relpath(path, root) if root else path] = {
            "language": "c", "source": source,
            "mutants": [mutant(label, lines) for label in file_labels]}
    tests = {kind: {"tests": [{"id": saved.test_id, "name": saved.name}
                              for saved in inputs if saved.kind == kind]}
             for kind in KINDS if any(saved.kind == kind for saved in inputs)}
    return {"schemaVersion": SCHEMA_VERSION, "thresholds": THRESHOLDS, "projectRoot": root,
            "files": files, "testFiles": tests, "framework": {"name": "ffcc"},
            "config": {"target": target}}
