"""Optimised compiles of analysis variants, with the unit's own preprocessor flags.

Variants go to the compiler on stdin, so every variant of a unit has the same input name
(``<stdin>``) in its object: two objects of one unit differ only where the code differs,
which is what gccdiff compares.  ``#line`` in the variant keeps __FILE__, ``-iquote`` the
original directory for quoted includes.  The command and its flags are
``plan.analysis_argv``'s.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field

from ..errors import FfccError
from ..plan import analysis_argv


class AnalysisCompileError(FfccError):
    """An analysis variant did not compile (its stderr tail is the message)."""


@dataclass
class AnalysisCompiler:
    """Compiles variants of one source; ``slots`` bounds concurrent compiles across units."""

    compiler: str
    flags: list[str]
    source: str
    slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(1))
    compiles: int = 0
    _count_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _run(self, output: str | None, text: str) -> bytes:
        """Compile ``text`` to the object ``output`` (None: assembly); returns stdout."""
        argv = analysis_argv(self.compiler, self.flags, self.source, output)
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
        return self._run(None, text).decode(errors="replace")

    def object_bytes(self, text: str) -> bytes:
        """The object file of one variant, as bytes."""
        fd, path = tempfile.mkstemp(suffix=".o", prefix="ffcc-prune-")
        os.close(fd)
        try:
            self._run(path, text)
            with open(path, "rb") as obj:
                return obj.read()
        finally:
            os.unlink(path)
