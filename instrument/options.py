"""ffcc's own options, picked out of a compiler command line.

A compiler driver cannot let an option parser loose on gcc's argv (click would
take ``x.c`` as the value of ``--wm``), so ffcc's options are all long, use
``--opt=value`` or ``--opt value`` for the few that take values, and every other
argument is left, in order, for the compiler.  Build systems that cannot add
flags pass them in ``FFCC_FLAGS``; ``FFCC_CC`` picks the backend compiler, ``FFCC_CXX``
ffcc++'s.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ffcc.rewriters.model import MCC_MAX_DEFAULT
from ffcc.rewriters.operators import GROUPS, WM_DEFAULT, WM_GROUPS

from .errors import FfccError
from .toolchain import C_DRIVER, CXX_DRIVER

PRUNE_METHODS = ("fast", "gccdiff")

# Double-dash options that gcc or clang accept; any other unknown `--x` is a typo.
COMPILER_LONG_OPTIONS = (
    "version", "param", "sysroot", "target-help", "coverage", "print-", "std", "target",
    "gcc-toolchain", "rtlib", "config", "verbose", "save-temps", "pipe", "ansi", "pedantic",
    "include-directory", "define-macro", "undefine-macro", "output", "language", "debug",
    "optimize", "all-warnings", "extra-warnings", "no-warnings", "specs", "no-line-commands",
    "dependencies", "user-dependencies", "write-dependencies", "write-user-dependencies",
    "imacros", "include", "library-directory", "entry", "static", "shared", "for-linker",
    "force-link", "assemble", "compile", "preprocess", "dumpbase", "dumpdir", "ld-path",
    "cuda", "hip", "offload", "analyze", "serialize-diagnostics", "autocomplete", "precompile",
    "unwindlib", "prefix", "no-undefined", "trace-includes", "warn-", "help=",
)


@dataclass
class FfccOptions:
    """What the user asked of ffcc itself, apart from the compile."""

    cc: str | None = None
    cxx: str | None = None  # ffcc++'s backend compiler (--cxx, FFCC_CXX)
    driver: str = C_DRIVER  # the name the command ran under: ffcc, or ffcc++ for C++
    name: str | None = None
    mcc: bool = False
    mcc_max: int | None = None  # as given; None: the rewriters' default bound
    wm_ops: frozenset[str] = frozenset()
    only_files: tuple[str, ...] = ()
    only_funcs: tuple[str, ...] = ()
    allowlist: str | None = None
    in_macros: bool = False
    keep_annotated: str | None = None  # directory that receives a copy of every annotated unit
    prune: str | None = None
    retired: str | None = None  # --retired=FILE: the labels it lists compile to nothing
    jobs: int | None = None  # pruning compiles at once (None: FFCC_PRUNE_JOBS, else one per core)
    estimate: bool = False
    help: bool = False
    verbose: bool = False
    compiler_args: list[str] = field(default_factory=list)

    labels_required: bool = False  # a unit whose labelled code does not compile is an error
    label_gates: bool = False      # a site whose labels are all retired skips its label code
    cmplog: bool = False  # log comparisons' operands for ffuzz -c

    @property
    def cxx_driver(self) -> bool:
        return self.driver == CXX_DRIVER

    @property
    def wants_labels(self) -> bool:
        return self.mcc or bool(self.wm_ops)

    @property
    def mcc_bound(self) -> int:
        """The MCC bound to label with (``LabelOptions.mcc_max``; 0: none)."""
        return MCC_MAX_DEFAULT if self.mcc_max is None else self.mcc_max


def _parse_wm(value: str | None) -> frozenset[str]:
    if value is None:
        return frozenset(WM_DEFAULT)
    if value.lower() == "all":
        return frozenset(WM_GROUPS)
    ops = {op.strip().upper() for op in value.split(",") if op.strip()}
    unknown = ops - set(WM_GROUPS)
    if unknown:
        raise FfccError(f"ffcc: error: unknown --wm operator {sorted(unknown)[0]} "
                        f"(choose from {', '.join(WM_GROUPS)}, or all)", 2)
    return frozenset(ops)


def _positive_int(option: str, value: str) -> int:
    number = _int_or_none(value)
    if number is None or number < 1:
        raise FfccError(f"ffcc: error: {option} needs a positive integer, got '{value}'", 2)
    return number


def _bound(option: str, value: str) -> int:
    number = _int_or_none(value)
    if number is None or number < 0:
        raise FfccError(f"ffcc: error: {option} needs a number of conditions, or 0 for no bound, "
                        f"got '{value}'", 2)
    return number


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _is_compiler_long_option(name: str) -> bool:
    return any(name == known or (known.endswith(("-", "=")) and name.startswith(known))
               or name.startswith(known + "=") for known in COMPILER_LONG_OPTIONS)


# option name -> (takes a value?, handler(options, value))
def _set(attr: str, convert=lambda v: v):
    def handler(opts: FfccOptions, value: str | None) -> None:
        setattr(opts, attr, convert(value))
    return handler


def _append(attr: str):
    def handler(opts: FfccOptions, value: str | None) -> None:
        setattr(opts, attr, getattr(opts, attr) + (value,))
    return handler


def _prune(opts: FfccOptions, value: str | None) -> None:
    method = value or "fast"
    if method not in PRUNE_METHODS:
        raise FfccError(f"ffcc: error: unknown --prune method '{method}' "
                        f"(choose from {', '.join(PRUNE_METHODS)})", 2)
    opts.prune = method


_VALUE = "required"
_OPTIONAL = "optional"
_FLAG = "flag"

FFCC_OPTIONS = {
    "cc": (_VALUE, _set("cc")),
    "cxx": (_VALUE, _set("cxx")),
    "name": (_VALUE, _set("name")),
    "mcc": (_FLAG, _set("mcc", lambda v: True)),
    "mcc-max": (_VALUE, lambda o, v: setattr(o, "mcc_max", _bound("--mcc-max", v))),
    "wm": (_OPTIONAL, lambda o, v: setattr(o, "wm_ops", _parse_wm(v))),
    "only": (_VALUE, _append("only_files")),
    "only-func": (_VALUE, _append("only_funcs")),
    "allowlist": (_VALUE, _set("allowlist")),
    "in-macros": (_FLAG, _set("in_macros", lambda v: True)),
    "keep-annotated": (_VALUE, _set("keep_annotated")),
    "labels-required": (_FLAG, _set("labels_required", lambda v: True)),
    "label-gates": (_FLAG, _set("label_gates", lambda v: True)),
    "cmplog": (_FLAG, _set("cmplog", lambda v: True)),
    "prune": (_OPTIONAL, _prune),
    "retired": (_VALUE, _set("retired")),
    "jobs": (_VALUE, lambda o, v: setattr(o, "jobs", _positive_int("--jobs", v))),
    "estimate": (_FLAG, _set("estimate", lambda v: True)),
    "help": (_FLAG, _set("help", lambda v: True)),
    "ffcc-verbose": (_FLAG, _set("verbose", lambda v: True)),
}


def parse_options(argv: list[str], environ: Mapping[str, str] | None = None,
                  driver: str = C_DRIVER) -> FfccOptions:
    """Split argv into ffcc's options and the compiler's arguments (order kept); ``driver``
    is the name the command ran under (toolchain.driver_of)."""
    environ = os.environ if environ is None else environ
    opts = FfccOptions(cc=environ.get("FFCC_CC") or None, cxx=environ.get("FFCC_CXX") or None,
                       driver=driver)
    words = shlex.split(environ.get("FFCC_FLAGS", "")) + list(argv)
    from_env = len(words) - len(argv)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--") or word == "--":
            if i <= from_env:
                raise FfccError(f"ffcc: error: FFCC_FLAGS may hold only ffcc options, not '{word}'", 2)
            opts.compiler_args.append(word)
            continue
        name, eq, value = word[2:].partition("=")
        spec = FFCC_OPTIONS.get(name)
        if spec is None:
            if _is_compiler_long_option(word[2:]) and i > from_env:
                opts.compiler_args.append(word)
                continue
            raise FfccError(f"ffcc: error: unknown option '{word}' (ffcc --help lists ffcc's options)", 2)
        kind, handler = spec
        if kind == _FLAG and eq:
            raise FfccError(f"ffcc: error: option --{name} takes no value", 2)
        if kind == _VALUE and not eq:
            if i >= len(words):
                raise FfccError(f"ffcc: error: option --{name} needs a value", 2)
            value = words[i]
            i += 1
        handler(opts, value if (eq or kind == _VALUE) else None)
    return opts


def _group_lines() -> str:
    """The help text's list of label operator groups, from the rewriters' registry."""
    return "".join(f"  {group}  {text}\n" for group, text in GROUPS.items())


HELP = f"""\
usage: ffcc [ffcc options] [compiler arguments]

ffcc is a C compiler driver: it runs gcc or clang with edge-coverage
instrumentation and links ffcc's runtime (AFL-compatible forkserver).
ffcc++ is its C++ driver: it runs clang++ or g++, and C++ units get edge
coverage and the runtime, no labels.

  ffcc -o build/ src/*.c        project form: build one program in build/
  CC=ffcc CXX=ffcc++ ./configure && make
                                drop-in form: every gcc/clang flag works

ffcc options (also accepted from the FFCC_FLAGS environment variable):
  --cc=CC            backend compiler (default: clang if installed, else gcc;
                     env FFCC_CC)
  --cxx=CXX          ffcc++'s backend compiler (default: the C++ compiler of
                     the --cc one's family, clang++ or g++; env FFCC_CXX)
  --name=NAME        program name in project form (default: the file with main)
  --mcc              multiple condition coverage labels
  --mcc-max=K        a decision with more than 2^K combinations of condition
                     values gets those of each window of K conditions instead
                     (default {MCC_MAX_DEFAULT}; 0: no bound; a note names each file cut)
  --wm[=OPS]         weak-mutation labels; OPS from {",".join(WM_GROUPS)} or all
                     (default {",".join(WM_DEFAULT)}: Mull's default set)
  --only=PATTERN     put labels only in files matching PATTERN (repeatable)
  --only-func=NAME   put labels only in function NAME (repeatable)
  --allowlist=FILE   AFL_LLVM_ALLOWLIST-style file (src: and fun: entries)
  --in-macros        label the code macros expand to as well (function bodies'
                     macro invocations are replaced by the preprocessor's
                     expansion; without it labels stay out of macro expansions)
  --prune[=METHOD]   drop infeasible and trivial labels (fast, gccdiff);
                     `ffcc --prune build/` prunes an existing project build
  --retired=FILE     compile the labels FILE lists to nothing (ffuzz
                     --rebuild-retired writes it); `ffcc --retired=FILE build/`
                     rebuilds an existing project build so
  --jobs=N           pruning compiles run at once (default: one per core;
                     env FFCC_PRUNE_JOBS)
  --estimate         estimate label counts per file, build nothing
  --keep-annotated=DIR  keep a copy of every annotated source ffcc compiles in DIR
                     (DIR/<absolute source path>), to read or diff the labels
  --labels-required  fail when a file's labelled code does not compile (by
                     default it is built without labels, with a warning)
  --label-gates      put each site's label code behind a gate that ffuzz closes
                     once all its labels are retired (clang >= 9, x86-64): a
                     closed site costs next to nothing, an open one a little
                     more than without gates (docs/LABELS.md, Gates)
  --cmplog           build the comparison-logging variant for `ffuzz -c`:
                     integer comparisons, switches and memcmp/strcmp-like
                     calls log their operands (labels' predicates too)
  --ffcc-verbose     print the commands ffcc runs
  --help             this text

label operator groups (--mcc is MCC; --wm=OPS names the others):
{_group_lines()}"""


def help_text(driver: str) -> str:
    """``--help``'s text (HELP) with its usage line naming the driver run, ffcc or ffcc++."""
    return HELP.replace("usage: ffcc ", f"usage: {driver} ", 1)
