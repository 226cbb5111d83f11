"""ffuzz on the bundled samples, built by ffcc: what a short campaign must find."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from fuzz_targets import ffuzz_env
from helpers import REPO, ffcc, run_program, sample_sources


def fuzz(binary: Path, seeds: Path, out: Path, seconds: int, **env: str) -> None:
    done = subprocess.run(["ffuzz", "-i", str(seeds), "-o", str(out), "-V", str(seconds),
                           "--seed", "7", "--", str(binary), "@@"],
                          capture_output=True, text=True, env=ffuzz_env(**env),
                          timeout=seconds + 60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_finds_the_temperature_off_by_one_at_exactly_50(tmp_path):
    ffcc("-o", f"{tmp_path}/build/", *sample_sources("temperature"), cwd=REPO)
    out = tmp_path / "out"
    fuzz(tmp_path / "build/temperature", REPO / "samples/temperature/seeds", out, 30,
         AFL_BENCH_UNTIL_CRASH="1")
    crashes = [p for p in (out / "default/crashes").iterdir() if p.name.startswith("id:")]
    assert crashes, "the == 50 crash was not found"
    for crash in crashes:
        data = crash.read_bytes()
        assert int.from_bytes(data[2:4], "little", signed=True) == 50
        outcome = run_program([str(tmp_path / "build/temperature"), str(crash)])
        assert outcome.status == -signal.SIGFPE


def test_reaches_beyond_the_first_keyword(tmp_path):
    ffcc("-o", f"{tmp_path}/build/", *sample_sources("keywords"), cwd=REPO)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "attlist.xml").write_bytes(b"<!ATTLIST note x>\n")
    out = tmp_path / "out"
    fuzz(tmp_path / "build/keywords", seeds, out, 20)
    reached = set()
    for entry in (out / "default/queue").iterdir():
        if entry.is_file():
            stdout = run_program([str(tmp_path / "build/keywords"), str(entry)]).stdout.decode()
            reached |= {line.split(": ")[1].split(",")[0] for line in stdout.splitlines()
                        if line.startswith("attribute ")}
    assert reached, "no saved input reached an attribute type after <!ATTLIST"
