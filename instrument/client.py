"""Python's ``ffcc`` client: hand the command to the compile server, or run it here.

A build runs the compiler once per file and a configure script hundreds of times; starting
Python, importing ffcc and loading libclang cost more than a small compile itself. The compile
server (server.py) keeps all that loaded and serves each command in a forked copy of itself
that takes over this process's stdin, stdout, stderr, working directory, environment, umask
and scheduling priority (a build run under ``nice`` stays niced, whoever started the server), so
the command behaves as if run here. The installed ``ffcc`` is ffcc_client.c, which sends the
same request without starting Python and runs this module whenever it cannot: the first
command, one with the server off, one after ffcc changed. What the two clients and the server
agree on is ffcc_server_protocol.h, which ffcc_client.c includes and this module reads
(ffcc.runtime.headers). Besides that reader this module (and exiting.py, which it shares with
the server) imports the standard library only, and of that the C modules under ``socket`` and
``signal`` (their Python wrappers import ``enum`` and ``selectors``, which would be much of
this module's start-up).

The server is found by a socket named after this installation (interpreter, ffcc's sources and
their modification times), so an upgraded or edited ffcc never meets an old server; this module
records that path for the compiled client, and the server refuses commands once its code has
changed. Without a server, the command starts one and waits for it to take the command, which
it does once it has loaded ffcc (forward_to_new_server): one that cannot be handed over (a
deleted working directory, a closed standard stream) runs here.
``FFCC_SERVER=0`` (or off, no, false) turns the server off.

``ffcc++`` is the same client under another name: the command line goes on whole, its first
word included, and that word (``cli.main``) tells ffcc++ from ffcc wherever the command runs.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython's C module behind signal
import _socket
import marshal
import os
import stat
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from ffcc.runtime.headers import defines

from .exiting import end_by_signal

TYPE_CHECKING = False  # typing's own would cost this module's start-up its import
if TYPE_CHECKING:
    from subprocess import Popen

PROTOCOL_HEADER = Path(os.path.dirname(os.path.abspath(__file__)), "ffcc_server_protocol.h")
PROTOCOL = defines(PROTOCOL_HEADER)  # read, never retyped: ffcc_client.c includes the same file
_TEXT = {name: value for name, value in PROTOCOL.items() if isinstance(value, str)}
_NUMBER = {name: value for name, value in PROTOCOL.items() if isinstance(value, int)}
MAGIC = _TEXT["FFCC_SERVER_MAGIC"].encode()
CACHE_ENV = _TEXT["FFCC_SERVER_CACHE_ENV"]  # set by ffcc_client.c when it hands a command here
SERVER_ENV = _TEXT["FFCC_SERVER_ENV"]
OFF = tuple(_TEXT["FFCC_SERVER_OFF"].split(" "))  # values of SERVER_ENV that turn the server off
DIR_ENV, DIR_FALLBACK = _TEXT["FFCC_SERVER_DIR_ENV"], _TEXT["FFCC_SERVER_DIR_FALLBACK"]
DIR_PREFIX, DIR_MODE = _TEXT["FFCC_SERVER_DIR_PREFIX"], _NUMBER["FFCC_SERVER_DIR_MODE"]
STOPPED = _TEXT["FFCC_SERVER_STOPPED"]
STATUS = struct.Struct("<i")  # exit code, or minus the signal that ended the command
SOCKET_PATH_MAX = 104  # sun_path holds 108 bytes on Linux, 104 on the BSDs
FORWARDED_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
SERVER_START_SECONDS = 10.0  # how long a command waits for a server it started to listen
SERVER_POLL_SECONDS = 0.005


def socket_dir() -> str:
    return os.path.join(os.environ.get(DIR_ENV) or DIR_FALLBACK, f"{DIR_PREFIX}{os.geteuid()}")


def _sources(package: str) -> Iterator[os.DirEntry[str]]:
    """The Python files of ``package`` and its sub-packages (instrument/prune/), and the
    headers whose defines they read at import, by name."""
    for entry in sorted(os.scandir(package), key=lambda e: e.name):
        if entry.is_dir() and entry.name.isidentifier() and entry.name != "__pycache__":
            yield from _sources(entry.path)
        elif entry.name.endswith((".py", ".h")):
            yield entry


def socket_path() -> str:
    """Where this installation's server listens: a server runs the code of the rooms ffcc
    imports as it was when it started, so an edit to any of them (or to a header they read)
    means another server."""
    return os.path.join(socket_dir(), f"server-{installation_id()}.sock")


def installation_id() -> str:
    """A name for the code of the rooms ffcc imports as it is now (their files' paths,
    modification times and sizes, and the interpreter's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    identity = [os.path.realpath(sys.executable), sys.version]
    for package in (here, *(os.path.join(os.path.dirname(here), room)
                            for room in ("rewriters", "runtime"))):
        for entry in _sources(package):
            info = entry.stat()
            identity += [entry.path, str(info.st_mtime_ns), str(info.st_size)]
    # zlib, not hashlib: importing hashlib loads OpenSSL, which costs more than hashing here.
    data = "\0".join(identity).encode(errors="surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def private_dir(path: str) -> bool:
    """Create the socket directory, or check that nobody else could have put a server there."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError:
        return False
    info = os.lstat(path)  # a symlink is not a directory here
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() \
        and (info.st_mode & 0o777 & ~DIR_MODE) == 0


def receive_exact(conn: _socket.socket, size: int) -> bytes:
    """``size`` bytes, or fewer if the other side went away."""
    data = b""
    while len(data) < size:
        try:
            chunk = conn.recv(size - len(data))
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def forwardable() -> bool:
    """Can a server run this process's command in its place?  Not with a deleted working
    directory or a closed standard stream: such a command runs here."""
    try:
        os.getcwd()
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def forward(argv: list[str], path: str) -> int | None:
    """Run the command in the server; its status (negative: killed by that signal), or None
    when no server took it (nothing has happened then)."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        cwd = os.getcwd()
        conn.connect(path)
        mask = os.umask(0)
        os.umask(mask)
        niceness = os.getpriority(os.PRIO_PROCESS, 0)
        request = marshal.dumps(([os.fsencode(arg) for arg in argv], os.fsencode(cwd),
                                 dict(os.environb), mask, niceness))
        header = MAGIC + struct.pack("<I", len(request))
        conn.sendmsg([header], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                 struct.pack("3i", 0, 1, 2))])
        conn.sendall(request)
        if receive_exact(conn, len(MAGIC)) != MAGIC:
            return None
    except OSError:
        conn.close()
        return None

    def pass_on(signo, _frame):
        try:
            conn.sendall(STATUS.pack(signo))
        except OSError:
            pass

    for signo in FORWARDED_SIGNALS:
        _signal.signal(signo, pass_on)
    reply = receive_exact(conn, STATUS.size)
    if len(reply) != STATUS.size:
        print(f"{os.path.basename(argv[0])}: error: {STOPPED}", file=sys.stderr)
        return 1
    return STATUS.unpack(reply)[0]


def start_server(path: str) -> Popen[bytes]:
    """Start a server in the background (one wins if several try).  It runs in the socket's
    directory, which holds nothing but sockets: ``-m`` puts the working directory first on the
    module path, where a directory named ``ffcc`` (in /, say) would make the server import
    other code than this client's."""
    import subprocess
    return subprocess.Popen([sys.executable, "-m", "ffcc.instrument.server", path],
                            cwd=os.path.dirname(path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def forward_to_new_server(argv: list[str], path: str) -> int | None:
    """Start a server and run the command in it, as ``forward``.  The server listens before
    it loads ffcc and libclang, so the command waits for that load, which the server does
    once, rather than loading them here too: each of a build's first commands, run here, cost
    about 0.2 s of CPU more than in the server (bench/RESULTS.md, "The first commands wait
    for the server").  Until the server listens (an interpreter's start-up) the command asks
    again every few milliseconds; None when the server leaves without taking it (another
    server started at once and took the socket: that one listens by then) or has not
    listened within SERVER_START_SECONDS (a machine too loaded to wait on)."""
    import time
    server = start_server(path)
    deadline = time.monotonic() + SERVER_START_SECONDS
    while True:
        last = server.poll() is not None or time.monotonic() > deadline
        status = forward(argv, path)
        if status is not None or last:
            return status
        time.sleep(SERVER_POLL_SECONDS)


def record_for_compiled_client(cache: str | None, path: str) -> None:
    """Tell the compiled ``ffcc`` (ffcc_client.c) that ran this client where this installation's
    server listens: in ``cache``, the file it named in CACHE_ENV (in the private socket
    directory)."""
    if not cache or os.path.dirname(cache) != os.path.dirname(path):
        return
    partial = f"{cache}.{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.write(path)
        os.replace(partial, cache)
    except OSError:
        pass


def main() -> None:
    cache = os.environ.pop(CACHE_ENV, None)  # no part of the command's environment
    if os.environ.get(SERVER_ENV, "1") not in OFF:
        path = socket_path()
        if len(path.encode()) < SOCKET_PATH_MAX and private_dir(os.path.dirname(path)):
            record_for_compiled_client(cache, path)
            status = served(sys.argv, path)
            if status is not None:
                if status < 0:
                    end_by_signal(-status)
                    status = 128 - status
                os._exit(status & 0xFF)
    from .cli import main as run_here
    run_here(sys.argv)


def served(argv: list[str], path: str) -> int | None:
    """The command's status from the server, a new one if need be; None when it runs here."""
    if not forwardable():
        start_server(path)  # for the commands that follow
        return None
    try:
        status = forward(argv, path)
        return status if status is not None else forward_to_new_server(argv, path)
    except KeyboardInterrupt:  # Ctrl-C while it waited for the server to take the command
        end_by_signal(_signal.SIGINT)
        return 128 + _signal.SIGINT
