"""Build the C runtime once per compiler and keep it in a cache.

Parallel builds (make -j) may race to build it: each builds in its own
temporary directory and renames it into place; the loser uses the winner's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ffcc import runtime

from .errors import FfccError
from .toolchain import GCC, Backend, cache_dir

RUNTIME_CFLAGS = ("-std=gnu11", "-O2", "-fPIC", "-g0", "-w")


@dataclass(frozen=True)
class RuntimeFiles:
    """The built runtime: what executables, shared objects and harnesses link."""

    core: Path          # map, hooks and forkserver: linked into every executable
    shared_stub: Path   # weak no-op hooks: linked into shared objects
    fuzzer_main: Path   # archive with main() for LLVMFuzzerTestOneInput harnesses


def _key(backend: Backend, arch_flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for source in sorted(runtime.RUNTIME_DIR.glob("*.[ch]")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    stat = os.stat(backend.path)
    digest.update(f"{os.path.realpath(backend.path)}|{stat.st_mtime_ns}|{stat.st_size}|"
                  f"{backend.kind}|{' '.join(arch_flags)}".encode())
    return digest.hexdigest()[:20]


def _compile(backend: Backend, source: Path, output: Path, flags: tuple[str, ...]) -> None:
    cmd = [backend.path, *RUNTIME_CFLAGS, *flags, "-I", str(runtime.RUNTIME_DIR),
           "-c", str(source), "-o", str(output)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise FfccError(f"ffcc: error: building the runtime with {backend.path} failed: "
                        f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ''}")


def _build(backend: Backend, arch_flags: tuple[str, ...], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        edge_flags = ("-DFFCC_EDGE_HASHED",) if backend.kind == GCC else ()
        parts = []
        for source in runtime.CORE_SOURCES:
            part = work / (source.stem + ".part.o")
            _compile(backend, source, part, arch_flags + edge_flags)
            parts.append(str(part))
        # One relocatable object, so the whole runtime is linked or none of it.
        subprocess.run([backend.path, *arch_flags, "-r", "-nostdlib", "-o",
                        str(work / "ffcc_rt.o"), *parts], check=True, capture_output=True)
        _compile(backend, runtime.SHARED_STUB, work / "ffcc_shared_stub.o", arch_flags)
        _compile(backend, runtime.FUZZER_MAIN, work / "ffcc_fuzzer_main.o", arch_flags)
        subprocess.run(["ar", "rcs", str(work / "libffcc_fuzzer_main.a"),
                        str(work / "ffcc_fuzzer_main.o")], check=True, capture_output=True)
        for part in parts:
            os.unlink(part)
        try:
            os.rename(work, target)
        except OSError:
            pass  # another build won the race; its files are as good
    except (OSError, subprocess.CalledProcessError) as err:
        raise FfccError(f"ffcc: error: cannot build the runtime in {target.parent}: {err}") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)


def runtime_files(backend: Backend, arch_flags: tuple[str, ...] = ()) -> RuntimeFiles:
    """The runtime built for this compiler and target architecture flags."""
    target = cache_dir() / f"runtime-{_key(backend, arch_flags)}"
    if not (target / "libffcc_fuzzer_main.a").exists():
        _build(backend, arch_flags, target)
    return RuntimeFiles(core=target / "ffcc_rt.o", shared_stub=target / "ffcc_shared_stub.o",
                        fuzzer_main=target / "libffcc_fuzzer_main.a")
