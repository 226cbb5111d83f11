"""ffuzz -c: input-to-state on each new entry with a `ffcc --cmplog` build.

End to end on samples/magic (a 32-bit and a 64-bit magic, a strcmp keyword and a one-byte
checksum in front of a crash): with -c the crash is saved well within the execution budget,
without -c it is not; -c 0, a persistent target that runs batches, and a labelled build.
The replacement rules are unit-tested on records made by hand.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env, persistent_main, reading_main
from helpers import (
    REPO,
    ffcc,
    have,
    kill_leftovers,
    one_seed,
    run_program,
    run_until,
    sample_sources,
)
from test_fuzz_campaign import FakeExecutor

from ffcc.fuzzer.engine.campaign import Campaign
from ffcc.fuzzer.engine.cmplog import CmplogStats, Colorized, candidates
from ffcc.fuzzer.engine.config import Config
from ffcc.fuzzer.engine.dictionary import solved_tokens
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.scheduler import FairFuzzScheduler
from ffcc.fuzzer.engine.seeds import read_seeds
from ffcc.fuzzer.output.outdir import OutputDir
from ffcc.fuzzer.output.status import PlainStatus
from ffcc.runtime.abi import CMPLOG_INT, CMPLOG_RTN, CmpRecord

SEEDS = REPO / "samples/magic/seeds"
# With -c the crash came within 2,100 executions for each --seed tried (1-6); the magic
# values alone leave a plain campaign no way to it.
BUDGET = 6000


def build(tmp_path: Path, name: str, *options: str, sources: list[str] | None = None) -> Path:
    ffcc(*options, "-o", f"{tmp_path / name}/", *(sources or sample_sources("magic")), cwd=REPO)
    program = tmp_path / name / (Path((sources or sample_sources("magic"))[0]).stem)
    assert program.exists()
    return program


def build_both(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """The program ``text`` built plain and with --cmplog."""
    source = tmp_path / f"{name}.c"
    source.write_text(text)
    return (build(tmp_path, "plain", sources=[str(source)]),
            build(tmp_path, "cmplog", "--cmplog", sources=[str(source)]))


def crashes(out: Path) -> list[Path]:
    return sorted((out / "default/crashes").glob("id:*"))


def fuzz(out: Path, target: Path, *options: str, seeds: Path = SEEDS, use_file: bool = True,
         budget: int = BUDGET) -> subprocess.CompletedProcess:
    """A campaign of at most ``budget`` executions that stops at its first saved crash."""
    argv = ["ffuzz", "-i", str(seeds), "-o", str(out), "-E", str(budget), "--seed", "1",
            *options, "--", str(target), *(["@@"] if use_file else [])]
    try:
        done = run_until(argv, lambda: bool(crashes(out)), timeout=300, env=ffuzz_env())
    finally:
        kill_leftovers(target)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def stats(out: Path) -> dict[str, str]:
    lines = (out / "default/fuzzer_stats").read_text().splitlines()
    return {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in lines)}


@pytest.fixture(scope="module")
def magic(tmp_path_factory) -> tuple[Path, Path]:
    """The magic sample: the plain build and its --cmplog build."""
    d = tmp_path_factory.mktemp("magic")
    return build(d, "plain"), build(d, "cmplog", "--cmplog")


def test_with_c_the_crash_is_saved_within_the_budget(magic, tmp_path):
    plain, cmplog = magic
    out = tmp_path / "out"
    done = fuzz(out, plain, "-c", str(cmplog))
    found = crashes(out)
    assert found, "ffuzz -c did not reach the crash"
    assert run_program([str(plain), str(found[0])]).status == -11
    numbers = stats(out)
    assert int(numbers["execs_done"]) <= BUDGET + 64
    assert int(numbers["cmplog_finds"]) >= 4  # each guard passed by a replacement
    assert int(numbers["cmplog_tokens"]) >= 1  # the solved operands went to the dictionary
    assert any("op:input-to-state" in p.name for p in (out / "default/queue").iterdir())
    assert "input-to-state" in done.stderr


def test_without_c_the_same_budget_does_not_reach_it(magic, tmp_path):
    plain, _ = magic
    out = tmp_path / "out"
    fuzz(out, plain)
    assert not crashes(out)
    numbers = stats(out)
    assert int(numbers["execs_done"]) >= BUDGET and "cmplog_finds" not in numbers


LABELLED = [pytest.param((), id="plain"),
            pytest.param(("--wm=ROR",), id="wm", marks=pytest.mark.skipif(
                not have("clang"), reason="labels need clang"))]


@pytest.mark.parametrize("labels", LABELLED)
def test_c_0_fuzzes_a_target_that_logs_comparisons_itself(labels, tmp_path):
    target = build(tmp_path, "both", "--cmplog", *labels)
    out = tmp_path / "out"
    fuzz(out, target, "-c", "0")
    assert crashes(out), "ffuzz -c 0 did not reach the crash"
    assert int(stats(out)["cmplog_finds"]) >= 4


PERSISTENT = "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n" + persistent_main(
    """    char name[9] = {0};
    uint32_t magic;
    if (n < 12) continue;
    memcpy(&magic, buf, 4);
    memcpy(name, buf + 4, 8);
    if (magic == 0xA5C3E1F0u && strcmp(name, "persist") == 0) abort();
""")


def test_a_persistent_target_running_batches(tmp_path):
    plain, cmplog = build_both(tmp_path, "loop", PERSISTENT)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "s").write_bytes(b"\x01\x02\x03\x04resident")
    out = tmp_path / "out"
    # Batches make thousands of executions a second: a budget the campaign cannot spend
    # before the find (which came within 900 executions) stops it.
    fuzz(out, plain, "-c", str(cmplog), seeds=seeds, use_file=False, budget=1_000_000)
    assert crashes(out), "ffuzz -c did not reach the persistent target's crash"
    assert "batch" in stats(out)["target_mode"]


def test_c_refuses_a_binary_that_does_not_log(magic, tmp_path):
    plain, _ = magic
    done = subprocess.run(["ffuzz", "-i", str(SEEDS), "-o", str(tmp_path / "out"), "-E", "10",
                           "-c", str(plain), "--", str(plain), "@@"], capture_output=True,
                          text=True, env=ffuzz_env(), timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"ffuzz: {plain} does not log comparisons: build it with ffcc --cmplog"]


# -- the replacement rules ----------------------------------------------------------------

def uncolored(data: bytes) -> Colorized:
    return Colorized(data, bytearray(len(data)))


def int_record(seen: int, wanted: int, width: int, const: bool = True, site: int = 1):
    """A comparison of ``wanted`` (a constant) with ``seen`` (from the input)."""
    return CmpRecord(site, CMPLOG_INT, wanted.to_bytes(width, "little"),
                     seen.to_bytes(width, "little"), const)


def made(original: bytes, records: list[CmpRecord], colorized: Colorized | None = None,
         colored: list[CmpRecord] | None = None) -> set[bytes]:
    return {c.data for c in candidates(original, colorized or uncolored(original), records,
                                       colored)}


def test_integers_are_found_in_each_encoding():
    record = int_record(0x11223344, 0xCAFEBABE, 4)
    assert b"<\xbe\xba\xfe\xca>" in made(b"<\x44\x33\x22\x11>", [record])   # little-endian
    assert b"<\xca\xfe\xba\xbe>" in made(b"<\x11\x22\x33\x44>", [record])   # big-endian
    assert b"n=3405691582;" in made(b"n=287454020;", [record])              # decimal text
    assert b"x=cafebabe" in made(b"x=11223344", [record])                   # hex text
    assert b"<\xbf\xba\xfe\xca>" in made(b"<\x44\x33\x22\x11>", [record])   # one past
    wide = int_record(0x41, 0x5A, 8)  # a byte widened to 64 bits
    assert b"AZA" in made(b"AAA", [wide])
    assert made(b"\x01\x02\x03", [int_record(0x11223344, 0xCAFEBABE, 4)]) == set()


def test_a_constant_is_never_looked_for_in_the_input():
    record = int_record(0x11223344, 0xCAFEBABE, 4)
    assert b"\x44\x33\x22\x11" not in made(b"\xbe\xba\xfe\xca", [record])


def test_strings_are_spliced_and_written_over_with_their_nul():
    record = CmpRecord(1, CMPLOG_RTN, b"neutrino", b"tachyon", False)
    found = made(b"[neutrino]", [record])
    assert b"[tachyon]" in found             # spliced in
    assert b"[tachyono]" in found            # written over
    assert b"[tachyon\0]" in found           # written over, ended


def test_colorization_keeps_only_bytes_that_flow_into_the_comparison():
    # "AB" sits twice; colorization changed both places, and the colorized run compared
    # "XY", which only the second place became: only it is replaced.
    original = b"AB..AB"
    colorized = Colorized(b"QR..XY", bytearray(b"\x01\x01\x00\x00\x01\x01"))
    record = CmpRecord(7, CMPLOG_RTN, b"AB", b"OK", False)
    twin = CmpRecord(7, CMPLOG_RTN, b"XY", b"OK", False)
    assert made(original, [record], colorized, [twin]) == {b"AB..OK"}
    # a one-byte string is replaced only where colorization shows it
    short = CmpRecord(8, CMPLOG_RTN, b"A", b"Z", False)
    assert made(b"A.A", [short], Colorized(b"A.Q", bytearray(b"\x00\x00\x01")),
                [CmpRecord(8, CMPLOG_RTN, b"Q", b"Z", False)]) == {b"A.Z"}


def test_each_comparison_has_a_turn_before_any_has_a_second():
    """The stage runs out of CANDIDATES on a big entry: a small value, found at many places,
    must not take them all from the comparisons after it."""
    original = b"\x01\x00\x00\x00" + b"\x01" * 8 + b"\x44\x33\x22\x11"
    small = int_record(1, 0, 4, site=1)
    magic = int_record(0x11223344, 0xCAFEBABE, 4, site=2)
    for records in ([small, magic], [magic, small]):
        made_in_order = [c.data for c in candidates(original, uncolored(original), records, None)]
        assert len(made_in_order) > 10
        firsts = made_in_order[:2]
        assert original[:12] + b"\xbe\xba\xfe\xca" in firsts  # the magic number's
        assert any(made[:4] in (b"\x00\x00\x00\x00", b"\x00\x01\x01\x01") for made in firsts)


def test_solved_operands_make_new_distinct_tokens():
    known = {b"old"}
    operands = [b"old", b"\0\0\0\0", b"\xff", b"tachyon", b"tachyon", b"\xb9\x79\x37\x9e"]
    assert solved_tokens(operands, known) == [b"tachyon", b"\xb9\x79\x37\x9e"]
    many = [random.Random(n).randbytes(4) for n in range(40)]
    assert len(solved_tokens(many, set())) == 16


HANGING = "#include <stdint.h>\n#include <stdio.h>\n" + reading_main(8) + r"""  uint32_t magic;
  __builtin_memcpy(&magic, b, 4);
  if (magic == 0x5EEDF00Du) for (volatile int spin = 1; spin;) {}
  return 0;
}
"""


def test_a_hang_the_replacement_finds_is_saved(tmp_path):
    plain, cmplog = build_both(tmp_path, "spin", HANGING)
    out = tmp_path / "out"
    argv = ["ffuzz", "-i", str(one_seed(tmp_path, b"ABCDEFGH")), "-o", str(out), "-E", "3000",
            "-t", "100", "--seed", "1", "-c", str(cmplog), "--", str(plain), "@@"]
    hangs = lambda: sorted((out / "default/hangs").glob("id:*"))  # noqa: E731
    try:
        done = run_until(argv, lambda: bool(hangs()), timeout=300,
                         env=ffuzz_env(AFL_HANG_TMOUT="200"))
    finally:
        kill_leftovers(plain)
    assert done.returncode == 0, done.stderr[-2000:]
    assert hangs() and hangs()[0].read_bytes()[:4] == bytes.fromhex("0DF0ED5E")
    assert "op:input-to-state" in hangs()[0].name  # not havoc's later use of the token


class RecordingLabelling(Labelling):
    """Labelling that notes each retirement among the stage's entries."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def retire_covered(self, queue, virgin, hits, turns) -> None:  # type: ignore[override]
        self.events.append("retire")


class StageOfRecord:
    """An input-to-state stage that runs nothing and notes the entries it is given."""

    def __init__(self, events: list[str]) -> None:
        self.events, self.stats, self._next = events, CmplogStats(), 0

    def next_entry(self, queue_length: int) -> int | None:
        if self._next >= queue_length:
            return None
        self._next += 1
        return self._next - 1

    def run(self, data: bytes, checksum: int):
        self.events.append(f"entry {self._next - 1}")
        yield None

    def close(self) -> None:
        pass


def test_labels_retire_between_the_entries_input_to_state_runs_in_one_go(tmp_path) -> None:
    """Input-to-state runs every entry added since its last turn before anything else (on
    LAVA-M's md5sum most of a 120 s campaign): labels due to retire must not wait for it."""
    seeds = tmp_path / "in"
    seeds.mkdir()
    for number in range(4):
        (seeds / f"s{number}").write_bytes(bytes([number + 1, 7, number * 30]))
    config = Config(input_dir=seeds, output_dir=tmp_path / "out", target_argv=("prog", "@@"),
                    max_execs=300, seed=1, argv=("ffuzz",))
    out = OutputDir(config.output_dir)
    out.open(resume=False)
    events: list[str] = []
    campaign = Campaign(config, FakeExecutor(), out, FairFuzzScheduler(), PlainStatus(interval=3600),
                        RecordingLabelling(events), rng=random.Random(1),
                        cmplog=StageOfRecord(events))  # type: ignore[arg-type]
    try:
        campaign.run(read_seeds(seeds))
    finally:
        out.close()
    entries = [i for i, event in enumerate(events) if event.startswith("entry")]
    assert len(entries) >= 4, events
    assert all(events[i - 1] == "retire" for i in entries), events
