"""Run the backend compiler from a zygote: clang loaded once per compile server, forked per command.

clang spends about 25 ms of CPU loading and relocating its libraries before its main() runs:
most of what a configure probe costs it, and more than gcc's whole probe.  The compile server
starts one clang per backend with ffcc_zygote.c preloaded (``start``), which stops clang just
before main() and forks it for each command; the server's workers (its forks, which inherit
the zygote) run their backend commands there (``run``, ``replace_with``) when the compiler is
the zygote's, and as a process of their own otherwise, as without a server.

A command run in the zygote takes the caller's stdin, stdout and stderr, working directory,
umask, niceness and environment; SIGINT the caller receives is passed on; if the caller dies
the command is stopped.  The library is built on first use into ffcc's cache (keyed by its
sources and the compiler building it), like the runtime.  ffcc_zygote_protocol.h holds what
both sides agree on.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ffcc.runtime.headers import defines

from .client import OFF, receive_exact
from .runtime_cache import cache_dir

HERE = Path(__file__).resolve().parent
SOURCE, PROTOCOL_HEADER = HERE / "ffcc_zygote.c", HERE / "ffcc_zygote_protocol.h"
PROTOCOL = defines(PROTOCOL_HEADER)
FD_ENV = str(PROTOCOL["FFCC_ZYGOTE_FD_ENV"])
MAGIC = str(PROTOCOL["FFCC_ZYGOTE_MAGIC"]).encode()
WORDS = struct.Struct("=IiIII")  # umask, niceness, argc, environment size, text length
STATUS = struct.Struct("=i")  # the command's wait status; the caller's signals, sent on
SWITCH_ENV = "FFCC_ZYGOTE"  # set to one of client.OFF, commands run as processes of their own
PROCESS_NAME = "ffcc-zygote"  # its argv[1], so that ps (and bench/) can tell it from a command
STOPPED = f"the compiler zygote stopped during this command ({SWITCH_ENV}=0 runs without it)"


@dataclass(frozen=True)
class Zygote:
    """A running zygote: the compiler it holds (resolved) and that file's identity when it
    started, where it listens, and the environment its dynamic loader and C library read at
    start-up (``loader_settings``)."""

    compiler: str
    identity: tuple[int, int, int]
    path: str
    pid: int
    loader: dict[bytes, bytes]


def file_identity(path: str) -> tuple[int, int, int]:
    """Which file is at ``path``: an upgraded compiler is another file (or a rewritten one),
    and its commands must not run in a zygote of the old one."""
    info = os.stat(path)
    return info.st_ino, info.st_mtime_ns, info.st_size


def loader_settings(environment: Mapping[bytes, bytes]) -> dict[bytes, bytes]:
    """What of an environment the dynamic loader and the C library read when a process
    starts (LD_PRELOAD, LD_LIBRARY_PATH, GLIBC_TUNABLES, ...): a command whose settings differ
    from the zygote's (fakeroot's LD_PRELOAD, say) must start as a process of its own for
    them to apply."""
    return {key: value for key, value in environment.items()
            if key.startswith((b"LD_", b"GLIBC_TUNABLES", b"MALLOC_"))}


_running: dict[str, Zygote] = {}  # the server's zygotes by compiler; its workers inherit them


def library(compiler: str = "cc") -> Path | None:
    """The preload library, built into the cache on first use; None if it cannot be built."""
    import hashlib
    import tempfile

    digest = hashlib.sha256(SOURCE.read_bytes() + PROTOCOL_HEADER.read_bytes())
    target = cache_dir() / f"zygote-{digest.hexdigest()[:20]}.so"
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=target.parent)
        os.close(handle)
        built = subprocess.run([compiler, "-std=c11", "-O2", "-fPIC", "-shared", "-o", partial,
                                str(SOURCE), "-ldl"], capture_output=True)
        if built.returncode == 0:
            os.replace(partial, target)
            return target
        os.unlink(partial)
    except OSError:
        pass
    return None


def start(compiler: str, path: str, builder: str = "cc") -> Zygote | None:
    """Start a zygote of ``compiler`` listening at ``path`` (in the server's private
    directory) for this process's forks; None if the library cannot be built."""
    preload = library(builder)
    if preload is None:
        return None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if os.path.lexists(path):
            os.unlink(path)
        listener.bind(path)
        listener.listen(128)
    except OSError:
        listener.close()
        return None
    preloads = " ".join(filter(None, (str(preload), os.environ.get("LD_PRELOAD"))))
    env = {**os.environ, "LD_PRELOAD": preloads, FD_ENV: str(listener.fileno())}
    process = subprocess.Popen([compiler, PROCESS_NAME], env=env, pass_fds=[listener.fileno()],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    listener.close()
    resolved = os.path.realpath(compiler)
    zygote = Zygote(resolved, file_identity(resolved), path, process.pid,
                    loader_settings(os.environb))
    _running[zygote.compiler] = zygote
    return zygote


def stop_all() -> None:
    """Stop the zygotes this process started, and remove their sockets."""
    for zygote in _running.values():
        try:
            os.kill(zygote.pid, signal.SIGTERM)
            os.waitpid(zygote.pid, 0)
        except OSError:
            pass
        try:
            os.unlink(zygote.path)
        except FileNotFoundError:
            pass
    _running.clear()


def _request(argv: list[str], fds: tuple[int, int, int]) -> socket.socket | None:
    """Hand ``argv`` to the zygote holding its compiler; the connection, or None when there
    is none (or it does not answer: then nothing has run)."""
    zygote = _running.get(os.path.realpath(argv[0])) if _running else None
    if zygote is None or os.environ.get(SWITCH_ENV, "1") in OFF \
            or loader_settings(os.environb) != zygote.loader:
        return None
    try:
        if file_identity(zygote.compiler) != zygote.identity:
            return None
    except OSError:
        return None
    mask = os.umask(0)
    os.umask(mask)
    environment = [key + b"=" + value for key, value in os.environb.items()]
    text = b"\0".join([os.fsencode(os.getcwd()), *map(os.fsencode, argv), *environment]) + b"\0"
    header = MAGIC + WORDS.pack(mask, os.getpriority(os.PRIO_PROCESS, 0), len(argv),
                                len(environment), len(text))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(zygote.path)
        conn.sendmsg([header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", *fds))])
        conn.sendall(text)
        if receive_exact(conn, len(MAGIC)) == MAGIC:
            return conn
    except OSError:
        pass
    conn.close()
    return None


def _wait(conn: socket.socket) -> int:
    """The command's exit code (negative: the signal that ended it), passing on SIGINT."""
    reply = b""
    with conn:
        while len(reply) < STATUS.size:
            try:
                chunk = conn.recv(STATUS.size - len(reply))
            except KeyboardInterrupt:
                conn.sendall(STATUS.pack(signal.SIGINT))
                continue
            if not chunk:
                print(f"ffcc: error: {STOPPED}", file=sys.stderr)
                return 1
            reply += chunk
    return os.waitstatus_to_exitcode(STATUS.unpack(reply)[0])


def run(argv: list[str], capture: bool = False) -> subprocess.CompletedProcess[bytes]:
    """Run a backend command as ``subprocess.run`` would (``capture``: its stdout and stderr
    kept), in the zygote of its compiler if there is one."""
    if not capture:
        sys.stdout.flush()
        sys.stderr.flush()
        conn = _request(argv, (0, 1, 2))
        if conn is None:
            return subprocess.run(argv)
        return subprocess.CompletedProcess(argv, _wait(conn))
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        conn = _request(argv, (0, out.fileno(), err.fileno()))
        if conn is None:
            return subprocess.run(argv, capture_output=True)
        code = _wait(conn)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, code, out.read(), err.read())


def replace_with(argv: list[str]) -> int:
    """Become the backend command: its exit code when it ran in a zygote (the caller ends by
    its signal if negative); otherwise this process execs it."""
    sys.stdout.flush()
    conn = _request(argv, (0, 1, 2))
    if conn is None:
        os.execv(argv[0], argv)
    return _wait(conn)
