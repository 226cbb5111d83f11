"""A minimal forkserver client for tests: checks the runtime's side of the protocol.

Deliberately independent of ffuzz's native client, so the two check each other.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from helpers import poll_until

from ffcc.fuzzer.engine.shm import SharedSegment

HANG_WALL_SECONDS = 30  # a child that blocks instead of spinning is killed after this


class SharedMap(SharedSegment):
    """A coverage map as afl-fuzz allocates it (the segment helper is not the client under
    test: the protocol is)."""

    def __init__(self, size: int) -> None:
        super().__init__(size, "coverage map")

    def clear(self) -> None:
        self.view[:] = bytes(self.size)

    def bytes(self) -> bytes:
        return self.view.tobytes()


@dataclass
class Run:
    status: int
    map: bytes


class ForkServer:
    """Starts a target with fds 198/199 and talks to it one word at a time."""

    def __init__(self, argv: list[str], map_size: int = 1 << 23, env: dict | None = None) -> None:
        self.map = SharedMap(map_size)
        ctl_r, self.ctl_w = os.pipe()
        self.st_r, st_w = os.pipe()
        # The target's ends go on fds 198/199 in this process just long enough to be inherited.
        os.dup2(ctl_r, 198)
        os.dup2(st_w, 199)
        try:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         env={**os.environ, "__AFL_SHM_ID": str(self.map.shm_id),
                                              **(env or {})}, pass_fds=(198, 199))
        finally:
            for fd in (ctl_r, st_w, 198, 199):
                os.close(fd)
        self.hello = self.read_word()

    def read_word(self) -> int:
        data = os.read(self.st_r, 4)
        if len(data) != 4:
            raise EOFError("forkserver closed the status pipe")
        return struct.unpack("I", data)[0]

    def write_word(self, word: int) -> None:
        os.write(self.ctl_w, struct.pack("I", word))

    def run(self, timed_out: bool = False, kill_after: float | None = None) -> Run:
        """One run; ``kill_after``: kill the child, as a fuzzer's timeout would, once it has
        spent that many seconds of CPU time. CPU time rather than wall-clock time, so that on
        a busy machine the child still reaches its hang (and covers what leads there) first."""
        self.map.clear()
        self.write_word(int(timed_out))
        pid = self.read_word()
        if kill_after is not None:
            poll_until(lambda: cpu_seconds(pid) >= kill_after, HANG_WALL_SECONDS)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        status = self.read_word()
        return Run(status, self.map.bytes())

    def close(self) -> None:
        os.close(self.ctl_w)
        os.close(self.st_r)
        self.proc.kill()
        self.proc.wait()
        self.map.close()


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used; infinite once it has ended (zombie or reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("inf")
    state, *fields = stat.rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    if state in ("Z", "X"):
        return float("inf")
    return (int(fields[10]) + int(fields[11])) / os.sysconf("SC_CLK_TCK")


def hello_map_size(hello: int) -> int | None:
    """The map size the hello announces (AFL++ 4.04c encoding), if any."""
    if hello & 0x40000000:
        return ((hello & 0x00FFFFFE) >> 1) + 1
    return None


def run_once(argv: list[str]) -> tuple[int | None, Run]:
    """Start a forkserver, run the target once, stop it: (announced map size, the run)."""
    server = ForkServer(argv)
    try:
        return hello_map_size(server.hello), server.run()
    finally:
        server.close()
