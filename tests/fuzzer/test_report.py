"""`ffuzz report` and `ffuzz plot` on a sample campaign: what the report says is covered is
what afl-showmap sees, and each output opens in the tool made for it (jsonschema with
Stryker's schema, genhtml, Chromium with the vendored viewer, image files)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import MAGIC_C, build, ffuzz_env
from helpers import REPO, ffcc, have, sample_sources
from rich.console import Console

from ffcc.fuzzer.engine.executor import RunStatus, TargetCommand
from ffcc.fuzzer.reports.label_coverage import LabelResult, objectives
from ffcc.fuzzer.reports.mutants import Mutant, describe
from ffcc.fuzzer.reports.replay import ReplayExecutor, Trace
from ffcc.fuzzer.reports.report_summary import decision_table, operator_table
from ffcc.fuzzer.reports.stryker import mutation_report
from ffcc.runtime.abi import LabelRecord, label_region_start, read_label_db

SCHEMA = Path(__file__).parent / "data" / "mutation-testing-report-schema.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The == 50 reading the sample traps on: only it kills `>=` -> `>` (wm.ror.ge_gt).
CRASH = REPO / "samples/temperature/triggers/exactly-50C"


def ffuzz(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(["ffuzz", *args], capture_output=True, text=True, env=ffuzz_env(),
                          cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A short campaign on the labelled temperature sample, plus the crash it rarely finds
    that soon, saved as ffuzz saves crashes; and an unlabelled build of the same sample."""
    tmp = tmp_path_factory.mktemp("report")
    ffcc("--mcc", "--wm", "-o", f"{tmp}/build/", *sample_sources("temperature"), cwd=REPO)
    ffcc("-o", f"{tmp}/plain/", *sample_sources("temperature"), cwd=REPO)
    out = tmp / "out"
    ffuzz("-i", str(REPO / "samples/temperature/seeds"), "-o", str(out), "-E", "3000",
          "--seed", "7", "--", str(tmp / "build/temperature"), "@@")
    crashes = out / "default/crashes"
    if not any(crashes.glob("id:*")):
        shutil.copyfile(CRASH, crashes / "id:000000,sig:08,src:000000,time:999999,execs:1,op:havoc")
    return {"tmp": tmp, "out": out, "binary": tmp / "build/temperature",
            "plain": tmp / "plain/temperature"}


@pytest.fixture(scope="module")
def report(campaign: dict[str, Path]) -> dict[str, object]:
    done = ffuzz("report", str(campaign["out"]))
    directory = campaign["out"] / "default/report"
    return {"stdout": done.stdout, "dir": directory,
            "json": json.loads((directory / "mutation.json").read_text())}


def saved_files(out: Path) -> list[Path]:
    return [path for kind in ("queue", "crashes", "hangs")
            for path in sorted((out / "default" / kind).glob("id:*"))]


def showmap(binary: Path, case: Path, tmp: Path) -> tuple[dict[int, int], int]:
    """afl-showmap's map of one run: {map index: value}, and the map size the target asked
    for (printed unless AFL_QUIET)."""
    env = {key: value for key, value in ffuzz_env().items() if key != "AFL_QUIET"}
    shown = subprocess.run(["afl-showmap", "-o", str(tmp / "map"), "-m", "none", "--",
                            str(binary), str(case)], capture_output=True, text=True, env=env)
    size = re.search(r"map size (\d+)", shown.stdout + shown.stderr)
    assert size, shown.stdout + shown.stderr
    entries = dict(line.split(":") for line in (tmp / "map").read_text().split())
    return {int(index): int(value) for index, value in entries.items()}, int(size.group(1))


def branch_hits(info: str) -> dict[int, int]:
    """label id -> inputs, from labels.info's BRDA lines."""
    return {int(branch): int(taken) for branch, taken in
            re.findall(r"^BRDA:\d+,0,(\d+),(\d+)$", info, re.M)}


@pytest.mark.skipif(not have("afl-showmap"), reason="AFL++ not installed")
def test_covered_labels_are_the_slots_afl_showmap_lights(campaign, report):
    database = read_label_db(campaign["binary"])
    assert database is not None
    label_of_slot = {label.slot: label.id for label in database.labels}
    expected: dict[int, int] = {}
    for case in saved_files(campaign["out"]):
        lit, map_size = showmap(campaign["binary"], case, campaign["tmp"])
        start = label_region_start(map_size, database.label_region)
        for index in lit:
            if index >= start:
                label = label_of_slot[index - start]
                expected[label] = expected.get(label, 0) + 1
    hits = branch_hits((report["dir"] / "labels.info").read_text())
    assert {label: n for label, n in hits.items() if n} == expected
    crash_only = next(label.id for label in database.labels if label.operator == "wm.ror.ge_gt")
    assert expected.get(crash_only), "the crash's label must count"


def test_summary_tables_and_scores(report):
    text = report["stdout"]
    for heading in ("Labels per criterion and operator", "Labels per file and function",
                    "MCC combinations per decision", "wm.ror.ge_gt", "fan_speed_for"):
        assert heading in text
    assert re.search(r"weak-mutation score: \d+ killed / \(\d+ mutants - 0 pruned\) = [\d.]+%", text)
    assert re.search(r"edges: \d+ of \d+ map bytes", text)
    assert re.search(r"labels covered only by crashes or hangs: [1-9]", text)


def test_mutation_json_validates_against_strykers_schema(report):
    jsonschema = pytest.importorskip("jsonschema")
    stryker = report["json"]
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(stryker)
    mutants = [m for file in stryker["files"].values() for m in file["mutants"]]
    tests = {t["id"] for file in stryker["testFiles"].values() for t in file["tests"]}
    assert {m["status"] for m in mutants} == {"Killed", "Survived"}
    assert all(set(m["killedBy"]) <= tests for m in mutants if m["status"] == "Killed")
    assert any(m.get("killedBy", [""])[0].startswith("crashes/") for m in mutants), \
        "the == 50 mutant is killed by the crash"
    ge_gt = [m for m in mutants if m["description"].startswith("wm.ror.ge_gt:")]
    assert [m.get("replacement") for m in ge_gt] == ["current_temp > TEMPERATURE_LIMIT"]
    hits = branch_hits((report["dir"] / "labels.info").read_text())
    labels = {m["id"]: int(m["id"].split(":")[0]) for m in mutants}  # LABEL[:OPERATOR]
    assert {labels[m["id"]] for m in mutants if m["status"] == "Killed"} == \
        {label for label, n in hits.items() if n} & set(labels.values())


@pytest.mark.skipif(not have("genhtml"), reason="lcov not installed")
def test_genhtml_renders_the_tracefile(report, tmp_path):
    done = subprocess.run(["genhtml", "--branch-coverage", "-o", str(tmp_path / "html"),
                           str(report["dir"] / "labels.info")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr and "ERROR" not in done.stderr, done.stderr
    page = next((tmp_path / "html").rglob("temperature.c.gcov.html")).read_text()
    assert "Branch 1 was" in page  # label 1's branch, named by its id


def chromium(*args: str, profile: Path) -> str:
    """Headless Chromium, offline, with a fresh profile; its stdout."""
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, check=True, timeout=120).stdout


# Appended to a copy of the page: writes the text the viewer rendered into its shadow roots
# into the light DOM, where --dump-dom shows it.
PROBE = """<script>
function deepText(node, out) {
  if (node.nodeType === Node.TEXT_NODE && node.textContent.trim()) out.push(node.textContent.trim());
  if (node.shadowRoot) deepText(node.shadowRoot, out);
  for (const child of node.childNodes) deepText(child, out);
  return out;
}
window.addEventListener('load', () => setTimeout(() => {
  const probe = document.createElement('pre');
  probe.id = 'probe';
  probe.textContent = deepText(document.querySelector('mutation-test-report-app'), []).join('\\n');
  document.body.appendChild(probe);
}, 1000));
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_html_shows_the_mutants_in_chromium(report, tmp_path):
    page = (report["dir"] / "index.html").read_text()
    assert "http://" not in page.split("<script src=")[0] and "<link" not in page
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", f"file://{probed}#mutant/temperature.c", profile=tmp_path / "p1")
    rendered = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert rendered, "the viewer did not render"
    text = rendered.group(1)
    mutants = [m for f in report["json"]["files"].values() for m in f["mutants"]]
    killed = sum(m["status"] == "Killed" for m in mutants)
    assert f"Killed\n(\n{killed}\n)" in text  # the file view's filter buttons
    assert "fan_speed_for" in text and "ROR Survived" in text  # the source, with its mutants

    image_module = pytest.importorskip("PIL.Image")
    shot = tmp_path / "shot.png"
    chromium("--window-size=1280,900", f"--screenshot={shot}",
             f"file://{report['dir'] / 'index.html'}#mutant/temperature.c", profile=tmp_path / "p2")
    image = np.asarray(image_module.open(shot).convert("RGB"), dtype=int)
    red, green, blue = image[..., 0], image[..., 1], image[..., 2]
    # The score bar: killed in green, survived in red, each a solid block of pixels.
    assert np.count_nonzero((green > 140) & (red < 60) & (blue < 100)) > 1000
    assert np.count_nonzero((red > 200) & (green < 40) & (blue < 40)) > 200


def test_report_replays_only_new_inputs(campaign, report, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(campaign["out"], out)
    again = ffuzz("report", str(out)).stdout
    assert "replayed 0 new of" in again
    first = sorted((out / "default/queue").glob("id:*"))[0]
    shutil.copyfile(first, out / "default/queue" / "id:999999,src:000000,time:5,execs:9,op:havoc")
    assert "replayed 1 new of" in ffuzz("report", str(out)).stdout


# A persistent target reading shared-memory test cases, so ffcc runs it in batches: crashes on
# "PQ", hangs on "PH", else lights edges that depend on its first bytes; it leaves its loop
# every 5 cases, so a replay also goes on in fresh children between crashes.
REPLAY_C = r"""
#include <stdlib.h>
static volatile int sink;
__AFL_FUZZ_INIT();
int main(void) {
  __AFL_INIT();
  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
  while (__AFL_LOOP(5)) {
    int n = __AFL_FUZZ_TESTCASE_LEN;
    if (n > 1 && buf[0] == 'P') {
      if (buf[1] == 'Q') abort();
      if (buf[1] == 'H') for (;;) {}
    }
    if (n > 0 && buf[0] == 'A') n++;
    if (n > 1 && buf[1] == '1') n--;
    if (n > 2) n *= 2;
    sink = n;
  }
  return 0;
}
"""
# Ordinary inputs, crashes (PQ; FUZZ for MAGIC_C) and hangs (PH; a fifth byte H for MAGIC_C),
# crashes next to each other and at the ends of native calls (ReplayExecutor.CHUNK = 4 below).
MIXED = [b"A", b"PQ", b"B1", b"PH", b"CCC", b"PQ", b"", b"FUZZ", b"PQ", b"A1", b"FUZZ!", b"AAAAH",
         b"xyz", b"PA"]


HANG_MS = 1000  # an ordinary case's fresh child must start within it on a loaded machine


@pytest.mark.parametrize(("kind", "source", "args", "crash", "hang"), [
    ("batches", REPLAY_C, (), (b"PQ",), (b"PH",)),
    ("forkserver", MAGIC_C, ("@@",), (b"FUZZ", b"FUZZ!"), (b"AAAAH",)),
], ids=["batches", "forkserver"])
def test_replay_in_batches_is_replay_one_at_a_time(kind, source, args, crash, hang, tmp_path,
                                                  monkeypatch):
    binary = build(source, f"replay_{kind}", tmp_path, compiler="ffcc")
    monkeypatch.setattr(ReplayExecutor, "CHUNK", 4)

    def replayed(each: bool) -> list[Trace]:
        executor = ReplayExecutor(TargetCommand((str(binary), *args)), tmp_path / ".cur_input",
                                  HANG_MS, seed=0)
        try:
            assert (executor.batch_size() > 1) == (kind == "batches")
            return [executor.trace(data) for data in MIXED] if each else executor.traces(MIXED)
        finally:
            executor.close()

    together, alone = replayed(each=False), replayed(each=True)
    expected = [RunStatus.CRASH if data in crash else RunStatus.TIMEOUT if data in hang
                else RunStatus.OK for data in MIXED]
    assert [trace.status for trace in together] == expected
    assert [trace.status for trace in alone] == expected
    for data, batched, single in zip(MIXED, together, alone, strict=True):
        assert batched.indices.tolist() == single.indices.tolist(), data
        assert len(batched.indices), data  # every input ran, the ones after a crash included
    assert len({tuple(trace.indices) for trace in together}) > 2


def test_edges_of_the_unlabelled_build(campaign, tmp_path):
    text = ffuzz("report", str(campaign["out"]), "-o", str(tmp_path / "r"),
                 "--edges-binary", str(campaign["plain"])).stdout
    found, total = map(int, re.search(r"edges: (\d+) of (\d+) map bytes of \S*plain", text).groups())
    assert 0 < found <= total
    assert (tmp_path / "r/mutation.json").exists()


def test_plot_compares_output_dirs(campaign, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(campaign["out"], other)
    listed = ffuzz("plot", str(campaign["out"]), str(other), "-o", str(tmp_path / "plots")).stdout
    for name in ("edges", "labels", "execs", "corpus"):
        assert (tmp_path / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert b"<svg" in (tmp_path / "plots" / f"{name}.svg").read_bytes()[:1000]
        assert f"{name}.png" in listed


def test_fuzzing_command_line_is_unchanged():
    done = subprocess.run(["ffuzz", "-h"], capture_output=True, text=True)
    assert done.returncode == 0 and "-i" in done.stdout and "Fuzz TARGET" in done.stdout


def test_a_mutant_is_the_text_its_record_shows():
    """ffcc writes each mutant's text in the record (``mutants``): the report takes it as it is."""
    record = LabelRecord(0, 0, operator="wm.ror.lt_le", original="a - -b < c",
                         predicate="a - -b == c", mutants={"wm.ror.lt_le": "a - -b <= c"})
    assert describe(record) == Mutant(
        "ROR", "a - -b <= c", "wm.ror.lt_le: a - -b < c replaced by a - -b <= c; "
        "killed when a - -b == c")


def test_a_shared_label_shows_the_mutant_of_each_objective():
    shared = LabelRecord(4, 16, "/src/a.c", "mcc", "mcc", also=("wm.cor.and_lhs",),
                         original="a && b", predicate="(a) && !(b)",
                         mutants={"wm.cor.and_lhs": "a"})
    cor = objectives([LabelResult(shared, 1, None, False)])[1]
    assert describe(cor.record).replacement == "a"


def test_a_record_of_an_older_ffcc_gives_a_mutant_without_replacement():
    """Databases written before records carried ``mutants``: the mutant is described from the
    record's operator id, original text and kill condition, with no replacement."""
    record = LabelRecord.from_json(json.dumps({
        "id": 0, "slot": 0, "criterion": "wm", "operator": "wm.abs.neg", "original": "n + 1",
        "predicate": "n > 0"}))
    assert describe(record) == Mutant("ABS", None, "wm.abs.neg: mutates n + 1; killed when n > 0")


def test_source_text_in_the_summary_is_not_markup():
    records = [LabelRecord(i, 12 + i, "/src/a.c", "mcc", "mcc", line=3, column=7, function="f",
                           original="a[i] && b[i]", predicate="x") for i in range(2)]
    console = Console(record=True, width=120)
    console.print(decision_table([LabelResult(record, i, None, False)
                                  for i, record in enumerate(records)]))
    assert "a[i] && b[i]" in console.export_text()


def test_a_label_shared_by_operators_counts_for_each():
    """An MCC combination that is also a COR mutant is one label, two objectives: the COR
    count, the weak-mutation score and the mutant list include it."""
    shared = LabelRecord(4, 16, "/src/a.c", "mcc", "mcc", also=("wm.cor.and_lhs",), line=3,
                         column=7, function="f", original="a && b", predicate="a && !b")
    labels = [LabelResult(shared, 1, None, True)]
    every = objectives(labels)
    assert [(o.name, o.record.criterion, o.record.operator) for o in every] == \
        [("4", "mcc", "mcc"), ("4:wm.cor.and_lhs", "wm", "wm.cor.and_lhs")]
    assert all(o.covered for o in every) and every[1].record.also == ()
    console = Console(record=True, width=120)
    console.print(operator_table(labels))
    rows = [line.split("│") for line in console.export_text().splitlines() if "│" in line]
    assert [(row[1].strip(), row[2].strip(), row[3].strip()) for row in rows] == \
        [("mcc", "1", "1"), ("wm", "1", "1")]  # criterion, labels, covered
    report = mutation_report(labels, [], ["prog"])
    assert [m["id"] for m in report["files"]["a.c"]["mutants"]] == ["4:wm.cor.and_lhs"]
