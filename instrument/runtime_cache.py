"""Build the C runtime once per C compiler and keep it in a cache (ffcc++ shares ffcc's).

Parallel builds (make -j) may race to build it: each builds in its own
temporary directory and renames it into place; the loser uses the winner's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ffcc import runtime

from .errors import FfccError
from .plan import RuntimeFiles, runtime_build
from .toolchain import Backend


def cache_dir() -> Path:
    """Where built runtimes are kept between runs."""
    root = os.environ.get("FFCC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ffcc")
    return Path(root)


def _key(backend: Backend, arch_flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for source in sorted(runtime.RUNTIME_DIR.glob("*.[ch]")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    stat = os.stat(backend.c_compiler)  # ffcc++ links the runtime ffcc's C compiler built
    digest.update(f"{os.path.realpath(backend.c_compiler)}|{stat.st_mtime_ns}|{stat.st_size}|"
                  f"{backend.kind}|{' '.join(arch_flags)}".encode())
    return digest.hexdigest()[:20]


def _compile(argv: list[str]) -> None:
    """Run one runtime compile; its last line of diagnostics becomes the error."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise FfccError(f"ffcc: error: building the runtime with {argv[0]} failed: "
                        f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ''}")


def _build(backend: Backend, arch_flags: tuple[str, ...], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        build = runtime_build(backend, arch_flags, work)
        for argv in build.compiles:
            _compile(argv)
        subprocess.run(build.merge, check=True, capture_output=True)
        subprocess.run(build.archive, check=True, capture_output=True)
        for part in build.parts:
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
    files = RuntimeFiles.in_dir(target)
    if not files.fuzzer_main.exists():
        _build(backend, arch_flags, target)
    return files
