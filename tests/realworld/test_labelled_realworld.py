"""Labels on real code: cJSON and jq with every label on behave exactly as without.

Differential: cJSON built plain (gcc) and with --mcc --wm, on 1,000+ generated
inputs, same stdout, stderr and exit status; UBSan: the labelled build reports
nothing the plain build does not; and the projects' own test suites pass.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from helpers import have, run_program

from bench.projects import CJSON, JQ, Project, fresh_copy, run_step
from ffcc.runtime.abi import read_label_db

pytestmark = pytest.mark.realworld
HERE = Path(__file__).resolve().parent
LABELS = {"FFCC_FLAGS": "--mcc --wm"}
TOKENS = [b"{", b"}", b"[", b"]", b'"', b":", b",", b"true", b"false", b"null", b"-0", b"1e308",
          b"0.5", b"\\u00e9", b'"\\ud800"', b"\\n", b" ", b"123456789012345678901234567890"]


def tree_of(project: Project, tmp_path: Path) -> Path:
    try:
        return fresh_copy(project, tmp_path)
    except (RuntimeError, OSError) as err:
        if os.environ.get("FFCC_REQUIRE_REALWORLD"):
            raise
        pytest.skip(str(err))


def generated_inputs(tree: Path, count: int, seed: int = 2026) -> list[bytes]:
    """Seeds from cJSON's own test inputs, then deterministic mutations of them."""
    seeds = [p.read_bytes() for p in sorted((tree / "tests/inputs").glob("test*"))
             if not p.name.endswith(".expected")]
    seeds += [p.read_bytes()[4:] for p in sorted((tree / "fuzzing/inputs").glob("test*"))]
    rng = random.Random(seed)
    cases = list(seeds)
    while len(cases) < count:
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            pos = rng.randint(0, len(data))
            op = rng.random()
            if op < 0.3 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            elif op < 0.6:
                data[pos:pos] = rng.choice(TOKENS)
            elif op < 0.8:
                del data[pos:pos + rng.randint(1, 8)]
            else:
                data = data[:pos] + data[rng.randint(0, len(data)):]
        cases.append(bytes(data))
    return cases


def build_driver(tree: Path, out: Path, compiler: list[str], extra: list[str] = ()) -> Path:
    sources = [str(tree / "cJSON.c"), str(tree / "cJSON_Utils.c"), str(HERE / "cjson_driver.c")]
    out.mkdir(parents=True)
    done = subprocess.run([*compiler, "-O2", f"-I{tree}", *extra, *sources, "-o",
                           str(out / "driver")], check=True, capture_output=True, text=True)
    assert "did not compile" not in done.stderr, done.stderr  # no fallback to unlabelled code
    return out / "driver"


@pytest.mark.parametrize("flags, at_least", [(["--mcc", "--wm"], 1000),
                                             (["--mcc", "--wm", "--in-macros"], 2300)])
def test_cjson_differential_on_generated_inputs(tmp_path, flags, at_least):
    tree = tree_of(CJSON, tmp_path)
    plain = build_driver(tree, tmp_path / "plain", ["gcc"])
    labelled = build_driver(tree, tmp_path / "labelled", ["ffcc", *flags])
    labels = len(read_label_db(tmp_path / "labelled" / "driver").labels)
    assert labels > at_least, "cJSON should carry many labels"
    inputs = generated_inputs(tree, 1000)
    case = tmp_path / "case.json"
    parsed = 0
    for number, data in enumerate(inputs):
        case.write_bytes(data)
        expected = run_program([str(plain), str(case)], timeout=5)
        got = run_program([str(labelled), str(case)], timeout=5)
        assert got == expected, f"input {number} differs: {data[:80]!r}"
        parsed += expected.status == 0
    assert parsed > 100, "the generated inputs should not all be rejected"


UBSAN_REPORT = re.compile(r"^(\S+?):(\d+):\d+: runtime error: (.*)$", re.M)


@pytest.mark.skipif(not have("clang"), reason="clang not installed")
def test_cjson_labels_add_no_ubsan_reports(tmp_path):
    tree = tree_of(CJSON, tmp_path)
    flags = ["-fsanitize=undefined", "-fsanitize-recover=undefined"]  # report all, keep going
    plain = build_driver(tree, tmp_path / "plain", ["clang"], flags)
    labelled = build_driver(tree, tmp_path / "labelled", ["ffcc", "--cc=clang", "--mcc", "--wm"],
                            flags)
    env = {"UBSAN_OPTIONS": "print_stacktrace=0:halt_on_error=0"}
    case = tmp_path / "case.json"
    reports = {"plain": set(), "labelled": set()}
    for data in generated_inputs(tree, 300, seed=7):
        case.write_bytes(data)
        for name, exe in (("plain", plain), ("labelled", labelled)):
            err = run_program([str(exe), str(case)], timeout=5, env=env).stderr.decode(errors="replace")
            reports[name] |= {(Path(f).name, int(line), msg) for f, line, msg in UBSAN_REPORT.findall(err)}
    assert reports["labelled"] <= reports["plain"]


def test_cjson_ctest_passes_with_labels(tmp_path):
    if not have("cmake"):
        pytest.skip("cmake not installed")
    tree = tree_of(CJSON, tmp_path)
    # cJSON's own flags stay on: -std=c89 -pedantic -Werror and many warnings.
    configure = CJSON.configure.format(cc="ffcc").replace(" -DENABLE_CUSTOM_COMPILER_FLAGS=Off", "")
    run_step(configure, tree, LABELS)
    _, build_log = run_step(CJSON.build, tree, LABELS)
    assert "labelled code did not compile" not in build_log
    _, log = run_step(CJSON.check, tree, LABELS)
    passed, total = map(int, re.search(r"(\d+)% tests passed, \d+ tests failed out of (\d+)", log)
                        .groups())
    assert passed == 100 and total >= 19
    assert Path(tree, "build", "cJSON_test.labels.jsonl").exists()


def test_jq_make_check_passes_with_labels(tmp_path):
    tree = tree_of(JQ, tmp_path)
    run_step(JQ.configure.format(cc="ffcc"), tree, LABELS)
    _, build_log = run_step(JQ.build, tree, LABELS)
    fallbacks = build_log.count("labelled code did not compile")
    _, log = run_step(JQ.check, tree, LABELS)
    assert re.search(r"# FAIL: +0", log) and re.search(r"# PASS: +4", log)
    assert (tree / "jq.labels.jsonl").stat().st_size > 0
    assert fallbacks == 0
