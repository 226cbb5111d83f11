"""``ffcc --retired=FILE PROGRAM -o LEAN``: a drop-in build (objects, the build's own archives
named or found through -L/-l, dependency files) linked again with the listed labels compiled
out, the build tree left as it was."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import ffcc

from ffcc.fuzzer.engine.lean import mismatch
from ffcc.runtime.abi import link_record_path, read_label_db, write_retired

LABELS = {"FFCC_FLAGS": "--mcc --wm"}
UNITS = {
    "lib/b.c": "int classify(int x) {\n  if (x > 10 && x < 100) return 1;\n"
               "  if (x == 42) return 2;\n  return x * 3 + 1 > 50;\n}\n",
    "lib/c.c": "int twice(int x) { return x < 0 ? -x : x + x; }\n",
    "lib2/d.c": "int span(int a, int b) { return a - b > 3 || b % 5 == 1; }\n",
    "src/main.c": "#include <stdio.h>\nint classify(int); int twice(int); int span(int, int);\n"
                  "int main(int argc, char **argv) {\n  unsigned char b[4] = {0};\n"
                  "  FILE *f = argc > 1 ? fopen(argv[1], \"rb\") : NULL;\n"
                  "  if (!f) return 1;\n  fread(b, 1, 4, f);\n  fclose(f);\n"
                  "  printf(\"%d %d %d\\n\", classify(b[0]), twice(b[1] - 128), span(b[2], b[3]));\n"
                  "  return b[2] > 200;\n}\n",
}
INPUTS = [bytes([a, b, c, d]) for a, b, c, d in
          ((0, 0, 0, 0), (42, 200, 9, 1), (11, 3, 250, 6), (99, 128, 17, 16), (255, 1, 201, 200))]


def write_units(root: Path) -> None:
    for name, text in UNITS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def make_like_build(root: Path) -> Path:
    """What make would run: objects with and without -o and -MD, two archives, one linked by
    name and one through -L/-l."""
    write_units(root)
    ffcc("-O2", "-MD", "-MF", "b.d", "-c", "b.c", "-o", "b.o", cwd=root / "lib", env=LABELS)
    ffcc("-O2", "-c", "c.c", cwd=root / "lib", env=LABELS)
    subprocess.run(["ar", "rcs", "libbc.a", "b.o", "c.o"], cwd=root / "lib", check=True)
    ffcc("-O2", "-c", "lib2/d.c", "-o", "lib2/d.o", cwd=root, env=LABELS)
    subprocess.run(["ar", "rcs", "lib2/libd.a", "lib2/d.o"], cwd=root, check=True)
    ffcc("-O2", "-c", "src/main.c", "-o", "src/main.o", cwd=root, env=LABELS)
    ffcc("src/main.o", "lib2/libd.a", "-L", "lib", "-lbc", "-o", "prog", cwd=root, env=LABELS)
    assert link_record_path(root / "prog").is_file()
    return root / "prog"


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in root.rglob("*") if p.is_file()}


def outputs(binary: Path, tmp_path: Path) -> list[tuple[int, str]]:
    found = []
    for number, data in enumerate(INPUTS):
        case = tmp_path / f"case{number}"
        case.write_bytes(data)
        done = subprocess.run([str(binary), str(case)], capture_output=True, text=True, timeout=10)
        found.append((done.returncode, done.stdout))
    return found


def relink(full: Path, tmp_path: Path, every: int) -> tuple[Path, set[int]]:
    """``full`` linked again into tmp_path/lean/ without every ``every``-th label, run from
    elsewhere with FFCC_FLAGS that would prune (the rebuild repeats what each run recorded)."""
    database = read_label_db(full)
    assert database is not None and len(database.labels) > 20
    listed = {label.id: label.id % 3 == 0 for label in database.labels[::every]}
    write_retired(tmp_path / "retired.jsonl", database.labels, listed)
    lean = tmp_path / "lean" / full.name
    ffcc("--retired=retired.jsonl", str(full), "-o", "lean/" + full.name, cwd=tmp_path,
         env={"FFCC_FLAGS": "--prune"})
    return lean, set(listed)


def test_a_make_like_build_is_linked_again_lean_and_the_tree_stays(tmp_path) -> None:
    full = make_like_build(tmp_path / "build")
    before = tree(tmp_path / "build")
    lean, listed = relink(full, tmp_path, 2)
    assert tree(tmp_path / "build") == before, "the build tree is left as it was"
    assert mismatch(read_label_db(full), read_label_db(lean), listed) is None  # type: ignore[arg-type]
    assert outputs(lean, tmp_path) == outputs(full, tmp_path)
    assert lean.stat().st_size < full.stat().st_size, "their code is gone"
    assert sorted(os.listdir(lean.parent)) == ["prog", "prog.ffcc-summary.json",
                                               "prog.labels.jsonl"], \
        "no objects left, and no record: the lean build is rebuilt from the full one"


def test_a_program_compiled_and_linked_in_one_command_is_built_again(tmp_path) -> None:
    root = tmp_path / "build"
    write_units(root)
    ffcc("-O2", "src/main.c", "lib/b.c", "lib/c.c", "lib2/d.c", "-o", "prog", cwd=root,
         env=LABELS)
    lean, listed = relink(root / "prog", tmp_path, 3)
    assert mismatch(read_label_db(root / "prog"), read_label_db(lean), listed) is None  # type: ignore[arg-type]
    assert outputs(lean, tmp_path) == outputs(root / "prog", tmp_path)


@pytest.mark.parametrize("damage", ["source gone", "record unreadable"])
def test_a_build_that_cannot_be_repeated_fails_in_one_line(tmp_path, damage) -> None:
    full = make_like_build(tmp_path / "build")
    if damage == "source gone":
        (tmp_path / "build/lib2/d.c").unlink()
    else:
        link_record_path(full).write_text("{")
    database = read_label_db(full)
    assert database is not None
    write_retired(tmp_path / "retired.jsonl", database.labels, {0: True})
    done = ffcc("--retired=retired.jsonl", str(full), "-o", "lean/prog", cwd=tmp_path,
                check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert ("d.c: cannot compile it again" if damage == "source gone"
            else "prog.ffcc-link.json: unreadable") in lines[0]
    assert not (tmp_path / "lean/prog").exists()
    assert not list((tmp_path / "lean").glob(".*")), "no objects left behind"
