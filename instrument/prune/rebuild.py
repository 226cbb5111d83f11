"""``ffcc --prune[=METHOD] build/`` and ``ffcc --retired=FILE build/``: rebuild an existing
project build with fewer labels.

A project build records in build/ffcc-build.json its compiler command, working directory
and the ffcc options that chose its labels.  Pruning it is rebuilding it the same way with
``--prune``: annotation is deterministic, so the labels (ids, slots, records) are the ones
the unpruned build had, and the rebuilt program replaces it in place, with pruned labels
marked in its database and build/ffcc-prune.json saying what went and why.  With
``--retired``, the labels a campaign retired are the ones compiled to nothing (ffuzz
--rebuild-retired rebuilds into a copy of the directory that holds only ffcc-build.json).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ffcc.runtime.abi import BUILD_RECORD

from ..errors import FfccError
from ..options import FfccOptions


def label_words(opts: FfccOptions) -> list[str]:
    """The ffcc options that decide which labels a build gets, as command-line words."""
    words = ["--mcc"] if opts.mcc else []
    if opts.mcc_max is not None:
        words.append(f"--mcc-max={opts.mcc_max}")
    if opts.wm_ops:
        words.append("--wm=" + ",".join(sorted(opts.wm_ops)))
    words += [f"--only={p}" for p in opts.only_files]
    words += [f"--only-func={f}" for f in opts.only_funcs]
    if opts.allowlist:
        words.append(f"--allowlist={os.path.abspath(opts.allowlist)}")
    if opts.in_macros:
        words.append("--in-macros")
    if opts.label_gates:  # gate bytes sit between units' slots: a rebuild keeps them
        words.append("--label-gates")
    return words


@dataclass(frozen=True)
class BuildRecord:
    """What a rebuild reads of a project build's ffcc-build.json (project.py writes it, with
    more that reports read): how to run the build again.  Empty where the record has nothing,
    as a build without labels or of an older ffcc may."""

    command: tuple[str, ...]  # the compiler command's arguments, as ffcc was given them
    cwd: str  # where it ran
    program: str  # the program's name in the build directory
    label_options: tuple[str, ...]  # ffcc's options that chose the labels (label_words)
    backend: str | None  # the backend compiler's path
    cmplog: bool = False  # built with --cmplog: a rebuild logs comparisons too

    @classmethod
    def read(cls, path: str) -> BuildRecord | None:
        """The record of the directory ``path``, or None when it is no build directory."""
        record = Path(path) / BUILD_RECORD
        if not Path(path).is_dir() or not record.is_file():
            return None
        values = json.loads(record.read_text())
        backend = values.get("backend", {})
        return cls(tuple(values.get("command") or ()), values.get("cwd", ""),
                   values.get("program", ""), tuple(values.get("label_options") or ()),
                   backend.get("path"), bool(backend.get("cmplog")))


def rebuild_argv(build_dir: str, record: BuildRecord, fewer: list[str]) -> tuple[str, list[str]]:
    """(working directory, ffcc argv) that rebuild ``build_dir`` with the options ``fewer``
    (``--prune=METHOD``, ``--retired=FILE``)."""
    if not record.command or not record.label_options:
        raise FfccError(f"ffcc: error: {build_dir} has no labels to prune or retire (build it "
                        "with --mcc or --wm, in project form: ffcc --mcc --wm -o build/ "
                        "src/*.c)", 2)
    words = [*record.label_options, *fewer, f"--name={record.program}"]
    if record.backend:
        words.append(f"--cc={record.backend}")
    if record.cmplog:  # a -c campaign goes on with the rebuild as its cmplog binary
        words.append("--cmplog")
    return record.cwd, [*words, *_output_to(record.command, build_dir)]


def _output_to(args: tuple[str, ...], build_dir: str) -> list[str]:
    """The recorded command building into ``build_dir`` (which may be a copy of the
    directory it was recorded in)."""
    target = os.path.abspath(build_dir).rstrip("/") + "/"
    out, after_o = [], False
    for arg in args:
        if after_o:
            out.append(target)
        elif arg.startswith("-o") and arg != "-o":
            out.append("-o" + target)
        else:
            out.append(arg)
        after_o = arg == "-o"
    return out
