"""Which real compiler ffcc drives, and how it instruments edges.

``select_backend`` is the one place that chooses it: the compiler asked for (``--cc``,
else ``FFCC_CC``; options.py reads both), else clang, else gcc, else cc.  Every command
run with it is built in plan.py.

clang gets ``-fsanitize-coverage=trace-pc-guard`` (collision-free edge ids);
gcc, which has no guard mode, gets ``-fsanitize-coverage=trace-pc`` and the
runtime hashes block offsets.  A ``--cmplog`` build adds ``trace-cmp`` (both
compilers) and keeps the calls of the comparison routines (``CMPLOG_ROUTINES``) for the
linker to wrap.  A compiler that instruments on its own (AFL++'s
afl-clang-fast and friends) is a "foreign" backend: ffcc adds labels only, and
AFL++'s runtime does the rest.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ffcc.runtime.abi import MAX_INPUT, NAMES

from .errors import FfccError

CLANG, GCC, FOREIGN = "clang", "gcc", "foreign"

COVERAGE_FLAGS = {
    CLANG: ("-fsanitize-coverage=trace-pc-guard",),
    GCC: ("-fsanitize-coverage=trace-pc",),
    FOREIGN: (),
}

# Routines whose operands a --cmplog binary logs (runtime/ffcc_cmplog.c wraps each).
CMPLOG_ROUTINES = ("memcmp", "bcmp", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "strstr")
CMPLOG_FLAGS = ("-fsanitize-coverage=trace-cmp",
                *(f"-fno-builtin-{routine}" for routine in CMPLOG_ROUTINES))


@dataclass(frozen=True)
class Backend:
    """A real compiler: where it is and what kind it is."""

    path: str
    kind: str
    cmplog: bool = False  # ffcc --cmplog: comparisons logged too
    linker: str | None = None  # the gcc that may run clang's plain links (plan.link_argv)

    @property
    def coverage_flags(self) -> tuple[str, ...]:
        return COVERAGE_FLAGS[self.kind] + (CMPLOG_FLAGS if self.cmplog else ())

    @property
    def links_ffcc_runtime(self) -> bool:
        return self.kind != FOREIGN


def _kind_of(path: str) -> str:
    name = Path(path).name
    if name.startswith("afl-"):
        return FOREIGN
    if "clang" in name:
        return CLANG
    if "gcc" in name:
        return GCC
    import subprocess  # only for compilers whose name does not tell
    try:
        banner = subprocess.run([path, "--version"], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        banner = ""
    return CLANG if "clang" in banner else GCC


def _gcc_beside(clang: str) -> str | None:
    """The gcc installed with ``clang`` (/usr/bin/gcc beside /usr/bin/clang): the system's
    native compiler, so its links target what clang's do; None if there is none."""
    gcc = os.path.join(os.path.dirname(clang), "gcc")
    return gcc if os.access(gcc, os.X_OK) else None


def select_backend(requested: str | None, cmplog: bool = False) -> Backend:
    """The compiler to run: the one asked for, else clang, else gcc."""
    candidates = [requested] if requested else ["clang", "gcc", "cc"]
    for candidate in candidates:
        path = shutil.which(candidate)
        if path and Path(path).name != "ffcc":
            kind = _kind_of(path)
            backend = Backend(path=path, kind=kind, cmplog=cmplog,
                              linker=_gcc_beside(path) if kind == CLANG else None)
            if cmplog and not backend.links_ffcc_runtime:
                raise FfccError(f"ffcc: error: --cmplog needs ffcc's runtime; {path} brings "
                                "its own (build with AFL_LLVM_CMPLOG=1 instead)", 2)
            return backend
    if requested:
        raise FfccError(f"ffcc: error: compiler '{requested}' not found (set --cc or FFCC_CC)", 127)
    raise FfccError("ffcc: error: no C compiler found: install clang or gcc, or set FFCC_CC", 127)


FFCC_MACRO = "-D__FFCC__=1"


def predefined_macros() -> list[str]:
    """Macros AFL++ users test for, and the persistent-mode macros of afl-clang-fast.

    The __afl_* names are the ABI of those macros; ffcc's runtime provides them.
    """
    loop = ('({ static volatile const char *_ffcc_sig __attribute__((used, unused)); '
            f'_ffcc_sig = (const char *)"{NAMES["FFCC_SIG_PERSISTENT"]}"; '
            'int __afl_persistent_loop(unsigned int); __afl_persistent_loop(_A); })')
    init = ('do { static volatile const char *_ffcc_sig __attribute__((used, unused)); '
            f'_ffcc_sig = (const char *)"{NAMES["FFCC_SIG_DEFER"]}"; '
            'void __afl_manual_init(void); __afl_manual_init(); } while (0)')
    fuzz_init = ('int __afl_sharedmem_fuzzing = 1; extern unsigned int *__afl_fuzz_len; '
                 'extern unsigned char *__afl_fuzz_ptr; '
                 f'unsigned char __afl_fuzz_alt[{MAX_INPUT}]; '
                 'unsigned char *__afl_fuzz_alt_ptr = __afl_fuzz_alt;')
    testcase_len = ('(__afl_fuzz_ptr ? *__afl_fuzz_len : (*__afl_fuzz_len = '
                    f'read(0, __afl_fuzz_alt_ptr, {MAX_INPUT})) == 0xffffffff '
                    '? 0 : *__afl_fuzz_len)')
    return [
        FFCC_MACRO,
        "-D__AFL_COMPILER=1",
        "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1",
        "-D__AFL_HAVE_MANUAL_CONTROL=1",
        f"-D__AFL_LOOP(_A)={loop}",
        f"-D__AFL_INIT()={init}",
        f"-D__AFL_FUZZ_INIT()={fuzz_init}",
        "-D__AFL_FUZZ_TESTCASE_BUF=(__afl_fuzz_ptr ? __afl_fuzz_ptr : __afl_fuzz_alt_ptr)",
        f"-D__AFL_FUZZ_TESTCASE_LEN={testcase_len}",
    ]

