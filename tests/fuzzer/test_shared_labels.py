"""Labelled shared objects carry their labels like programs do (issue 31.4): each has its label
database, a program that links one and dlopen()s two has every object's labels in slots of
their own (the same whatever order inputs load them in), and ffuzz and ffuzz report count them
with their files; afl-showmap still runs the program."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fuzz_targets import ffuzz_env
from helpers import have, one_seed

from ffcc.fuzzer.engine.executor import NativeExecutor, RunStatus, TargetCommand
from ffcc.runtime.abi import NAMES, read_label_db

LIBRARY = "int {name}_check(int x, int y) {{ if (x > {k} && y < 2) return 1; return x == y; }}\n"
# Links libfa; dlopen()s libfb and libfc in the order the input's letters name them.
MAIN = r"""
#include <dlfcn.h>
#include <stdio.h>
int a_check(int, int);
int main(int argc, char **argv) {
  char order[8] = {0};
  FILE *f = argc > 1 ? fopen(argv[1], "r") : 0;
  if (f) { if (!fread(order, 1, 7, f)) order[0] = 0; fclose(f); }
  int total = a_check(order[0], 1);
  for (char *c = order; *c == 'b' || *c == 'c'; c++) {
    char path[32], symbol[16];
    snprintf(path, sizeof path, "libf%c.so", *c); /* found by the RUNPATH */
    snprintf(symbol, sizeof symbol, "%c_check", *c);
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) return 2;
    total += ((int (*)(int, int))dlsym(lib, symbol))(c[1], 3);
  }
  printf("%d\n", total);
  return 0;
}
"""
BACKENDS = [cc for cc in ("gcc", "clang") if have(cc)]
RESERVE = NAMES["FFCC_ENV_LABEL_RESERVE"]


def build(tmp_path: Path, cc: str) -> Path:
    """libfa.so, libfb.so, libfc.so and the program, labelled, in tmp_path (drop-in form)."""
    env = {**os.environ, "FFCC_FLAGS": "--mcc --wm", "FFCC_CC": cc}
    for name, k in (("a", 3), ("b", 5), ("c", 7)):
        (tmp_path / f"lib{name}.c").write_text(LIBRARY.format(name=name, k=k))
        subprocess.run(["ffcc", "-fPIC", "-shared", f"lib{name}.c", "-o", f"libf{name}.so"],
                       cwd=tmp_path, env=env, check=True)
    (tmp_path / "main.c").write_text(MAIN)
    subprocess.run(["ffcc", "main.c", "-L.", "-lfa", "-Wl,-rpath,$ORIGIN", "-ldl", "-o", "prog"],
                   cwd=tmp_path, env=env, check=True)
    return tmp_path / "prog"


def live_labels(path: Path) -> int:
    database = read_label_db(path)
    assert database is not None, f"{path} has no label database"
    return len([label for label in database.labels if not label.pruned])


@pytest.mark.parametrize("cc", BACKENDS)
def test_each_object_has_its_slots_whatever_the_load_order(tmp_path, cc, monkeypatch):
    program = build(tmp_path, cc)
    for name in "abc":
        summary = json.loads((tmp_path / f"libf{name}.so.ffcc-summary.json").read_text())
        assert summary["labels"] == live_labels(tmp_path / f"libf{name}.so") > 0
    monkeypatch.setenv(RESERVE, "4096")
    executor = NativeExecutor(TargetCommand((str(program), "@@")), tmp_path / "cur", 5000, 0)
    try:
        linked = executor.modules()
        assert linked is not None and [Path(m.path).name for m in linked.modules] == ["libfa.so"]
        assert executor.calibrate(b"cb", 1, False).status == RunStatus.OK
        table = executor.modules()
        assert table is not None
        bases = {Path(m.path).name: (m.base, m.size) for m in table.modules}
        assert list(bases) == ["libfa.so", "libfc.so", "libfb.so"]
        ranges = sorted((base, base + size) for base, size in bases.values())
        assert all(end <= start for (_, end), (start, _) in zip(ranges, ranges[1:]))
        assert ranges[-1][1] <= table.region
        assert executor.calibrate(b"bc", 1, False).status == RunStatus.OK
        assert executor.modules() == table  # libfb keeps the slots the first load gave it
    finally:
        executor.close()


@pytest.mark.parametrize("cc", BACKENDS)
def test_ffuzz_and_its_report_count_every_objects_labels(tmp_path, cc):
    program = build(tmp_path, cc)
    out = tmp_path / "out"
    env = ffuzz_env()  # a program that names dlopen gets room for its objects' labels
    done = subprocess.run(["ffuzz", "-i", str(one_seed(tmp_path, b"bc")), "-o", str(out),
                           "-E", "2000", "--seed", "3", "--", str(program), "@@"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    stats = {key.strip(): value.strip() for key, _, value in
             (line.partition(":") for line in (out / "default/fuzzer_stats").read_text().splitlines())}
    expected = sum(live_labels(tmp_path / name) for name in ("prog", "libfa.so", "libfb.so",
                                                              "libfc.so"))
    assert int(stats["labels_total"]) == expected
    report = subprocess.run(["ffuzz", "report", str(out)], capture_output=True, text=True,
                            env=env, timeout=600)
    assert report.returncode == 0, report.stderr
    for source in ("main.c", "liba.c", "libb.c", "libc.c"):
        assert f"│ {source}" in report.stdout


@pytest.mark.skipif(not have("afl-showmap"), reason="AFL++ not installed")
def test_afl_showmap_runs_a_program_with_labelled_objects(tmp_path):
    program = build(tmp_path, "clang" if have("clang") else "gcc")
    (tmp_path / "input").write_bytes(b"cb")
    done = subprocess.run(["afl-showmap", "-q", "-o", str(tmp_path / "map"), "--", str(program),
                           str(tmp_path / "input")], capture_output=True,
                          env={**os.environ, "AFL_QUIET": "1", RESERVE: "4096"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "map").read_text().split()) > 10


def test_room_kept_for_dlopen_is_no_edge(tmp_path):
    """A program that names dlopen gets a module region before any object is loaded: its
    bytes are not counted as edges of the program."""
    source = tmp_path / "names_dlopen.c"
    source.write_text("#include <dlfcn.h>\n#include <stdio.h>\n"
                      "int main(int argc, char **argv) {\n"
                      "  if (argc > 5) dlopen(argv[5], RTLD_NOW);\n"
                      "  FILE *f = fopen(argv[1], \"r\");\n"
                      "  if (f && fgetc(f) == 'x') puts(\"x\");\n"
                      "  if (f) fclose(f);\n  return 0;\n}\n")
    program = tmp_path / "names_dlopen"
    subprocess.run(["ffcc", str(source), "-ldl", "-o", str(program)], check=True)
    out = tmp_path / "out"
    done = subprocess.run(["ffuzz", "-i", str(one_seed(tmp_path, b"a")), "-o", str(out),
                           "-E", "300", "--seed", "1", "--", str(program), "@@"],
                          capture_output=True, text=True, env=ffuzz_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    stats = {key.strip(): value.strip() for key, _, value in
             (line.partition(":") for line in (out / "default/fuzzer_stats").read_text().splitlines())}
    assert 0 < int(stats["total_edges"]) < 65536
