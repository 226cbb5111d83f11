"""cffi build script for ffcc.rewriters._top_level (run by setup.py's cffi_modules): the C
walk of a translation unit's top level (top_level.h says why), whose header is cdef-clean."""
from __future__ import annotations

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ffibuilder = FFI()
ffibuilder.cdef((HERE / "top_level.h").read_text())
ffibuilder.set_source(
    "ffcc.rewriters._top_level",
    '#include <stddef.h>\n#include "top_level.h"\n',
    sources=[str((HERE / "top_level.c").relative_to(ROOT))],
    include_dirs=[str(HERE.relative_to(ROOT))],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
