"""Retired sites stop costing (issue 12, retirement): once every label of a site is retired,
the campaign sets the site's gate byte, and a clang build skips the site's label code.  What
the edge region then loses is the label code's own edges, nothing of the program's: a run
of the retired build shows every edge count of the unretired run or none, lights no new
edge, and sees every edge the code around the labels has (docs/LABELS.md, Retirement)."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from forkserver_client import ForkServer, SharedMap, hello_map_size
from helpers import REPO, ffcc, sample_inputs, sample_sources

from ffcc.fuzzer.engine import retire
from ffcc.fuzzer.engine.labelling import Labelling
from ffcc.fuzzer.engine.labels import LabelMap, LabelSite
from ffcc.fuzzer.engine.retire import Retirement, RetirePolicy
from ffcc.instrument.labels import COUNT_FORM, GATE_FORM, GROUP_FORM, GROUPS_AS_LABELS, NO_GATES
from ffcc.runtime.abi import (
    INFEASIBLE,
    NAMES,
    LabelDatabase,
    LabelRecord,
    label_region_start,
    read_label_db,
    write_label_db,
)

SAMPLE = "boundaries"


def test_a_gate_closes_when_the_last_live_label_of_its_site_retires(tmp_path) -> None:
    # Slots 0-1: one site (gate 10); 2 pruned and 3: another (gate 11); 4: a label of an
    # older build, without a gate.
    write_label_db(tmp_path / "p", LabelDatabase(64, [
        LabelRecord(0, 0, gate=10), LabelRecord(1, 1, gate=10),
        LabelRecord(2, 2, gate=11, pruned=INFEASIBLE), LabelRecord(3, 3, gate=11),
        LabelRecord(4, 4)]))
    labels = LabelMap.load(tmp_path / "p")
    assert labels is not None and labels.count == 4 and labels.gates == (10, 10, -1, 11, -1)
    assert labels.site_at(256 - 64 + 10, 256) is None, "a gate slot is no label"
    retirement = Retirement(labels)
    try:
        virgin = np.full(256, 0xFF, np.uint8)

        def cover(*slots: int) -> list[int]:
            virgin[[192 + slot for slot in slots]] = 0
            return list(retirement.retire_covered(virgin))

        assert cover(0) == [192] and retirement.closed_now == 0
        assert retirement.region[10] == 0, "label 1 of the site still counts"
        assert cover(1, 4) == [193, 196] and retirement.closed_now == 1
        assert list(np.flatnonzero(retirement.region)) == [0, 1, 4, 10]
        assert cover(3) == [195] and retirement.closed_now == 1, "the pruned label never counts"
        assert list(np.flatnonzero(retirement.region)) == [0, 1, 3, 4, 10, 11]
        assert cover() == [] and retirement.closed_now == 0
        assert list(retirement.indices) == [192, 193, 195, 196], "gates are not retired labels"
    finally:
        retirement.close()


def test_retire_stall_gives_up_the_labels_left_once_none_was_covered_for_long(tmp_path) -> None:
    write_label_db(tmp_path / "p", LabelDatabase(64, [
        LabelRecord(0, 0, gate=10), LabelRecord(1, 1, gate=10),
        LabelRecord(2, 2, gate=11), LabelRecord(3, 3, gate=11)]))
    labels = LabelMap.load(tmp_path / "p")
    assert labels is not None
    now = [0.0]
    retirement = Retirement(labels, stall_seconds=600, clock=lambda: now[0])
    try:
        virgin = np.full(256, 0xFF, np.uint8)
        virgin[[192, 194]] = 0xFE  # covered by one hit: no hot site
        assert list(retirement.retire_covered(virgin)) == [192, 194]
        now[0] = 599
        assert list(retirement.retire_covered(virgin)) == [] and not retirement.given_up
        virgin[193] = 0xFE  # a cover restarts the wait; its site closes as with "first"
        assert list(retirement.retire_covered(virgin)) == [193] and retirement.closed_now == 1
        now[0] = 599 + 599
        assert list(retirement.retire_covered(virgin)) == []
        now[0] = 599 + 600
        assert list(retirement.retire_covered(virgin)) == [195], "the label left, uncovered"
        assert retirement.given_up and retirement.closed_now == 1
        assert list(np.flatnonzero(retirement.region)) == [0, 1, 2, 3, 10, 11]
        assert labels.covered(virgin) == 3, "given up is not covered"
        now[0] = 10_000
        assert list(retirement.retire_covered(virgin)) == [] and retirement.closed_now == 0
    finally:
        retirement.close()


def test_only_the_stall_policy_gives_up(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(retire, "STALL_SECONDS", 0.0)
    labels = LabelMap((LabelSite(0),), 8)
    for policy, given_up in ((RetirePolicy.FIRST, []), (RetirePolicy.STALL, [24])):
        retirement = Retirement.for_target(policy, labels)
        assert retirement is not None
        try:
            assert list(retirement.retire_covered(np.full(32, 0xFF, np.uint8))) == given_up
        finally:
            retirement.close()
    assert Retirement.for_target(RetirePolicy.NEVER, labels) is None


def test_a_database_without_gates_retires_labels_only(tmp_path) -> None:
    retirement = Retirement(LabelMap((LabelSite(0), LabelSite(1)), 8))
    try:
        virgin = np.zeros(32, np.uint8)
        assert list(retirement.retire_covered(virgin)) == [24, 25]
        assert retirement.closed_now == 0 and list(np.flatnonzero(retirement.region)) == [0, 1]
    finally:
        retirement.close()


def build(tmp_path: Path, cc: str, level: str) -> Path:
    out = tmp_path / f"{cc}{level}"
    ffcc(f"--cc={cc}", "--mcc", "--wm", "--label-gates", level,
         f"--keep-annotated={out}/annotated", "-o", f"{out}/", *sample_sources(SAMPLE), cwd=REPO)
    return out / SAMPLE


def rebuild(program: Path, cc: str, level: str, replace: dict[str, str]) -> Path:
    """The program's annotated unit built again with parts of its preamble replaced (same
    slots; the database stays the original build's)."""
    (annotated,) = (program.parent / "annotated").rglob(f"{SAMPLE}.c")
    text = annotated.read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    directory = program.parent / "rebuilt"
    directory.mkdir()
    (directory / f"{SAMPLE}.c").write_text(text)
    ffcc(f"--cc={cc}", level, "-o", f"{directory}/", str(directory / f"{SAMPLE}.c"))
    return directory / SAMPLE


def traces(program: Path, database: LabelDatabase, inputs: list[bytes],
           retired: list[int] = ()) -> tuple[np.ndarray, list[int]]:
    """Map per input (rows) with the slots ``retired`` set in the retirement segment; the
    runs' statuses."""
    case = program.parent / "input"
    segment = SharedMap(database.label_region)
    for slot in retired:
        segment.view[slot] = 1
    server = ForkServer([str(program), str(case)],
                        env={NAMES["FFCC_ENV_RETIRE_SHM_ID"]: str(segment.shm_id)})
    try:
        size = hello_map_size(server.hello)
        rows, statuses = [], []
        for data in inputs:
            case.write_bytes(data)
            run = server.run()
            rows.append(np.frombuffer(run.map[:size], np.uint8))
            statuses.append(run.status)
        return np.stack(rows), statuses
    finally:
        server.close()
        segment.close()


def records_inputs(count: int) -> list[bytes]:
    """Inputs of 1-4 records whose bytes sit at and around the sample's boundaries."""
    rng = random.Random(1)
    values = [0, 1, 3, 4, 7, 8, 9, 10, 16, 17, 18, 49, 50, 51, 99, 100, 101, 199, 200, 201, 255]
    return [bytes(rng.choice(values) for _ in range(4 * rng.randint(1, 4)))
            for _ in range(count)]


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_a_retired_site_skips_its_labels_and_only_label_code_edges_stop(tmp_path, level):
    program = build(tmp_path, "clang", level)
    database = read_label_db(program)
    assert database is not None
    by_gate: dict[int, list[int]] = {}
    for label in database.labels:
        by_gate.setdefault(label.gate, []).append(label.slot)
    closed = sorted(by_gate)[::2]  # every other site retires entirely
    closed_slots = [slot for gate in closed for slot in by_gate[gate]]
    inputs = [path.read_bytes() for path in sample_inputs(SAMPLE)] + records_inputs(40)
    before, statuses = traces(program, database, inputs)
    after, _ = traces(program, database, inputs, closed_slots + closed)
    start = label_region_start(before.shape[1], database.label_region)
    slots = [label.slot for label in database.labels]
    assert before[:, [start + gate for gate in by_gate]].sum() == 0, "a gate slot never counts"
    assert after[:, [start + slot for slot in closed_slots]].sum() == 0, "closed sites are quiet"
    kept = [start + slot for slot in slots if slot not in set(closed_slots)]
    assert (after[:, kept] == before[:, kept]).all() and before[:, kept].any(), \
        "the other sites count as before"
    edges_before, edges_after = before[:, :start], after[:, :start]
    changed = (edges_before != edges_after).any(axis=0)
    assert changed.any(), "the skipped label code had edges of its own"
    assert (edges_after[:, changed] == 0).all(), "an edge either keeps its counts or stops"
    labels_only, _ = traces(program, database, inputs, closed_slots)
    assert (labels_only[:, :start] == edges_before).all(), "retired labels alone change no edge"
    assert statuses == traces(program, database, inputs, slots + list(by_gate))[1]


def test_a_fully_retired_build_sees_every_edge_of_the_code_around_its_labels(tmp_path):
    """-O0, where the optimiser moves no program code around the gates: the edges of the
    program as the labelled text has it (labels, groups of labels and gates compiled to
    nothing) each have the hit pattern of an edge of the fully retired build, over the
    inputs that do not crash (a crash inside a site's own code, before the guard of the code around it, is
    the documented exception)."""
    program = build(tmp_path, "clang", "-O0")
    database = read_label_db(program)
    assert database is not None
    around = rebuild(program, "clang", "-O0", {COUNT_FORM: "#define __FFCC_COUNT(i, p) ((void)0)\n",
                                              GROUP_FORM: GROUPS_AS_LABELS,
                                              GATE_FORM: NO_GATES})
    inputs = records_inputs(200)
    reference, statuses = traces(around, database, inputs)
    retired = [label.slot for label in database.labels] + \
        sorted({label.gate for label in database.labels})
    got, _ = traces(program, database, inputs, retired)
    start = label_region_start(got.shape[1], database.label_region)
    quiet = [row for row, status in enumerate(statuses) if status & 0x7F == 0]

    def patterns(maps: np.ndarray) -> set[bytes]:
        return {column.tobytes() for column in maps[quiet, :start].T if column.any()}

    assert len(quiet) > 150 and len(patterns(reference)) > 20
    assert patterns(reference) <= patterns(got)


@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
def test_gcc_builds_have_no_gates(tmp_path) -> None:
    """gcc's trace-pc hashes block pairs: a skipped block would be a new pair, so its gates
    are nothing and a set gate byte changes nothing."""
    program = build(tmp_path, "gcc", "-O2")
    database = read_label_db(program)
    assert database is not None
    inputs = [path.read_bytes() for path in sample_inputs(SAMPLE)]
    gates = sorted({label.gate for label in database.labels})
    before, _ = traces(program, database, inputs)
    after, _ = traces(program, database, inputs, gates)
    assert (before == after).all()
    start = label_region_start(before.shape[1], database.label_region)
    assert before[:, start:].any()


def test_gates_are_opt_in(tmp_path) -> None:
    """Without --label-gates a site's label code has no gate (an open gate costs a coverage
    guard per site run) and the database names no gate byte, so nothing closes one."""
    out = tmp_path / "default"
    ffcc("--mcc", "--wm", f"--keep-annotated={out}/annotated", "-o", f"{out}/",
         *sample_sources(SAMPLE), cwd=REPO)
    database = read_label_db(out / SAMPLE)
    assert database is not None and database.labels
    assert not any(label.gate is not None for label in database.labels)
    (annotated,) = (out / "annotated").rglob(f"{SAMPLE}.c")
    assert NO_GATES in annotated.read_text() and "__asm__ goto" not in annotated.read_text()


def turns_of(aimed: dict[int, int]) -> np.ndarray:
    """A scheduler's turns(): per map index, the selections aimed at it."""
    turns = np.zeros(max(aimed, default=-1) + 1, np.int64)
    for branch, count in aimed.items():
        turns[branch] = count
    return turns


def test_a_covered_label_counts_until_its_turn_as_a_target_or_a_common_one_shortly() -> None:
    """Map of 32: edges 0-23 (covered edges 0-3, hit 10, 20, 30, 40 times: median 25),
    labels 24-27, all covered; 26 was a target and is hit more often than the median edge, 27
    too and was not a target.  Under --retire rare 26 retires at once and 27 after
    COMMON_GRACE (the others wait TURN_WINDOW); under --retire first, or with no scheduler
    that aims, all once covered."""
    labels = LabelMap(tuple(LabelSite(i) for i in range(4)), 8)
    virgin = np.full(32, 0xFE, np.uint8)  # each hit once by some run: no hot site
    hits = np.zeros(32, np.uint32)
    hits[:4] = (10, 20, 30, 40)
    hits[24:28] = (1, 25, 30, 26)
    now = [0.0]
    for policy, aimed, at_once, later in ((RetirePolicy.RARE, {26: 1}, [26], [27]),
                                          (RetirePolicy.RARE, None, [24, 25, 26, 27], []),
                                          (RetirePolicy.FIRST, {26: 1}, [24, 25, 26, 27], [])):
        now[0] = 0.0
        retirement = Retirement(labels, clock=lambda: now[0],
                                while_rare=policy is RetirePolicy.RARE)
        try:
            turns = None if aimed is None else turns_of(aimed)
            assert list(retirement.retire_covered(virgin, hits, turns)) == at_once, \
                (policy, aimed)
            now[0] = retire.COMMON_GRACE
            assert list(retirement.retire_covered(virgin, hits, turns)) == later
        finally:
            retirement.close()


def test_labels_waiting_for_turns_are_looked_at_every_pass_interval_first_at_every_pass() -> None:
    """Under ``rare`` a pass waits PASS_INTERVAL after the last one (its clocks count
    seconds, a fast target's selections come hundreds a second); under ``first`` every pass
    is due, so that no covered label gets a turn as a target."""
    labels = LabelMap(tuple(LabelSite(i) for i in range(4)), 8)
    virgin = np.full(32, 0xFF, np.uint8)
    now = [5.0]
    for while_rare, due_soon in ((True, False), (False, True)):
        retirement = Retirement(labels, clock=lambda: now[0], while_rare=while_rare)
        try:
            assert retirement.pass_due()
            retirement.retire_covered(virgin)
            now[0] += retire.PASS_INTERVAL / 2
            assert retirement.pass_due() is due_soon
            now[0] += retire.PASS_INTERVAL / 2
            assert retirement.pass_due()
        finally:
            retirement.close()


def test_an_uncommon_label_stays_a_target_for_its_turns_within_the_window() -> None:
    """Labels 24-27, covered, none common (the median edge is hit 25 times); 24 had one turn,
    25 LABEL_TURNS of them, 26 none, 27 one and is hit more than the median edge.  25 and 27
    retire at once; 24 and 26 stay a target until TURN_WINDOW after their cover, 24 sooner
    once it has its LABEL_TURNS."""
    labels = LabelMap(tuple(LabelSite(i) for i in range(4)), 8)
    virgin = np.full(32, 0xFE, np.uint8)
    hits = np.zeros(32, np.uint32)
    hits[:4] = (10, 20, 30, 40)
    hits[24:28] = (2, 3, 4, 26)
    now = [0.0]
    retirement = Retirement(labels, clock=lambda: now[0], while_rare=True)
    try:
        turns = turns_of({24: 1, 25: retire.LABEL_TURNS, 27: 1})
        assert list(retirement.retire_covered(virgin, hits, turns)) == [25, 27]
        now[0] = retire.COMMON_GRACE
        assert not len(retirement.retire_covered(virgin, hits, turns)), "uncommon: they stay"
        turns[24] = retire.LABEL_TURNS
        assert list(retirement.retire_covered(virgin, hits, turns)) == [24]
        now[0] = retire.TURN_WINDOW
        assert list(retirement.retire_covered(virgin, hits, turns)) == [26]
    finally:
        retirement.close()


def test_the_labels_a_lean_build_compiled_out_stay_retired() -> None:
    """A campaign going on with a lean build retires what that build compiled out, covered
    or not, so that the next rebuild leaves it out again (it used to bring them back: lean
    build 2 of a cJSON campaign held the 439 labels lean build 1 had compiled out)."""
    labels = LabelMap(tuple(LabelSite(i) for i in range(4)), 8)

    class Lean:
        compiled_out = {1: True, 3: False}

        def keep_covered(self, virgin: np.ndarray) -> None:
            virgin[24 + 1] = 0

    retirement = Retirement.for_target(RetirePolicy.RARE, labels)
    assert retirement is not None
    try:
        virgin = np.full(32, 0xFF, np.uint8)
        Labelling(labels, retirement=retirement, lean=Lean()).keep_compiled_out(virgin)  # type: ignore[arg-type]
        assert retirement.retired_ids() == {1, 3} and virgin[25] == 0
        assert list(np.flatnonzero(retirement.region)) == [1, 3]
    finally:
        retirement.close()


def test_a_covered_label_waits_a_minute_at_most_for_its_turn() -> None:
    labels = LabelMap((LabelSite(0), LabelSite(1)), 8)
    now = [0.0]
    retirement = Retirement(labels, clock=lambda: now[0], while_rare=True)
    try:
        virgin, hits = np.full(32, 0xFF, np.uint8), np.zeros(32, np.uint32)
        virgin[[0, 24]], hits[[0, 24]] = (0, 0xFE), (9, 1)  # label 24 hit once: not hot
        nobody = np.zeros(0, np.int64)
        assert list(retirement.retire_covered(virgin, hits, nobody)) == []
        now[0] = 30.0
        virgin[25], hits[25] = 0xFE, 1
        assert list(retirement.retire_covered(virgin, hits, nobody)) == []
        now[0] = retire.TURN_WINDOW
        assert list(retirement.retire_covered(virgin, hits, nobody)) == [24], \
            "the label covered at 0 waited long enough; the one covered at 30 s waits on"
        now[0] = 30.0 + retire.TURN_WINDOW
        assert list(retirement.retire_covered(virgin, hits, nobody)) == [25]
    finally:
        retirement.close()


def test_the_labels_of_a_hot_site_retire_without_waiting_for_a_turn() -> None:
    """A site where a label counted 32 or more in one run (libpng's row filters: once per
    byte) costs its predicates that many times per run: its covered labels retire at once,
    and where a gate can skip the site its uncovered ones after HOT_GRACE seconds; the labels
    of other sites wait as before."""
    now = [0.0]
    for gated in (True, False):
        records = [LabelRecord(id=i, slot=i, file="/t.c", line=line, column=5,
                               gate=(12 if line == 3 else 13) if gated else None)
                   for i, line in enumerate((3, 3, 3, 9))]
        labels = LabelMap.of(LabelDatabase(16, records))
        assert labels.site_of[:4] == (0, 0, 0, 1)
        now[0] = 0.0
        retirement = Retirement(labels, clock=lambda: now[0], while_rare=True)
        try:
            virgin, hits = np.full(32, 0xFF, np.uint8), np.zeros(32, np.uint32)
            virgin[0], hits[0] = 0, 9
            virgin[16:20] = (0xFF & ~0x40, 0xFE, 0xFF, 0xFE)  # 16 counted 32-127, 18 uncovered
            hits[[16, 17, 19]] = 1
            nobody = np.zeros(0, np.int64)
            assert list(retirement.retire_covered(virgin, hits, nobody)) == [16, 17]
            assert retirement.hot_ids() == {0, 1, 2} and retirement.retired_uncovered(virgin) == 0
            now[0] = retire.HOT_GRACE
            given_up = [18] if gated else []
            assert list(retirement.retire_covered(virgin, hits, nobody)) == given_up, \
                "given up where the gate then closes; label 19's site is not hot"
            assert retirement.retired_uncovered(virgin) == len(given_up)
            assert retirement.closed_now == (1 if gated else 0)
        finally:
            retirement.close()
