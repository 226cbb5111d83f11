"""Two-phase campaigns (issue 12, item 4): the edge-only build until edges stall, then the
labelled build from the same output directory, with nothing lost and resumable in either phase."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env
from helpers import REPO, ffcc, sample_sources
from test_label_targets import read_stats

from ffcc.fuzzer import cli
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.phases import PhasePolicy, PhaseProgress, parse_policy
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.state import FILE_NAME


def test_the_policy_names_the_first_condition_that_holds() -> None:
    policy = parse_policy("cycles:2,stall:30,execs:1e6")
    assert policy == PhasePolicy(cycles=2, stall=30, execs=1_000_000)
    assert policy.due(PhaseProgress(1, 100, 29, 10)) is None
    assert policy.due(PhaseProgress(2, 100, 0, 10)) == "2 queue cycle(s) without a new entry"
    assert policy.due(PhaseProgress(0, 100, 31, 10)) == "no new entry for 31 s"
    assert policy.due(PhaseProgress(0, 1, 0, 1_000_000)) == "1000000 executions"
    assert parse_policy("time:5").due(PhaseProgress(0, 5, 0, 0)) == "5 s of phase 1"


@pytest.mark.parametrize("text", ["", "cycle:1", "stall:x", "execs:-3", ","])
def test_a_policy_ffuzz_cannot_read_is_a_one_line_error(text: str) -> None:
    with pytest.raises(FuzzerError, match="^--phase-switch: "):
        parse_policy(text)


def fuzz(out: Path, builds: Path, *args: str, resume: bool = False) -> subprocess.CompletedProcess:
    seeds = "-" if resume else str(REPO / "samples/temperature/seeds")
    done = subprocess.run(["ffuzz", "-i", seeds, "-o", str(out), "--seed", "5",
                           "--labels-binary", str(builds / "labelled/temperature"), *args, "--",
                           str(builds / "edges/temperature"), "@@"],
                          capture_output=True, text=True, timeout=600, env=ffuzz_env())
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def queue_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (out / "default/queue").glob("id:*")}


def saved_phase(out: Path) -> int:
    return json.loads((out / "default" / FILE_NAME).read_text())["phase"]


def test_phase_two_continues_on_the_labelled_build_from_phase_one_queue(tmp_path) -> None:
    builds = tmp_path / "builds"
    ffcc("-o", f"{builds}/edges/", *sample_sources("temperature"), cwd=REPO)
    ffcc("--mcc", "--wm", "-o", f"{builds}/labelled/", *sample_sources("temperature"), cwd=REPO)
    out = tmp_path / "out"

    fuzz(out, builds, "--phase-switch", "execs:1000000", "-E", "3000")  # stopped in phase 1
    phase_one = queue_files(out)
    stats = read_stats(out)
    assert saved_phase(out) == 1 and stats["labels_total"] == "0"
    assert (out / "default/cmdline").read_text().startswith(str(builds / "edges/temperature"))

    done = fuzz(out, builds, "--phase-switch", "execs:2000", "-E", "6000", resume=True)
    assert "phase 2: edges stalled (" in done.stderr
    assert saved_phase(out) == 2
    assert (out / "default/cmdline").read_text().startswith(str(builds / "labelled/temperature"))
    after = queue_files(out)
    assert {name: after.get(name) for name in phase_one} == phase_one  # nothing lost or changed
    stats = read_stats(out)
    assert int(stats["labels_total"]) > 0 and int(stats["labels_found"]) > 0
    assert int(stats["execs_done"]) >= 3000 + 2000

    again = fuzz(out, builds, "-E", "1000", resume=True)  # a phase-2 campaign resumes in phase 2
    assert "phase 2" not in again.stderr and saved_phase(out) == 2
    assert int(read_stats(out)["labels_total"]) > 0
    assert set(queue_files(out)) >= set(after)


class Stopped(Exception):
    """What the test's own SIGINT handler raises (not KeyboardInterrupt, which ends pytest)."""


def raise_stopped(signum: int, frame: object) -> None:
    raise Stopped


def stopped_between_runs(monkeypatch, tmp_path: Path, labels_binary: bool) -> list[Config]:
    """The configurations cli.run ran when a Ctrl-C lands after the first run of a campaign
    that ends its phase 1, before the next run starts (run_once stands in for the runs)."""
    runs: list[Config] = []

    def run_once(config: Config, opening: str | None = None, stop=None, carried=None) -> cli.Ended:
        runs.append(config)
        os.kill(os.getpid(), signal.SIGINT)  # after the run: no campaign takes it
        return cli.Ended(phase_over="2 queue cycle(s) without a new entry", execs=10)

    monkeypatch.setattr(cli, "run_once", run_once)
    monkeypatch.setattr(cli, "check_target", lambda path: None)
    previous = signal.signal(signal.SIGINT, raise_stopped)
    try:
        cli.run(Config(input_dir=tmp_path, output_dir=tmp_path / "out",
                       target_argv=("edges", "@@"),
                       labels_binary=tmp_path / "labelled" if labels_binary else None,
                       phase_policy=parse_policy("cycles:2")))
        assert signal.getsignal(signal.SIGINT) is raise_stopped
    finally:
        signal.signal(signal.SIGINT, previous)
    return runs


def test_a_stop_between_the_phases_ends_the_campaign_there(monkeypatch, tmp_path) -> None:
    runs = stopped_between_runs(monkeypatch, tmp_path, labels_binary=True)
    assert [run.target_argv[0] for run in runs] == ["edges"]  # no phase 2, no exit 130


def test_a_one_run_campaign_leaves_a_stop_to_the_handler_it_found(monkeypatch, tmp_path) -> None:
    with pytest.raises(Stopped):
        stopped_between_runs(monkeypatch, tmp_path, labels_binary=False)
