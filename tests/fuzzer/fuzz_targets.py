"""C test targets for ffuzz and how to build them (afl-clang-fast, AFL++ 4.04c)."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CLANG_FAST = shutil.which("afl-clang-fast")
AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_NO_AFFINITY": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_QUIET": "1"}

# Crashes on the magic prefix "FUZZ" (byte by byte, so each step is new
# coverage); hangs when byte 4 is 'H'.  Reads the file in argv[1] or stdin.
MAGIC_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  unsigned char buf[256];
  FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf, f);
  if (n > 0 && buf[0] == 'F')
    if (n > 1 && buf[1] == 'U')
      if (n > 2 && buf[2] == 'Z')
        if (n > 3 && buf[3] == 'Z') abort();
  if (n > 4 && buf[4] == 'H') for (;;) {}
  return 0;
}
"""


def persistent_main(body: str, loops: int = 10000) -> str:
    """A persistent target reading shared-memory test cases (AFL++'s macros): ``body`` runs
    once per case with the case in ``buf``, ``n`` bytes of it (``continue`` skips a case).
    unistd.h declares the read() that __AFL_FUZZ_TESTCASE_LEN calls outside a fuzzer."""
    return ("#include <unistd.h>\n__AFL_FUZZ_INIT();\nint main(void) {\n  __AFL_INIT();\n"
            "  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;\n"
            f"  while (__AFL_LOOP({loops})) {{\n    int n = __AFL_FUZZ_TESTCASE_LEN;\n"
            f"{body}  }}\n  return 0;\n}}\n")


# A persistent, shared-memory-input target.
PERSISTENT_C = "#include <stdlib.h>\n" + persistent_main("""    if (n > 0 && buf[0] == 'P')
      if (n > 1 && buf[1] == 'Q') abort();
""")

def reading_main(size: int) -> str:
    """The opening of a target's main: up to ``size`` bytes of the file named by argv[1] in
    ``b`` (zero-filled), ``n`` of them read; exit status 1 if the file cannot be opened."""
    return ("int main(int argc, char **argv) {\n"
            f"  unsigned char b[{size}] = {{0}};\n"
            '  FILE *f = fopen(argv[1], "rb");\n'
            "  if (!f) return 1;\n"
            "  size_t n = fread(b, 1, sizeof b, f);\n")


# Several independent branches on a few bytes: many edges, no crash.
BRANCHY_C = "\n#include <stdio.h>\n" + reading_main(64) + r"""  int score = 0;
  for (size_t i = 0; i < n; i++) {
    switch (b[i] & 0x0f) {
      case 1: score += 1; break;
      case 2: score += 3; break;
      case 3: if (b[i] > 0x80) score ^= 5; break;
      case 4: if (i > 2 && b[i - 1] == 'x') score *= 2; break;
      default: break;
    }
  }
  if (n > 2 && b[0] == 'a' && b[1] == 'b') score += 7;
  return score == 12345;
}
"""


def build(source: str, name: str, directory: Path, compiler: str | None = CLANG_FAST) -> Path:
    src = directory / f"{name}.c"
    src.write_text(source)
    out = directory / name
    subprocess.run([compiler or "cc", "-O1", "-o", str(out), str(src)], check=True,
                   capture_output=True, env={**os.environ, **AFL_ENV})
    return out


def ffuzz_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **AFL_ENV, **extra}


# A hand-written forkserver speaking AFL++ 4.20c+'s handshake: 128-byte map,
# a two-token dictionary; each child marks map[1 + first byte % 127].
# Built with a plain compiler: it is its own "runtime".
NEW_HELLO_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>
static void put(uint32_t v) { if (write(199, &v, 4) != 4) _exit(2); }
static uint32_t get(void) { uint32_t v; if (read(198, &v, 4) != 4) _exit(2); return v; }
int main(int argc, char **argv) {
  static const unsigned char dict[] = {3, 'a', 'b', 'c', 2, 'x', 'y'};
  uint8_t *map = shmat(atoi(getenv("__AFL_SHM_ID")), NULL, 0);
  put(0x41464c01);
  if (get() != (0x41464c01u ^ 0xffffffffu)) return 3;
  put(1 | 0x800);
  put(128);
  put(sizeof dict);
  if (write(199, dict, sizeof dict) != sizeof dict) return 4;
  put(0x41464c01);
  for (;;) {
    get();
    pid_t pid = fork();
    if (pid == 0) {
      FILE *f = fopen(argv[1], "rb");
      int c = f ? fgetc(f) : -1;
      map[c < 0 ? 0 : 1 + c % 127] = 1;
      _exit(0);
    }
    put((uint32_t)pid);
    int status;
    waitpid(pid, &status, 0);
    put((uint32_t)status);
  }
}
"""

# Mentions the map variable (so it passes the instrumentation check) but never
# says hello: what an uninstrumented build that merely links AFL names looks like.
SILENT_C = r"""
#include <stdlib.h>
int main(void) { return getenv("__AFL_SHM_ID") == 0; }
"""


# Hostile persistent harnesses (issue 14): each reads shared-memory test cases, so ffcc's
# batches run it, and misbehaves on its own trigger.  `finding` is what a campaign from
# `seeds` must save: a crash with that signal.
HOSTILE_C = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <unistd.h>
__AFL_FUZZ_INIT();
%(top)s
int main(void) {
  __AFL_INIT();
  %(setup)s
  unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
  while (__AFL_LOOP(100)) {
    int n = __AFL_FUZZ_TESTCASE_LEN;
    %(case)s
  }
  return 0;
}
"""
PQ_ABORT = "if (n > 1 && buf[0] == 'P' && buf[1] == 'Q') abort();"


@dataclass(frozen=True)
class Hostile:
    top: str = ""
    setup: str = ""
    case: str = PQ_ABORT
    seeds: tuple[bytes, ...] = (b"PA",)
    signal: int = 6

    @property
    def source(self) -> str:
        return HOSTILE_C % {"top": self.top, "setup": self.setup, "case": self.case}


HOSTILE = {
    # Spins in an atexit handler: every child hangs after its loop.
    "hang_after_loop": Hostile(top="static void spin(void) { for (;;) {} }",
                               setup="atexit(spin);"),
    # Aborts at exit once an input starting "AB" has run: the crash happens between
    # cases (after the loop), never in the case that armed it.
    "crash_between_cases": Hostile(
        top="static int armed;\nstatic void check(void) { if (armed) abort(); }",
        setup="atexit(check);",
        case="if (n > 1 && buf[0] == 'A' && buf[1] == 'B') armed = 1;", seeds=(b"AA",)),
    # Leaves in the middle of a batch with exit().
    "exit_mid_batch": Hostile(case="if (n > 0 && buf[0] == 'X') exit(0);\n" + PQ_ABORT,
                              seeds=(b"XA", b"PA")),
    # SIGKILLs itself on "KL".
    "sigkill_self": Hostile(case="if (n > 1 && buf[0] == 'K' && buf[1] == 'L') raise(SIGKILL);",
                            seeds=(b"KA",), signal=9),
    # Closes the forkserver's pipes (fds 198 and 199), or only the control pipe.
    "closes_fds": Hostile(case="if (n > 0 && buf[0] == 'C') { close(198); close(199); }\n"
                               "if (n > 0 && buf[0] == 'D') close(198);\n" + PQ_ABORT,
                          seeds=(b"CA", b"DA", b"PA")),
    # Forks children that outlive it: sleepers (a few per child life), and copies that
    # go on with the loop themselves.
    "forks_children": Hostile(
        top="static int forks;",
        case="if (n > 0 && buf[0] == 'F' && forks++ < 3 && fork() == 0) { sleep(30); _exit(0); }\n"
             "if (n > 0 && buf[0] == 'G' && forks++ < 3) fork();\n" + PQ_ABORT,
        seeds=(b"FA", b"GA", b"PA")),
    # Writes 0xff over the whole shared-memory map segment, far past its own map.
    "writes_all_over_the_map": Hostile(
        top="static unsigned char *segment;\nstatic size_t segment_size;",
        setup='const char *id = getenv("__AFL_SHM_ID");\n'
              "  struct shmid_ds info;\n"
              "  if (id && shmctl(atoi(id), IPC_STAT, &info) == 0) {\n"
              "    segment = shmat(atoi(id), NULL, 0);\n"
              "    segment_size = segment == (void *)-1 ? 0 : info.shm_segsz;\n"
              "  }",
        case="if (n > 0 && buf[0] == 'W' && segment_size) memset(segment, 0xff, segment_size);\n"
             + PQ_ABORT,
        seeds=(b"WA", b"PA")),
}
