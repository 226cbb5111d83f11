"""The seed directory (-i) and what the seeds' speed says about the timeout."""
from __future__ import annotations

from pathlib import Path

from ffcc.fuzzer.errors import FuzzerError
from ffcc.runtime.abi import MAX_INPUT

TIMEOUT_ROUND_MS = 20
MAX_AUTO_TIMEOUT_MS = 1000


def read_seeds(input_dir: Path) -> list[tuple[Path, bytes]]:
    """The seed files (recursively, no dot-files), or a one-line error."""
    if not input_dir.is_dir():
        raise FuzzerError(f"seed directory not found: {input_dir}")
    files = sorted(p for p in input_dir.rglob("*")
                   if p.is_file() and not any(part.startswith(".")
                                              for part in p.relative_to(input_dir).parts))
    seeds = [(p, p.read_bytes()) for p in files if 0 < p.stat().st_size <= MAX_INPUT]
    if not seeds:
        raise FuzzerError(f"no usable seeds in {input_dir} "
                          f"(need non-empty files up to {MAX_INPUT >> 20} MB)")
    return seeds


def auto_timeout_ms(exec_us: list[int]) -> int:
    """AFL's rule: a few times the seeds' mean run time, rounded up, at most 1 s."""
    avg = sum(exec_us) / len(exec_us)
    factor = 2 if avg > 50_000 else 3 if avg > 10_000 else 5
    ms = max(avg * factor / 1000, max(exec_us) / 1000)
    ms = (int(ms) + TIMEOUT_ROUND_MS) // TIMEOUT_ROUND_MS * TIMEOUT_ROUND_MS
    return min(ms, MAX_AUTO_TIMEOUT_MS)
