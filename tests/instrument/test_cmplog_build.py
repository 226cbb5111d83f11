"""ffcc --cmplog: the comparison-logging build, its hooks and its routine wrappers.

The hooks are checked through the segment a fuzzer would hand the program (the records read
back with ffcc.runtime.abi); the program's behaviour is checked against a build without
--cmplog, with and without the segment.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import ffcc, have

from ffcc.fuzzer.engine.cmplog import ENV_CMPLOG, CmplogSegment
from ffcc.instrument.command_line import parse_command
from ffcc.instrument.errors import FfccError
from ffcc.instrument.plan import RuntimeFiles, link_additions, plan_compile
from ffcc.instrument.toolchain import Backend, BackendKind, select_backend
from ffcc.runtime.abi import CMPLOG_INT, CMPLOG_RTN, CmpRecord

COMPILERS = [pytest.param(cc, marks=pytest.mark.skipif(not have(cc), reason=f"no {cc}"))
             for cc in ("clang", "gcc")]

PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
int main(int argc, char **argv) {
  unsigned char b[64] = {0};
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  size_t n = fread(b, 1, sizeof b - 1, f);
  uint32_t x; memcpy(&x, b, 4);
  uint64_t y; memcpy(&y, b + 4, 8);
  if (x == 0xCAFEBABEu) puts("x");
  if (y == 0x1122334455667788ull) puts("y");
  if (strcmp((char *)b + 12, "keyword") == 0) puts("strcmp");
  if (memcmp(b + 20, "MG", 2) == 0) puts("memcmp");
  if (strncasecmp((char *)b + 12, "KEY", 3) == 0) puts("strncasecmp");
  if (strstr((char *)b + 12, "wor")) puts("strstr");
  switch (b[22]) { case 'q': puts("q"); break; case 'z': puts("z"); break; }
  printf("%d %zu\n", strcmp((char *)b + 12, "keyword") < 0, n);
  return 0;
}
"""
INPUTS = (b"ABCDEFGHIJKLhello\0\0\0XYq", b"\xbe\xba\xfe\xca\x88\x77\x66\x55\x44\x33\x22\x11"
          b"keyword\0MGz", b"", b"\xff" * 40)
SEEN = b"ABCDEFGHIJKLhello\0\0\0XYq"


def build(tmp_path: Path, cc: str, *options: str, name: str = "prog") -> Path:
    source = tmp_path / "prog.c"
    source.write_text(PROGRAM)
    ffcc(f"--cc={cc}", *options, "-o", f"{tmp_path / name}/", str(source))
    return tmp_path / name / "prog"


def run(program: Path, data: bytes, tmp_path: Path, env: dict[str, str] | None = None):
    (tmp_path / "input").write_bytes(data)
    done = subprocess.run([str(program), str(tmp_path / "input")], capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=10)
    return done.returncode, done.stdout


def logged(program: Path, data: bytes, tmp_path: Path) -> list[CmpRecord]:
    segment = CmplogSegment()
    try:
        segment.clear()
        run(program, data, tmp_path, {ENV_CMPLOG: str(segment.shm_id)})
        return segment.records()
    finally:
        segment.close()


def operands(records: list[CmpRecord], kind: int) -> set[tuple[bytes, bytes]]:
    return {(r.v0, r.v1) for r in records if r.kind == kind}


@pytest.mark.parametrize("cc", COMPILERS)
def test_hooks_log_integer_string_and_switch_operands(cc, tmp_path):
    records = logged(build(tmp_path, cc, "--cmplog"), SEEN, tmp_path)
    ints = operands(records, CMPLOG_INT)
    assert (0xCAFEBABE.to_bytes(4, "little"), b"ABCD") in ints
    assert (0x1122334455667788.to_bytes(8, "little"), b"EFGHIJKL") in ints
    values = {(int.from_bytes(a, "little"), int.from_bytes(b, "little")) for a, b in ints}
    assert {(ord("q"), ord("q")), (ord("z"), ord("q"))} <= values  # each case, and the value
    const = [r for r in records if r.v0 == 0xCAFEBABE.to_bytes(4, "little")]
    assert const and all(r.const0 for r in const)
    strings = operands(records, CMPLOG_RTN)
    assert {(b"hello", b"keyword"), (b"XY", b"MG"), (b"hel", b"KEY"),
            (b"hello", b"wor")} <= strings


@pytest.mark.parametrize("cc", COMPILERS)
def test_behaviour_is_unchanged_with_and_without_the_log(cc, tmp_path):
    plain = build(tmp_path, cc, name="plain")
    cmplog = build(tmp_path, cc, "--cmplog", name="cmplog")
    segment = CmplogSegment()
    try:
        for data in INPUTS:
            expected = run(plain, data, tmp_path)
            assert run(cmplog, data, tmp_path) == expected
            assert run(cmplog, data, tmp_path, {ENV_CMPLOG: str(segment.shm_id)}) == expected
    finally:
        segment.close()
    assert run(plain, INPUTS[1], tmp_path)[1].splitlines()[:4] == [b"x", b"y", b"strcmp",
                                                                  b"memcmp"]
    assert ENV_CMPLOG.encode() not in plain.read_bytes()  # the log is linked only on request


def test_a_segment_that_cannot_be_attached_is_ignored(tmp_path):
    program = build(tmp_path, "gcc" if have("gcc") else "clang", "--cmplog")
    expected = run(program, SEEN, tmp_path)
    for shm_id in ("-1", "not a number", "2147483647"):
        assert run(program, SEEN, tmp_path, {ENV_CMPLOG: shm_id}) == expected


@pytest.mark.parametrize("cc", COMPILERS)
def test_drop_in_build_through_ffcc_flags(cc, tmp_path):
    source = tmp_path / "prog.c"
    source.write_text(PROGRAM)
    env = {"FFCC_FLAGS": "--cmplog", "FFCC_CC": cc}
    ffcc("-O2", "-c", str(source), "-o", str(tmp_path / "prog.o"), env=env)
    ffcc(str(tmp_path / "prog.o"), "-o", str(tmp_path / "prog"), env=env)
    records = logged(tmp_path / "prog", SEEN, tmp_path)
    assert (b"hello", b"keyword") in operands(records, CMPLOG_RTN)
    assert (0xCAFEBABE.to_bytes(4, "little"), b"ABCD") in operands(records, CMPLOG_INT)


LABELLED = r"""
#include <stdio.h>
int main(int argc, char **argv) {
  int t = 0;
  FILE *f = fopen(argv[1], "rb");
  if (!f || fscanf(f, "%d", &t) != 1) return 1;
  if (t >= 1234) puts("hot");
  return 0;
}
"""


@pytest.mark.skipif(not have("clang"), reason="labels need clang")
def test_label_comparisons_stay_out_of_the_log(tmp_path):
    """A label group compares the program's own operands again (ROR on ``t >= 1234`` asks
    ``t > 1234``, ``t == 1234``, ...): logged, input-to-state would try the same
    replacements once per label.  The labelled build logs 1234 where the plain one does."""
    source = tmp_path / "t.c"
    source.write_text(LABELLED)

    def sites_with_1234(*options: str, name: str) -> int:
        ffcc(*options, "-o", f"{tmp_path / name}/", str(source))
        records = logged(tmp_path / name / "t", b"77", tmp_path)
        return len({r.site for r in records if 1234 in (int.from_bytes(r.v0, "little"),
                                                         int.from_bytes(r.v1, "little"))})

    plain = sites_with_1234("--cmplog", name="plain")
    assert plain >= 1
    assert sites_with_1234("--cmplog", "--mcc", "--wm", name="labelled") == plain


def test_plan_wraps_routines_and_adds_trace_cmp():
    rt = RuntimeFiles.in_dir(Path("/rt"))
    backend = Backend("/usr/bin/clang", BackendKind.CLANG, cmplog=True)
    compile_argv = plan_compile(parse_command(["-c", "a.c"]), backend, None)
    assert "-fsanitize-coverage=trace-cmp" in compile_argv
    assert "-fno-builtin-strcmp" in compile_argv
    link = link_additions(parse_command(["a.o", "-o", "a"]), rt, cmplog=True)
    assert str(rt.cmplog) in link and "-Wl,--wrap=memcmp" in link
    plain = link_additions(parse_command(["a.o", "-o", "a"]), rt)
    assert str(rt.cmplog) not in plain and not any("--wrap" in arg for arg in plain)
    assert link_additions(parse_command(["-shared", "a.o", "-o", "a.so"]), rt, cmplog=True) \
        == [str(rt.shared_stub)]


def test_cmplog_refuses_a_foreign_compiler(tmp_path, monkeypatch):
    fake = tmp_path / "afl-clang-fast"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert select_backend("afl-clang-fast").kind == BackendKind.FOREIGN
    with pytest.raises(FfccError, match="AFL_LLVM_CMPLOG"):
        select_backend("afl-clang-fast", cmplog=True)


def many_sites(count: int, calls: int) -> str:
    """A program with ``count`` comparison sites, each making ``calls`` comparisons of the
    input's first word with a constant of its own, one site after another."""
    sites = "".join(f"  for (int i = 0; i < {calls}; i++) hits += x + i == {0x10000 + k}u;\n"
                    for k in range(count))
    return ("int main(int argc, char **argv) {\n  unsigned char b[4] = {0};\n"
            '  FILE *f = fopen(argv[1], "rb");\n  if (!f || fread(b, 1, 4, f) != 4) return 1;\n'
            "  unsigned x, hits = 0;\n  __builtin_memcpy(&x, b, 4);\n"
            + sites + '  printf("%u\\n", hits);\n  return 0;\n}\n')


@pytest.mark.parametrize("cc", COMPILERS)
def test_each_comparison_site_keeps_its_own_records(cc, tmp_path):
    """A site that logs more than a ring of records would overwrite another's sharing its
    slot: among 1,000 sites of 40 calls each, every site's constant is still logged."""
    source = tmp_path / "sites.c"
    source.write_text("#include <stdio.h>\n" + many_sites(1000, 40))
    ffcc(f"--cc={cc}", "--cmplog", "-O0", "-o", f"{tmp_path}/build/", str(source))
    records = logged(tmp_path / "build/sites", b"\0\0\0\0", tmp_path)
    constants = {int.from_bytes(v, "little") for record in records if record.kind == CMPLOG_INT
                 for v in (record.v0, record.v1)}
    assert set(range(0x10000, 0x10000 + 1000)) <= constants
