"""The compile server: ffcc, its rewriters and libclang loaded once, a forked copy per command.

``python -m ffcc.instrument.server SOCKET`` (client.py starts it) listens on a Unix socket in
a directory only its user can enter. For each connection it forks a relay, which reads the
command (argv, whose first word tells ffcc++ from ffcc, working directory, environment, umask,
niceness, and the client's stdin, stdout and stderr as file descriptors), acknowledges it and
forks the worker that runs it exactly as ``ffcc`` would in the client's place: the worker may
even ``exec`` the backend compiler. The
relay reports how the worker ended; signals the client receives (make's Ctrl-C) are passed on
to the worker's process group, and a client that disappears takes the worker with it.

One server per socket: the first to lock ``SOCKET.lock`` serves, later ones leave at once. It
listens before it loads anything (``preload``), so the commands that arrive meanwhile, the
build's first ones, wait in its backlog for the load instead of doing it again in their own
processes. It leaves after ``FFCC_SERVER_IDLE`` seconds (default 300) without a command,
unlinking its socket first so that late clients run their command themselves.
"""

from __future__ import annotations

import fcntl
import gc
import io
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from typing import TYPE_CHECKING

from .client import MAGIC, STATUS, receive_exact, socket_path
from .exiting import end_by_signal, flush_streams

if TYPE_CHECKING:
    from .labels import UnitLabel

HEADER = struct.Struct(f"<{len(MAGIC)}sI")  # magic, request length
DEFAULT_IDLE_SECONDS = 300.0
FD_COUNT = 3


# Labelled by preload(): an operator of every group, so that what the first annotation in a
# process builds (libclang's first parse, compiled regular expressions, the rewriters' caches)
# is built once in the server, not again in every forked command.
WARM_UP_SOURCE = b"""int warm_up(int a, int b, unsigned u, double d, int *p) {
  int n = 0;
  for (int i = 0; i < a && (b > 2 || !p); i++) n += a * b - i / (b | 1) + (int)(u >> 1);
  if (d >= 1.5 || -a == b) n ^= a % 3; else n--;
  return n != 0 ? n & b : (p != 0 && *p < 0);
}
"""


def preload() -> None:
    """Import what commands use, load libclang and annotate a small unit, and read an ELF
    file's sections as a link does, before any command is forked off: a process's first
    annotation, and its first ELF read, which builds pyelftools' parsers, cost much more than
    later ones, and done here they are done once instead of in every forked command. What
    fails to load here (libclang, a warm-up on an odd machine) fails in the command that needs
    it, with the message it would give without a server; ffcc's own imports are not guarded,
    so a broken one shows in the tests rather than as slower commands."""
    from clang.cindex import conf

    from ffcc.rewriters import annotate

    from . import (  # noqa: F401
        annotate_child,
        cli,
        label_db,
        labels,
        object_cache,
        project,
        relink,
        runtime_cache,
    )
    try:
        conf.lib  # noqa: B018  (loads libclang.so)
        warm_up(annotate)
        label_db.read_program_labels(sys.executable)
    except Exception:  # noqa: BLE001
        pass


def start_zygote(path: str) -> None:
    """Start a zygote (zygote.py) of the compiler ffcc runs by default here, if it is clang,
    whose start-up is most of a small compile's cost: the workers run its commands there."""
    from . import zygote
    from .options import parse_options
    from .toolchain import BackendKind, select_backend
    try:
        backend = select_backend(parse_options([]).cc)
    except Exception:  # noqa: BLE001  (no compiler, bad FFCC_FLAGS: each command reports it)
        return
    if backend.kind is BackendKind.CLANG:
        zygote.start(backend.path, path + ".zygote", builder=backend.path)


def warm_up(annotate) -> list[UnitLabel]:
    """Label WARM_UP_SOURCE with every criterion, and write its unit as a command would
    (with gates); its label records."""
    import tempfile

    from ffcc.rewriters import LabelOptions
    from ffcc.rewriters.operators import WM_GROUPS

    from . import labels
    from .toolchain import predefined_macros
    with tempfile.TemporaryDirectory(prefix="ffcc-warm-up-") as directory:
        source = os.path.join(directory, "warm_up.c")
        with open(source, "wb") as out:
            out.write(WARM_UP_SOURCE)
        result = annotate(source, predefined_macros(),
                          LabelOptions(mcc=True, wm_ops=frozenset(WM_GROUPS)))
        records = [labels.UnitLabel(label, gated=True) for label in result.labels]
        labels.preamble(labels.unit_id(source, result.text), source, records, source + ".db")
    return records


def _receive_exact(conn: socket.socket, size: int) -> bytes:
    data = receive_exact(conn, size)
    if len(data) < size:
        raise ConnectionError("client left")
    return data


def receive_request(conn: socket.socket) -> tuple[tuple, list[int]]:
    """The command and the client's three standard file descriptors."""
    fds: list[int] = []
    data, ancillary, _flags, _addr = conn.recvmsg(HEADER.size, socket.CMSG_SPACE(
        FD_COUNT * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack(f"{len(payload) // 4}i", payload[:len(payload) // 4 * 4])
    if not data:
        raise ConnectionError("client left")
    data += _receive_exact(conn, HEADER.size - len(data))
    magic, length = HEADER.unpack(data)
    if magic != MAGIC or len(fds) != FD_COUNT:
        for fd in fds:
            os.close(fd)
        raise ConnectionError("not an ffcc client")
    return marshal.loads(_receive_exact(conn, length)), fds


def work(request: tuple, fds: list[int]) -> None:
    """Become the client's ``ffcc`` process and run the command; never returns."""
    argv_bytes, cwd, environment, mask, niceness = request
    argv = [os.fsdecode(arg) for arg in argv_bytes]
    status = 1
    try:
        os.setpgid(0, 0)
        take_niceness(niceness)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(cwd)
        os.umask(mask)
        os.environb.clear()
        os.environb.update(environment)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(signo, signal.SIG_DFL)
        sys.argv = list(argv)
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(line_buffering=os.isatty(1))
        from .cli import main
        main(argv)
        status = 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
    except KeyboardInterrupt:
        end_by_signal(signal.SIGINT)
    except BaseException:  # noqa: BLE001  (report it where the user looks, as Python would)
        traceback.print_exc()
    flush_streams()
    os._exit(status & 0xFF)


def take_niceness(niceness: int) -> None:
    """Run at the client's priority, not the server's (whoever started it, niced or not): a
    niced build's compilers stay niced, and one at full priority gets it.  Raising the priority
    needs privileges; without them the worker stays at the server's."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    except OSError:
        pass


def supervise(worker: int, conn: socket.socket) -> int:
    """Wait for the worker, passing on the client's signals; its status as the client reports
    it (minus the signal that killed it)."""
    try:
        os.setpgid(worker, worker)  # also done by the worker: whichever runs first
    except OSError:
        pass
    try:
        pidfd = os.pidfd_open(worker)
    except (AttributeError, OSError):  # not Linux 5.3+: wait, without passing signals on
        return os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(conn, select.POLLIN)
    while True:
        for fd, _event in poller.poll():
            if fd == pidfd:
                return os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
            message = receive_exact(conn, STATUS.size)
            if len(message) == STATUS.size:
                signo = STATUS.unpack(message)[0]
            else:  # the client is gone: so is its command
                signo = signal.SIGKILL
                poller.unregister(conn)
            try:
                os.killpg(worker, signo)
            except OSError:
                pass


def relay(conn: socket.socket) -> None:
    """Serve one connection in a child of the server; never returns."""
    status = 1
    try:
        request, fds = receive_request(conn)
        conn.sendall(MAGIC)
        worker = os.fork()
        if worker == 0:
            conn.close()
            work(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(STATUS.pack(supervise(worker, conn)))
        status = 0
    except (OSError, ValueError, EOFError):
        pass
    os._exit(status)


def _reap(children: set[int]) -> None:
    for pid in list(children):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            children.discard(pid)


def serve(path: str) -> None:
    lock = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server has it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(128)  # clients connect now and wait for their acknowledgement
    preload()
    start_zygote(path)
    gc.freeze()  # forked copies then share the imported objects' pages instead of copying them
    try:
        idle = float(os.environ.get("FFCC_SERVER_IDLE") or DEFAULT_IDLE_SECONDS)
    except ValueError:
        idle = DEFAULT_IDLE_SECONDS
    children: set[int] = set()
    last_request = time.monotonic()
    while True:
        _reap(children)
        remaining = last_request + idle - time.monotonic()
        if remaining <= 0 and not children:
            break
        ready, _, _ = select.select([listener], [], [], max(min(remaining, 1.0), 0.05))
        if not ready:
            continue
        conn, _addr = listener.accept()
        last_request = time.monotonic()
        if socket_path() != path:  # ffcc was edited or upgraded since this server started
            conn.close()  # unacknowledged: the client runs the command itself
            break
        pid = os.fork()
        if pid == 0:
            listener.close()
            os.close(lock)
            relay(conn)
        children.add(pid)
        conn.close()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.close()
    from . import zygote
    zygote.stop_all()


if __name__ == "__main__":
    serve(sys.argv[1])
