"""Project form: ``ffcc -o build/ src/*.c`` builds one program inside build/.

Each source is compiled to build/obj/, in parallel, then linked into
build/<name>, whose label database is build/<name>.labels.jsonl;
build/ffcc-build.json records how, for the steps that come later (pruning,
fuzzing), and which sources were built without labels because their labelled
code did not compile ("unlabelled", with the compiler's first error line); a
pruned build also writes build/ffcc-prune.json (prune/report.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ffcc.runtime.abi import BUILD_RECORD
from ffcc.runtime.files import write_atomic

from . import zygote
from .command_line import CompilerCommand, Source, parse_command
from .errors import FfccError, say
from .plan import project_compile_options, project_compiles, project_link
from .runtime_cache import runtime_files
from .toolchain import Backend

MAIN_DEFINITION = re.compile(rb"^[\w \t\*]*\b(main|LLVMFuzzerTestOneInput)\s*\(", re.M)


def program_name(sources: list[Source]) -> str:
    """The stem of the source that defines main (or a fuzz harness), else the first."""
    for source in sources:
        try:
            if MAIN_DEFINITION.search(Path(source.path).read_bytes()):
                return Path(source.path).stem
        except OSError:
            continue
    return Path(sources[0].path).stem


def _object_names(sources: list[Source]) -> list[str]:
    """build/obj names, unique even when two sources share a stem."""
    names: list[str] = []
    seen: set[str] = set()
    for source in sources:
        stem = Path(source.path).stem
        name = f"{stem}.o" if stem not in seen else f"{stem}-{len(names)}.o"
        seen.add(stem)
        names.append(name)
    return names


def _run(argv: list[str], verbose: bool, builder=None, cxx: bool = False) -> int:
    """Run one compile (``cxx``: of ffcc++, whose .c files are C++ and get no labels)."""
    if builder is not None:
        from .labelled_compile import compile_with_labels
        return compile_with_labels(argv, parse_command(argv[1:], cxx), builder, verbose)
    if verbose:
        say("ffcc: " + " ".join(argv))  # in one of the build's threads
    return zygote.run(argv).returncode


def build_project(command: CompilerCommand, backend: Backend, builder, name: str | None,
                  verbose: bool = False, label_words: list[str] | None = None) -> Path:
    """Compile (with labels when ``builder`` is a LabelBuilder) and link; returns the
    program's path.  ``label_words`` (the ffcc options that chose the labels) are recorded
    so that ``ffcc --prune build/`` can rebuild the same labels.  Raises FfccError on failure."""
    started = time.monotonic()
    assert command.output is not None  # the project form names its directory
    out_dir = Path(command.output)
    obj_dir = out_dir / "obj"
    try:
        obj_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".ffcc-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise FfccError(f"ffcc: error: cannot write to {out_dir}/: {err.strerror}") from err

    objects = [obj_dir / n for n in _object_names(command.sources)]
    compiles = project_compiles(command, backend, objects, labelled=builder is not None)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        codes = list(pool.map(lambda argv: _run(argv, verbose, builder, backend.cxx), compiles))
    failed = [s.path for s, code in zip(command.sources, codes) if code != 0]
    if failed:
        raise FfccError(f"ffcc: error: compiling {', '.join(failed)} failed", 1)

    program = out_dir / (name or program_name(command.sources))
    rt = runtime_files(backend, command.arch_flags) if backend.links_ffcc_runtime else None
    if _run(project_link(command, backend, objects, program, rt), verbose) != 0:
        raise FfccError(f"ffcc: error: linking {program} failed", 1)
    labels = 0
    if builder is not None:
        from .label_db import write_label_db
        labels = len(write_label_db(str(program)).labels)
        _report_labels(builder, labels)
    if builder is not None and builder.pruner is not None:
        builder.pruner.report.print()
        builder.pruner.report.write(out_dir, time.monotonic() - started)
    else:
        from .prune.report import REPORT_NAME
        (out_dir / REPORT_NAME).unlink(missing_ok=True)  # it would describe another build
    write_atomic(out_dir / BUILD_RECORD, json.dumps({
        "program": program.name,
        "backend": {"path": backend.path, "kind": backend.kind, "cmplog": backend.cmplog},
        "sources": [os.path.abspath(s.path) for s in command.sources],
        "objects": [str(o) for o in objects],
        "compile_options": project_compile_options(command),
        "labels": labels,
        "command": command.args,
        "cwd": os.getcwd(),
        "label_options": label_words or [],
        "pruned": builder.pruner.method if builder is not None and builder.pruner else None,
        "unlabelled": [{"source": os.path.abspath(unit.source), "reason": unit.reason}
                       for unit in _unlabelled(builder)],
    }, indent=2) + "\n")
    return program


def _report_labels(builder, total: int) -> None:
    """The real label counts, per file and in all, after instrumenting."""
    for unit in sorted(builder.units, key=lambda u: u.source):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(unit.by_criterion.items()))
        print(f"ffcc: {unit.source}: {unit.label_count} labels ({kinds}), "
              f"{unit.left_out} left out", file=sys.stderr)
    print(f"ffcc: {total} labels in the program", file=sys.stderr)
    unlabelled = _unlabelled(builder)
    for unit in unlabelled:
        print(f"ffcc: warning: {unit.source}: built without labels: {unit.reason}",
              file=sys.stderr)
    if unlabelled:
        print(f"ffcc: warning: {len(unlabelled)} of "
              f"{len(unlabelled) + len(builder.units)} labelled files were built without "
              "labels, for the reasons above (--labels-required makes this an error)",
              file=sys.stderr)


def _unlabelled(builder) -> list:
    """The builder's units built without labels, in source order (none without a builder)."""
    return sorted(builder.unlabelled, key=lambda u: u.source) if builder is not None else []
