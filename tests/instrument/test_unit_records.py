"""The lines a labelled unit's object carries in its label database section (labels.py's
UnitRecord and UnitLabel): what label_db.py reads back after the link and what objects built
by earlier ffccs hold, so the format stays as it is: key order, compact label lines, keys
left out rather than written empty."""

from __future__ import annotations

from dataclasses import replace

from ffcc.instrument.labels import (
    UnitLabel,
    UnitRecord,
    labeldb_incbin,
    preamble,
    unit_db,
    unlabelled_record,
)
from ffcc.rewriters.model import Label, MergedLabel, MutatedLabel
from ffcc.runtime.abi import INFEASIBLE, RETIRED, UNIT_HEADER_SIZE

MCC = Label(4, 2, "mcc", "mcc", "/src/u.c", 9, 7, "f", "a && b", "a && !b")
ROR = MutatedLabel(0, 1, "wm", "wm.ror.lt_le", "/src/u.c", 29, 22, "lookup", "i < n", "i == n",
                   mutants={"wm.ror.lt_le": "i <= n"})
MERGED = MergedLabel(1, 1, "wm", "wm.cor.and_lhs", "/src/u.c", 30, 5, "lookup", "s == \"\u00e9\"",
                     "s != \"\u00e9\"", mutants={"wm.cor.and_lhs": "s"}, also=("mcc",))


def test_label_lines_leave_out_the_file_and_the_gate_of_a_unit_without_gates():
    assert UnitLabel(MCC).to_json() == (
        '{"index":4,"criterion":"mcc","operator":"mcc","line":9,"column":7,"function":"f",'
        '"original":"a && b","predicate":"a && !b"}')
    assert UnitLabel(ROR, gated=True).to_json() == (
        '{"index":0,"gate":1,"criterion":"wm","operator":"wm.ror.lt_le","line":29,"column":22,'
        '"function":"lookup","original":"i < n","predicate":"i == n",'
        '"mutants":{"wm.ror.lt_le":"i <= n"}}')


def test_a_verdict_comes_last_and_text_is_ascii():
    assert UnitLabel(MERGED, gated=True, pruned=RETIRED).to_json() == (
        '{"index":1,"gate":1,"criterion":"wm","operator":"wm.cor.and_lhs","line":30,"column":5,'
        '"function":"lookup","original":"s == \\"\\u00e9\\"","predicate":"s != \\"\\u00e9\\"",'
        '"mutants":{"wm.cor.and_lhs":"s"},"also":["mcc"],"pruned":"retired"}')


def test_unit_records_round_trip():
    record = UnitRecord(3404339481, 2, "/src/u.c")
    assert record.to_json() == '{"unit": 3404339481, "count": 2, "file": "/src/u.c"}'
    assert UnitRecord.from_json(record.to_json()) == record
    unlabelled = unlabelled_record("/src/v.c", "libclang cannot parse it: 12:9: no")
    assert unlabelled.to_json() == ('{"unit": 0, "count": 0, "file": "/src/v.c", '
                                    '"unlabelled": "libclang cannot parse it: 12:9: no"}')
    assert UnitRecord.from_json(unlabelled.to_json()) == unlabelled


def test_the_preamble_writes_the_unit_record_then_its_labels_and_a_byte_per_gate():
    records = [UnitLabel(ROR), replace(UnitLabel(MERGED), pruned=INFEASIBLE)]
    text = preamble(7, "/src/u.c", records, "/tmp/u.c.db")
    assert labeldb_incbin("/tmp/u.c.db") in text
    assert unit_db(7, "/src/u.c", records).splitlines() == [
        UnitRecord(7, 2, "/src/u.c").to_json(), *(record.to_json() for record in records)]
    assert f"__ffcc_unit_slots[{UNIT_HEADER_SIZE + 2}]" in text, "no gate bytes"
    gated = [replace(record, gated=True) for record in records]
    assert f"__ffcc_unit_slots[{UNIT_HEADER_SIZE + 2 + 2}]" in preamble(7, "/src/u.c", gated, "db"), \
        "gates 0 and 1"
