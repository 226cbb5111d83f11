"""cffi build script for ffcc.native._core (run by setup.py's cffi_modules).

The cdef is the contract headers' defines as runtime/headers.py reads them (the
parser abi.py uses too): runtime/ffcc_protocol.h's integers as constants, runtime/ffcc_names.h's
strings as `char *const` constants; then native/ffcc_native.h, which is written to be cdef-clean.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNTIME = ROOT / "runtime"
SOURCES = ["engine.c", "forkserver.c", "batch.c", "coverage.c", "havoc.c", "deterministic.c",
           "stages.c", "replay.c"]


def _runtime_headers():
    """runtime/headers.py, loaded by path: this script runs before ffcc is installed."""
    spec = importlib.util.spec_from_file_location("_ffcc_runtime_headers", RUNTIME / "headers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


headers = _runtime_headers()
ffibuilder = FFI()
ffibuilder.cdef(headers.cdef(RUNTIME / "ffcc_protocol.h"))
ffibuilder.cdef(headers.cdef(RUNTIME / "ffcc_names.h"))
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
