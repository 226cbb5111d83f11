"""How ffcc was run: its own options that a rebuild repeats, the compiler's arguments, the
working directory and the environment that shapes a compile.

A drop-in build leaves no build record of its own (make runs ffcc once per file), so each
labelled unit keeps the invocation that compiled it in its unit record (labels.py) and the
link keeps its own beside the program (relink.py): together they are how relink.py builds
the same program again with retired labels compiled out.
"""
from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .options import FfccOptions
from .prune.rebuild import label_words

# The compiler's search paths and reproducibility settings: a rebuild sets them as they were.
RECORDED_ENV = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH",
                "SOURCE_DATE_EPOCH")
# ffcc's variables: the recorded options stand for them, so a rebuild runs without them.
FFCC_ENV = ("FFCC_FLAGS", "FFCC_CC", "FFCC_CXX")


def repeated_options(opts: FfccOptions) -> list[str]:
    """The ffcc options, as words, that make a rebuild build what ``opts`` built: the labels
    (label_words), the backend and the form labels compile to.  Pruning is left out: a
    rebuild compiles the pruned labels out as it does the retired ones."""
    words = label_words(opts)
    words += [f"--cc={opts.cc}"] if opts.cc else []
    words += [f"--cxx={opts.cxx}"] if opts.cxx else []
    words += ["--cmplog"] if opts.cmplog else []
    words += ["--labels-required"] if opts.labels_required else []
    return words


@dataclass(frozen=True)
class Invocation:
    """One drop-in run of ffcc or ffcc++ as a build system made it."""

    driver: str                       # ffcc or ffcc++
    cwd: str
    options: tuple[str, ...]          # repeated_options
    args: tuple[str, ...]             # the compiler's arguments as given
    env: tuple[tuple[str, str], ...]  # the RECORDED_ENV variables that were set

    @classmethod
    def current(cls, opts: FfccOptions, environ: Mapping[str, str] | None = None) -> Invocation:
        environ = os.environ if environ is None else environ
        return cls(opts.driver, os.getcwd(), tuple(repeated_options(opts)),
                   tuple(opts.compiler_args),
                   tuple((name, environ[name]) for name in RECORDED_ENV if name in environ))

    def to_dict(self) -> dict[str, Any]:
        return {"driver": self.driver, "cwd": self.cwd, "options": list(self.options),
                "args": list(self.args), "env": dict(self.env)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Invocation:
        return cls(values["driver"], values["cwd"], tuple(values["options"]),
                   tuple(values["args"]), tuple(sorted(values.get("env", {}).items())))

    def run_with(self, options: Sequence[str], args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
        """The driver run again where this one ran, in its environment, with ffcc's
        ``options`` and the compiler's ``args``; its output captured (a rebuild speaks through
        its caller's one-line errors)."""
        env = {name: value for name, value in os.environ.items()
               if name not in RECORDED_ENV + FFCC_ENV}
        return subprocess.run([self.driver, *options, *args], cwd=self.cwd,
                              env={**env, **dict(self.env)}, capture_output=True,
                              stdin=subprocess.DEVNULL)
