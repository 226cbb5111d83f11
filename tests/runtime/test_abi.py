"""ffcc.runtime.abi agrees with the C side of the contract and with itself.

The constants are checked against what a C compiler makes of the headers, the label
database against its own writer, and the label region a reader takes from a real build's
database against the map the runtime announces in its forkserver hello.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from forkserver_client import run_once
from helpers import REPO, ffcc, have, sample_sources

from ffcc import runtime
from ffcc.native import lib
from ffcc.runtime import abi

CC = shutil.which("cc") or "gcc"
needs_cc = pytest.mark.skipif(not have(CC), reason="no C compiler")
HEADERS = {runtime.PROTOCOL_HEADER: abi.PROTOCOL, runtime.NAMES_HEADER: abi.NAMES}


def compiler_macros(source: str, tmp_path: Path) -> dict[str, str]:
    """NAME -> replacement text of every macro defined after preprocessing ``source``."""
    path = tmp_path / "macros.c"
    path.write_text(source)
    out = subprocess.run([CC, "-dM", "-E", "-I", str(runtime.RUNTIME_DIR), str(path)],
                         check=True, capture_output=True, text=True).stdout
    macros = {}
    for line in out.splitlines():
        _, name, *value = line.split(" ", 2)  # "#define NAME value"
        macros[name] = value[0] if value else ""
    return macros


@needs_cc
@pytest.mark.parametrize("header", HEADERS, ids=lambda h: h.name)
def test_abi_reads_every_valued_define_of_the_header(header: Path, tmp_path: Path) -> None:
    baseline = compiler_macros("#include <stdint.h>\n", tmp_path)
    macros = compiler_macros(f'#include <stdint.h>\n#include "{header.name}"\n', tmp_path)
    valued = {name for name, value in macros.items() if name not in baseline and value}
    assert valued == set(HEADERS[header])


@needs_cc
def test_abi_values_are_what_c_compiles(tmp_path: Path) -> None:
    prints = [f'printf("%s %llu\\n", "{name}", (unsigned long long)({name}));'
              for name in abi.PROTOCOL]
    prints += [f'printf("%s %s\\n", "{name}", {name});' for name in abi.NAMES]
    source = tmp_path / "values.c"
    source.write_text('#include <stdio.h>\n#include "ffcc_protocol.h"\n#include "ffcc_names.h"\n'
                      "int main(void) {\n" + "\n".join(prints) + "\nreturn 0;\n}\n")
    subprocess.run([CC, "-I", str(runtime.RUNTIME_DIR), "-o", str(tmp_path / "values"),
                    str(source)], check=True)
    out = subprocess.run([str(tmp_path / "values")], check=True, capture_output=True,
                         text=True).stdout
    seen = dict(line.split(" ", 1) for line in out.splitlines())
    assert seen == {name: str(value) for name, value in {**abi.PROTOCOL, **abi.NAMES}.items()}


def test_the_runtime_and_the_native_core_use_the_same_names() -> None:
    map_source = (runtime.RUNTIME_DIR / "ffcc_map.c").read_text()
    for bound in ("start", "stop"):  # the linker's names for the section's bounds
        assert f"__{bound}_{abi.LABEL_SECTION}[]" in map_source
    assert all(getattr(lib, name) == value for name, value in abi.PROTOCOL.items())
    assert abi.MAX_INPUT == lib.FFCC_SHM_FUZZ_MAX and abi.align_up(1) == abi.MAP_ALIGN


def test_label_database_round_trips(tmp_path: Path) -> None:
    labels = [abi.LabelRecord(0, 12, "/a.c", "mcc", "mcc", line=3, column=7),
              abi.LabelRecord(1, 70, "/a.c", "wm", "wm.abs.zero", also=("mcc",),
                              mutants={"wm.abs.zero": "failOnZero(x) < 0"},
                              pruned=abi.TRIVIAL, gate=71)]
    program = tmp_path / "prog"
    abi.write_label_db(program, abi.LabelDatabase(128, labels))
    lines = (tmp_path / "prog.labels.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "ffcc-labels", "version": 1, "label_region": 128,
                                    "labels": 2}
    assert json.loads(lines[1]) == {"id": 0, "slot": 12, "file": "/a.c", "criterion": "mcc",
                                    "operator": "mcc", "line": 3, "column": 7, "function": "",
                                    "original": "", "predicate": ""}
    assert list(json.loads(lines[2]))[-3:] == ["mutants", "pruned", "gate"]
    assert abi.read_label_db(program) == abi.LabelDatabase(128, labels)
    assert abi.read_label_db(tmp_path / "other") is None


def test_label_records_of_a_real_build_round_trip_byte_for_byte(tmp_path: Path) -> None:
    """What ffcc writes (also, mutants, pruned and gate included) is what LabelRecord writes
    back."""
    ffcc("--mcc", "--wm", "--prune", "--label-gates", "-o", f"{tmp_path}/",
         "samples/temperature/temperature.c", cwd=REPO)
    lines = abi.db_path(tmp_path / "temperature").read_text().splitlines()[1:]
    records = [abi.LabelRecord.from_json(line) for line in lines]
    assert all(any(getattr(r, name) for r in records)
               for name in ("also", "mutants", "pruned", "gate"))
    assert [record.to_json() for record in records] == lines


def test_a_record_of_id_and_slot_alone_reads_with_empty_fields() -> None:
    assert abi.LabelRecord.from_json('{"id": 4, "slot": 9, "index": 2}') == abi.LabelRecord(4, 9)


def header(version: int = 1, label_region: int = 64, labels: int = 0) -> dict:
    return {"format": "ffcc-labels", "version": version, "label_region": label_region,
            "labels": labels}


@pytest.mark.parametrize("records, complaint", [
    ([header(version=2)], "version 2"),
    ([{"id": 0, "slot": 12}], "no header record"),
    ([header(label_region=8)], "multiple of"),
    ([header(labels=1), {"id": 0, "slot": 70}], "cannot hold slot 70"),
    ([header(labels=2), {"id": 0, "slot": 7}], "announces 2 labels"),
])
def test_a_database_this_ffcc_cannot_read_is_refused_in_one_line(tmp_path: Path, records: list,
                                                                 complaint: str) -> None:
    (tmp_path / "prog.labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(abi.LabelDbError, match=complaint) as error:
        abi.read_label_db(tmp_path / "prog")
    assert "\n" not in str(error.value) and "prog.labels.jsonl" in str(error.value)


def edge_region(program: Path, backend: str) -> int:
    """The edge region the runtime sizes: gcc hashes into a fixed region, clang numbers
    guards from 1 (runtime/ffcc_map.c)."""
    if backend == "gcc":
        return 1 << abi.PROTOCOL["FFCC_GCC_EDGE_BITS"]
    from elftools.elf.elffile import ELFFile

    with open(program, "rb") as f:
        section = ELFFile(f).get_section_by_name("__sancov_guards")
        assert section is not None
        return abi.align_up(section.data_size // 4 + 1)


@pytest.mark.parametrize("backend", [b for b in ("gcc", "clang") if have(b)])
def test_the_label_region_is_the_one_the_runtime_lays_out(backend: str, tmp_path: Path) -> None:
    ffcc(f"--cc={backend}", "--wm", "-o", f"{tmp_path}/b/", *sample_sources("temperature"),
         cwd=REPO)
    program = tmp_path / "b" / "temperature"
    database = abi.read_label_db(program)
    assert database is not None and database.labels
    reading = tmp_path / "reading"
    reading.write_bytes(b"T\x01\x32\x00")
    map_size, run = run_once([str(program), str(reading)])
    assert map_size is not None
    assert map_size - edge_region(program, backend) == database.label_region
    start = abi.label_region_start(map_size, database.label_region)
    hit = {i - start for i in range(start, map_size) if run.map[i]}
    assert hit and hit <= {label.slot for label in database.labels}
