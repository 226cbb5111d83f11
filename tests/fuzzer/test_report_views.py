"""`ffuzz report` and `ffuzz plot` on parallel campaigns (a real `ffuzz -j 2` one and a sync
directory made by hand, with an afl-fuzz-like instance), the operator table's mutants next to
the labels built, the page showing killed mutants at first sight, and plots drawn as steps."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env
from helpers import REPO, ffcc, sample_sources
from rich.console import Console

from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.reports.label_coverage import LabelResult
from ffcc.fuzzer.reports.plots import CampaignSeries, figures
from ffcc.fuzzer.reports.report import campaign_series, find_campaign
from ffcc.fuzzer.reports.report_summary import operator_table
from ffcc.runtime.abi import LabelRecord, read_label_db

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SEEDS = REPO / "samples/temperature/seeds"
CRASH = REPO / "samples/temperature/triggers/exactly-50C"  # kills `>=` -> `>` (wm.ror.ge_gt)
CRASH_NAME = "id:000000,sig:08,src:000000,time:500,execs:900,op:havoc"


def ffuzz(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ffuzz", *args], capture_output=True, text=True, env=ffuzz_env(),
                          timeout=600)
    assert (done.returncode == 0) == ok, done.stderr[-3000:]
    return done


def table_rows(text: str, first: str) -> dict[str, list[str]]:
    """The cells of a rich table's body rows, by first cell, from the row starting ``first``
    to the end of that table."""
    rows: dict[str, list[str]] = {}
    for line in text[text.index(first):].splitlines():
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temperature sample built with MCC and weak-mutation labels."""
    tmp = tmp_path_factory.mktemp("views")
    ffcc("--mcc", "--wm", "-o", f"{tmp}/build/", *sample_sources("temperature"), cwd=REPO)
    return tmp / "build/temperature"


@pytest.fixture(scope="module")
def parallel(build: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A real two-instance campaign (ffuzz -j 2, each instance bounded by executions, syncing
    every 0.2 s so that they import each other's finds) and its report."""
    out = tmp_path_factory.mktemp("parallel") / "out"
    ffuzz("-j", "2", "-E", "3000", "--seed", "7", "--sync-seconds", "0.2", "-i", str(SEEDS),
          "-o", str(out), "--", str(build), "@@")
    return {"out": out, "stdout": ffuzz("report", str(out)).stdout}


def instance_files(instance: Path, kind: str) -> list[Path]:
    return sorted((instance / kind).glob("id:*"))


def headline_mutant(build: Path, report: Path) -> dict[str, object]:
    """mutation.json's mutant of temperature.c's `>=` -> `>`, by its label's id."""
    database = read_label_db(build)
    assert database is not None
    label = next(label.id for label in database.labels if label.operator == "wm.ror.ge_gt")
    stryker = json.loads((report / "mutation.json").read_text())
    return next(mutant for mutant in stryker["files"]["temperature.c"]["mutants"]
                if mutant["id"] == str(label))


def test_a_j2_campaign_is_reported_as_the_union_of_its_instances(parallel):
    out, text = parallel["out"], parallel["stdout"]
    assert f"parallel campaign in {out}: 2 instance(s) (main, sec1)" in text
    assert f"report in {out}/report:" in text and not (out / "main/report").exists()
    rows = table_rows(text, "Instances")
    union = {"queue": 0, "crashes": 0, "hangs": 0}
    for name in ("main", "sec1"):
        queue = instance_files(out / name, "queue")
        imported = sum(",sync:" in path.name for path in queue)
        found = {"queue": len(queue) - imported,
                 **{kind: len(instance_files(out / name, kind)) for kind in ("crashes", "hangs")}}
        assert rows[name] == [*map(str, found.values()), rows[name][3], str(imported)]
        assert int(rows[name][3]) <= int(rows["all"][3])
        union = {kind: union[kind] + found[kind] for kind in union}
    assert rows["all"][:3] == [*map(str, union.values())]
    stryker = json.loads((out / "report/mutation.json").read_text())
    tests = [test["id"] for folder in stryker["testFiles"].values() for test in folder["tests"]]
    assert len(tests) == len(set(tests)) == sum(union.values())
    assert {test.split("/")[0] for test in tests} == {"main", "sec1"}
    assert not any(",sync:" in test for test in tests)
    assert (out / "report/labels.info").read_text().startswith("TN:")
    assert (out / "report/plots/labels.png").exists()


def test_the_operator_table_counts_mutants_and_labels_built(parallel, build):
    """wm counts every mutant mutation.json lists, and the WM labels ffcc built beside."""
    rows = table_rows(parallel["stdout"], "Labels per criterion and operator")
    stryker = json.loads((parallel["out"] / "report/mutation.json").read_text())
    mutants = sum(len(file["mutants"]) for file in stryker["files"].values())
    database = read_label_db(build)
    assert database is not None
    built = sum(label.criterion == "wm" for label in database.labels)
    assert rows["wm"][0] == str(mutants) and rows["wm"][-1] == str(built)
    assert mutants > built, "temperature.c has labels that are two mutants (also)"


def test_a_sync_dir_report_replays_only_new_files(parallel, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(parallel["out"], out)
    total = re.search(r"replayed \d+ new of (\d+)", parallel["stdout"]).group(1)
    assert f"replayed 0 new of {total} " in ffuzz("report", str(out)).stdout
    first = instance_files(out / "sec1", "queue")[0]
    shutil.copyfile(first, out / "sec1/queue/id:999999,src:000000,time:5,execs:9,op:havoc")
    assert "replayed 1 new of" in ffuzz("report", str(out)).stdout


def instance(root: Path, name: str, target: Path, files: dict[str, Path]) -> Path:
    """A fuzzer's instance directory as ffuzz and afl-fuzz leave it: cmdline, fuzzer_stats,
    queue/, crashes/, hangs/, with ``files`` (kind/name -> content's file) in them."""
    directory = root / name
    for kind in ("queue", "crashes", "hangs"):
        (directory / kind).mkdir(parents=True)
    (directory / "cmdline").write_text(f"{target}\n@@\n")
    (directory / "fuzzer_stats").write_text("exec_timeout      : 200\n")
    for path, source in files.items():
        shutil.copyfile(source, directory / path)
    return directory


@pytest.fixture(scope="module")
def by_hand(build: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A sync directory made by hand: ffuzz-like instance a, afl-fuzz-like b with the crash and
    a copy of a's second entry imported from it, and a directory that is no instance."""
    sync = tmp_path_factory.mktemp("by-hand") / "sync"
    seeds = sorted(SEEDS.iterdir())
    instance(sync, "a", build, {"queue/id:000000,time:0,execs:0,orig:one": seeds[0],
                                "queue/id:000001,src:000000,time:100,execs:50,op:havoc": seeds[1]})
    instance(sync, "b", build, {"queue/id:000000,time:0,execs:0,orig:two": seeds[2],
                                "queue/id:000001,sync:a,src:000001,+cov": seeds[1],
                                f"crashes/{CRASH_NAME}": CRASH})
    (sync / "notes/queue").mkdir(parents=True)  # no cmdline: not an instance
    return {"sync": sync, "stdout": ffuzz("report", str(sync)).stdout}


def covered_branches(info: Path) -> int:
    return len(re.findall(r"^BRDA:\d+,0,\d+,[1-9]\d*$", info.read_text(), re.M))


def test_a_hand_made_sync_dir_with_an_afl_instance(by_hand, build, tmp_path):
    sync, text = by_hand["sync"], by_hand["stdout"]
    rows = table_rows(text, "Instances")
    assert list(rows) == ["a", "b", "all"]
    assert rows["a"][:3] + rows["a"][4:] == ["2", "0", "0", "0"]
    assert rows["b"][:3] + rows["b"][4:] == ["1", "1", "0", "1"]
    assert rows["all"][:3] + rows["all"][4:] == ["3", "1", "0", "1"]
    assert rows["all"][3] == str(covered_branches(sync / "report/labels.info"))
    alone = ffuzz("report", str(sync / "a"), "-o", str(tmp_path / "a")).stdout
    assert "parallel campaign" not in alone and "Instances" not in alone
    assert rows["a"][3] == str(covered_branches(tmp_path / "a/labels.info"))
    assert headline_mutant(build, sync / "report")["killedBy"] == [f"b/crashes/{CRASH_NAME}"]


def test_instances_with_different_targets_need_one_given(by_hand, build, tmp_path):
    sync = tmp_path / "sync"
    shutil.copytree(by_hand["sync"], sync)
    other = tmp_path / "other/temperature"
    other.parent.mkdir()
    shutil.copy2(build, other)
    (sync / "b/cmdline").write_text(f"{other}\n@@\n")
    refused = ffuzz("report", str(sync), ok=False).stderr
    assert refused.count("\n") == 1 and f"a: {build} @@" in refused and f"b: {other} @@" in refused
    assert "Instances" in ffuzz("report", str(sync), "--", str(build), "@@").stdout


def test_which_directories_are_campaigns(tmp_path):
    single = tmp_path / "single"
    (single / "default/queue").mkdir(parents=True)
    assert find_campaign(single).report_dir == single / "default/report"
    assert find_campaign(single / "default").report_dir == single / "default/report"
    sync = tmp_path / "sync"
    for name in ("main", "sec1"):
        (sync / name / "queue").mkdir(parents=True)
        (sync / name / "cmdline").write_text("prog\n")
    (sync / "report").mkdir()  # an earlier report's, beside the instances
    campaign = find_campaign(sync)
    assert [outdir.root.name for outdir in campaign.instances] == ["main", "sec1"]
    assert campaign.report_dir == sync / "report"
    assert find_campaign(sync / "sec1").report_dir == sync / "sec1/report"
    with pytest.raises(FuzzerError, match="holds no campaign"):
        find_campaign(tmp_path / "nothing")


# Appended to a copy of the page: writes into the light DOM, where --dump-dom shows it, the
# state of each filter checkbox and the mutants whose dots the file view draws (the shown ones).
PROBE = """<script>
function deep(node, out) {
  if (node.shadowRoot) deep(node.shadowRoot, out);
  for (const child of node.children) { out.push(child); deep(child, out); }
  return out;
}
window.addEventListener('load', () => setTimeout(() => {
  const all = deep(document.body, []);
  const probe = document.createElement('pre');
  probe.id = 'probe';
  probe.textContent = JSON.stringify({
    filters: Object.fromEntries(all.filter(e => e.id.startsWith('filter-')).map(e => [e.id, e.checked])),
    shown: all.filter(e => e.classList.contains('mutant-dot')).map(e => e.dataset.mutantId)});
  document.body.appendChild(probe);
}, 1000));
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_the_page_shows_killed_mutants_at_first_sight(by_hand, build, tmp_path):
    report = by_hand["sync"] / "report"
    probed = tmp_path / "probed.html"
    probed.write_text((report / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=5000", "--dump-dom",
                          f"file://{probed}#mutant/temperature.c"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the viewer did not render"
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    assert probe["filters"]["filter-Killed"] and probe["filters"]["filter-Survived"]
    mutants = json.loads((report / "mutation.json").read_text())["files"]["temperature.c"]["mutants"]
    assert headline_mutant(build, report)["id"] in probe["shown"]
    assert sorted(probe["shown"]) == sorted(m["id"] for m in mutants
                                            if m["status"] in ("Killed", "Survived"))


def test_mutants_and_labels_built_apart():
    """A WM label that is two mutants (its record's also): wm counts 2 mutants, 1 label built;
    the operator in also 1 mutant, none built."""
    record = LabelRecord(3, 3, "/src/a.c", "wm", "wm.ror.gt_ge", also=("wm.abs.zero",), line=2,
                         column=5, function="f", original="x > 0", predicate="x == 0")
    console = Console(record=True, width=140)
    console.print(operator_table([LabelResult(record, 1, None, True)]))
    text = console.export_text()
    rows = table_rows(text, "Labels per criterion and operator")
    assert rows["wm"] == ["2", "2", "0", "0", "0", "100.0", "1"]
    assert rows["wm.abs.zero"][0] == "1" and rows["wm.abs.zero"][-1] == "0"
    assert rows["wm.ror.gt_ge"][0] == "1" and rows["wm.ror.gt_ge"][-1] == "1"
    assert "mutants or" in text and "also" in text


def test_counts_are_drawn_as_steps_on_integer_ticks():
    series = CampaignSeries("c", {"relative_time": [0, 5, 10], "edges_found": [1, 2, 3],
                                  "corpus_count": [1, 1, 2], "execs_per_sec": [10.5, 20.0, 15.2]},
                            [1.0, 7.0], 3)
    drawn = figures([series])
    assert list(drawn) == ["edges", "execs", "corpus", "labels"]
    for name, figure in drawn.items():
        axes = figure.axes[0]
        counts = name != "execs"
        assert axes.lines[0].get_drawstyle() == ("steps-post" if counts else "default"), name
        ticks = [tick for tick in axes.get_yticks() if axes.get_ylim()[0] <= tick <= axes.get_ylim()[1]]
        assert not counts or all(float(tick).is_integer() for tick in ticks), (name, ticks)


def test_plot_draws_each_instance_of_a_sync_dir(parallel, tmp_path):
    out = parallel["out"]
    listed = ffuzz("plot", str(out), str(out / "main"), "-o", str(tmp_path / "plots")).stdout
    assert f"{tmp_path}/plots/labels.png" in listed
    campaign = find_campaign(out)
    assert [curve.name for curve in campaign_series(campaign, str(out), None)] == \
        [f"{out}/main", f"{out}/sec1"]
