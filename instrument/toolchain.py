"""Which real compiler ffcc drives, and how it instruments edges.

``select_backend`` is the one place that chooses it: the compiler asked for (``--cc``,
else ``FFCC_CC``; options.py reads both), else clang, else gcc, else cc.  ``ffcc++``, the
same driver run under that name (as afl-clang-fast++ is afl-cc), runs the C++ compiler
asked for (``--cxx``, else ``FFCC_CXX``), else the C++ one of that C compiler's pair
(clang++, g++), and keeps the C one for ffcc's runtime, which is C.  Every command run
with it is built in plan.py.

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
from enum import Enum
from pathlib import Path

from ffcc.runtime.abi import MAX_INPUT, NAMES

from .errors import FfccError


class BackendKind(str, Enum):
    """What kind of compiler a backend is, which decides how it instruments edges.  The value
    is what ffcc writes (``--version``, the project build record, the runtime cache's key), so
    a kind is also the string it names."""

    CLANG = "clang"
    GCC = "gcc"
    FOREIGN = "foreign"  # instruments on its own (AFL++'s afl-clang-fast): ffcc adds labels only

    def __str__(self) -> str:
        return self.value  # f-strings too: Enum's own str() is "BackendKind.CLANG"


COVERAGE_FLAGS = {
    BackendKind.CLANG: ("-fsanitize-coverage=trace-pc-guard",),
    BackendKind.GCC: ("-fsanitize-coverage=trace-pc",),
    BackendKind.FOREIGN: (),
}

# Routines whose operands a --cmplog binary logs (runtime/ffcc_cmplog.c wraps each).
CMPLOG_ROUTINES = ("memcmp", "bcmp", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "strstr")
CMPLOG_FLAGS = ("-fsanitize-coverage=trace-cmp",
                *(f"-fno-builtin-{routine}" for routine in CMPLOG_ROUTINES))


C_DRIVER, CXX_DRIVER = "ffcc", "ffcc++"


def driver_of(program: str) -> str:
    """The driver a command was run as, from its ``argv[0]``: ffcc++ when the name ends in
    "++" (a path, a symlink or a target prefix included), as afl-cc tells afl-clang-fast++
    from afl-clang-fast."""
    return CXX_DRIVER if os.path.basename(program).endswith("++") else C_DRIVER


@dataclass(frozen=True)
class Backend:
    """A real compiler: where it is and what kind it is."""

    path: str
    kind: BackendKind
    cmplog: bool = False  # ffcc --cmplog: comparisons logged too
    linker: str | None = None  # the gcc (g++) that may run clang's plain links (plan.link_argv)
    c_path: str | None = None  # ffcc++: the C compiler of path's pair

    @property
    def coverage_flags(self) -> tuple[str, ...]:
        return COVERAGE_FLAGS[self.kind] + (CMPLOG_FLAGS if self.cmplog else ())

    @property
    def links_ffcc_runtime(self) -> bool:
        return self.kind is not BackendKind.FOREIGN

    @property
    def cxx(self) -> bool:
        """Whether this is ffcc++'s backend, a C++ compiler (which reads .c files as C++)."""
        return self.c_path is not None

    @property
    def c_compiler(self) -> str:
        """The compiler that builds ffcc's runtime, which is C: the backend, or for ffcc++ the
        C compiler of its pair (so both drivers of a build link the same runtime)."""
        return self.c_path or self.path


def _kind_of(path: str) -> BackendKind:
    name = Path(path).name
    if name.startswith("afl-"):
        return BackendKind.FOREIGN
    if "clang" in name:
        return BackendKind.CLANG
    if "gcc" in name or "g++" in name:
        return BackendKind.GCC
    import subprocess  # only for compilers whose name does not tell
    try:
        banner = subprocess.run([path, "--version"], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        banner = ""
    return BackendKind.CLANG if "clang" in banner else BackendKind.GCC


# Compilers are installed in pairs, named alike: (C word, C++ word) of their names, as in
# clang-18 and clang++-18, x86_64-linux-gnu-gcc-12 and x86_64-linux-gnu-g++-12, cc and c++,
# afl-gcc-fast and afl-g++-fast.  AFL++'s clang wrappers add "++" (afl-clang-fast++).
NAME_PAIRS = (("clang", "clang++"), ("gcc", "g++"), ("cc", "c++"))
PLUS_PLUS_NAMED = ("afl-clang-fast", "afl-clang-lto")


def partner_name(name: str, cxx: bool) -> str | None:
    """The name of the C++ (``cxx``) or the C compiler of ``name``'s pair: ``name`` when it
    is that one already, None when the name does not tell."""
    if ("++" in name) == cxx:
        return name
    if name.startswith(PLUS_PLUS_NAMED):
        return name + "++" if cxx else name.removesuffix("++")
    for c_word, cxx_word in NAME_PAIRS:
        old, new = (c_word, cxx_word) if cxx else (cxx_word, c_word)
        at = name.rfind(old)
        if at >= 0:
            return name[:at] + new + name[at + len(old):]
    return None


def _beside(compiler: str, name: str | None) -> str | None:
    """The compiler called ``name`` installed in ``compiler``'s directory, or None."""
    if name is None:
        return None
    path = os.path.join(os.path.dirname(compiler), name)
    return path if os.access(path, os.X_OK) else None


def _partner(compiler: str, cxx: bool) -> str | None:
    """The other compiler of ``compiler``'s pair, installed beside it (/usr/bin/clang++ beside
    /usr/bin/clang), or None."""
    return _beside(compiler, partner_name(os.path.basename(compiler), cxx))


def _gcc_beside(clang: str) -> str | None:
    """The gcc (g++ for clang++) installed with ``clang`` (/usr/bin/gcc beside
    /usr/bin/clang): the system's native compiler, so its links target what clang's do; None
    if there is none."""
    return _beside(clang, partner_name("gcc", cxx="++" in os.path.basename(clang)))


def _which(compiler: str) -> str | None:
    """Where ``compiler`` is on PATH, unless that is ffcc itself (FFCC_CC=ffcc would run
    ffcc for ever)."""
    path = shutil.which(compiler)
    return path if path and Path(path).name not in (C_DRIVER, CXX_DRIVER) else None


def _c_compiler(requested: str | None) -> str:
    """The C compiler ffcc runs: the one asked for, else clang, else gcc, else cc."""
    candidates = [requested] if requested else ["clang", "gcc", "cc"]
    for candidate in candidates:
        path = _which(candidate)
        if path:
            return path
    if requested:
        raise FfccError(f"ffcc: error: compiler '{requested}' not found (set --cc or FFCC_CC)", 127)
    raise FfccError("ffcc: error: no C compiler found: install clang or gcc, or set FFCC_CC", 127)


def _cxx_compiler(requested: str | None, requested_cxx: str | None) -> tuple[str, str]:
    """ffcc++'s C++ compiler and the C compiler of its pair: the C++ compiler asked for (its
    C partner, unless a C compiler was asked for too), else the partner of ffcc's C compiler."""
    if not requested_cxx:
        c_path = _c_compiler(requested)
        path = _partner(c_path, cxx=True)
        if path is None:
            raise FfccError(f"ffcc: error: no C++ compiler beside {c_path} (install it, or set "
                            "--cxx or FFCC_CXX)", 127)
        return path, c_path
    path = _which(requested_cxx)
    if path is None:
        raise FfccError(f"ffcc: error: compiler '{requested_cxx}' not found (set --cxx or "
                        "FFCC_CXX)", 127)
    return path, (None if requested else _partner(path, cxx=False)) or _c_compiler(requested)


def select_backend(requested: str | None, cmplog: bool = False, cxx: bool = False,
                   requested_cxx: str | None = None) -> Backend:
    """The compiler to run: the one asked for, else clang, else gcc; for ffcc++ (``cxx``) the
    C++ compiler of that family (``_cxx_compiler``)."""
    path, c_path = _cxx_compiler(requested, requested_cxx) if cxx else (_c_compiler(requested), None)
    kind = _kind_of(path)
    backend = Backend(path=path, kind=kind, cmplog=cmplog, c_path=c_path,
                      linker=_gcc_beside(path) if kind is BackendKind.CLANG else None)
    if cmplog and not backend.links_ffcc_runtime:
        raise FfccError(f"ffcc: error: --cmplog needs ffcc's runtime; {path} brings "
                        "its own (build with AFL_LLVM_CMPLOG=1 instead)", 2)
    return backend


FFCC_MACRO = "-D__FFCC__=1"


def predefined_macros() -> list[str]:
    """Macros AFL++ users test for, and the persistent-mode macros of afl-clang-fast.

    The __afl_* names are the ABI of those macros; ffcc's runtime provides them.  The
    functions are declared with their symbol's name (``__asm__``), as afl-cc declares them:
    a C++ unit would otherwise call a mangled name that no runtime defines.
    """
    loop = ('({ static volatile const char *_ffcc_sig __attribute__((used, unused)); '
            f'_ffcc_sig = (const char *)"{NAMES["FFCC_SIG_PERSISTENT"]}"; '
            'int _ffcc_loop(unsigned int) __asm__("__afl_persistent_loop"); _ffcc_loop(_A); })')
    init = ('do { static volatile const char *_ffcc_sig __attribute__((used, unused)); '
            f'_ffcc_sig = (const char *)"{NAMES["FFCC_SIG_DEFER"]}"; '
            'void _ffcc_init(void) __asm__("__afl_manual_init"); _ffcc_init(); } while (0)')
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

