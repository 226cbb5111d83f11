"""Real short campaigns through the `ffuzz` command line."""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env
from helpers import one_seed, run_until

from ffcc.fuzzer.engine.executor import NativeExecutor, TargetCommand
from ffcc.runtime.abi import LabelDatabase, LabelRecord, write_label_db

# AFL++ 4.04c's fuzzer_stats keys in its order (but its test-case cache's), then ffuzz's own.
STATS_KEYS = ("start_time last_update run_time fuzzer_pid cycles_done cycles_wo_finds "
              "execs_done execs_per_sec execs_ps_last_min corpus_count corpus_favored "
              "corpus_found corpus_imported corpus_variable max_depth cur_item pending_favs "
              "pending_total stability bitmap_cvg saved_crashes saved_hangs last_find "
              "last_crash last_hang execs_since_crash exec_timeout slowest_exec_ms peak_rss_mb "
              "cpu_affinity edges_found total_edges var_byte_count havoc_expansion "
              "auto_dict_entries afl_banner afl_version target_mode command_line schedule "
              "labels_found labels_total targets_selected targets_labels targets_distinct "
              "targets_distinct_labels labels_given_up").split()
PLOT_HEADER = ("# relative_time, cycles_done, cur_item, corpus_count, pending_total, "
               "pending_favs, map_size, saved_crashes, saved_hangs, max_depth, "
               "execs_per_sec, total_execs, edges_found")
# Campaigns are bounded by executions, not seconds, so a busy machine changes only how long
# they take. One that waits for a find stops there (AFL_BENCH_UNTIL_CRASH, or run_until);
# this bound only ends it when the find never comes: the crashes looked for here came
# within 15,000 executions on every one of 30 --seed values tried, most within 5,000.
UNTIL_FOUND = "100000"
# A few hundred executions already grow the branchy target's corpus to over 20 entries.
SHORT = "1000"


def ffuzz(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ffuzz", *args], capture_output=True, text=True, timeout=timeout,
                          env=ffuzz_env(**env))


def stats(out: Path) -> dict[str, str]:
    lines = (out / "default" / "fuzzer_stats").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def queue_files(out: Path) -> dict[str, bytes]:
    """Complete queue entries; a kill can leave a half-written ``.tmp-*`` file, which is not
    an entry (writes are atomic renames) and is removed on resume."""
    return {p.name: p.read_bytes() for p in (out / "default" / "queue").glob("id:*")
            if p.is_file()}


def test_finds_the_magic_crash_and_writes_an_afl_output_dir(targets, seeds, tmp_path) -> None:
    out = tmp_path / "out"
    done = ffuzz("-i", str(seeds), "-o", str(out), "-E", UNTIL_FOUND, "--seed", "5", "--",
                 str(targets["magic"]), "@@", AFL_BENCH_UNTIL_CRASH="1")
    assert done.returncode == 0, done.stderr
    crashes = [p for p in (out / "default" / "crashes").iterdir() if p.name != "README.txt"]
    assert crashes and crashes[0].name.startswith("id:000000,sig:06,")
    assert crashes[0].read_bytes().startswith(b"FUZZ")
    assert subprocess.run([str(targets["magic"]), str(crashes[0])]).returncode == -signal.SIGABRT
    assert done.stderr.splitlines()[-1].startswith(
        "ffuzz: stopped by first crash (AFL_BENCH_UNTIL_CRASH): ")
    assert done.stderr.splitlines()[-1].endswith(f"saved in {out / 'default'}")
    s = stats(out)
    assert list(s) == STATS_KEYS and int(s["saved_crashes"]) >= 1
    assert s["target_mode"] == "default"
    assert int(s["execs_since_crash"]) < int(s["execs_done"])
    assert float(s["execs_ps_last_min"]) > 0 and int(s["cycles_wo_finds"]) >= 0
    assert int(s["corpus_count"]) > 2 and int(s["edges_found"]) > 0
    plot = (out / "default" / "plot_data").read_text().splitlines()
    assert plot[0] == PLOT_HEADER and all(len(row.split(", ")) == 13 for row in plot[1:])
    assert (out / "default" / "cmdline").read_text() == f"{targets['magic']}\n@@\n"
    assert "# command line:\n" in (out / "default" / "fuzzer_setup").read_text()
    names = queue_files(out)
    assert "id:000000,time:0,execs:0,orig:one" in names
    assert all(n.startswith("id:") and ",time:" in n for n in names)


def test_persistent_target_through_shared_memory(targets, tmp_path) -> None:
    seeds = one_seed(tmp_path, b"AAAA")
    out = tmp_path / "out"
    done = ffuzz("-i", str(seeds), "-o", str(out), "-E", UNTIL_FOUND, "--",
                 str(targets["persistent"]), AFL_BENCH_UNTIL_CRASH="1")
    assert done.returncode == 0, done.stderr
    crashes = [p for p in (out / "default" / "crashes").iterdir() if p.name != "README.txt"]
    assert crashes and crashes[0].read_bytes().startswith(b"PQ")
    assert {"persistent", "shmem_testcase"} <= set(stats(out)["target_mode"].split())


@pytest.mark.parametrize("schedule", ["afl", "fairfuzz"])
def test_both_schedules_grow_the_corpus(targets, tmp_path, schedule) -> None:
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    done = ffuzz("-i", str(seeds), "-o", str(out), "-E", SHORT, "-p", schedule, "--",
                 str(targets["branchy"]), "@@")
    assert done.returncode == 0, done.stderr
    s = stats(out)
    assert int(s["corpus_count"]) > 3 and s["schedule"] == schedule
    assert done.stderr.splitlines()[-1].startswith(
        f"ffuzz: stopped by execution limit (-E {SHORT}): {s['corpus_count']} inputs in the queue")


def test_ctrl_c_ends_the_campaign_with_why_it_stopped(targets, tmp_path) -> None:
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    done = run_until(["ffuzz", "-i", str(seeds), "-o", str(out), "-E", UNTIL_FOUND, "--",
                      str(targets["branchy"]), "@@"],
                     lambda: len(queue_files(out)) > 3 if (out / "default").exists() else False,
                     timeout=300, env=ffuzz_env())
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("ffuzz: stopped by Ctrl-C: ")


def test_sigkill_then_resume_keeps_every_queue_entry(targets, tmp_path) -> None:
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    cmd = ["ffuzz", "-i", str(seeds), "-o", str(out), "-E", UNTIL_FOUND, "--",
           str(targets["branchy"]), "@@"]
    queue = out / "default" / "queue"
    run_until(cmd, lambda: queue.is_dir() and len(list(queue.glob("id:*"))) >= 8, timeout=300,
              env=ffuzz_env(), stop=signal.SIGKILL)
    before = queue_files(out)
    assert len(before) >= 8
    killed_execs = int(stats(out)["execs_done"])

    done = ffuzz("-i", "-", "-o", str(out), "-E", SHORT, "--", str(targets["branchy"]), "@@")
    assert done.returncode == 0, done.stderr
    after = queue_files(out)
    assert set(before) <= set(after)  # every entry keeps its file and name
    for name, data in before.items():  # same bytes, or trimmed in place (AFL's trim)
        assert after[name] == data or 0 < len(after[name]) < len(data)
    assert not list((out / "default" / "queue").glob(".tmp-*"))  # stray writes cleaned up
    assert int(stats(out)["execs_done"]) > killed_execs
    assert int(stats(out)["corpus_count"]) == len(after)


def test_afl_showmap_agrees_on_the_edges_of_the_queue(targets, tmp_path) -> None:
    if shutil.which("afl-showmap") is None:
        pytest.skip("afl-showmap not installed")
    seeds = one_seed(tmp_path, b"ab3x4")
    out = tmp_path / "out"
    binary = str(targets["branchy"])
    assert ffuzz("-i", str(seeds), "-o", str(out), "-E", SHORT, "--", binary, "@@").returncode == 0
    maps = tmp_path / "maps"
    # -e: edges only.  Without it, afl-showmap's directory mode keeps only hit
    # counts that are exact bucket values (its "human" table), dropping e.g. 21.
    subprocess.run(["afl-showmap", "-q", "-e", "-i", str(out / "default" / "queue"), "-o", str(maps),
                    "--", binary, "@@"], check=True, capture_output=True, env=ffuzz_env())
    ours = NativeExecutor(TargetCommand((binary, "@@")), tmp_path / "cur", 1000, seed=0)
    try:
        union: set[int] = set()
        for name, data in queue_files(out).items():
            theirs = {int(line.split(":")[0]) for line in (maps / name).read_text().split()}
            assert set(ours.calibrate(data, 1, False).edges.tolist()) == theirs, name
            union |= theirs
    finally:
        ours.close()
    assert len(union) == int(stats(out)["edges_found"])


def queue_edges(binary: str, out: Path, cur: Path) -> set[int]:
    """The map indices the queue's files cover now, run one by one."""
    ex = NativeExecutor(TargetCommand((binary, "@@")), cur, 1000, seed=0)
    try:
        return {int(i) for data in queue_files(out).values()
                for i in ex.calibrate(data, 1, False).edges}
    finally:
        ex.close()


def test_target_trimming_leaves_the_queue_its_coverage(targets, tmp_path) -> None:
    """FairFuzz -r trims a copy to the target branch: the queue files still cover every
    edge the campaign counted (trimming them in place lost edges nothing brought back)."""
    seeds = one_seed(tmp_path, b"ab3x4\x13\x24\x34\x44\x01\x02\x03x4")
    out = tmp_path / "out"
    binary = str(targets["branchy"])
    done = ffuzz("-i", str(seeds), "-o", str(out), "-E", "3000", "-r", "--seed", "1", "--",
                 binary, "@@")
    assert done.returncode == 0, done.stderr
    assert len(queue_edges(binary, out, tmp_path / "cur")) == int(stats(out)["edges_found"])


def test_afl_whatsup_reads_a_running_campaign(targets, tmp_path) -> None:
    if shutil.which("afl-whatsup") is None:
        pytest.skip("afl-whatsup not installed")
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    summary: list[str] = []

    def summarised() -> bool:
        if not (out / "default" / "fuzzer_stats").exists():
            return False
        summary.append(subprocess.run(["afl-whatsup", "-s", str(out)], capture_output=True,
                                      text=True, timeout=60).stdout)
        return True

    run_until(["ffuzz", "-i", str(seeds), "-o", str(out), "-E", "100000000", "--",
               str(targets["branchy"]), "@@"], summarised, timeout=300, env=ffuzz_env())
    lines = {k.strip(): v.strip() for k, _, v in (line.partition(" : ")
                                                  for line in summary[0].splitlines())}
    assert lines["Fuzzers alive"] == "1", summary[0]
    assert lines["Cycles without finds"].isdigit(), summary[0]
    assert "Pending items" in lines and "Total execs" in lines


def test_afl_cmin_accepts_the_queue(targets, tmp_path) -> None:
    if shutil.which("afl-cmin") is None:
        pytest.skip("afl-cmin not installed")
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    binary = str(targets["branchy"])
    assert ffuzz("-i", str(seeds), "-o", str(out), "-E", SHORT, "--", binary, "@@").returncode == 0
    done = subprocess.run(["afl-cmin", "-i", str(out / "default" / "queue"), "-o",
                           str(tmp_path / "min"), "--", binary, "@@"],
                          capture_output=True, text=True, env=ffuzz_env(AFL_ALLOW_TMP="1"),
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 0 < len(list((tmp_path / "min").iterdir())) <= len(queue_files(out))


def test_a_time_limit_ends_the_campaign(targets, tmp_path) -> None:
    """The one campaign bounded by the clock: -V alone ends it, after that many seconds."""
    seeds = one_seed(tmp_path, b"0123456789")
    out = tmp_path / "out"
    done = ffuzz("-i", str(seeds), "-o", str(out), "-V", "1", "--", str(targets["branchy"]), "@@")
    assert done.returncode == 0, done.stderr
    assert int(stats(out)["run_time"]) >= 1 and int(stats(out)["execs_done"]) > 0


def one_line_error(done: subprocess.CompletedProcess, text: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and text in lines[0], done.stderr


def test_usage_errors_are_one_clear_line(targets, seeds, tmp_path) -> None:
    magic = str(targets["magic"])
    out = str(tmp_path / "out")
    one_line_error(ffuzz("-i", str(tmp_path / "nope"), "-o", out, "--", magic), "seed directory not found")
    (tmp_path / "empty").mkdir()
    one_line_error(ffuzz("-i", str(tmp_path / "empty"), "-o", out, "--", magic), "no usable seeds")
    crashing = tmp_path / "crashing"
    crashing.mkdir()
    (crashing / "c").write_bytes(b"FUZZ")
    one_line_error(ffuzz("-i", str(crashing), "-o", str(tmp_path / "o2"), "--", magic, "@@"),
                   "crash or time out")
    one_line_error(ffuzz("-i", str(seeds), "-o", out, "--", str(tmp_path / "missing")),
                   "target not found")
    one_line_error(ffuzz("-i", str(seeds), "-o", out, "--", "/bin/true"), "not instrumented")


def test_an_output_dir_in_use_or_with_a_campaign_is_refused(targets, seeds, tmp_path) -> None:
    magic, out = str(targets["magic"]), tmp_path / "out"
    (out / "default").mkdir(parents=True)
    fd = os.open(out / "default", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        one_line_error(ffuzz("-i", str(seeds), "-o", str(out), "--", magic, "@@"), "in use")
    finally:
        os.close(fd)
    assert ffuzz("-i", str(seeds), "-o", str(out), "-E", "200", "--", magic, "@@").returncode == 0
    one_line_error(ffuzz("-i", str(seeds), "-o", str(out), "--", magic, "@@"), "-i -")


def test_labels_file_is_shown_in_stats(targets, tmp_path) -> None:
    binary = tmp_path / "labelled"
    shutil.copy(targets["branchy"], binary)
    write_label_db(binary, LabelDatabase(64, [LabelRecord(10 + s, s, criterion="mcc")
                                              for s in range(3)]))
    seeds = one_seed(tmp_path, b"xyz")
    out = tmp_path / "out"
    assert ffuzz("-i", str(seeds), "-o", str(out), "-E", "300", "--", str(binary), "@@").returncode == 0
    s = stats(out)
    assert s["labels_total"] == "3" and int(s["total_edges"]) == int(s["total_edges"]) // 64 * 64
