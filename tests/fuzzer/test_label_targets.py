"""Labels as FairFuzz targets (issue 12, item 2) and labels only crashes light (issue 13,
item 2): what fuzzer_stats counts, what resume keeps, what the status line names."""
from __future__ import annotations

import subprocess
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
from forkserver_client import ForkServer, hello_map_size
from fuzz_targets import ffuzz_env
from helpers import REPO, ffcc, sample_sources
from test_fuzz_campaign import FakeExecutor, campaign_run
from test_resume import resume_campaign

from ffcc.fuzzer.engine.labels import LabelMap, LabelSite
from ffcc.fuzzer.engine.scheduler import FairFuzzScheduler
from ffcc.fuzzer.output.stats import Snapshot
from ffcc.fuzzer.output.status import summary_line, target_text
from ffcc.instrument.labels import BRANCH_FORM, COUNT_FORM, GROUP_FORM, GROUPS_AS_LABELS
from ffcc.runtime.abi import INFEASIBLE, LabelDatabase, LabelRecord, read_label_db, write_label_db

# The fake executor's program: byte b hits map index 1 + b % 60, in a 64-byte map whose
# last 8 bytes are the label region; 0x37 hits index 56, label slot 0.
LABEL_AT_56 = LabelMap((LabelSite(4, "t.c", 9, "wm.ror.lt_le"),), 8)


def test_a_database_record_names_its_label_and_edges_name_none(tmp_path) -> None:
    write_label_db(tmp_path / "p", LabelDatabase(64, [
        LabelRecord(3, 12, "/src/dir/temperature.c", line=15, operator="wm.ror.ge_le"),
        LabelRecord(4, 13, pruned=INFEASIBLE), LabelRecord(5, 14)]))
    labels = LabelMap.load(tmp_path / "p")
    assert labels is not None and labels.label_ids == (*[-1] * 12, 3, -1, 5)
    assert labels.site_at(1024 - 64 + 12, 1024) == LabelSite(3, "temperature.c", 15,
                                                             "wm.ror.ge_le")
    assert labels.site_at(1024 - 64 + 14, 1024) == LabelSite(5)
    assert [labels.site_at(i, 1024) for i in (5, 1024 - 64 + 13, 1024 - 1)] == [None] * 3


def blank_snapshot() -> Snapshot:
    return Snapshot(**dict.fromkeys((f.name for f in fields(Snapshot)), 0))  # type: ignore[arg-type]


def test_the_status_line_names_a_label_target_by_its_source_and_an_edge_by_its_index() -> None:
    label = replace(blank_snapshot(), target=900, target_site=LabelSite(7, "temperature.c", 15,
                                                                        "wm.ror.ge_le"))
    assert target_text(label) == "label 7 (temperature.c:15 wm.ror.ge_le)"
    assert "target label 7 (temperature.c:15 wm.ror.ge_le)" in summary_line(label)
    edge = replace(blank_snapshot(), target=34, target_site=None)
    assert target_text(edge) == "edge 34" and summary_line(edge).endswith("target edge 34")
    assert target_text(replace(edge, target=None)) == "none"


def test_selections_aimed_at_labels_are_counted_and_survive_a_resume(tmp_path) -> None:
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), FakeExecutor(), b"\x37\x05",
                              3000, labels=LABEL_AT_56)
    progress = first.progress  # the seed's label 56 and edge 6, equally rare, take turns
    assert progress.targets_selected > progress.targets_labels >= 1
    stats = out.previous_stats()
    assert (int(stats["targets_selected"]), int(stats["targets_labels"])) \
        == (progress.targets_selected, progress.targets_labels)
    again = resume_campaign(out.root.parent, FakeExecutor())
    assert (again.progress.earlier.targets_selected, again.progress.earlier.targets_labels) \
        == (progress.targets_selected, progress.targets_labels)


def test_labels_found_counts_labels_only_crashes_light(tmp_path) -> None:
    """Every label of this program sits in code only crashing inputs reach: the queue lights
    none, fuzzer_stats counts those of the saved crash."""
    source = tmp_path / "crash_only.c"
    source.write_text(CRASH_ONLY_C)
    ffcc("--wm", "-o", f"{tmp_path}/build/", str(source))
    binary = tmp_path / "build/crash_only"
    database = read_label_db(binary)
    assert database is not None
    outside = [label for label in database.labels if label.line != CRASH_ONLY_LINE]
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "one").write_bytes(b"\x01\x05\x00")
    out = tmp_path / "out"
    done = subprocess.run(["ffuzz", "-i", str(seeds), "-o", str(out), "-E", "100000",
                           "--seed", "3", "--", str(binary), "@@"], capture_output=True,
                          text=True, timeout=300,
                          env=ffuzz_env(AFL_BENCH_UNTIL_CRASH="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    stats = read_stats(out)
    assert int(stats["saved_crashes"]) >= 1
    assert int(stats["labels_found"]) > len(outside)


CRASH_ONLY_LINE = 12
CRASH_ONLY_C = r"""#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  unsigned char buf[8] = {0};
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (buf[0] & 0x80) {
    int level = buf[1];
    if (level < 10) abort();
    abort();
  }
  puts(buf[2] & 1 ? "odd" : "even");
  return 0;
}
"""


def read_stats(out: Path) -> dict[str, str]:
    lines = (out / "default/fuzzer_stats").read_text().splitlines()
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}


# In 20,000-execution campaigns on this build (--seed 1, 2, 3), 6 of 20-24 target selections
# were labels; when the lowest map index won ties, none of 13-22 were.  Covered labels stay
# in the rarity computation (--retire never): a retired label is no target.
LABEL_DENSE_EXECS = "20000"


def test_a_fairfuzz_campaign_on_a_label_dense_build_aims_at_labels(tmp_path) -> None:
    ffcc("--mcc", "--wm", "-O2", f"--keep-annotated={tmp_path}/annotated", "-o",
         f"{tmp_path}/build/", *sample_sources("temperature"), cwd=REPO)
    binary = tmp_path / "build/temperature"
    out = tmp_path / "out"
    done = subprocess.run(["ffuzz", "-i", str(REPO / "samples/temperature/seeds"), "-o",
                           str(out), "-E", LABEL_DENSE_EXECS, "--seed", "1", "--retire", "never",
                           "--", str(binary), "@@"],
                          capture_output=True, text=True, timeout=600, env=ffuzz_env())
    assert done.returncode == 0, done.stderr[-2000:]
    stats = read_stats(out)
    assert int(stats["targets_labels"]) > 0, stats
    assert int(stats["targets_selected"]) >= int(stats["targets_labels"])
    # Each branch aimed at counted once: labels are most of those on a label-dense build.
    assert int(stats["targets_distinct"]) >= int(stats["targets_distinct_labels"]) > 0
    assert int(stats["targets_distinct_labels"]) <= int(stats["targets_labels"])
    queue = sorted((out / "default/queue").glob("id:*"))
    (annotated,) = (tmp_path / "annotated").rglob("temperature.c")
    # The same predicates, each computed into a register and not counted; then as branches.
    uncounted, branches = (rebuild(annotated, tmp_path / name, definition) for name, definition
                           in (("uncounted", '#define __FFCC_COUNT(i, p) '
                                '__asm__ volatile("" :: "r"((unsigned char)!!(p)))\n'),
                               ("branches", BRANCH_FORM)))
    labels = LabelMap.load(binary)  # the rebuilt units have the same slots, no database
    assert labels is not None
    program_edges = edge_patterns(uncounted, labels, queue, tmp_path)
    assert twin_patterns(binary, labels, queue, tmp_path) <= program_edges, \
        "counting adds no edge that counts as a label does"
    assert not twin_patterns(branches, labels, queue, tmp_path) <= program_edges, \
        "labels as branches have twin edges: the check sees them"


def rebuild(annotated: Path, directory: Path, definition: str) -> Path:
    """The annotated unit built again with another definition of what a label does (each
    label of a group too)."""
    directory.mkdir()
    source = directory / "temperature.c"
    text = annotated.read_text()
    assert COUNT_FORM in text and GROUP_FORM in text
    source.write_text(text.replace(COUNT_FORM, definition).replace(GROUP_FORM,
                                                                   GROUPS_AS_LABELS))
    ffcc("-O2", "-o", f"{directory}/", str(source))
    return directory / "temperature"


def replay(binary: Path, queue: list[Path], tmp_path: Path) -> np.ndarray:
    """Hit counts per queue entry (rows) and map index (columns)."""
    case = tmp_path / "replay"
    server = ForkServer([str(binary), str(case)], map_size=1 << 20)
    try:
        map_size = hello_map_size(server.hello)
        assert map_size is not None and map_size <= 1 << 20
        rows = []
        for entry in queue:
            case.write_bytes(entry.read_bytes())
            rows.append(np.frombuffer(server.run().map[:map_size], np.uint8))
    finally:
        server.close()
    return np.stack(rows)


def patterns(columns: np.ndarray) -> set[bytes]:
    """The distinct hit-count columns (over the queue) of the map indices some entry hits."""
    return {column.tobytes() for column in columns.T if column.any()}


def edge_patterns(binary: Path, labels: LabelMap, queue: list[Path], tmp_path: Path
                  ) -> set[bytes]:
    hits = replay(binary, queue, tmp_path)
    return patterns(hits[:, :labels.region_start(hits.shape[1])])


def twin_patterns(binary: Path, labels: LabelMap, queue: list[Path], tmp_path: Path
                  ) -> set[bytes]:
    """The labels' hit-count columns over the queue that some edge of the same build has.
    A label that means a branch of the program (MCC of a one-condition decision, ``n >= 4``
    against ``n != 4`` where the program branches on n == 4) has one whatever labels compile
    to, as long as the predicates are computed: what counts is whether counting adds one."""
    hits = replay(binary, queue, tmp_path)
    start = labels.region_start(hits.shape[1])
    lit = patterns(hits[:, labels.map_indices(hits.shape[1])])
    assert len(queue) > 3 and len(lit) > 10
    return lit & patterns(hits[:, :start])


# With the defaults (--retire rare: a covered label counts until its turn as a target; labels
# rare among labels too), 20,000-execution campaigns on the bugs and boundaries samples'
# --mcc --wm builds aimed 63-93% of their target selections at labels (--seed 1, 2, 4); with
# --retire first, which takes a label out of rarity once covered, none.
@pytest.mark.parametrize("sample", ["bugs", "boundaries"])
def test_default_campaigns_aim_at_labels_while_they_are_rare(tmp_path, sample) -> None:
    ffcc("--mcc", "--wm", "-o", f"{tmp_path}/build/", *sample_sources(sample), cwd=REPO)
    shares = {}
    for retire in ("rare", "first"):
        out = tmp_path / f"out-{retire}"
        done = subprocess.run(["ffuzz", "-i", str(REPO / f"samples/{sample}/seeds"), "-o",
                               str(out), "-E", LABEL_DENSE_EXECS, "--seed", "1", "--retire",
                               retire, "--", str(tmp_path / f"build/{sample}"), "@@"],
                              capture_output=True, text=True, timeout=600, env=ffuzz_env())
        assert done.returncode == 0, done.stderr[-2000:]
        stats = read_stats(out)
        shares[retire] = int(stats["targets_labels"]) / max(int(stats["targets_selected"]), 1)
    assert shares["rare"] >= 0.1 and shares["first"] == 0, shares
