"""ffuzz on the bundled samples, built by ffcc: what a short campaign must find."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

from fuzz_targets import ffuzz_env
from helpers import REPO, ffcc, run_program, run_until, sample_sources

# What each test looks for came within 18,000 executions on every one of 40 --seed values tried
# (most within 5,000); the campaign stops at the find, and this bound ends it if none comes.
MAX_EXECS = 100_000


def fuzz(binary: Path, seeds: Path, out: Path, found: Callable[[], bool]) -> None:
    """A campaign that stops once ``found()`` holds, or after MAX_EXECS executions."""
    done = run_until(["ffuzz", "-i", str(seeds), "-o", str(out), "-E", str(MAX_EXECS),
                      "--seed", "7", "--", str(binary), "@@"], found, timeout=300,
                     env=ffuzz_env())
    assert done.returncode == 0, done.stderr[-2000:]


def test_finds_the_temperature_off_by_one_at_exactly_50(tmp_path):
    ffcc("-o", f"{tmp_path}/build/", *sample_sources("temperature"), cwd=REPO)
    out = tmp_path / "out"
    fuzz(tmp_path / "build/temperature", REPO / "samples/temperature/seeds", out,
         lambda: any((out / "default/crashes").glob("id:*")))
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
    queue = out / "default/queue"
    binary = tmp_path / "build/keywords"
    looked_at: set[str] = set()

    def a_new_entry_reaches_one() -> bool:
        new = [p for p in queue.glob("id:*") if p.name not in looked_at]
        looked_at.update(p.name for p in new)
        return any(attribute_types(binary, p) for p in new)

    fuzz(binary, seeds, out, a_new_entry_reaches_one)
    reached = set().union(*(attribute_types(binary, p) for p in queue.iterdir() if p.is_file()))
    assert reached, "no saved input reached an attribute type after <!ATTLIST"


def attribute_types(binary: Path, entry: Path) -> set[str]:
    """The attribute types the keywords sample parsed in this input."""
    stdout = run_program([str(binary), str(entry)]).stdout.decode()
    return {line.split(": ")[1].split(",")[0] for line in stdout.splitlines()
            if line.startswith("attribute ")}
