"""The runtime leaves the program alone: what ``main`` sees and how a crash ends are the plain
compiler's, in every ffcc build (gcc and clang backends, drop-in and project forms, with and
without labels), outside a fuzzer and under ffuzz."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import AFL_ENV, have, one_seed, run_program

# Prints what a program can observe of its start: errno, open descriptors, every signal's
# disposition, the environment's size, stdout's buffering; "crash" as argument ends it with a
# SIGSEGV.  The decision gives labelled builds something to label.
START_STATE = r"""
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
extern char **environ;
int main(int argc, char **argv) {
  int saved = errno;
  printf("errno %d\n", saved);
  DIR *dir = opendir("/proc/self/fd");
  struct dirent *entry;
  while (dir && (entry = readdir(dir)))
    if (entry->d_name[0] != '.' && entry->d_name[0] - '0' != dirfd(dir)) printf("fd %s\n", entry->d_name);
  if (dir) closedir(dir);
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction action;
    if (sigaction(sig, NULL, &action) == 0 && action.sa_handler != SIG_DFL)
      printf("signal %d handled\n", sig);
  }
  int vars = 0;
  while (environ[vars]) vars++;
  printf("environment %d, stdout line-buffered %d\n", vars, __flbf(stdout));
  if (argc > 1 && strcmp(argv[1], "crash") == 0 && saved == 0) {
    fflush(stdout);
    *(volatile int *)0 = 1;
  }
  return 0;
}
"""

BACKENDS = [cc for cc in ("gcc", "clang") if have(cc)]
LABELS = {"plain": [], "labelled": ["--mcc", "--wm"]}


def build(tmp_path: Path, cc: str, form: str, labels: list[str]) -> Path:
    """The program built by ffcc in ``form``: one command, compile then link, or project."""
    source = tmp_path / "start.c"
    source.write_text(START_STATE)
    program = tmp_path / "start"
    ffcc_argv = ["ffcc", f"--cc={cc}", *labels]
    steps = {
        "one-command": [[*ffcc_argv, "-O1", "-o", str(program), str(source)]],
        "compile-link": [[*ffcc_argv, "-O1", "-c", str(source), "-o", f"{program}.o"],
                         [*ffcc_argv, f"{program}.o", "-o", str(program)]],
        "project": [[*ffcc_argv, "-O1", "-o", f"{tmp_path}/", str(source)]],
    }[form]
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True)
    return program


@pytest.fixture(scope="module")
def plain_gcc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("gcc")
    (directory / "start.c").write_text(START_STATE)
    subprocess.run(["gcc", "-O1", "-o", str(directory / "start"), str(directory / "start.c")],
                   check=True)
    return directory / "start"


@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("form", ["one-command", "compile-link", "project"])
@pytest.mark.parametrize("cc", BACKENDS)
def test_main_starts_as_with_the_plain_compiler(tmp_path, plain_gcc, cc, form, labels):
    program = build(tmp_path, cc, form, LABELS[labels])
    expected = run_program([str(plain_gcc)])
    assert expected.stdout.startswith(b"errno 0\n")
    assert run_program([str(program)]) == expected
    crash = run_program([str(program), "crash"])
    assert crash == run_program([str(plain_gcc), "crash"])
    assert crash.status == -11 and crash.stderr == b""


PERSISTENT = r"""
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
__AFL_FUZZ_INIT();
int main(void) {
  errno = 42;
  __AFL_INIT();
  if (errno != 42) abort();
  unsigned char *data = __AFL_FUZZ_TESTCASE_BUF;
  while (__AFL_LOOP(1000)) {
    if (errno != 42) abort();
    int len = __AFL_FUZZ_TESTCASE_LEN;
    if (len > 0 && data[0] == 'X') *(volatile int *)0 = 1;
  }
  return 0;
}
"""


@pytest.mark.parametrize("cc", BACKENDS)
def test_a_crash_under_ffuzz_is_named_for_its_signal(tmp_path, cc):
    """errno survives __AFL_INIT and every __AFL_LOOP iteration under the fuzzer (else the
    harness aborts, sig:06), and the SIGSEGV is saved as sig:11."""
    source = tmp_path / "persistent.c"
    source.write_text(PERSISTENT)
    program = tmp_path / "persistent"
    subprocess.run(["ffcc", f"--cc={cc}", "-o", str(program), str(source)], check=True)
    out = tmp_path / "out"
    done = subprocess.run(
        ["ffuzz", "-i", str(one_seed(tmp_path, b"a")), "-o", str(out), "-E", "200000",
         "--seed", "1", "--", str(program)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, **AFL_ENV, "AFL_BENCH_UNTIL_CRASH": "1"})
    assert done.returncode == 0, done.stderr
    crashes = [p.name for p in (out / "default" / "crashes").iterdir() if p.name != "README.txt"]
    assert crashes and all(",sig:11," in name for name in crashes), crashes


@pytest.mark.parametrize("cc", BACKENDS)
def test_a_descriptor_199_of_the_callers_is_left_alone(tmp_path, cc):
    """Only a fuzzer's pipe at fd 199 is a fuzzer: a file a shell left open there gets no
    forkserver hello."""
    program = build(tmp_path, cc, "one-command", [])
    kept = tmp_path / "fd199"
    subprocess.run(["bash", "-c", '"$0" 199>"$1"', str(program), str(kept)], check=True,
                   capture_output=True)
    assert kept.read_bytes() == b""


@pytest.mark.parametrize("cc", BACKENDS)
def test_a_forced_language_builds_and_links(tmp_path, cc):
    source = tmp_path / "start.c"
    source.write_text(START_STATE)
    subprocess.run(["ffcc", f"--cc={cc}", "--mcc", "-x", "c", "-o", str(tmp_path / "start"),
                    str(source)], check=True, capture_output=True)
    assert run_program([str(tmp_path / "start")]).stdout.startswith(b"errno 0\n")
