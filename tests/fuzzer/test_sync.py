"""Parallel campaigns in one sync directory: ffuzz -M/-S with afl-fuzz as a peer."""
from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fuzz_targets import ffuzz_env, reading_main
from helpers import ffcc, needs_afl, poll_until

from ffcc.fuzzer.engine.campaign import Campaign
from ffcc.fuzzer.engine.config import AflEnvironment, SyncSettings, read_afl_environment, sync_settings
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.peers import PeerImports
from ffcc.fuzzer.engine.progress import Progress
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.parallel.sync import HITS_FILE, SyncDir

# Each four-letter word opens a branch of its own that mutation practically never finds (one
# 32-bit compare): every instance's seed brings coverage the others can only import.
LETTERS_C = r"""
#include <stdio.h>
#include <stdint.h>
""" + reading_main(16) + r"""  fclose(f);
  uint32_t word = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
  int r = 0;
  if (word == 0x41414141u) r = n > 5 ? 1 : 2;
  else if (word == 0x42424242u) r = n > 6 ? 3 : 4;
  else if (word == 0x43434343u) r = n > 7 ? 5 : 6;
  printf("%d\n", r);
  return 0;
}
"""
NEVER = "100000000"  # -E bound of campaigns the tests stop themselves
WAIT = 120           # seconds any awaited state may take on a loaded machine


@pytest.fixture(scope="module")
def letters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("letters")
    (build / "letters.c").write_text(LETTERS_C)
    ffcc("-o", f"{build}/out/", "letters.c", cwd=build)
    return build / "out" / "letters"


def seed_dir(tmp_path: Path, letter: str) -> Path:
    seeds = tmp_path / f"seeds-{letter}"
    seeds.mkdir()
    (seeds / "s").write_bytes(letter.encode() * 8)
    return seeds


def imported(sync_dir: Path, name: str, peer: str) -> list[str]:
    """The names of the entries instance `name` imported from `peer`."""
    return sorted(p.name for p in (sync_dir / name / "queue").glob(f"id:*,sync:{peer},*"))


def stats(instance: Path) -> dict[str, str]:
    lines = (instance / "fuzzer_stats").read_text().splitlines()
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}


class Instances:
    """Fuzzers started in the background, each ended by the test (or killed at teardown)."""

    def __init__(self, logs: Path) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs = logs  # each instance's output, shown when a test's wait fails

    def _start(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        with (self.logs / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                env=env)

    def ffuzz(self, sync_dir: Path, role: str, name: str, seeds: Path, binary: Path) -> None:
        self._start(name, ["ffuzz", "-i", str(seeds), "-o", str(sync_dir), role, name,
                           "--sync-seconds", "0.2", "-E", NEVER, "--seed", "1", "--",
                           str(binary), "@@"], ffuzz_env())

    def afl(self, sync_dir: Path, name: str, seeds: Path, binary: Path) -> None:
        self._start(name, ["afl-fuzz", "-i", str(seeds), "-o", str(sync_dir), "-S", name,
                           "-E", NEVER, "--", str(binary), "@@"],
                    ffuzz_env(AFL_IMPORT_FIRST="1", AFL_SKIP_BIN_CHECK="1"))

    def report(self, sync_dir: Path) -> str:
        """What each instance printed and holds, for a failed wait's message."""
        parts = []
        for name, proc in self.procs.items():
            queue = sorted(p.name for p in (sync_dir / name / "queue").glob("id:*"))
            output = (self.logs / f"{name}.log").read_text(errors="replace")[-1500:]
            parts.append(f"{name} (exit {proc.poll()}): queue {queue}\n{output}")
        return "\n".join(parts)

    def alive(self, name: str) -> bool:
        return self.procs[name].poll() is None

    def stop(self, name: str, sig: int = signal.SIGINT) -> int:
        proc = self.procs[name]
        proc.send_signal(sig)
        return proc.wait(timeout=WAIT)

    def stop_all(self) -> None:
        """Interrupt every instance still running (afl-fuzz removes its shared memory only
        when it exits by itself); kill what does not end."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[Instances]:
    started = Instances(tmp_path)
    yield started
    started.stop_all()


@needs_afl
def test_ffuzz_and_afl_fuzz_exchange_entries_both_ways(letters, tmp_path, instances) -> None:
    sync = tmp_path / "sync"
    instances.ffuzz(sync, "-M", "a", seed_dir(tmp_path, "A"), letters)
    instances.ffuzz(sync, "-S", "b", seed_dir(tmp_path, "B"), letters)
    assert poll_until(lambda: imported(sync, "a", "b") and imported(sync, "b", "a"), WAIT), \
        instances.report(sync)
    instances.afl(sync, "c", seed_dir(tmp_path, "C"), letters)
    assert poll_until(lambda: imported(sync, "c", "a") and imported(sync, "a", "c"), WAIT), \
        instances.report(sync)
    for name in ("a", "b", "c"):
        assert instances.alive(name), name
    assert (sync / "a" / "is_main_node").exists()
    synced_c = sync / "a" / ".synced" / "c"  # written once the sync's last import is done
    assert poll_until(lambda: synced_c.exists(), WAIT)
    assert synced_c.stat().st_size == 4  # a u32, as afl-fuzz keeps it
    assert instances.stop("a") == 0 and instances.stop("b") == 0
    assert int(stats(sync / "a")["corpus_imported"]) >= 2  # b's seed and c's
    summary = subprocess.run(["afl-whatsup", "-s", str(sync)], capture_output=True, text=True,
                             timeout=60).stdout
    assert "Fuzzers alive" in summary and "Total execs" in summary, summary


def test_resume_keeps_the_synced_state(letters, tmp_path, instances) -> None:
    sync = tmp_path / "sync"
    instances.ffuzz(sync, "-M", "a", seed_dir(tmp_path, "A"), letters)
    instances.ffuzz(sync, "-S", "b", seed_dir(tmp_path, "B"), letters)
    synced = sync / "a" / ".synced" / "b"
    assert poll_until(lambda: imported(sync, "a", "b") and synced.exists(), WAIT)
    assert instances.stop("a") == 0
    looked_at = int.from_bytes(synced.read_bytes(), sys.byteorder)
    hits = sync / "a" / HITS_FILE
    shared = hits.stat().st_mtime_ns
    instances.ffuzz(sync, "-M", "a", Path("-"), letters)
    assert poll_until(lambda: hits.stat().st_mtime_ns != shared, WAIT)  # it synced again
    assert instances.stop("a") == 0
    assert int.from_bytes(synced.read_bytes(), sys.byteorder) >= looked_at > 0
    assert int(stats(sync / "a")["corpus_imported"]) >= 1  # carried over the resume


def test_killing_one_instance_loses_nothing_of_the_other(letters, tmp_path, instances) -> None:
    sync = tmp_path / "sync"
    instances.ffuzz(sync, "-M", "a", seed_dir(tmp_path, "A"), letters)
    instances.ffuzz(sync, "-S", "b", seed_dir(tmp_path, "B"), letters)
    assert poll_until(lambda: imported(sync, "a", "b") and imported(sync, "b", "a"), WAIT)
    queue_a = {p.name for p in (sync / "a" / "queue").glob("id:*")}
    instances.stop("b", signal.SIGKILL)
    hits = sync / "a" / HITS_FILE
    shared = hits.stat().st_mtime_ns
    assert poll_until(lambda: hits.stat().st_mtime_ns != shared, WAIT), "a stopped syncing"
    assert instances.alive("a")
    assert queue_a <= {p.name for p in (sync / "a" / "queue").glob("id:*")}
    assert instances.stop("a") == 0


def test_peers_hit_counts_are_summed(tmp_path) -> None:
    sync = tmp_path / "sync"
    dirs = {}
    for name in ("a", "b", "c"):
        outdir = OutputDir(sync, name)
        outdir.open(resume=False)
        dirs[name] = SyncDir(outdir, SyncSettings(name, name == "a", 1.0))
    dirs["b"].share_hits(np.array([0, 5, 1, 0], np.uint32))
    dirs["c"].share_hits(np.array([2, 1, 0, 0], np.uint32))
    dirs["a"].share_hits(np.array([9, 9, 9, 9], np.uint32))
    (sync / "d").mkdir()
    (sync / "d" / HITS_FILE).write_bytes(b"torn")  # unreadable: adds nothing
    assert dirs["a"].peer_hits(4).tolist() == [2, 6, 1, 0]
    assert dirs["a"].peer_hits(8).tolist() == [0] * 8  # another map size adds nothing


def test_rarity_input_includes_the_peers_counts(letters, tmp_path, instances) -> None:
    sync = tmp_path / "sync"
    instances.ffuzz(sync, "-S", "b", seed_dir(tmp_path, "B"), letters)
    assert poll_until(lambda: (sync / "b" / HITS_FILE).exists(), WAIT)
    peer = np.load(sync / "b" / HITS_FILE)
    assert peer.any()
    outdir = OutputDir(sync, "a")
    outdir.open(resume=False)
    campaign = Campaign.__new__(Campaign)  # only queue_hits' inputs are needed
    campaign.executor = SimpleNamespace(branch_hits=lambda: np.ones_like(peer),
                                        virgin=lambda: np.zeros(len(peer), np.uint8),
                                        map_size=len(peer))
    campaign.labels = Labelling()
    campaign.peers = PeerImports(SyncDir(outdir, SyncSettings("a", True, 1.0)),
                                 lambda entry: None, campaign.executor, Progress())
    campaign.peers.step(lambda: False)  # the first sync: b's counts come in
    assert campaign.queue_hits().tolist() == (peer.astype(np.uint64) + 1).tolist()


@pytest.mark.parametrize(("main", "secondary", "foreign", "problem"), [
    ("a", "b", (), "exclude each other"), (None, "b", (Path("q"),), "-F needs -M"),
    (None, None, (Path("q"),), "-F needs -M"), (".a", None, (), "not an instance name")])
def test_sync_options_are_checked(main, secondary, foreign, problem) -> None:
    with pytest.raises(FuzzerError, match=problem):
        sync_settings(main, secondary, foreign, None, AflEnvironment().sync_seconds)


def test_interval_follows_afl_sync_time_in_minutes() -> None:
    default = read_afl_environment({"AFL_SYNC_TIME": "2"}).sync_seconds
    assert sync_settings(None, "b", (), None, default).interval == 120.0
    assert sync_settings("a", None, (), 0.5, default).interval == 0.5
    assert sync_settings(None, None, (), None, default) is None


def test_foreign_files_are_offered_when_new_or_changed(tmp_path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "one").write_bytes(b"1")
    (foreign / ".hidden").write_bytes(b"x")
    outdir = OutputDir(tmp_path / "sync", "a")
    outdir.open(resume=False)
    sync = SyncDir(outdir, SyncSettings("a", True, 1.0, (foreign,)))
    assert [e.path.name for e in sync.foreign_entries()] == ["one"]
    assert sync.foreign_entries() == []
    (foreign / "two").write_bytes(b"2")
    assert [(e.peer, e.path.name) for e in sync.foreign_entries()] == [("foreign", "two")]
