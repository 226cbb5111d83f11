"""Lean rebuilds (issue 12): with --rebuild-retired, a campaign goes on with a build of its
labelled target whose retired labels are compiled out, keeps them covered, and resumes on it."""
from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import click
import numpy as np
import pytest
from fuzz_targets import ffuzz_env, reading_main
from helpers import REPO, ffcc, poll_until, run_until, sample_sources, target_processes
from test_label_targets import read_stats

from ffcc.fuzzer.cli import lean_builds as cli_lean_builds
from ffcc.fuzzer.cli import parse_rebuild
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.executor import NativeExecutor, TargetCommand
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.lean import DEFAULT_PERIOD, LeanBuilds, mismatch
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.status import PlainStatus
from ffcc.runtime.abi import RETIRED, LabelDatabase, LabelRecord, read_label_db

SEEDS = REPO / "samples/boundaries/seeds"
CAMPAIGN_EXECS = "5000000"  # a bound only: each campaign stops at what it waits for


def project_build(tmp_path: Path) -> Path:
    ffcc("--mcc", "--wm", "-o", f"{tmp_path}/build/", *sample_sources("boundaries"), cwd=REPO)
    return tmp_path / "build/boundaries"


def lean_builds(out: Path) -> list[Path]:
    """The verified lean builds in the output directory, oldest first."""
    found = [d for d in (out / "default/lean").glob("*") if d.name.isdigit()]
    return [d / "boundaries" for d in sorted(found, key=lambda d: int(d.name))]


def running_lean(out: Path) -> bool:
    """Whether the campaign went on with a lean build: its target runs, and the campaign
    wrote its stats since the build was made (so it has loaded its queue)."""
    builds = lean_builds(out)
    stats = out / "default/fuzzer_stats"
    return bool(builds) and bool(target_processes(builds[-1])) \
        and stats.stat().st_mtime_ns > builds[-1].stat().st_mtime_ns


def fuzz_until(out: Path, binary: Path, done, *options: str) -> subprocess.CompletedProcess:
    done_run = run_until(["ffuzz", "-o", str(out), "-E", CAMPAIGN_EXECS, "--seed", "3", *options,
                          "--", str(binary), "@@"], done, timeout=300, env=ffuzz_env())
    assert done_run.returncode == 0, done_run.stderr[-2000:]
    return done_run


def lit_slots(binary: Path, inputs: list[bytes], labels: LabelMap, tmp_path: Path) -> set[int]:
    """Label slots some input lights on ``binary``."""
    executor = NativeExecutor(TargetCommand((str(binary), "@@")), tmp_path / "cur", 1000, seed=1)
    try:
        start = labels.region_start(executor.map_size)
        return {int(index) - start for data in inputs
                for index in executor.calibrate(data, 1, False).edges if index >= start}
    finally:
        executor.close()


def test_a_campaign_goes_on_with_its_lean_build_and_resumes_on_it(tmp_path) -> None:
    full = project_build(tmp_path)
    out = tmp_path / "out"
    first = fuzz_until(out, full, lambda: running_lean(out), "-i", str(SEEDS),
                       "--rebuild-retired", "0")
    assert "going on with" in first.stdout + first.stderr
    lean = lean_builds(out)[-1]
    assert (out / "default/cmdline").read_text().split()[0] == str(full), "reports use the full build"
    full_db, lean_db = read_label_db(full), read_label_db(lean)
    assert full_db is not None and lean_db is not None
    gone = {label.slot for label in lean_db.labels if label.pruned == RETIRED}
    assert gone, "retired labels were compiled out"
    found = int(read_stats(out)["labels_found"])
    assert found >= len(gone)

    labels = LabelMap.load(full)
    assert labels is not None
    queue = [p.read_bytes() for p in sorted((out / "default/queue").iterdir()) if p.is_file()]
    on_full, on_lean = (lit_slots(b, queue, labels, tmp_path) for b in (full, lean))
    given_up = int(read_stats(out)["labels_given_up"])
    assert len(gone - on_full) <= given_up, \
        "each label compiled out was covered on the full build, or given up at a hot site"
    assert not gone & on_lean, "the lean build has no code for them"
    assert on_lean - gone, "the labels it keeps still count"

    resumed_at = (out / "default/fuzzer_stats").stat().st_mtime_ns
    fuzz_until(out, full, lambda: running_lean(out) and (out / "default/fuzzer_stats").stat()
               .st_mtime_ns > resumed_at, "-i", "-", "--rebuild-retired", "600")
    assert int(read_stats(out)["labels_found"]) >= found, "compiled-out labels stay covered"
    assert LeanBuilds.newest(full, out / "default/lean", 600).running == lean_builds(out)[-1]

    ffcc("--wm", "-o", f"{tmp_path}/build/", *sample_sources("boundaries"), cwd=REPO)
    assert LeanBuilds.newest(full, out / "default/lean", 600).running is None, \
        "a lean build of labels the target no longer has is not resumed on"


def test_the_users_limits_hold_across_lean_builds_and_end_the_campaign(tmp_path) -> None:
    """-E counts the executions of every build the campaign ran, and the last line names the
    limit the user gave, not what was left of it when the last build began."""
    full, out, limit = project_build(tmp_path), tmp_path / "out", 40_000
    done = subprocess.run(["ffuzz", "-i", str(SEEDS), "-o", str(out), "-E", str(limit), "--seed",
                           "3", "--rebuild-retired", "0", "--", str(full), "@@"],
                          capture_output=True, text=True, timeout=300, env=ffuzz_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "going on with" in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"ffuzz: stopped by execution limit (-E {limit})")
    assert limit <= int(read_stats(out)["execs_done"]) < limit * 1.1


def test_a_campaign_on_a_drop_in_build_goes_on_with_its_lean_build(tmp_path) -> None:
    """A drop-in build (an object, then a link, as make runs them) is rebuilt from the runs
    its units and link recorded (instrument/relink.py)."""
    (tmp_path / "dropin").mkdir()
    labels = {**os.environ, "FFCC_FLAGS": "--mcc --wm"}
    (source,) = sample_sources("boundaries")
    ffcc("-O2", "-c", str(REPO / source), "-o", str(tmp_path / "dropin/boundaries.o"), env=labels)
    ffcc(str(tmp_path / "dropin/boundaries.o"), "-o", str(tmp_path / "dropin/boundaries"),
         env=labels)
    full, out = tmp_path / "dropin/boundaries", tmp_path / "out"
    fuzz_until(out, full, lambda: running_lean(out), "-i", str(SEEDS), "--rebuild-retired", "0")
    lean = lean_builds(out)[-1]
    lean_db = read_label_db(lean)
    assert lean_db is not None
    gone = {label.id for label in lean_db.labels if label.pruned == RETIRED}
    assert gone and mismatch(read_label_db(full), lean_db, gone) is None  # type: ignore[arg-type]


def unrecorded_build(tmp_path: Path) -> Path:
    """A drop-in build whose two units one command compiled into two objects: they cannot be
    compiled again one by one, so the link leaves no record and the program cannot be
    rebuilt."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "prog.c").write_text("#include <stdio.h>\nint other(int);\n" + reading_main(8)
                                     + "  return b[0] < 100 + other(b[1]);\n}\n")
    (tmp_path / "other.c").write_text("int other(int x) { return x > 7; }\n")
    ffcc("--wm", "-c", "prog.c", "other.c", cwd=tmp_path)
    ffcc("--wm", "-o", "prog", "prog.o", "other.o", cwd=tmp_path)
    assert (tmp_path / "prog.labels.jsonl").is_file()
    assert not (tmp_path / "prog.ffcc-link.json").exists()
    return tmp_path / "prog"


def test_only_a_build_ffcc_recorded_is_rebuilt(tmp_path) -> None:
    unrecorded_build(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "in/s").write_bytes(b"a")
    done = subprocess.run(["ffuzz", "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out"),
                           "-E", "100", "--rebuild-retired", "60", "--", str(tmp_path / "prog"),
                           "@@"], capture_output=True, text=True, timeout=120, env=ffuzz_env())
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"ffuzz: --rebuild-retired: {tmp_path / 'prog'} has no record of how ffcc built it "
        "(neither ffcc-build.json nor prog.ffcc-link.json beside it): build it with ffcc "
        "--mcc --wm -o build/ src/*.c, or CC=ffcc with labels"]


def test_lean_rebuilds_are_the_default_where_ffcc_can_rebuild(tmp_path) -> None:
    """Without --rebuild-retired a project or drop-in build gets lean rebuilds every 15 s
    (doubling); a build ffcc cannot rebuild runs as it is; off turns them off.  A rebuild is
    due once a tenth of the covered labels are retired, however many labels were never
    covered."""
    project = project_build(tmp_path)
    ffcc("--wm", "-o", str(tmp_path / "dropin"), *sample_sources("boundaries"), cwd=REPO)
    dropin = tmp_path / "dropin"
    single = unrecorded_build(tmp_path / "unrecorded")

    def lean_for(binary: Path, rebuild: str | None) -> LeanBuilds | None:
        config = Config(input_dir=SEEDS, output_dir=tmp_path / "out", target_argv=(str(binary),),
                        rebuild_retired=parse_rebuild(rebuild))
        return cli_lean_builds(config, LabelMap.load(binary), OutputDir(tmp_path / "out"))

    default = lean_for(project, None)
    assert default is not None and default.period == DEFAULT_PERIOD == 15
    assert lean_for(dropin, None) is not None
    assert lean_for(single, None) is None
    assert lean_for(project, "off") is None
    assert lean_for(project, "2.5").period == 2.5  # type: ignore[union-attr]

    class Retired:
        def __init__(self, retired: set[int], covered: set[int]) -> None:
            self.retired, self.covered = retired, covered

        def retired_ids(self) -> set[int]:
            return self.retired

        def covered_ids(self) -> set[int]:
            return self.covered

    now = lean_for(project, "0")
    assert now is not None and len(now.database.labels) > 100
    assert now._due(Retired({0}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))  # type: ignore[arg-type]
    assert not now._due(Retired({0}, set(range(11))))  # type: ignore[arg-type]
    with pytest.raises(FuzzerError, match="no record of how ffcc built it"):
        lean_for(single, "60")
    for wrong in ("soon", "-1", "inf"):
        with pytest.raises(click.BadParameter):
            parse_rebuild(wrong)


def test_a_lean_build_must_have_the_full_builds_labels() -> None:
    labels = [LabelRecord(i, 12 + i, "/a.c", line=i, predicate=f"x > {i}") for i in range(3)]
    full = LabelDatabase(64, labels)
    lean = LabelDatabase(64, [labels[0], replace(labels[1], pruned=RETIRED), labels[2]])
    assert mismatch(full, lean, {1}) is None
    assert "not the retired ones" in (mismatch(full, lean, {2}) or "")
    moved = LabelDatabase(64, [labels[0], replace(labels[1], slot=40), labels[2]])
    assert "label 1 differs" in (mismatch(full, moved, set()) or "")
    assert mismatch(full, None, set()) is not None


def test_ffuzz_leaves_no_rebuild_behind(tmp_path) -> None:
    """A campaign stopped while its rebuild runs stops the rebuild too."""
    full = project_build(tmp_path)
    out = tmp_path / "out"
    logs = out / "default/lean"
    fuzz_until(out, full, lambda: any(logs.glob("*.log")), "-i", str(SEEDS),
               "--rebuild-retired", "0")
    assert poll_until(lambda: not [p for p in os.listdir("/proc") if p.isdigit()
                                   and _rebuilds(int(p), logs)], 30)


def _rebuilds(pid: int, logs: Path) -> bool:
    try:
        return str(logs) in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return False



def test_a_lean_build_drops_hot_sites_and_is_handed_over_until_the_run_stops_for_it(tmp_path) -> None:
    """A rebuild compiles out every label of a hot site, the uncovered ones too.  With the
    period 0 the next rebuild is due as soon as one is collected; the run that stops for the
    ready build steps again on its way out, and must get the same build, not start the next
    one (that forgot the ready build and ended the campaign: libpng's harness stopped at
    32 s)."""
    full = project_build(tmp_path)
    labels = LabelMap.load(full)
    assert labels is not None
    retirement = Retirement(labels)
    builds = LeanBuilds(full, tmp_path / "lean", 0)
    status = PlainStatus(interval=3600)
    try:
        virgin = np.full(1 << 16, 0xFF, np.uint8)
        sites = [s for s in labels.site_of if s >= 0]
        hot = next(s for s in sites if sites.count(s) > 1)
        site = {i for i, s in zip(labels.label_ids, labels.site_of) if s == hot}
        first = labels.region_start(len(virgin)) + labels.site_of.index(hot)
        virgin[first] = 0x7F  # a label of the site counted 128 or more in a run: it is hot
        assert list(retirement.retire_covered(virgin)) == [first]
        assert builds.step(retirement, virgin, status) is None, "the rebuild starts"
        assert poll_until(lambda: builds.step(retirement, virgin, status) is not None, 120)
        ready = builds.step(retirement, virgin, status)
        assert ready == tmp_path / "lean/1/boundaries"
        lean = read_label_db(ready)
        assert lean is not None
        assert {label.id for label in lean.labels if label.pruned == RETIRED} == site
        assert builds.step(retirement, virgin, status) == ready
        assert not (tmp_path / "lean/.2").exists(), "no second rebuild before the run stops"
    finally:
        builds.close()
        retirement.close()
        status.close()
