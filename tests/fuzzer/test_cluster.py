"""`ffuzz cluster`: instances as Ray actors, exchanging entries and counts through a hub."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import ffuzz_env
from helpers import SAMPLES, ffcc, have, poll_until, target_processes
from test_launcher import pid_alive
from test_sync import WAIT, stats

from ffcc.fuzzer.cluster import METRICS_FILE, HeadOutput, option_value
from ffcc.fuzzer.cluster_hub import Hub, Report
from ffcc.fuzzer.cluster_worker import HITS_DIR, Exchange, node_cpu
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.sync import HITS_FILE, MAIN_MARK

AFL_NAME = re.compile(r"^id:\d{6},(time:\d+,execs:\d+,orig:|src:\d{6}|sync:\w+,src:\d{6})")


@pytest.fixture(scope="module")
def keywords(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("keywords")
    ffcc("-o", f"{build}/", str(SAMPLES / "keywords" / "keywords.c"))
    return build / "keywords"


def imported(out: Path, name: str, peer: str) -> list[Path]:
    return sorted((out / name / "queue").glob(f"id:*,sync:{peer},*"))


def test_a_local_ray_campaign_is_afl_compatible_and_shares_entries_and_counts(
        keywords, tmp_path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'ffcc[cluster]'")
    out, log = tmp_path / "out", tmp_path / "head.log"
    with open(log, "w") as stderr:
        head = subprocess.Popen(
            ["ffuzz", "cluster", "-j", "2", "-i", str(SAMPLES / "keywords" / "seeds"), "-o",
             str(out), "--sync-seconds", "0.5", "-E", "100000000", "--", str(keywords), "@@"],
            stdout=subprocess.DEVNULL, stderr=stderr, env=ffuzz_env())
    try:
        assert poll_until(lambda: imported(out, "main", "sec1") and imported(out, "sec1", "main"),
                          WAIT * 2), log.read_text()
        pids = {name: int(stats(out / name)["fuzzer_pid"]) for name in ("main", "sec1")}
        os.kill(pids["sec1"], signal.SIGKILL)
        assert poll_until(lambda: "sec1 ended (killed by SIGKILL); 1 still running"
                          in log.read_text(), WAIT), log.read_text()
        execs = int(stats(out / "main")["execs_done"])
        assert poll_until(lambda: int(stats(out / "main")["execs_done"]) > execs, WAIT)
        head.send_signal(signal.SIGINT)
        assert head.wait(timeout=WAIT) == 1
    finally:
        if head.poll() is None:
            head.kill()
            head.wait()
    assert "1 of 2 instances failed (sec1)" in log.read_text()
    for name in ("main", "sec1"):
        queue = [p.name for p in (out / name / "queue").iterdir()]
        assert queue and all(AFL_NAME.match(n) for n in queue), queue
        assert int(stats(out / name)["execs_done"]) > 0
        assert (out / name / "plot_data").read_text().startswith("# relative_time")
        assert (out / name / "crashes").is_dir() and (out / name / "hangs").is_dir()
    assert (out / "main" / MAIN_MARK).exists() and not (out / "sec1" / MAIN_MARK).exists()
    metrics = json.loads((out / METRICS_FILE).read_text())
    assert metrics["merges"] >= 2 and metrics["hits_bytes_out"] > 0, metrics
    assert poll_until(lambda: not any(pid_alive(p) for p in pids.values())
                      and not target_processes(keywords), 10)
    if have("afl-whatsup"):
        summary = subprocess.run(["afl-whatsup", "-s", str(out)], capture_output=True,
                                 text=True, timeout=60).stdout
        assert "Total execs" in summary, summary


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


def test_main_gets_every_peer_and_a_secondary_only_main() -> None:
    hub = Hub()
    for name in ("main", "sec1", "sec2"):
        hub.report(Report(name, queue=[(f"id:000000,from-{name}", name.encode())]))
    main = hub.deliver("main", {})
    assert sorted(main.entries) == ["sec1", "sec2"] and main.cursors == {"sec1": 1, "sec2": 1}
    assert hub.deliver("main", main.cursors).entries == {}
    assert list(hub.deliver("sec2", {}).entries) == ["main"]
    gathered = hub.gather({"sec1": (1, 0, 0, 0)})
    assert gathered.reports["sec1"].queue == [] and len(gathered.reports["sec2"].queue) == 1
    assert gathered.cursors["sec2"] == (1, 0, 0, 0)


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
    second = exchange.report()
    assert [n for n, _ in second.queue] == ["id:000001,src:000000"]
    assert second.hits is None and second.plot_tail == b""
    hub = Hub()
    hub.report(Report("main", queue=[("id:000000,orig:m", b"m")],
                      hits=np.array([4, 4], np.uint32)))
    hub.report(first)
    exchange.receive(hub.deliver("sec1", {}))
    assert (tmp_path / "sync" / "main" / "queue" / "id:000000,orig:m").read_bytes() == b"m"
    assert (tmp_path / "sync" / "main" / MAIN_MARK).exists()
    assert np.load(tmp_path / "sync" / HITS_DIR / HITS_FILE).tolist() == [4, 4]
    assert exchange.cursors == {"main": 1}


def test_options_the_cluster_sets_itself_are_refused(tmp_path) -> None:
    done = subprocess.run(["ffuzz", "cluster", "-i", "x", "-o", str(tmp_path), "-M", "a", "--",
                           "prog"], capture_output=True, text=True, env=ffuzz_env())
    assert done.returncode == 2 and "ffuzz cluster sets -M itself" in done.stderr


def test_a_previous_campaign_is_not_overwritten(tmp_path) -> None:
    (tmp_path / "main" / "queue").mkdir(parents=True)
    (tmp_path / "main" / "queue" / "id:000000,orig:a").write_bytes(b"a")
    with pytest.raises(FuzzerError, match="previous campaign"):
        HeadOutput(tmp_path).open()


def test_option_values_and_cores() -> None:
    assert option_value(["-p", "afl", "--schedule=fairfuzz"], ("-p", "--schedule")) == "fairfuzz"
    assert option_value(["-V", "5"], ("--seed",)) is None
    assert node_cpu(1, [4, 5], {}) == 5
    assert node_cpu(2, [4, 5], {}) is None and node_cpu(0, [4], {"AFL_NO_AFFINITY": "1"}) is None
