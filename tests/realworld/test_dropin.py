"""Drop-in use on real build systems: CC=ffcc builds pass the projects' own tests."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.dropin_table import build_way, differences, ways
from bench.projects import BZIP2, JQ, ZLIB, Project, fresh_copy, run_step
from ffcc.runtime.abi import read_label_db

pytestmark = pytest.mark.realworld


def build_with_ffcc(project: Project, tmp_path, env: dict[str, str] | None = None) -> tuple:
    try:
        tree = fresh_copy(project, tmp_path)
    except (RuntimeError, OSError) as err:
        if os.environ.get("FFCC_REQUIRE_REALWORLD"):
            raise
        pytest.skip(str(err))
    run_step(project.configure.format(cc="ffcc"), tree, env)
    build_log = run_step(project.build, tree, env)[1]
    assert "did not compile" not in build_log  # no fallback to unlabelled code
    return tree, run_step(project.check, tree, env)[1]


def instrumented(path) -> bool:
    return b"__AFL_SHM_ID\0" in path.read_bytes()


def test_zlib_configure_make_test(tmp_path):
    tree, log = build_with_ffcc(ZLIB, tmp_path)
    assert "*** zlib test OK ***" in log and "*** zlib shared test OK ***" in log
    assert instrumented(tree / "example") and instrumented(tree / "examplesh")


def test_zlib_labelled_inside_its_macros_passes_make_test(tmp_path):
    """zlib's inflate is written in statement macros (NEEDBITS, PULLBYTE, ...)."""
    tree, log = build_with_ffcc(ZLIB, tmp_path, {"FFCC_FLAGS": "--mcc --wm --in-macros"})
    assert "*** zlib test OK ***" in log and "*** zlib shared test OK ***" in log
    labels = read_label_db(tree / "example").labels
    in_needbits = [l for l in labels if Path(l.file).name == "inflate.c"
                   and l.original.startswith("bits < (unsigned)(")]
    assert len(in_needbits) > 50


def test_jq_autotools_build_passes_make_check(tmp_path):
    tree, log = build_with_ffcc(JQ, tmp_path)
    assert re.search(r"# FAIL: +0", log) and re.search(r"# PASS: +4", log)
    jqtest = (tree / "tests" / "jqtest.log").read_text()
    passed, total = map(int, re.search(r"(\d+) of (\d+) tests passed", jqtest).groups())
    assert passed == total >= 300
    assert instrumented(tree / "jq")


def test_bzip2_three_ways_agree(tmp_path):
    """bench/dropin_table.py's check, on its cheapest project: bzip2 built by gcc, by ffcc and
    by ffcc with labels (static and libbz2.so), its own test three ways with the same
    counts, no file without labels, and the same .bz2 bytes of a compress/decompress trip."""
    try:
        results = [build_way(BZIP2, way, tmp_path) for way in ways("gcc", "--mcc --wm")]
    except (RuntimeError, OSError) as err:  # no sources here
        if os.environ.get("FFCC_REQUIRE_REALWORLD"):
            raise
        pytest.skip(str(err))
    assert differences(results) == []
    assert results[0].counts == {"pass": 12, "fail": 0}
    assert len(results[2].roundtrip) == 3  # input, -9 and -1 compressions
    assert b".ffcc_labeldb" in (tmp_path / "ffcc-labels" / "bzip2" / "libbz2.so.1.0.8").read_bytes()


def test_the_build_benchmark_runs_only_projects_it_knows():
    """Run without --projects, bench/build_cost_bench.py builds its default list, each by a
    name bench/projects.py (or the bench itself) knows: an unknown one stops it at once."""
    from bench.build_cost_bench import CHOICES, DEFAULT
    assert set(DEFAULT) <= set(CHOICES)
