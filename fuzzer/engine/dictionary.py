"""AFL dictionaries (-x): `name="value"` or `"value"` lines, `\\xNN` escapes.

A directory is read as one token per file, like afl-fuzz does.
"""
from __future__ import annotations

import re
from pathlib import Path

from ffcc.fuzzer.errors import FuzzerError

MAX_TOKEN = 128
SOLVED_PER_ENTRY = 16  # operands one cmplog stage may add to the dictionary
_LINE = re.compile(r'^(?:[A-Za-z0-9_]+(?:@\d+)?\s*=\s*)?"(.*)"$')


def _unescape(text: str, where: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", text[i + 2:i + 4]):
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
                continue
            if nxt in '\\"':
                out.append(ord(nxt))
                i += 2
                continue
            raise FuzzerError(f"{where}: bad escape \\{nxt}")
        out += c.encode()
        i += 1
    return bytes(out)


def load_dictionary(path: Path) -> list[bytes]:
    if not path.exists():
        raise FuzzerError(f"dictionary not found: {path}")
    if path.is_dir():
        return [p.read_bytes()[:MAX_TOKEN] for p in sorted(path.iterdir())
                if p.is_file() and p.stat().st_size]
    tokens = []
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise FuzzerError(f"{path}:{number}: not a dictionary entry: {line}")
        token = _unescape(match.group(1), f"{path}:{number}")
        if not token or len(token) > MAX_TOKEN:
            raise FuzzerError(f"{path}:{number}: token must be 1..{MAX_TOKEN} bytes")
        tokens.append(token)
    return tokens


def solved_tokens(operands: list[bytes], known: set[bytes]) -> list[bytes]:
    """The operands the cmplog stage found (fuzzer/engine/cmplog.py) worth a dictionary token:
    new, at most MAX_TOKEN bytes, not one byte repeated (0, -1, padding), in their order,
    at most SOLVED_PER_ENTRY."""
    tokens: list[bytes] = []
    for operand in operands:
        if (0 < len(operand) <= MAX_TOKEN and len(set(operand)) > 1
                and operand not in known and operand not in tokens):
            tokens.append(operand)
    return tokens[:SOLVED_PER_ENTRY]
