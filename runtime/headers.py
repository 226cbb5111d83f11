"""The ``#define NAME value`` lines of the runtime's contract headers, as Python values.

ffcc_protocol.h and ffcc_names.h are the one definition of every constant an instrumented
binary and ffcc's tools agree on; Python reads them instead of retyping them: abi.py at
import, native/_build.py for the cffi cdef.  _build.py runs before the package is installed
and loads this file by path, so it imports nothing from ffcc.
"""

from __future__ import annotations

import re
from pathlib import Path

_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(?:\s+(.*?))?\s*$")
_INTEGER = re.compile(r"0x[0-9a-fA-F]+|[1-9][0-9]*|0")
_STRING = re.compile(r'"([^"\\]*)"')


def defines(header: Path) -> dict[str, int | str]:
    """Every object-like ``#define`` with a value, in header order: integer literals as int,
    plain string literals as str.  A define without a value (an include guard) is skipped;
    any other value is an error, so that no constant is silently left out."""
    found: dict[str, int | str] = {}
    for number, line in enumerate(header.read_text().splitlines(), 1):
        match = _DEFINE.match(line)
        if not match or match.group(2) is None:
            continue
        name, value = match.groups()
        if _INTEGER.fullmatch(value):
            found[name] = int(value, 0)
        elif string := _STRING.fullmatch(value):
            found[name] = string.group(1)
        else:
            raise ValueError(f"{header}:{number}: {name}: not an integer or plain string literal")
    return found


def cdef(header: Path) -> str:
    """cffi cdef lines for a header's defines: integers as constants, strings as
    ``char *const`` (cffi's parser takes neither include guards nor #include)."""
    return "\n".join(f"#define {name} {value}" if isinstance(value, int)
                     else f"static char *const {name};" for name, value in defines(header).items())
