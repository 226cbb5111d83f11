"""Optimised compiles of analysis variants, with the unit's own preprocessor flags.

Variants go to the compiler on stdin, so every variant of a unit has the same input name
(``<stdin>``) in its object: two objects of one unit differ only where the code differs,
which is what gccdiff compares.  ``#line`` in the variant keeps __FILE__, ``-iquote`` the
original directory for quoted includes.

Flags: the build's preprocessor and language options are kept (they decide what the code
is); optimisation, debug info, warnings, sanitizers and LTO are replaced by ``-O2 -w``.
``-fwrapv -fno-strict-aliasing -fno-delete-null-pointer-checks`` stop the optimiser from
deciding labels through the program's undefined behaviour (signed overflow, aliasing, a
dereference "proving" non-null): laundering guards against that in the built binary, and
the analysis variants have their laundering removed (prune_variants.py).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field

from .errors import FfccError

ANALYSIS_FLAGS = ("-O2", "-w", "-fwrapv", "-fno-strict-aliasing",
                  "-fno-delete-null-pointer-checks")
_REPLACED_PREFIXES = ("-O", "-g", "-W", "-w", "-fsanitize", "-fno-sanitize", "-flto",
                      "-pedantic", "-fprofile", "-fcoverage", "-ftest-coverage", "-save-temps")


class AnalysisCompileError(FfccError):
    """An analysis variant did not compile (its stderr tail is the message)."""


def analysis_flags(flags: list[str]) -> list[str]:
    """The unit's flags less those the analysis replaces (see the module docstring)."""
    return [f for f in flags if not (f.startswith(_REPLACED_PREFIXES) and not f.startswith("-Wp,"))]


@dataclass
class AnalysisCompiler:
    """Compiles variants of one source; ``slots`` bounds concurrent compiles across units."""

    compiler: str
    flags: list[str]
    source: str
    slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(1))
    compiles: int = 0
    _count_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _argv(self, *outputs: str) -> list[str]:
        quote_dir = os.path.dirname(os.path.abspath(self.source)) or "."
        return [self.compiler, *analysis_flags(self.flags), *ANALYSIS_FLAGS,
                "-iquote", quote_dir, *outputs, "-x", "c", "-"]

    def _run(self, argv: list[str], text: str) -> bytes:
        with self.slots:
            done = subprocess.run(argv, input=text.encode("utf-8", "surrogateescape"),
                                  capture_output=True)
        with self._count_lock:
            self.compiles += 1
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
            raise AnalysisCompileError(f"ffcc: analysis compile of {self.source} failed: "
                                       + " | ".join(tail))
        return done.stdout

    def assembly(self, text: str) -> str:
        """The assembly of one variant."""
        return self._run(self._argv("-S", "-o", "-"), text).decode(errors="replace")

    def object_bytes(self, text: str) -> bytes:
        """The object file of one variant, as bytes."""
        fd, path = tempfile.mkstemp(suffix=".o", prefix="ffcc-prune-")
        os.close(fd)
        try:
            self._run(self._argv("-c", "-o", path), text)
            with open(path, "rb") as obj:
                return obj.read()
        finally:
            os.unlink(path)
