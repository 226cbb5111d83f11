"""Turn a compiler command into the backend commands ffcc runs, as data.

Nothing here executes, so the rules are unit-tested without a compiler.  A
drop-in invocation becomes one backend command: ffcc's macros and coverage
flags in front, the user's arguments in their order, the runtime behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .command_line import CompilerCommand, Mode
from .toolchain import FFCC_MACRO, Backend, predefined_macros

if TYPE_CHECKING:  # building the runtime is imported only by commands that link
    from .runtime_cache import RuntimeFiles

# Hooks an executable exports so that ffcc-built shared objects it loads use
# its map rather than their own no-op stubs.
EXPORTED_HOOKS = ("__sanitizer_cov_trace_pc*", "__afl_persistent_loop", "__afl_manual_init",
                  "__afl_fuzz_ptr", "__afl_fuzz_len")


def needs_runtime(command: CompilerCommand, backend: Backend) -> bool:
    """Whether this command links something that gets ffcc's runtime or stubs."""
    return (backend.links_ffcc_runtime and command.mode is Mode.LINK
            and not command.relocatable and not command.no_stdlib)


def link_additions(command: CompilerCommand, rt: "RuntimeFiles") -> list[str]:
    """The runtime for executables, the weak stubs for shared objects."""
    if command.shared:
        return [str(rt.shared_stub)]
    exports = [f"-Wl,--export-dynamic-symbol={name}" for name in EXPORTED_HOOKS]
    return [str(rt.core), str(rt.fuzzer_main), *exports]


def front_flags(command: CompilerCommand, backend: Backend) -> list[str]:
    """Macros for every step that preprocesses; coverage for steps that compile.  A foreign
    compiler (afl-clang-fast) defines the AFL macros itself, with the same ABI: it only gets
    ``__FFCC__`` (redefining them would warn on every compile)."""
    if command.mode is Mode.QUERY:
        return []
    flags = predefined_macros() if backend.links_ffcc_runtime else [FFCC_MACRO]
    if command.mode is not Mode.PREPROCESS and command.sources:
        flags += backend.coverage_flags
    return flags


def plan_compile(command: CompilerCommand, backend: Backend,
                 rt: "RuntimeFiles | None") -> list[str]:
    """The backend argv for a drop-in invocation (``rt`` when it links a runtime)."""
    back = link_additions(command, rt) if rt is not None else []
    return [backend.path, *front_flags(command, backend), *command.args, *back]
