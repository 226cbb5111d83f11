"""`ffuzz cluster`: instances as Ray actors, exchanging entries and counts through a hub that
writes the head's output directory, and resumed from it."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import ffuzz_env
from helpers import have, poll_until, target_processes
from test_launcher import (
    HANG_ENV,
    HANG_OPTIONS,
    NAMES,
    NEVER,
    assert_resumed,
    finds,  # noqa: F401  (a fixture)
    found,
    pid_alive,
    saved,
)
from test_sync import WAIT, seed_dir, stats

from ffcc.fuzzer.engine.config import SyncSettings
from ffcc.fuzzer.engine.peers import PeerEntry
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.state import FILE_NAME as STATE_FILE
from ffcc.fuzzer.output.state import CampaignState
from ffcc.fuzzer.output.state import save as save_state
from ffcc.fuzzer.parallel import cluster_hub
from ffcc.fuzzer.parallel.cluster import (
    METRICS_FILE,
    HeadOutput,
    node_path,
    plan_cluster,
    resumed_jobs,
)
from ffcc.fuzzer.parallel.cluster_hub import Hub, Report
from ffcc.fuzzer.parallel.cluster_worker import HITS_DIR, Exchange, node_cpu
from ffcc.fuzzer.parallel.sync import HITS_FILE, MAIN_MARK, SyncDir

AFL_NAME = re.compile(r"^id:\d{6},(time:\d+,execs:\d+,orig:|src:\d{6}|sync:\w+,src:\d{6})")


def imported(out: Path, name: str, peer: str) -> list[Path]:
    return sorted((out / name / "queue").glob(f"id:*,sync:{peer},*"))


def cluster(out: Path, inputs: Path | str, binary: Path, *options: str) -> list[str]:
    return ["ffuzz", "cluster", "-j", "2", "-i", str(inputs), "-o", str(out), "--sync-seconds",
            "0.5", *HANG_OPTIONS, *options, "--", str(binary), "@@"]


@dataclass(frozen=True)
class Session:
    """A cluster campaign stopped by Ctrl-C after sec1 was killed."""

    out: Path
    log: str
    returncode: int
    pids: dict[str, int]


@pytest.fixture(scope="module")
def first_session(finds, tmp_path_factory: pytest.TempPathFactory) -> Session:
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'ffcc[cluster]'")
    tmp = tmp_path_factory.mktemp("cluster")
    out, log = tmp / "out", tmp / "head.log"
    with open(log, "w") as stderr:
        head = subprocess.Popen(cluster(out, seed_dir(tmp, "A"), finds, "-E", NEVER),
                                stdout=subprocess.DEVNULL, stderr=stderr,
                                env=ffuzz_env(**HANG_ENV))
    try:
        # sec1 records what it took from main (.synced/main) after the entries it imports
        # appear: wait for both before killing it, however slowly a loaded machine gets there.
        assert poll_until(lambda: imported(out, "main", "sec1") and imported(out, "sec1", "main")
                          and (out / "sec1" / ".synced" / "main").is_file()
                          and found(out, "crashes") and found(out, "hangs"),
                          WAIT * 2), log.read_text()
        pids = {name: int(stats(out / name)["fuzzer_pid"]) for name in NAMES}
        os.kill(pids["sec1"], signal.SIGKILL)
        assert poll_until(lambda: "sec1 ended (killed by SIGKILL); 1 still running"
                          in log.read_text(), WAIT), log.read_text()
        execs = int(stats(out / "main")["execs_done"])
        assert poll_until(lambda: int(stats(out / "main")["execs_done"]) > execs, WAIT)
        head.send_signal(signal.SIGINT)
        returncode = head.wait(timeout=WAIT)
    finally:
        if head.poll() is None:
            head.kill()
            head.wait()
    assert poll_until(lambda: not any(pid_alive(p) for p in pids.values())
                      and not target_processes(finds), 10)
    return Session(out, log.read_text(), returncode, pids)


def test_a_local_ray_campaign_is_afl_compatible_and_shares_entries_and_counts(
        first_session) -> None:
    out = first_session.out
    assert first_session.returncode == 1, first_session.log
    assert "1 of 2 instances failed (sec1)" in first_session.log
    for name in NAMES:
        queue = [p.name for p in (out / name / "queue").iterdir() if p.is_file()]
        assert queue and all(AFL_NAME.match(n) for n in queue), queue
        assert int(stats(out / name)["execs_done"]) > 0
        assert (out / name / "plot_data").read_text().startswith("# relative_time")
        assert (out / name / "crashes").is_dir() and (out / name / "hangs").is_dir()
        assert (out / name / STATE_FILE).is_file()
    assert (out / "sec1" / ".synced" / "main").is_file()
    assert (out / "main" / MAIN_MARK).exists() and not (out / "sec1" / MAIN_MARK).exists()
    metrics = json.loads((out / METRICS_FILE).read_text())
    assert metrics["merges"] >= 2 and metrics["hits_bytes_out"] > 0, metrics
    assert metrics["entries_in"] == sum(len(list(out.glob(f"{n}/queue/id:*"))) for n in NAMES)
    if have("afl-whatsup"):
        summary = subprocess.run(["afl-whatsup", "-s", str(out)], capture_output=True,
                                 text=True, timeout=60).stdout
        assert "Total execs" in summary, summary


def test_a_stopped_cluster_campaign_resumes_with_c_on_its_secondary(
        first_session, finds, tmp_path) -> None:
    out = tmp_path / "out"
    shutil.copytree(first_session.out, out)
    before = {name: saved(out / name) for name in NAMES}
    done = subprocess.run(cluster(out, "-", finds, "-E", "3000", "-c", "0"),
                          capture_output=True, text=True, env=ffuzz_env(**HANG_ENV),
                          timeout=WAIT * 2)
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert_resumed(before[name], saved(out / name))
    assert "cmplog_finds" in stats(out / "sec1") and "cmplog_finds" not in stats(out / "main")
    metrics = json.loads((out / METRICS_FILE).read_text())  # both sessions' counters
    assert metrics["entries_in"] == sum(len(list(out.glob(f"{n}/queue/id:*"))) for n in NAMES)
    assert poll_until(lambda: not target_processes(finds), 10)


def test_the_hub_merges_counts_as_everyone_elses_sum() -> None:
    hub = Hub()
    hub.report(Report("main", hits=np.array([1, 0, 2], np.uint32)))
    hub.report(Report("sec1", hits=np.array([0, 5, 1], np.uint32)))
    hub.report(Report("sec2", hits=np.array([3, 0, 0], np.uint32)))
    assert hub.deliver("main", {}).peer_hits.tolist() == [3, 5, 1]
    hub.report(Report("sec1", hits=np.array([0, 7, 1], np.uint32)))  # its later counts
    assert hub.deliver("sec2", {}).peer_hits.tolist() == [1, 7, 3]
    assert hub.metrics.merges == 4
    hub.report(Report("sec2", hits=np.zeros(5, np.uint32)))  # another map size: starts again
    assert hub.deliver("main", {}).peer_hits.tolist() == [0] * 5
    with pytest.raises(ValueError, match="keeps no files"):
        hub.report(Report("main", queue=[("id:000000,orig:a", b"a")]))


def test_main_gets_every_peer_and_a_secondary_only_main(tmp_path, monkeypatch) -> None:
    hub = Hub(tmp_path)
    for name in ("main", "sec1", "sec2"):
        hub.report(Report(name, queue=[(f"id:000000,from-{name}", name.encode())]))
    main = hub.deliver("main", {})
    assert main.entries == {"sec1": [("id:000000,from-sec1", b"sec1")],
                            "sec2": [("id:000000,from-sec2", b"sec2")]}
    assert main.cursors == {"sec1": 1, "sec2": 1}
    assert hub.deliver("main", main.cursors).entries == {}
    assert list(hub.deliver("sec2", {}).entries) == ["main"]
    assert (tmp_path / "sec1" / "queue" / "id:000000,from-sec1").read_bytes() == b"sec1"
    assert (tmp_path / "main" / MAIN_MARK).exists()
    hub.report(Report("main", queue=[("id:000001,src:000000", b"x" * 10),
                                     ("id:000002,src:000000", b"y" * 10)]))
    monkeypatch.setattr(cluster_hub, "DELIVERY_BYTES", 8)  # one entry per answer
    first = hub.deliver("sec1", {"main": 1})
    assert first.entries == {"main": [("id:000001,src:000000", b"x" * 10)]}
    assert hub.deliver("sec1", first.cursors).entries["main"][0][0] == "id:000002,src:000000"
    with pytest.raises(ValueError, match="not a file of an instance"):
        hub.report(Report("sec1", files={"../main/fuzzer_stats": b""}))


def test_an_exchange_sends_what_is_new_and_mirrors_what_it_gets(tmp_path) -> None:
    own = tmp_path / "sync" / "sec1"
    for folder in ("queue", "crashes", "hangs"):
        (own / folder).mkdir(parents=True)
    (own / "queue" / "id:000000,orig:a").write_bytes(b"a")
    (own / "queue" / ".state").mkdir()
    (own / "plot_data").write_bytes(b"# header\n1, 2\n3,")  # a line being written
    (own / "fuzzer_stats").write_bytes(b"execs_done : 5\n")
    np.save(own / HITS_FILE, np.array([1, 2], np.uint32))
    exchange = Exchange(tmp_path / "sync", "sec1")
    first = exchange.report()
    assert first.queue == [("id:000000,orig:a", b"a")] and first.plot_tail == b"# header\n1, 2\n"
    assert first.hits.tolist() == [1, 2] and first.files == {"fuzzer_stats": b"execs_done : 5\n"}
    (own / "queue" / "id:000001,src:000000").write_bytes(b"b")
    (own / "queue" / "id:000000,orig:a").unlink()  # trimmed: replaced by a new file
    (own / "queue" / "id:000000,orig:a").write_bytes(b"A")
    (own / ".synced").mkdir()
    (own / ".synced" / "main").write_bytes(b"\1\0\0\0")
    second = exchange.report()
    assert [n for n, _ in second.queue] == ["id:000001,src:000000"]
    assert second.rewritten == [("id:000000,orig:a", b"A")]
    assert second.hits is None and second.plot_tail == b""
    assert second.files == {".synced/main": b"\1\0\0\0"}  # fuzzer_stats did not change
    (own / STATE_FILE).write_bytes(b"{}")
    assert set(exchange.report().files) == {STATE_FILE}
    assert exchange.report().files == {}
    assert set(exchange.report(everything=True).files) == {"fuzzer_stats", ".synced/main",
                                                           STATE_FILE}
    hub = Hub(tmp_path / "out")
    hub.report(Report("main", queue=[("id:000000,orig:m", b"m")],
                      hits=np.array([4, 4], np.uint32)))
    hub.report(first)
    exchange.receive(hub.deliver("sec1", {}))
    assert (tmp_path / "sync" / "main" / "queue" / "id:000000,orig:m").read_bytes() == b"m"
    assert (tmp_path / "sync" / "main" / MAIN_MARK).exists()
    assert np.load(tmp_path / "sync" / HITS_DIR / HITS_FILE).tolist() == [4, 4]
    assert exchange.cursors == {"main": 1}
    hub.report(second)  # the trimmed entry replaces the head's copy, and is not a new one
    assert (tmp_path / "out" / "sec1" / "queue" / "id:000000,orig:a").read_bytes() == b"A"
    assert hub.instances["sec1"].queue == ["id:000000,orig:a", "id:000001,src:000000"]


def test_a_reopened_hub_hands_each_instance_back_what_it_had(tmp_path) -> None:
    out = tmp_path / "out"
    hub = Hub(out)
    for name, counts in (("main", [1, 0, 2]), ("sec1", [0, 5, 1])):
        state = tmp_path / f"{name}.json"
        save_state(state, CampaignState(map_size=3, branch_hits=np.array(counts, np.uint32)), [])
        hub.report(Report(name, queue=[("id:000000,orig:s", b"s"), ("id:000001,src:000000", b"t")],
                          crashes=[("README.txt", b"r"), ("id:000000,sig:06,src:000001", b"c")],
                          hangs=[("id:000000,src:000000", b"h")], plot_tail=b"# h\n1\n",
                          files={STATE_FILE: state.read_bytes(), "fuzzer_stats": b"s : 1\n"}))
    hub.report(Report("sec1", plot_tail=b"2\n", files={".synced/main": b"\1\0\0\0"}))
    reopened = Hub(out)  # a resumed campaign's hub: the counts come from the state files
    assert reopened.deliver("main", {}).peer_hits.tolist() == [0, 5, 1]
    assert reopened.deliver("main", {}).entries["sec1"][1] == ("id:000001,src:000000", b"t")
    back = reopened.saved("sec1")
    assert [n for n, _ in back.queue] == ["id:000000,orig:s", "id:000001,src:000000"]
    assert back.plot_tail == b"# h\n1\n2\n" and len(back.crashes) == 2 and len(back.hangs) == 1
    assert set(back.files) == {STATE_FILE, "fuzzer_stats", ".synced/main"}
    exchange = Exchange(tmp_path / "node", "sec1")
    exchange.restore(back)
    root = tmp_path / "node" / "sec1"
    assert OutputDir(tmp_path / "node", "sec1").has_campaign()
    assert (root / "crashes" / "README.txt").read_bytes() == b"r"
    assert (root / "plot_data").read_bytes() == b"# h\n1\n2\n"
    assert exchange.cursors == {"main": 1}  # main's entry 0 was looked at, entry 1 was not
    again = exchange.report()
    assert (again.queue, again.rewritten, again.crashes, again.hangs, again.plot_tail) == \
        ([], [], [], [], b"")
    view = SyncDir(OutputDir(tmp_path / "node", "sec1"), SyncSettings("sec1", False, 1.0))
    view.done("main", [PeerEntry("main", 4, root)])
    assert Exchange(tmp_path / "node", "sec1").report().files[".synced/main"] == b"\5\0\0\0"


def test_a_campaign_resumes_as_it_was_or_not_at_all(tmp_path) -> None:
    (tmp_path / "main" / "queue").mkdir(parents=True)
    with pytest.raises(FuzzerError, match="nothing to resume"):
        HeadOutput(tmp_path).open(resume=True)
    (tmp_path / "main" / "queue" / "id:000000,orig:a").write_bytes(b"a")
    with pytest.raises(FuzzerError, match="previous campaign: resume it with -i -"):
        HeadOutput(tmp_path).open(resume=False)
    assert HeadOutput(tmp_path).open(resume=True) == ["main"]
    assert resumed_jobs(["main", "sec1"], None) == 2
    with pytest.raises(FuzzerError, match="resume it with -j 1"):
        resumed_jobs(["main"], 2)


def test_options_the_cluster_sets_itself_are_refused(tmp_path) -> None:
    done = subprocess.run(["ffuzz", "cluster", "-i", "x", "-o", str(tmp_path), "-M", "a", "--",
                           "prog"], capture_output=True, text=True, env=ffuzz_env())
    assert done.returncode == 2 and "ffuzz cluster sets -M itself" in done.stderr


def test_c_goes_to_a_secondary_as_every_node_finds_it(tmp_path, monkeypatch) -> None:
    plans = plan_cluster(2, ["-c", "prog.cmplog", "-p", "afl", "--seed", "3"], ["prog"], 5.0)
    assert "-c" not in plans[0].argv and plans[0].argv[-6:-2] == ["-p", "afl", "--seed", "3"]
    assert plans[1].argv[-10:] == ["-S", "sec1", "-p", "afl", "-c", "prog.cmplog", "--seed", "4",
                                   "--", "prog"]
    (tmp_path / "prog.cmplog").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert node_path("prog.cmplog") == str(tmp_path / "prog.cmplog") and node_path("0") == "0"


def test_cores() -> None:
    assert node_cpu(1, [4, 5], no_affinity=False) == 5
    assert node_cpu(2, [4, 5], no_affinity=False) is None
    assert node_cpu(0, [4], no_affinity=True) is None
