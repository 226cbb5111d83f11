"""Every compiler command ffcc runs, built as data.

Nothing here executes, so the rules are unit-tested without a compiler
(tests/instrument/test_plan.py); callers run what these functions return.  The
compiler itself is chosen in toolchain.py.  One function per purpose:

* a drop-in invocation becomes one backend command (``plan_compile``): ffcc's
  macros and coverage flags in front, the user's arguments in their order, the
  runtime behind; with labels, the same command on annotated copies
  (``labelled_argv``), and libclang parses each unit with ``parse_flags``;
* the project form compiles each source (``project_compiles``) and links
  (``project_link``);
* the runtime cache compiles the C runtime (``runtime_build``);
* pruning compiles analysis variants (``analysis_argv``);
* ``--in-macros`` preprocesses (``preprocess_argv``, which the driver hands to the
  rewriters through ``LabelOptions.macro_preprocessor``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ffcc import runtime

from .command_line import JOINABLE, SEPARATE_VALUE, CompilerCommand, Mode
from .toolchain import CMPLOG_ROUTINES, FFCC_MACRO, Backend, BackendKind, predefined_macros

# Hooks an executable exports so that ffcc-built shared objects it loads use
# its map rather than their own no-op stubs, and place their labels in it (and, with
# --cmplog, its comparison log).
EXPORTED_HOOKS = ("__sanitizer_cov_trace_pc*", "__afl_persistent_loop", "__afl_manual_init",
                  "__afl_fuzz_ptr", "__afl_fuzz_len", "__ffcc_register_labels")
CMPLOG_EXPORTED_HOOKS = ("__sanitizer_cov_trace_*cmp*", "__sanitizer_cov_trace_switch")


def quote_dir(path: str) -> str:
    """The directory of ``path``: quoted includes of a copy of it (an annotated unit, an
    analysis variant) search there first, as they would from the original file."""
    return os.path.dirname(os.path.abspath(path)) or "."


# --- drop-in -----------------------------------------------------------------------------

@dataclass(frozen=True)
class RuntimeFiles:
    """The built runtime: what executables, shared objects and harnesses link."""

    core: Path          # map, hooks and forkserver: linked into every executable
    shared_stub: Path   # weak no-op hooks: linked into shared objects
    fuzzer_main: Path   # archive with main() for LLVMFuzzerTestOneInput harnesses
    cmplog: Path        # comparison hooks and routine wrappers: --cmplog executables

    @classmethod
    def in_dir(cls, directory: Path) -> RuntimeFiles:
        """The runtime's files as ``runtime_build`` names them in ``directory``."""
        return cls(core=directory / "ffcc_rt.o", shared_stub=directory / "ffcc_shared_stub.o",
                   fuzzer_main=directory / "libffcc_fuzzer_main.a",
                   cmplog=directory / "ffcc_cmplog.o")


def needs_runtime(command: CompilerCommand, backend: Backend) -> bool:
    """Whether this command links something that gets ffcc's runtime or stubs."""
    return (backend.links_ffcc_runtime and command.mode is Mode.LINK
            and not command.relocatable and not command.no_stdlib)


def link_additions(command: CompilerCommand, rt: RuntimeFiles, cmplog: bool = False) -> list[str]:
    """The runtime for executables, the weak stubs for shared objects; with ``cmplog`` the
    comparison log too, and the comparison routines wrapped (runtime/ffcc_cmplog.c).  After a
    ``-x LANGUAGE`` of the user's, ``-x none`` first, so the runtime's objects are read as
    objects."""
    language_reset = ["-x", "none"] if _forces_language(command.args) else []
    return language_reset + _runtime_objects(command, rt, cmplog)


def _forces_language(args: Sequence[str]) -> bool:
    return any(arg == "-x" or (arg.startswith("-x") and len(arg) > 2) for arg in args)


def _runtime_objects(command: CompilerCommand, rt: RuntimeFiles, cmplog: bool) -> list[str]:
    if command.shared:
        return [str(rt.shared_stub)]
    exports = [f"-Wl,--export-dynamic-symbol={name}" for name in EXPORTED_HOOKS]
    if not cmplog:
        return [str(rt.core), str(rt.fuzzer_main), *exports]
    exports += [f"-Wl,--export-dynamic-symbol={name}" for name in CMPLOG_EXPORTED_HOOKS]
    wraps = [f"-Wl,--wrap={routine}" for routine in CMPLOG_ROUTINES]
    return [str(rt.core), str(rt.cmplog), str(rt.fuzzer_main), *exports, *wraps]


def front_flags(command: CompilerCommand, backend: Backend) -> list[str]:
    """Macros for every step that preprocesses; coverage for steps that compile.  A foreign
    compiler (afl-clang-fast) defines the AFL macros itself, with the same ABI: it only gets
    ``__FFCC__`` (redefining them would warn on every compile)."""
    if command.mode is Mode.QUERY:
        return []
    flags = predefined_macros() if backend.links_ffcc_runtime else [FFCC_MACRO]
    if command.mode is not Mode.PREPROCESS and command.sources:
        flags += backend.coverage_flags
        flags += sanitizer_runtime_flags(command, backend)
    return flags


def sanitizer_runtime_flags(command: CompilerCommand, backend: Backend) -> list[str]:
    """What keeps clang's driver from linking a sanitizer runtime the user did not ask for.

    clang links UBSan's runtime into any program it links with ``-fsanitize-coverage`` and no
    ``-fsanitize=``; that runtime catches SIGSEGV and exits with status 1 where the plain
    program died of the signal.  ffcc's own runtime has the coverage hooks, so a compile-and-
    link command without a sanitizer of the user's links none."""
    asks_for_sanitizer = any(arg.startswith("-fsanitize=") for arg in command.args)
    if backend.kind is BackendKind.CLANG and command.mode is Mode.LINK and not asks_for_sanitizer:
        return ["-fno-sanitize-link-runtime"]
    return []


# gcc collects garbage only once its heap has passed ggc-min-heapsize and grown by ggc-min-expand
# percent since the last collection; on a machine with a few GB of memory both are at their
# largest (gcc's own limits: 128 MB, 100%).  Label code makes several times a unit's garbage,
# so a labelled compile's memory peaked far above the plain one's, and a ``make -j`` build adds
# the peaks up.  Collecting from 16 MB on, every 30% of growth, brings the peak close to the
# plain compile's; the generated code is the same (identical objects).  Figures:
# bench/RESULTS.md, "The figures behind instrument/'s code".
LABELLED_GCC_MEMORY = ("--param", "ggc-min-heapsize=16384", "--param", "ggc-min-expand=30")
# Label code has no branch, so a labelled function is a few very long basic blocks, and clang's
# SLP vectoriser schedules each of them in regions of up to slp-schedule-budget (100,000)
# instructions: on floating-point label code most of the compile (lcms2's cmscam02.c, labelled:
# 3.0 s of CPU, 1.7 of it SLP's; plain 0.1).  A budget of 10,000 compiled it in 1.8 s to the
# same machine code, and left the code of the units tried without labels as it was (figures:
# bench/RESULTS.md, "The figures behind instrument/'s code").
LABELLED_CLANG_SCHEDULING = ("-mllvm", "-slp-schedule-budget=10000")


def plan_compile(command: CompilerCommand, backend: Backend, rt: RuntimeFiles | None,
                 labelled: bool = False) -> list[str]:
    """The backend argv for a drop-in invocation (``rt`` when it links a runtime;
    ``labelled``: it compiles annotated sources, or their originals if those fail)."""
    back = link_additions(command, rt, backend.cmplog) if rt is not None else []
    if command.mode is Mode.LINK and not command.sources:
        return [*link_argv(backend, [*front_flags(command, backend), *command.args]), *back]
    return [backend.path, *front_flags(command, backend),
            *labelled_compile_flags(command, backend, labelled), *command.args, *back]


def labelled_compile_flags(command: CompilerCommand, backend: Backend,
                           labelled: bool) -> tuple[str, ...]:
    """Flags of compiles with labels: gcc's garbage collected sooner (LABELLED_GCC_MEMORY),
    clang's SLP vectoriser kept to shorter regions (LABELLED_CLANG_SCHEDULING) unless the
    command sets that itself (LLVM takes an option once)."""
    if not labelled or not command.sources:
        return ()
    if backend.kind is BackendKind.GCC:
        return LABELLED_GCC_MEMORY
    if not any(arg.startswith("-slp-schedule-budget") for arg in command.args):
        return LABELLED_CLANG_SCHEDULING
    return ()


# --- links -------------------------------------------------------------------------------

# clang's driver loads LLVM's libraries before it runs ld, which makes every link cost several
# times what gcc's driver takes for the same ld command (same crt files, same libraries).  A
# link that asks nothing of clang (no sanitizer runtime, LTO, other linker, target, ...) so
# goes through the gcc beside it (Backend.linker): with options it passes on as they are,
# and options that only a compile reads left out (gcc rejects clang's own warnings, e.g.
# -Wcomma).  Any other option keeps clang's driver.
_LINK_FLAGS = frozenset({"-shared", "-static", "-static-libgcc", "-pie", "-no-pie",
                         "-rdynamic", "-pthread", "-s", "-nostdlib", "-nostartfiles",
                         "-nodefaultlibs", "-m32", "-m64"})
_LINK_OPTIONS = frozenset({"-o", "-L", "-l", "-u", "-T", "-z", "-Xlinker"})
_COMPILE_OPTIONS = frozenset({"-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote",
                              "-idirafter"})
_COMPILE_FLAG = re.compile(
    r"-(W(?!l,)|w$|std=|O|g(?!z)|pedantic|ansi$|march=|mtune=|f(no-)?("
    r"PIC|pic|PIE|pie|visibility=|stack-protector|strict-aliasing|wrapv|common$|"
    r"function-sections$|data-sections$|omit-frame-pointer$|signed-char$|unsigned-char$|"
    r"builtin|color-diagnostics$|diagnostics-|message-length=|sanitize-coverage=))")


def _gcc_link_args(args: Sequence[str]) -> list[str] | None:
    """``args`` of a link as gcc's driver takes them, or None if one needs clang's."""
    kept: list[str] = []
    values = iter(args)
    for arg in values:
        option = arg[:2] if arg[:2] in JOINABLE and len(arg) > 2 else arg
        if not arg.startswith("-") or option in _LINK_FLAGS or arg.startswith("-Wl,"):
            kept.append(arg)
        elif option in _LINK_OPTIONS:
            kept += [arg] if option != arg else [arg, next(values, "")]
        elif option in _COMPILE_OPTIONS:
            if option == arg:
                next(values, None)
        elif not _COMPILE_FLAG.match(arg):
            return None
    return kept


def link_argv(backend: Backend, args: Sequence[str]) -> list[str]:
    """The command that links with ``args`` (no sources among them): through the backend's
    gcc when it has one and nothing in ``args`` needs clang's driver."""
    if backend.linker is not None:
        kept = _gcc_link_args(args)
        if kept is not None:
            return [backend.linker, *kept]
    return [backend.path, *args]


# --- labels ------------------------------------------------------------------------------

# libclang parses a unit only to find where its labels go: it needs the options that decide what
# the code is (preprocessor, language, target) and no other.  Any other option is left out, as
# one libclang does not know is an error that costs the unit its labels: gcc's own warnings
# (-Wlogical-op, -Wstack-usage=N), optimisation and code generation options (-fipa-pta,
# -mindirect-branch=thunk), --param; and a diagnostic option makes a warning of clang's an
# error gcc does not give (-Werror, -pedantic-errors, -Werror=...), while -save-temps,
# -traditional-cpp, -mfpmath=387 make libclang give up on the unit altogether.
# -v and -H would have libclang print to the build's stderr; --serialize-diagnostics has it
# fail to parse.
_NOT_FOR_PARSING = frozenset({"-c", "-S", "-E", "-MD", "-MMD", "-MP", "-M", "-MM", "-MG", "-MF",
                              "-MT", "-MQ", "-o", "--param", "-aux-info", "-wrapper", "-v", "-H",
                              "--verbose", "-save-temps", "-traditional-cpp", "-traditional",
                              "--serialize-diagnostics"})
# Joined forms of the same kinds, and the families of diagnostic and debug options: every -W but
# a -Wp, that only defines, undefines or adds include directories (-Wp,-D_FORTIFY_SOURCE=2),
# -w, -pedantic, -g.
_NOT_FOR_PARSING_JOINED = re.compile(
    r"--param=|-save-temps=|-specs=|-W(?!p(,-[DUI][^,]*)+$)|-w$|--?pedantic|-g")
# -f options that change what libclang reads: predefined macros (__OPTIMIZE__ comes from -O,
# kept; __PIC__, __SSP__, __CET__, __FAST_MATH__, __NO_INLINE__, _OPENMP, __GNUC_GNU_INLINE__,
# __STDC_HOSTED__, __CHAR_UNSIGNED__, sanitizers' __has_feature), keywords and extensions,
# and type layout.  The other -f options, hundreds of gcc's, are code generation.
_PARSED_F = re.compile(
    r"-f(no-)?(signed-char|unsigned-char|short-enums|short-wchar|pack-struct(=.*)?|"
    r"ms-extensions|ms-compatibility|declspec|blocks|gnu89-inline|gnu-keywords|asm|trigraphs|"
    r"digraphs|dollars-in-identifiers|double-square-bracket-attributes|gnu-inline-asm|"
    r"lax-vector-conversions(=.*)?|openmp(-simd)?|openmp=.*|openacc|freestanding|hosted|"
    r"builtin(-.*)?|pic|PIC|pie|PIE|stack-protector(-all|-strong|-explicit)?|"
    r"cf-protection(=.*)?|fast-math|finite-math-only|math-errno|inline|exceptions|"
    r"excess-precision=.*|sanitize=.*)$")
# -m options that change predefined macros or type sizes: the target's data model and CPU, its
# instruction set extensions (__SSE4_2__, __AVX2__), its float ABI and long double.  The
# others are code generation, many of them gcc's own (-mrecord-mcount, -mpreferred-stack-boundary=).
_PARSED_M = re.compile(
    r"-m(16|32|64|x32|(arch|cpu|tune|abi|cmodel|float-abi|fpu)=.*|long-double-(64|80|128)|"
    r"soft-float|hard-float|general-regs-only|thumb|arm|big-endian|little-endian|"
    r"(no-)?(sse|avx|mmx|3dnow|80387|aes|pclmul|sha|fma|f16c|bmi|lzcnt|popcnt|crc32|rdrnd|"
    r"rdseed|adx|xsave|fsgsbase|movbe|cx16|sahf|prfchw|clflushopt|clwb|vaes|vpclmulqdq|gfni|"
    r"pku|rtm|hle|fxsr|xop|tbm|abm|lwp|amx|shstk|sgx|neon|altivec|vsx)[a-z0-9.-]*)$")


def _parsed(option: str) -> bool:
    """Whether libclang gets ``option`` (and its value, if it takes the next argument)."""
    if option in _NOT_FOR_PARSING or _NOT_FOR_PARSING_JOINED.match(option):
        return False
    if option.startswith("-f"):
        return bool(_PARSED_F.match(option))
    return not option.startswith("-m") or bool(_PARSED_M.match(option))


def parse_flags(command: CompilerCommand) -> list[str]:
    """The options libclang needs to parse a unit like the compiler: those that decide what
    the code is, none that only its compile, outputs or diagnostics read."""
    flags: list[str] = []
    options = iter(command.options)
    for option in options:
        value = [next(options, "")] if option in SEPARATE_VALUE else []
        if _parsed(option):
            flags += [option, *value]
    return flags


def labelled_argv(argv: list[str], annotated: dict[str, str],
                  extra: Sequence[str] = ()) -> list[str]:
    """``argv`` with each source in ``annotated`` (original path -> annotated copy) swapped
    for its copy, the originals' directories first for quoted includes, and ``extra`` flags."""
    iquotes = []
    for source in annotated:
        iquotes += ["-iquote", quote_dir(source)]
    return [argv[0], *iquotes, *extra, *(annotated.get(arg, arg) for arg in argv[1:])]


# clang's integrated assembler holds a unit's whole object, every fragment of every label's
# instructions, until it writes it: SQLite's amalgamation (77,000 labels) compiled in 759 MB,
# and in 494 MB through GNU as (``-fno-integrated-as``: clang writes the assembly text, which
# as reads as a stream), in 42.8 s of CPU against 45.3 (medians of five and three runs).  On
# units of a few thousand labels the second process and the text cost more CPU than they save
# (libpng's png.c, 3,634 labels: 1.91 s against 1.69) for a tenth of the memory; so only
# units with at least this many labels.  Figures: bench/RESULTS.md, "Per-function
# annotation, precompiled preambles".
EXTERNAL_ASSEMBLER_LABELS = 20_000
# Options by which a command chooses its assembler or passes it options (which GNU as may not
# take), or makes no machine code (LTO's bitcode) or keeps its temporaries.
_ASSEMBLER_CHOICES = ("-Wa,", "-Xassembler", "-fintegrated-as", "-fno-integrated-as",
                      "-integrated-as", "-no-integrated-as", "-flto", "-emit-llvm",
                      "-save-temps")


def assembler_flags(command: CompilerCommand, labels: int) -> tuple[str, ...]:
    """``-fno-integrated-as`` for clang's compile of units with ``labels`` labels in all when
    that is EXTERNAL_ASSEMBLER_LABELS or more, the command makes an object and leaves its
    assembler alone, and GNU as is there."""
    if labels < EXTERNAL_ASSEMBLER_LABELS or command.mode is not Mode.COMPILE:
        return ()
    if any(arg.startswith(_ASSEMBLER_CHOICES) for arg in command.args):
        return ()
    return ("-fno-integrated-as",) if shutil.which("as") is not None else ()


# --- project form ------------------------------------------------------------------------

LINK_ONLY = re.compile(r"^(-L|-Wl,|-static|-rdynamic|-pie|-no-pie|-shared)")


def project_compile_options(command: CompilerCommand) -> list[str]:
    """The project command's options that apply to compiling each source."""
    return [o for o in command.options if not LINK_ONLY.match(o) and o != "-c"]


def project_compiles(command: CompilerCommand, backend: Backend, objects: Sequence[Path],
                     labelled: bool = False) -> list[list[str]]:
    """One compile per source of a project command, each to its object in ``objects``."""
    front = [*front_flags(command, backend), *labelled_compile_flags(command, backend, labelled)]
    options = project_compile_options(command)
    return [[backend.path, *front, *options, "-c", source.path, "-o", str(obj)]
            for source, obj in zip(command.sources, objects)]


def project_link(command: CompilerCommand, backend: Backend, objects: Sequence[Path],
                 program: Path, rt: RuntimeFiles | None) -> list[str]:
    """The link of a project's objects into ``program`` (with ``rt`` when the backend links
    ffcc's runtime)."""
    link = link_argv(backend, [*command.options, *map(str, objects), *command.linker_inputs,
                               "-o", str(program)])
    return [*link, *link_additions(command, rt, backend.cmplog)] if rt is not None else link


# --- runtime -----------------------------------------------------------------------------

# Warnings are off: a compiler release with a new warning must not stop a user's build
# (tests/instrument/test_runtime_warnings.py keeps the sources clean under -Werror).
RUNTIME_CFLAGS = ("-std=gnu11", "-O2", "-fPIC", "-g0", "-w")
# gcc has no trace-pc-guard: its runtime hashes block offsets into edge ids.
RUNTIME_EDGE_FLAGS = {BackendKind.GCC: ("-DFFCC_EDGE_HASHED",)}


@dataclass(frozen=True)
class RuntimeBuild:
    """The commands that build the runtime's files in one directory, in order."""

    compiles: tuple[list[str], ...]  # each C source to its object
    merge: list[str]                 # the core objects into one relocatable object
    archive: list[str]               # the fuzzer main() into an archive
    parts: tuple[Path, ...]          # objects only the merge needs


def runtime_compile(backend: Backend, source: Path, output: Path,
                    flags: tuple[str, ...]) -> list[str]:
    """One runtime source compiled to ``output`` (by the C compiler: ffcc++'s too)."""
    return [backend.c_compiler, *RUNTIME_CFLAGS, *flags, "-I", str(runtime.RUNTIME_DIR),
            "-c", str(source), "-o", str(output)]


def runtime_build(backend: Backend, arch_flags: tuple[str, ...], work: Path) -> RuntimeBuild:
    """The runtime for ``backend`` and the target's ``arch_flags``, built in ``work`` into
    ``RuntimeFiles.in_dir(work)``.  The core is one relocatable object, so the whole runtime
    is linked or none of it."""
    files = RuntimeFiles.in_dir(work)
    core_flags = arch_flags + RUNTIME_EDGE_FLAGS.get(backend.kind, ())
    parts = tuple(work / (source.stem + ".part.o") for source in runtime.CORE_SOURCES)
    main_object = work / "ffcc_fuzzer_main.o"
    compiles = (
        *(runtime_compile(backend, source, part, core_flags)
          for source, part in zip(runtime.CORE_SOURCES, parts)),
        runtime_compile(backend, runtime.SHARED_STUB, files.shared_stub, arch_flags),
        runtime_compile(backend, runtime.FUZZER_MAIN, main_object, arch_flags),
        runtime_compile(backend, runtime.CMPLOG, files.cmplog, arch_flags),
    )
    merge = [backend.c_compiler, *arch_flags, "-r", "-nostdlib", "-o", str(files.core),
             *map(str, parts)]
    archive = ["ar", "rcs", str(files.fuzzer_main), str(main_object)]
    return RuntimeBuild(compiles, merge, archive, parts)


# --- pruning -----------------------------------------------------------------------------

# Analysis compiles keep the build's preprocessor and language options (they decide what
# the code is) and replace optimisation, debug info, warnings, sanitizers and LTO with
# ANALYSIS_FLAGS.  -fwrapv -fno-strict-aliasing -fno-delete-null-pointer-checks stop the
# optimiser from deciding labels through the program's undefined behaviour (signed
# overflow, aliasing, a dereference "proving" non-null): laundering guards against that in
# the built binary, and analysis variants have their laundering removed (prune/variants.py).
ANALYSIS_FLAGS = ("-O2", "-w", "-fwrapv", "-fno-strict-aliasing",
                  "-fno-delete-null-pointer-checks")
_REPLACED_PREFIXES = ("-O", "-g", "-W", "-w", "-fsanitize", "-fno-sanitize", "-flto",
                      "-pedantic", "-fprofile", "-fcoverage", "-ftest-coverage", "-save-temps")


def analysis_flags(flags: Sequence[str]) -> list[str]:
    """The unit's flags less those the analysis replaces (ANALYSIS_FLAGS)."""
    return [f for f in flags if not (f.startswith(_REPLACED_PREFIXES) and not f.startswith("-Wp,"))]


def analysis_argv(compiler: str, unit_flags: Sequence[str], source: str,
                  output: str | None) -> list[str]:
    """An optimised compile of an analysis variant of ``source`` read from stdin: the object
    file ``output``, or with None the assembly on stdout."""
    step = ["-c", "-o", output] if output is not None else ["-S", "-o", "-"]
    return [compiler, *analysis_flags(unit_flags), *ANALYSIS_FLAGS,
            "-iquote", quote_dir(source), *step, "-x", "c", "-"]


# --- --in-macros -------------------------------------------------------------------------

def preprocess_argv(compiler: str, compile_args: Sequence[str], source: str,
                    marked: str) -> list[str]:
    """The preprocessor on ``marked`` (a copy of ``source`` with its macro invocations
    marked), to stdout without line markers or warnings; quoted includes search the
    directory of ``source`` first, and ``__BASE_FILE__`` is ``source`` (gcc would name the
    copy; -w silences the redefinition)."""
    return [compiler, "-E", "-P", "-w", "-x", "c", *compile_args, "-iquote", quote_dir(source),
            f"-D__BASE_FILE__={json.dumps(source)}", marked, "-o", "-"]
