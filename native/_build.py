"""cffi build script for ffcc.native._core (run by setup.py's cffi_modules).

The cdef is the contract headers read as they are: runtime/ffcc_protocol.h
(only its `#define NAME value` lines: cffi's parser knows no include guards),
runtime/ffcc_names.h (each string #define becomes a `char *const` constant)
and native/ffcc_native.h, which is written to be cdef-clean.
"""
from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNTIME = ROOT / "runtime"
SOURCES = ["engine.c", "forkserver.c", "batch.c", "coverage.c", "havoc.c", "deterministic.c",
           "stages.c"]
_INT_DEFINE = re.compile(r"^\s*#\s*define\s+\w+\s+(0x[0-9a-fA-F]+|\d+)\s*$")
_STRING_DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)\s+"', re.MULTILINE)


def protocol_defines(header: Path) -> str:
    """The integer #defines of a header, the only lines cffi can take."""
    return "\n".join(line for line in header.read_text().splitlines() if _INT_DEFINE.match(line))


def string_constants(header: Path) -> str:
    """cdef lines exposing a header's string #defines as constants."""
    return "\n".join(f"static char *const {name};" for name in _STRING_DEFINE.findall(header.read_text()))


ffibuilder = FFI()
ffibuilder.cdef(protocol_defines(RUNTIME / "ffcc_protocol.h"))
ffibuilder.cdef(string_constants(RUNTIME / "ffcc_names.h"))
ffibuilder.cdef((HERE / "ffcc_native.h").read_text())
ffibuilder.set_source(
    "ffcc.native._core",
    '#include <stddef.h>\n#include <stdint.h>\n#include "ffcc_protocol.h"\n#include "ffcc_names.h"\n'
    '#include "ffcc_native.h"\n',
    sources=[str((HERE / name).relative_to(ROOT)) for name in SOURCES],
    include_dirs=[str(HERE.relative_to(ROOT)), str(RUNTIME.relative_to(ROOT))],
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
