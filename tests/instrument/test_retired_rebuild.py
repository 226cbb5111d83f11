"""``ffcc --retired=FILE``: the labels a campaign retired compile to nothing, in a rebuild of
a project build that keeps every other label's id, slot and gate."""

from __future__ import annotations

import shutil

import pytest
from helpers import REPO, ffcc, sample_sources

from ffcc.fuzzer.engine.cmplog import check_cmplog_binary
from ffcc.runtime.abi import RETIRED, read_label_db, write_retired

KEY = ("id", "slot", "gate", "file", "line", "column", "predicate")


@pytest.mark.parametrize("gates", [(), ("--label-gates",)])
def test_a_rebuild_compiles_out_exactly_the_listed_labels(tmp_path, gates) -> None:
    ffcc("--mcc", "--wm", *gates, "-o", f"{tmp_path}/build/", *sample_sources("boundaries"),
         cwd=REPO)
    full = read_label_db(tmp_path / "build/boundaries")
    assert full is not None
    listed = {label.id: label.id % 3 == 0 for label in full.labels if label.id % 2}
    (tmp_path / "lean").mkdir()
    shutil.copyfile(tmp_path / "build/ffcc-build.json", tmp_path / "lean/ffcc-build.json")
    write_retired(tmp_path / "retired.jsonl", full.labels, listed)
    ffcc("--retired=retired.jsonl", "lean/", cwd=tmp_path)
    lean = read_label_db(tmp_path / "lean/boundaries")
    assert lean is not None
    assert [[getattr(label, k) for k in KEY] for label in lean.labels] \
        == [[getattr(label, k) for k in KEY] for label in full.labels]
    assert {label.id for label in lean.labels if label.pruned == RETIRED} == set(listed)
    assert (tmp_path / "lean/boundaries").stat().st_size \
        < (tmp_path / "build/boundaries").stat().st_size, "their code is gone"


def test_a_rebuild_of_a_cmplog_build_logs_comparisons(tmp_path) -> None:
    """A ``-c`` campaign goes on with its lean rebuilds as its cmplog binary too: a project
    build made with --cmplog is rebuilt with it (ffuzz refused the rebuild of Magma's libpng
    harness, which had lost it)."""
    ffcc("--cmplog", "--wm", "-o", f"{tmp_path}/build/", *sample_sources("boundaries"), cwd=REPO)
    full = read_label_db(tmp_path / "build/boundaries")
    assert full is not None
    (tmp_path / "lean").mkdir()
    shutil.copyfile(tmp_path / "build/ffcc-build.json", tmp_path / "lean/ffcc-build.json")
    write_retired(tmp_path / "retired.jsonl", full.labels, {full.labels[0].id: True})
    ffcc("--retired=retired.jsonl", "lean/", cwd=tmp_path)
    check_cmplog_binary(tmp_path / "lean/boundaries")


def test_retired_needs_labels_or_a_build_directory_and_a_list(tmp_path) -> None:
    (tmp_path / "p.c").write_text("int main(int c, char **v) { (void)v; return c > 1; }\n")
    (tmp_path / "list").write_text("not a list\n")
    done = ffcc("--retired=list", "-c", "p.c", cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "ffcc: error: --retired needs labels (--mcc, --wm) or a build directory "
        "(ffcc --retired=FILE build/)"]
    done = ffcc("--wm", "--retired=list", "-c", "p.c", cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "ffcc: error: --retired: list: not an ffcc-retired version 1 list"]
    ffcc("-o", "plain/", "p.c", cwd=tmp_path)
    done = ffcc("--retired=list", "plain/", cwd=tmp_path, check=False)
    assert done.returncode == 2 and "plain/ has no labels to prune or retire" in done.stderr
