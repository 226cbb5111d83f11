"""Pruning is sound on real runs: the samples and cJSON, built with every label, run on
their corpora; no covered label was pruned as infeasible, no label that a run reached and
left uncovered was pruned as trivial; and pruned builds behave exactly like unpruned ones.

Coverage is read from the label region of the map of the *unpruned* build (pruned labels
have no code in the pruned one).  A run reached a label's site when it covered any label of
that site: the ABS / ROR / MCC labels of a site partition its values, so a reached site
almost always shows a covered label.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from forkserver_client import ForkServer, hello_map_size
from helpers import REPO, SAMPLE_NAMES, ffcc, run_program, sample_inputs, sample_sources

from ffcc.runtime.abi import LabelRecord, label_region_start, read_label_db

LABELS = ("--mcc", "--wm", "-O2")


def load_db(program: Path) -> list[LabelRecord]:
    return read_label_db(program).labels


def covered_per_input(program: Path, inputs: list[tuple[str, bytes]], tmp_path: Path
                      ) -> dict[str, set[int]]:
    """Input name -> ids of the labels its run covers, one forkserver for all runs."""
    database = read_label_db(program)
    labels = database.labels
    case = tmp_path / "case"
    server = ForkServer([str(program), str(case)])
    try:
        start = label_region_start(hello_map_size(server.hello), database.label_region)
        covered = {}
        for name, data in inputs:
            case.write_bytes(data)
            run = server.run(kill_after=1.0 if "hang" in name else None)
            covered[name] = {l.id for l in labels if run.map[start + l.slot]}
    finally:
        server.close()
    return covered


def assert_sound(pruned_db: list[LabelRecord], covered: dict[str, set[int]]) -> None:
    site_of = {l.id: (l.file, l.line, l.column, l.original) for l in pruned_db}
    site_labels = defaultdict(set)
    for label_id, site in site_of.items():
        site_labels[site].add(label_id)
    verdict = {l.id: l.pruned for l in pruned_db}
    wrong = []
    for name, hits in covered.items():
        for label_id in hits:
            if verdict[label_id] == "infeasible":
                wrong.append(f"{name} covers infeasible {pruned_db[label_id]}")
        for label_id, why in verdict.items():
            if why == "trivial" and label_id not in hits and site_labels[site_of[label_id]] & hits:
                wrong.append(f"{name} reaches but misses trivial {pruned_db[label_id]}")
    assert not wrong, "\n".join(wrong[:10])


def build_pair(sources: list[str], tmp_path: Path, cwd: Path, *extra: str,
               method: str = "fast") -> tuple[Path, Path]:
    """(unpruned, pruned) builds of one program; the pruned one by ``ffcc --prune build/``."""
    ffcc(*LABELS, *extra, "-o", f"{tmp_path}/full/", *sources, cwd=cwd)
    shutil.copytree(tmp_path / "full", tmp_path / "pruned")
    done = ffcc(f"--prune={method}", f"{tmp_path}/pruned/", cwd=tmp_path)
    assert f"ffcc: pruning ({method})" in done.stderr
    return tmp_path / "full", tmp_path / "pruned"


def same_labels(full: list[LabelRecord], pruned: list[LabelRecord]) -> None:
    strip = lambda db: [replace(l, pruned=None) for l in db]  # noqa: E731
    assert strip(full) == strip(pruned), "re-building for pruning keeps ids and slots"


# gccdiff compiles once or twice per label: one sample keeps the suite short.
@pytest.mark.parametrize("sample, method", [*((name, "fast") for name in SAMPLE_NAMES),
                                            ("temperature", "gccdiff")])
def test_samples_pruning_is_sound_and_pruned_build_behaves_the_same(sample, method, tmp_path):
    full, pruned = build_pair(sample_sources(sample), tmp_path, REPO, method=method)
    full_db, pruned_db = load_db(full / sample), load_db(pruned / sample)
    same_labels(full_db, pruned_db)
    report = json.loads((pruned / "ffcc-prune.json").read_text())
    assert sum(t["before"] - t["after"] for t in report["totals"].values()) == \
        sum(1 for l in pruned_db if l.pruned)
    inputs = [(p.name, p.read_bytes()) for p in sample_inputs(sample)]
    assert_sound(pruned_db, covered_per_input(full / sample, inputs, tmp_path))
    for path in sample_inputs(sample):
        if "hang" in path.name:
            continue
        runs = [run_program([str(b / sample), str(path)]) for b in (full, pruned)]
        assert runs[0] == runs[1], path.name


def cjson_tree() -> Path:
    from bench.projects import CJSON, fetch
    try:
        return fetch(CJSON)
    except (RuntimeError, OSError) as err:
        if os.environ.get("FFCC_REQUIRE_REALWORLD"):
            raise
        pytest.skip(str(err))


def cjson_inputs(tree: Path) -> list[tuple[str, bytes]]:
    """fuzzing/inputs as they are; tests/inputs behind the read fuzzer's 4 option bytes."""
    inputs = [(p.name, p.read_bytes()) for p in sorted((tree / "fuzzing/inputs").iterdir())]
    for path in sorted((tree / "tests/inputs").glob("test*")):
        if not path.name.endswith(".expected"):
            for options in (b"1111", b"0100"):
                inputs.append((f"{path.name}-{options.decode()}",
                               options + path.read_bytes() + b"\0"))
    return inputs


def test_cjson_pruning_is_sound(tmp_path):
    tree = cjson_tree()
    full, pruned = build_pair(["cJSON.c", "fuzzing/cjson_read_fuzzer.c"], tmp_path, tree,
                              "--name=reader")
    full_db, pruned_db = load_db(full / "reader"), load_db(pruned / "reader")
    same_labels(full_db, pruned_db)
    assert sum(1 for l in pruned_db if l.pruned) > 20
    assert_sound(pruned_db, covered_per_input(full / "reader", cjson_inputs(tree), tmp_path))
