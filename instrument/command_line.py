"""What a gcc/clang command line asks for, read without running anything.

Only the parts that change what ffcc adds are extracted: the inputs, the
output, and whether the command preprocesses, compiles, or links (and links
what: an executable, a shared object, a relocatable object).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

# Options whose value may be the next argument (when not joined to the option).
SEPARATE_VALUE = frozenset({
    "-o", "-I", "-D", "-U", "-L", "-l", "-x", "-include", "-imacros", "-isystem", "-iquote",
    "-idirafter", "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-isysroot", "-imultilib",
    "-MF", "-MT", "-MQ", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-u", "-T",
    "-z", "-e", "-aux-info", "--param", "-dumpbase", "-dumpdir", "-target", "-arch", "-B",
    "-A", "-G", "-wrapper", "--sysroot", "-Xarch_host", "-ivfsoverlay", "-mllvm",
    "--serialize-diagnostics",
})
# Of those, the ones that may also be written joined (-Ifoo, -lm, -DX=1).
JOINABLE = frozenset({"-o", "-I", "-D", "-U", "-L", "-l", "-x", "-u", "-T", "-z", "-e", "-B",
                      "-A", "-G"})

C_LIKE = {".c": "c", ".i": "c", ".h": "c-header"}
# g++ and clang++ read what gcc reads as C as C++ (ffcc++ does as they do), unless -x says.
C_LIKE_FOR_CXX = {".c": "c++", ".i": "c++", ".h": "c++-header"}
CXX_LIKE = {".cc", ".cp", ".cxx", ".cpp", ".CPP", ".c++", ".C", ".ii"}
ASM_LIKE = {".s", ".S", ".sx"}


class Mode(enum.Enum):
    QUERY = "query"            # no inputs: --version, -print-prog-name=ld, -dumpmachine ...
    PREPROCESS = "preprocess"  # -E, -M/-MM without -MD, -### (the backend runs alone)
    ASSEMBLY = "assembly"      # -S
    COMPILE = "compile"        # -c
    LINK = "link"              # everything else with inputs


@dataclass
class Source:
    """An input the compiler itself translates (as opposed to a linker input)."""

    path: str
    language: str  # "c", "c++", "asm", "c-header", or whatever -x said


@dataclass
class CompilerCommand:
    """A parsed gcc/clang command line; ``args`` is the original, untouched."""

    args: list[str]
    mode: Mode
    options: list[str] = field(default_factory=list)  # args less inputs and -o
    sources: list[Source] = field(default_factory=list)
    linker_inputs: list[str] = field(default_factory=list)
    output: str | None = None
    shared: bool = False
    relocatable: bool = False
    no_stdlib: bool = False
    arch_flags: tuple[str, ...] = ()
    dependency_file: bool = False

    @property
    def project_form(self) -> bool:
        """``ffcc -o dir/ src/*.c``: ``-o`` names a directory (trailing slash, or one that
        exists) and sources are given (project.py builds it)."""
        out = self.output
        return bool(out and self.sources and (out.endswith("/") or os.path.isdir(out)))

    @property
    def c_sources(self) -> list[Source]:
        return [s for s in self.sources if s.language == "c"]

    @property
    def builds_loadable(self) -> bool:
        """A link into a program or a shared object: what carries a label database."""
        return self.mode is Mode.LINK and not self.relocatable


def _language_of(path: str, forced: str | None, cxx: bool) -> str | None:
    if forced and forced != "none":
        return {"assembler": "asm", "assembler-with-cpp": "asm"}.get(forced, forced)
    dot = path.rfind(".")
    ext = path[dot:] if dot > path.rfind("/") else ""
    c_like = C_LIKE_FOR_CXX if cxx else C_LIKE
    if ext in c_like:
        return c_like[ext]
    if ext in CXX_LIKE:
        return "c++"
    if ext in ASM_LIKE:
        return "asm"
    return None


def parse_command(args: list[str], cxx: bool = False) -> CompilerCommand:
    """Classify a compiler command line, of a C++ compiler (ffcc++) when ``cxx``."""
    flags: set[str] = set()
    sources: list[Source] = []
    linker_inputs: list[str] = []
    output = None
    forced_language = None
    arch: list[str] = []
    options: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        start = i
        i += 1
        if arg == "-" or not arg.startswith("-"):
            language = (_language_of(arg, forced_language, cxx) if arg != "-"
                        else forced_language or ("c++" if cxx else "c"))
            if language is None:
                linker_inputs.append(arg)
            else:
                sources.append(Source(arg, language))
            continue
        if arg in SEPARATE_VALUE:
            value = args[i] if i < len(args) else ""
            i += 1
        elif arg[:2] in JOINABLE and len(arg) > 2:
            arg, value = arg[:2], arg[2:]
        else:
            value = None
        if arg == "-o":
            output = value
        elif arg == "-l":
            linker_inputs.append("-l" + (value or ""))
        else:
            options.extend(args[start:i])
        if arg == "-x":
            forced_language = value
        elif arg in ("-m32", "-m64", "-mx32"):
            arch.append(arg)
        flags.add(arg)

    has_inputs = bool(sources or linker_inputs)
    if flags & {"-E", "-###"} or (flags & {"-M", "-MM"} and not flags & {"-MD", "-MMD"}):
        mode = Mode.PREPROCESS
    elif not has_inputs:
        mode = Mode.QUERY
    elif "-S" in flags:
        mode = Mode.ASSEMBLY
    elif "-c" in flags:
        mode = Mode.COMPILE
    else:
        mode = Mode.LINK
    return CompilerCommand(
        args=list(args), mode=mode, options=options, sources=sources, linker_inputs=linker_inputs,
        output=output,
        shared="-shared" in flags, relocatable="-r" in flags,
        no_stdlib=bool(flags & {"-nostdlib", "-nodefaultlibs", "-nostartfiles"}),
        arch_flags=tuple(arch), dependency_file=bool(flags & {"-MD", "-MMD"}))
