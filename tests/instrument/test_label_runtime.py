"""Labels reach the fuzzer: each label has its own slot in the map's label region.

The label region is the last bytes of the map the forkserver announces, as many
as the label database's header record says; the database names each slot
(ffcc.runtime.abi).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from forkserver_client import run_once
from helpers import REPO, ffcc, have, sample_sources

from ffcc.instrument.labels import COUNT_FORM, LABELS_WRITTEN
from ffcc.instrument.toolchain import select_backend
from ffcc.runtime.abi import UNIT_HEADER_SIZE, LabelRecord, label_region_start, read_label_db

BACKENDS = [b for b in ("gcc", "clang") if have(b)]
READINGS = {20: b"T\x01\x14\x00", 50: b"T\x01\x32\x00", 75: b"T\x01\x4b\x00"}


def load_db(program: Path) -> list[LabelRecord]:
    return read_label_db(program).labels


def label_hits(program: Path, data: bytes, tmp_path: Path) -> set[int]:
    """Slots of the labels an input covers, read from the shared map."""
    database = read_label_db(program)
    case = tmp_path / "input"
    case.write_bytes(data)
    size, run = run_once([str(program), str(case)])
    start = label_region_start(size, database.label_region)
    return {l.slot for l in database.labels if run.map[start + l.slot]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_kill_label_for_the_off_by_one_fires_only_at_50(backend, opt, tmp_path):
    ffcc(f"--cc={backend}", "--mcc", "--wm", opt, "-o", f"{tmp_path}/b/",
         *sample_sources("temperature"), cwd=REPO)
    program = tmp_path / "b" / "temperature"
    labels = load_db(program)
    assert [l.id for l in labels] == list(range(len(labels)))
    assert len({l.slot for l in labels}) == len(labels), "one slot per label"
    (kill,) = [l for l in labels if l.operator == "wm.ror.ge_gt"]
    assert kill.function == "fan_speed_for" and kill.line == 15
    hits = {t: label_hits(program, data, tmp_path) for t, data in READINGS.items()}
    assert kill.slot in hits[50]
    assert kill.slot not in hits[20] | hits[75]
    assert hits[20] != hits[75], "different temperatures, different labels"


def test_drop_in_build_with_archive_and_dependency_files(tmp_path):
    (tmp_path / "util.h").write_text("int clamp(int v, int lo, int hi);\n")
    (tmp_path / "util.c").write_text(
        '#include "util.h"\nint clamp(int v, int lo, int hi) {\n'
        "  if (v < lo || v > hi) return v < lo ? lo : hi;\n  return v;\n}\n")
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n#include "util.h"\n'
        "int main(int argc, char **argv) {\n  int v = argc > 1 ? atoi(argv[1]) : 0;\n"
        '  if (v > 0 && v % 2 == 0) puts("even");\n'
        '  printf("%d\\n", clamp(v, 0, 10));\n  return 0;\n}\n')
    env = {"FFCC_FLAGS": "--mcc --wm=ROR,COR"}
    for unit in ("util", "main"):
        ffcc("-O1", "-MD", "-c", f"{unit}.c", "-o", f"{unit}.o", cwd=tmp_path, env=env)
        deps = (tmp_path / f"{unit}.d").read_text()
        assert f"{unit}.c" in deps and "ffcc-labels-" not in deps
    subprocess.run(["ar", "rcs", "libutil.a", "util.o"], cwd=tmp_path, check=True)
    # A link as CMake writes it, with the compile's flags (-Wcomma is clang's alone): the
    # gcc beside clang runs it without them (plan.link_argv), and the database is written.
    link = ffcc("--ffcc-verbose", "-O1", "-Wcomma", "main.o", "libutil.a", "-o", "prog",
                cwd=tmp_path, env=env)
    linker = select_backend(None).linker
    if linker is not None:
        assert link.stderr.startswith(f"ffcc: {linker} main.o libutil.a -o prog "), link.stderr
    labels = load_db(tmp_path / "prog")
    assert {Path(l.file).name for l in labels} == {"util.c", "main.c"}
    assert {l.criterion for l in labels} == {"mcc", "wm"}
    assert all(l.operator.startswith(("mcc", "wm.ror", "wm.cor")) for l in labels)
    out = subprocess.run([str(tmp_path / "prog"), "42"], capture_output=True, text=True)
    assert out.stdout == "even\n10\n"


def test_a_link_through_gcc_makes_the_program_clangs_link_makes(tmp_path):
    """plan.link_argv's shortcut changes the driver, not the program: the same code at the
    same addresses, the same label database."""
    if select_backend(None).linker is None:
        pytest.skip("no gcc beside clang")
    env = {"FFCC_FLAGS": "--mcc --wm"}
    ffcc("-O1", "-c", str(REPO / "samples" / "temperature" / "temperature.c"), "-o", "t.o",
         cwd=tmp_path, env=env)
    texts = {}
    for name, driver_option in (("via_gcc", "-O1"), ("via_clang", "-Qunused-arguments")):
        ffcc(driver_option, "t.o", "-o", name, cwd=tmp_path, env=env)
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", name, f"{name}.text"],
                       cwd=tmp_path, check=True)
        texts[name] = ((tmp_path / f"{name}.text").read_bytes(),
                       (tmp_path / f"{name}.labels.jsonl").read_text().splitlines())
    assert texts["via_gcc"][0] and texts["via_gcc"] == texts["via_clang"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_macros_labels_what_a_macro_expands_to(backend, tmp_path):
    (tmp_path / "prog.c").write_text(
        "#include <stdio.h>\n#define IN_RANGE(v) ((v) >= 10 && (v) < 20)\n"
        "int main(int argc, char **argv) {\n  int v = 0; FILE *f = fopen(argv[1], \"r\");\n"
        '  if (fscanf(f, "%d", &v) != 1) return 1;\n'
        '  printf("%d %s\\n", IN_RANGE(v), __FILE__);\n  return 0;\n}\n')
    values = {v: tmp_path / f"value{v}" for v in (5, 10, 19, 20)}
    for v, path in values.items():
        path.write_text(str(v))
    outputs, dbs = [], []
    for flags in ([], ["--in-macros"]):
        build = tmp_path / ("in" if flags else "out")
        ffcc(f"--cc={backend}", "--mcc", *flags, "-o", f"{build}/", "prog.c", cwd=tmp_path)
        dbs.append(load_db(build / "prog") if flags else [])
        assert flags or not (build / "prog.labels.jsonl").exists()  # no labels, no database
        outputs.append([subprocess.run([str(build / "prog"), path], capture_output=True).stdout
                        for path in values.values()])
    assert outputs[0] == outputs[1] and outputs[0][1] == b"1 prog.c\n"
    assert {(l.line, l.column, l.original) for l in dbs[1]} == {
        (6, 21, "((v) >= 10 && (v) < 20)")}
    assert len(dbs[1]) == 3  # one per combination evaluation reaches: v < 20 only if v >= 10
    hits = [label_hits(tmp_path / "in" / "prog", v, tmp_path) for v in (b"5", b"15", b"25")]
    assert all(len(h) == 1 for h in hits) and len(set().union(*hits)) == 3


LOOP = ("#include <stdio.h>\nint main(int argc, char **argv) {\n"
        "  int n = 0, odd = 0; FILE *f = fopen(argv[1], \"r\");\n"
        "  if (!f || fscanf(f, \"%d\", &n) != 1) return 1;\n"
        "  for (int i = 0; i < n; i++)\n    if (i >= 0 && n > 0) odd += i & 1;\n"
        "  printf(\"%d\\n\", odd);\n  return 0;\n}\n")


def label_counts(program: Path, data: bytes, tmp_path: Path) -> dict[int, int]:
    """Each label's count in one run, by slot."""
    database = read_label_db(program)
    case = tmp_path / "input"
    case.write_bytes(data)
    size, run = run_once([str(program), str(case)])
    start = label_region_start(size, database.label_region)
    return {l.slot: run.map[start + l.slot] for l in database.labels}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_a_label_counts_up_to_255_and_stays_there(backend, opt, tmp_path):
    """A count saturates rather than wrapping: a loop's label that held 128 times or more in
    a run shows the top hit-count class, as retire.py's hot sites need, however long the
    loop (1,024 runs wrapping past 255 would read 4)."""
    (tmp_path / "loop.c").write_text(LOOP)
    ffcc(f"--cc={backend}", "--mcc", opt, "-o", f"{tmp_path}/b/", "loop.c", cwd=tmp_path)
    program = tmp_path / "b" / "loop"
    (both,) = [l.slot for l in load_db(program) if l.line == 6 and l.operator == "mcc"
               and (l.original or "").count("&&") and l.slot in
               {s for s, c in label_counts(program, b"3", tmp_path).items() if c == 3}]
    for runs, count in ((3, 3), (254, 254), (255, 255), (256, 255), (1024, 255), (1130, 255)):
        assert label_counts(program, str(runs).encode(), tmp_path)[both] == count, runs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["x86-64", "C"])
def test_the_count_form_saturates_in_asm_and_in_c(backend, form, tmp_path):
    """COUNT_FORM's update, on x86-64 and as the C used elsewhere (``__x86_64__`` undefined
    before it), counts a held predicate up to 255 and stays there; a retired label's byte
    stops it.  A count says so in ``LABELS_WRITTEN`` (the runtime then scans the label
    region); a retired label's does not."""
    (tmp_path / "count.c").write_text(
        "#include <stdio.h>\n#include <stdint.h>\n"
        f"unsigned char __ffcc_unit_slots[{UNIT_HEADER_SIZE} + 2], counts[sizeof __ffcc_unit_slots],"
        f" retired[sizeof __ffcc_unit_slots], {LABELS_WRITTEN};\n"
        "uintptr_t __ffcc_label_delta, __ffcc_retire_delta;\n"
        + ("#undef __x86_64__\n" if form == "C" else "") + COUNT_FORM +
        "int main(int argc, char **argv) {\n  (void)argv;\n"
        "  __ffcc_label_delta = (uintptr_t)counts - (uintptr_t)__ffcc_unit_slots;\n"
        "  __ffcc_retire_delta = (uintptr_t)retired - (uintptr_t)__ffcc_unit_slots;\n"
        f"  retired[{UNIT_HEADER_SIZE} + 1] = 1;\n"
        "  __FFCC_COUNT(1, argc > 0);\n  __FFCC_COUNT(0, argc < 0);\n"
        f"  printf(\"written %d\\n\", {LABELS_WRITTEN});\n"
        "  for (int k = 0; k < 1000; k++) {\n"
        "    __FFCC_COUNT(0, argc > 0);\n    __FFCC_COUNT(1, argc > 0);\n"
        f"    if (k == 253 || k == 254 || k == 999) printf(\"%d %d\\n\", counts[{UNIT_HEADER_SIZE}],"
        f" counts[{UNIT_HEADER_SIZE} + 1]);\n  }}\n"
        f"  printf(\"written %d\\n\", {LABELS_WRITTEN});\n  return 0;\n}}\n")
    subprocess.run([backend, "-O2", "-Wno-builtin-macro-redefined", "count.c", "-o", "count"],
                   cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "count")], capture_output=True, text=True, check=True)
    assert out.stdout == "written 0\n254 0\n255 0\n255 0\nwritten 1\n"
