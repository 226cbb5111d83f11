"""Small readers: labels files, dictionaries."""
from __future__ import annotations

import numpy as np
import pytest

from ffcc.fuzzer.engine.dictionary import load_dictionary
from ffcc.fuzzer.engine.labels import LabelMap, edge_region_end
from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.abi import LabelDatabase, LabelRecord, db_path, write_label_db


def test_labels_sit_in_the_last_aligned_bytes_of_the_map(tmp_path) -> None:
    binary = tmp_path / "prog"
    binary.write_bytes(b"")
    write_label_db(binary, LabelDatabase(128, [LabelRecord(7, 0),
                                               LabelRecord(9, 2, criterion="wm")]))
    labels = LabelMap.load(binary)
    assert labels is not None and labels.label_ids == (7, -1, 9) and labels.count == 2
    assert labels.region_start(1024) == 1024 - 128 == edge_region_end(labels, 1024)
    virgin = np.full(1024, 0xFF, np.uint8)
    virgin[896 + 2] = 0x7F
    assert labels.covered(virgin) == 1
    assert LabelMap.load(tmp_path / "other") is None and edge_region_end(None, 1024) == 1024


def test_a_broken_labels_file_is_a_one_line_error(tmp_path) -> None:
    write_label_db(tmp_path / "p", LabelDatabase(64, [LabelRecord(1, 0)]))
    database = db_path(tmp_path / "p")
    database.write_text(database.read_text().replace(', "slot": 0', ""))
    with pytest.raises(FuzzerError, match=r"p.labels.jsonl:2: not a label record") as error:
        LabelMap.load(tmp_path / "p")
    assert "\n" not in str(error.value)


def test_afl_dictionary_syntax(tmp_path) -> None:
    d = tmp_path / "x.dict"
    d.write_text('# comment\nkw1="<!ATTLIST"\n"\\x00\\xffA"\nquote="a\\"b"\n\n')
    assert load_dictionary(d) == [b"<!ATTLIST", b"\x00\xffA", b'a"b']
    d.write_text("not a token\n")
    with pytest.raises(FuzzerError, match="x.dict:1"):
        load_dictionary(d)
