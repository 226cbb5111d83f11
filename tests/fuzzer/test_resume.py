"""Resume (-i -) keeps everything: FairFuzz hit counts, each entry's history, the queue
walk, the counters and plot_data; and faults of ffuzz itself (SIGKILL at any instant, a
full disk) lose nothing that was saved."""
from __future__ import annotations

import errno
import itertools
import json
import random
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import CLANG_FAST, build, ffuzz_env, reading_main
from helpers import kill_leftovers, one_seed, run_until
from test_fuzz_campaign import FakeExecutor, campaign_run

from ffcc.fuzzer.engine.campaign import Campaign
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.focus import CarriedFocuses, FocusCache
from ffcc.fuzzer.engine.scheduler import FairFuzzScheduler
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output import outdir as outdir_module
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.state import FILE_NAME, READABLE_VERSIONS, RECORD_FIELDS, VERSION
from ffcc.fuzzer.output.status import PlainStatus

# -- with a fake executor ----------------------------------------------------------


def resume_campaign(out_root: Path, ex: FakeExecutor, max_execs: int = 0,
                    carried: CarriedFocuses | None = None) -> Campaign:
    """Resume the campaign in out_root; max_execs 0 stops it right after loading; carried:
    as a run that goes on with another build."""
    config = Config(input_dir=None, output_dir=out_root, target_argv=("prog", "@@"),
                    max_execs=max_execs, seed=2, argv=("ffuzz",))
    out = OutputDir(out_root)
    out.open(resume=True)
    campaign = Campaign(config, ex, out, FairFuzzScheduler(), PlainStatus(interval=3600),
                        rng=random.Random(2), carried=carried)
    try:
        campaign.run(None)
    finally:
        out.close()
    return campaign


def records(campaign: Campaign) -> dict[str, tuple]:
    return {e.path.name: tuple(getattr(e, f) for f in RECORD_FIELDS) for e in campaign.queue}


def test_resume_restores_hit_counts_entry_history_walk_and_counters(tmp_path) -> None:
    first_ex = FakeExecutor()
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), first_ex, b"\x01\x02\x01", 5000,
                              deterministic=True)
    assert any(e.passed_det for e in first.queue) and len(first.queue) == 2
    ex = FakeExecutor()
    again = resume_campaign(out.root.parent, ex)
    assert np.array_equal(ex.hits, first_ex.hits)  # not counted a second time
    assert records(again) == records(first)
    assert again.scheduler.state() == first.scheduler.state()
    totals = again.progress.earlier
    first_execs = first.progress.total_execs(first.executor.counters())
    assert totals.execs == first_execs and totals.crashes == 0
    assert again.progress.saved_crashes == first.progress.saved_crashes == 1
    stats = out.previous_stats()
    assert int(stats["execs_done"]) == first_execs
    assert int(stats["cycles_done"]) == first.scheduler.cursor.cycle


def test_a_run_on_another_build_counts_hits_again_even_in_a_map_of_the_same_size(
        tmp_path) -> None:
    """A lean build numbers the branches otherwise, often in a map of the same size: the
    hit counts and the branches each entry was aimed at, saved by map index, would name
    other branches there."""
    first_ex = FakeExecutor()
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), first_ex, b"\x01\x02\x01", 5000)
    assert first.scheduler.state()["aimed"]
    ex = FakeExecutor()
    again = resume_campaign(out.root.parent, ex, carried=CarriedFocuses(FocusCache(), {}))
    counted_once = np.zeros_like(ex.hits)
    for entry in again.queue:
        counted_once[FakeExecutor.edges(entry.data)] += 1
    assert np.array_equal(ex.hits, counted_once) and not np.array_equal(ex.hits, first_ex.hits)
    assert not again.scheduler.state()["aimed"]


def test_a_run_on_another_build_carries_what_the_renumbering_matches(tmp_path) -> None:
    """What both builds share, known by the queue entries that hit it, goes on under its
    new index (here the same: the entries hit the same branches): each entry's targets and
    the selections aimed at each branch; the hit counts start again from the queue."""
    first_ex = FakeExecutor()
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), first_ex, b"\x01\x02\x01", 5000)
    before = {entry.id: entry.edges for entry in first.queue}
    ex = FakeExecutor()
    again = resume_campaign(out.root.parent, ex, carried=CarriedFocuses(FocusCache(), before))
    counted_once = np.zeros_like(ex.hits)
    for entry in again.queue:
        counted_once[FakeExecutor.edges(entry.data)] += 1
    assert np.array_equal(ex.hits, counted_once)
    for key in ("aimed", "turns", "blacklist"):
        assert again.scheduler.state()[key] == first.scheduler.state()[key], key
    assert first.scheduler.state()["turns"]


def test_entries_saved_after_the_last_state_are_finds_of_their_parent(tmp_path) -> None:
    first_ex = FakeExecutor()
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), first_ex, b"\x01\x02\x01", 5000)
    late = out.save_queue_entry(2, "src:000001,time:9,execs:9,op:havoc,+cov", b"late\x07")
    ex = FakeExecutor()
    again = resume_campaign(out.root.parent, ex)
    entry = again.queue[2]
    assert entry.path == late and entry.parent == 1 and entry.depth == first.queue[1].depth + 1
    assert not entry.was_fuzzed
    # its edges are counted once; those of entries with a record are not counted again
    expected = first_ex.hits.copy()
    expected[FakeExecutor.edges(b"late\x07")] += 1
    assert np.array_equal(ex.hits, expected)


def test_an_afl_output_dir_resumes_with_its_deterministic_marks(tmp_path) -> None:
    """No state file (afl-fuzz's output, or an older ffuzz's): counters from fuzzer_stats,
    passed_det from queue/.state/deterministic_done, hit counts from the queue."""
    first, out = campaign_run(tmp_path, FairFuzzScheduler(), FakeExecutor(), b"\x01\x02", 3000)
    out.state_file.unlink()
    name = first.queue[0].path.name
    marks = out.queue_state / "deterministic_done"
    for mark in marks.iterdir():
        mark.unlink()
    (marks / name).touch()
    stats = out.previous_stats()
    ex = FakeExecutor()
    again = resume_campaign(out.root.parent, ex)
    assert [e.passed_det for e in again.queue] == [True, False]
    assert again.scheduler.cursor.cycle == int(stats["cycles_done"])
    assert again.progress.earlier.execs == int(stats["execs_done"])
    assert ex.hits.sum() == sum(len(e.edges) for e in again.queue)


READABLE = " or ".join(map(str, READABLE_VERSIONS))


@pytest.mark.parametrize("content", [json.dumps({"format": "ffuzz-state", "version": VERSION + 1}),
                                     "{not json", json.dumps({"format": "ffuzz-state",
                                                              "version": VERSION})])
def test_a_state_file_ffuzz_cannot_read_is_a_one_line_error(tmp_path, content) -> None:
    _, out = campaign_run(tmp_path, FairFuzzScheduler(), FakeExecutor(), b"\x01\x02", 1000)
    out.state_file.write_text(content)
    with pytest.raises(FuzzerError, match=f"state file of version {READABLE}; remove it"):
        resume_campaign(out.root.parent, FakeExecutor())
    assert out.state_file.read_text() == content  # a failed resume writes nothing


def test_a_full_disk_is_a_one_line_error_and_leaves_a_resumable_directory(tmp_path,
                                                                          monkeypatch) -> None:
    real_write = outdir_module.write_atomic

    def full_disk(path: Path, data: bytes | str) -> None:
        if Path(path).name.startswith("id:000001"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data)

    monkeypatch.setattr(outdir_module, "write_atomic", full_disk)
    with pytest.raises(FuzzerError, match=r"^no space left to write .*id:000001.*-i -$"):
        campaign_run(tmp_path, FairFuzzScheduler(), FakeExecutor(), b"\x01\x02", 5000)
    monkeypatch.setattr(outdir_module, "write_atomic", real_write)
    out_root = tmp_path / "out"
    saved = json.loads((out_root / "default" / FILE_NAME).read_text())
    assert saved["entries"]["name"] == ["id:000000,time:0,execs:0,orig:s1"]
    again = resume_campaign(out_root, FakeExecutor(), max_execs=5000)
    assert len(again.queue) == 2 and again.queue[1].data == b"zz"  # found again, saved now


# -- real campaigns ----------------------------------------------------------------

# Many edges (as branchy), a crash on any 0xC3 byte after them (so crashes differ by
# coverage) and a hang on any 0xC4 byte before them (one hang trace); from the seed
# "0123456789", flip4 makes both (0x33 and 0x34 with the high nibble flipped).
FAULTY_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
""" + reading_main(64) + r"""  if (memchr(b, 0xC4, n)) for (;;) {}
  int score = 0;
  for (size_t i = 0; i < n; i++) {
    switch (b[i] & 0x0f) {
      case 1: score += 1; break;
      case 2: score += 3; break;
      case 5: if (b[i] > 0x80) score ^= 5; break;
      case 6: if (i > 2 && b[i - 1] == 'x') score *= 2; break;
      case 7: if (i & 1) score -= 4; break;
      default: break;
    }
  }
  if (memchr(b, 0xC3, n)) abort();
  return score == 12345;
}
"""
KILLS = 20


def ffuzz_cmd(seeds: str, out: Path, target: Path, *extra: str) -> list[str]:
    return ["ffuzz", "-i", seeds, "-o", str(out), "-t", "50", *extra, "--", str(target), "@@"]


def saved_files(out: Path) -> dict[str, dict[str, bytes]]:
    return {kind: {p.name: p.read_bytes() for p in (out / "default" / kind).glob("id:*")}
            for kind in ("queue", "crashes", "hangs")}


def saved_state(out: Path) -> dict | None:
    path = out / "default" / FILE_NAME
    return json.loads(path.read_text()) if path.exists() else None


def entry_records(state: dict) -> dict[str, dict]:
    """The state file's entries by name, each as field -> value."""
    columns = state["entries"]
    return {name: {f: columns[f][i] for f in RECORD_FIELDS}
            for i, name in enumerate(columns["name"])}


def hit_counts(state: dict) -> dict[int, int]:
    hits = state["branch_hits"]
    return dict(zip(hits["index"], hits["count"]))


def assert_nothing_lost(before: dict[str, dict[str, bytes]], after: dict[str, dict[str, bytes]]) -> None:
    for kind in ("crashes", "hangs"):
        assert before[kind].items() <= after[kind].items(), kind
    for name, data in before["queue"].items():  # same bytes, or trimmed in place (AFL's trim)
        assert after["queue"][name] == data or 0 < len(after["queue"][name]) < len(data), name
    for kind, files in after.items():  # ids dense and unique, no input saved twice
        ids = sorted(int(name[3:9]) for name in files)
        assert ids == list(range(len(ids))), kind
        assert len(set(files.values())) == len(files), kind


def assert_state_carried_on(before: dict, after: dict) -> None:
    """Hit counts only grow; each entry keeps its history (flags only ever get set)."""
    grown = hit_counts(after)
    assert all(grown.get(index, 0) >= count for index, count in hit_counts(before).items())
    assert after["totals"]["execs"] >= before["totals"]["execs"]
    assert after["totals"]["run_time"] >= before["totals"]["run_time"]
    now = entry_records(after)
    for name, old in entry_records(before).items():
        new = now[name]
        assert (new["depth"], new["parent"]) == (old["depth"], old["parent"]), name
        for flag in ("was_fuzzed", "passed_det", "trimmed", "variable"):
            assert new[flag] >= old[flag], (name, flag)


class KillPoint:
    """When to kill a session (a run_until condition): once it has replaced the state file
    `checkpoints` times, `polls` polls (50 ms apart) later.  No checkpoint: during startup,
    resume or the first fuzzing; one: fuzzing from the resumed state; two: after a
    periodic checkpoint, whose hit counts include fuzzing."""

    def __init__(self, state_file: Path, checkpoints: int, polls: int) -> None:
        self.state_file, self.checkpoints = state_file, checkpoints
        self.polls = itertools.count(1)
        self.kill_at = polls
        self.seen = self.version()

    def version(self) -> tuple[int, int]:
        stat = self.state_file.stat()  # replaced by rename: a new inode each time
        return stat.st_ino, stat.st_mtime_ns

    def __call__(self) -> bool:
        if self.checkpoints:
            if self.version() != self.seen:
                self.seen = self.version()
                self.checkpoints -= 1
            return False
        return next(self.polls) >= self.kill_at


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CLANG_FAST is None:
        pytest.skip("afl-clang-fast not installed")
    return build(FAULTY_C, "faulty", tmp_path_factory.mktemp("faulty"))


def test_sigkill_at_random_points_then_resume_loses_nothing(faulty, tmp_path) -> None:
    """KILLS sessions, each resuming the last and SIGKILLed at a random point (KillPoint);
    then one that ends normally."""
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    queue = out / "default" / "queue"
    env = ffuzz_env(AFL_HANG_TMOUT="150")
    run_until(ffuzz_cmd(str(seeds), out, faulty, "-D"),
              lambda: queue.is_dir() and len(list(queue.glob("id:*"))) >= 5,
              timeout=300, env=env, stop=signal.SIGKILL)
    kill_leftovers(faulty)
    rng = random.Random(14)
    for _ in range(KILLS):
        before, state_before = saved_files(out), saved_state(out)
        kill = KillPoint(out / "default" / FILE_NAME, rng.choice((0, 0, 1, 1, 2)),
                         rng.randint(1, 40))
        done = run_until(ffuzz_cmd("-", out, faulty, "-D", "-E", "100000000"), kill,
                         timeout=300, env=env, stop=signal.SIGKILL)
        kill_leftovers(faulty)
        assert "Traceback" not in done.stderr, done.stderr
        assert_nothing_lost(before, saved_files(out))
        if state_before is not None:
            assert_state_carried_on(state_before, saved_state(out))
    before, state_before = saved_files(out), saved_state(out)
    done = subprocess.run(ffuzz_cmd("-", out, faulty, "-D", "-E", "3000"), capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    after, state_after = saved_files(out), saved_state(out)
    assert_nothing_lost(before, after)
    assert_state_carried_on(state_before, state_after)
    assert after["crashes"] and after["hangs"]
    assert set(entry_records(state_after)) == set(after["queue"])
    stats = {k.strip(): v.strip() for k, _, v in
             (line.partition(":") for line in (out / "default" / "fuzzer_stats").read_text().splitlines())}
    assert int(stats["corpus_count"]) == len(after["queue"])
    assert int(stats["saved_crashes"]) == len(after["crashes"])
    assert int(stats["saved_hangs"]) == len(after["hangs"])
    rows = [line.split(", ") for line in (out / "default" / "plot_data").read_text().splitlines()
            if not line.startswith("#")]
    for column in (0, 1, 11):  # relative_time, cycles_done, total_execs never go back
        values = [int(row[column]) for row in rows]
        assert values == sorted(values), column


def mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    return shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True).returncode == 0


def test_a_full_output_disk_is_one_line_and_resumes_once_there_is_room(targets, tmp_path) -> None:
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk, "64k"):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        seeds = one_seed(tmp_path, b"0123456789")
        out = disk / "out"
        done = subprocess.run(ffuzz_cmd(str(seeds), out, targets["branchy"], "-E", "1000000"),
                              capture_output=True, text=True, timeout=300, env=ffuzz_env())
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("ffuzz:")]
        assert len(errors) == 1 and errors[0].startswith("ffuzz: no space left to write "), \
            done.stderr
        assert done.stderr.rstrip().endswith(errors[0])
        before = saved_files(out)
        assert before["queue"]
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
        done = subprocess.run(ffuzz_cmd("-", out, targets["branchy"], "-E", "500"),
                              capture_output=True, text=True, timeout=300, env=ffuzz_env())
        assert done.returncode == 0, done.stderr
        assert_nothing_lost(before, saved_files(out))
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
