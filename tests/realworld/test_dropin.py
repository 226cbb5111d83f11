"""Drop-in use on real build systems: CC=ffcc builds pass the projects' own tests."""

from __future__ import annotations

import os
import re

import pytest

from bench.projects import JQ, ZLIB, Project, fresh_copy, run_step

pytestmark = pytest.mark.realworld


def build_with_ffcc(project: Project, tmp_path) -> tuple:
    try:
        tree = fresh_copy(project, tmp_path)
    except (RuntimeError, OSError) as err:
        if os.environ.get("FFCC_REQUIRE_REALWORLD"):
            raise
        pytest.skip(str(err))
    run_step(project.configure.format(cc="ffcc"), tree)
    run_step(project.build, tree)
    return tree, run_step(project.check, tree)[1]


def instrumented(path) -> bool:
    return b"__AFL_SHM_ID\0" in path.read_bytes()


def test_zlib_configure_make_test(tmp_path):
    tree, log = build_with_ffcc(ZLIB, tmp_path)
    assert "*** zlib test OK ***" in log and "*** zlib shared test OK ***" in log
    assert instrumented(tree / "example") and instrumented(tree / "examplesh")


def test_jq_autotools_build_passes_make_check(tmp_path):
    tree, log = build_with_ffcc(JQ, tmp_path)
    assert re.search(r"# FAIL: +0", log) and re.search(r"# PASS: +4", log)
    jqtest = (tree / "tests" / "jqtest.log").read_text()
    passed, total = map(int, re.search(r"(\d+) of (\d+) tests passed", jqtest).groups())
    assert passed == total >= 300
    assert instrumented(tree / "jq")
