"""System V shared-memory segments the fuzzer offers its targets by id.

Python's own shared memory is POSIX (named files); a target's runtime attaches by the
numeric id in an environment variable, as AFL's does, so the segments come from libc's
shmget through ctypes.  Each is marked for removal as soon as it is attached: Linux lets a
target attach a removed segment by id until the last detach, so a killed ffuzz leaks none.
"""
from __future__ import annotations

import ctypes
import os

from ffcc.fuzzer.errors import FuzzerError

_IPC_PRIVATE, _IPC_CREAT, _IPC_RMID = 0, 0o1000, 0

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmget.argtypes = (ctypes.c_int, ctypes.c_size_t, ctypes.c_int)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_libc.shmctl.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_libc.shmdt.argtypes = (ctypes.c_void_p,)


class SharedSegment:
    """One zero-filled segment of ``size`` bytes, mapped here; ``what`` names it in errors."""

    def __init__(self, size: int, what: str) -> None:
        self.size = size
        self.shm_id = _libc.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        if self.shm_id < 0:
            raise FuzzerError(f"cannot allocate the {what}: {os.strerror(ctypes.get_errno())}")
        address = _libc.shmat(self.shm_id, None, 0)
        _libc.shmctl(self.shm_id, _IPC_RMID, None)
        if address in (None, ctypes.c_void_p(-1).value):
            raise FuzzerError(f"cannot attach the {what}: {os.strerror(ctypes.get_errno())}")
        self._address: int | None = address
        self.view = memoryview((ctypes.c_ubyte * size).from_address(address)).cast("B")

    def close(self) -> None:
        """Detach; views of the segment must be dropped first."""
        if self._address is not None:
            self.view.release()
            _libc.shmdt(self._address)
            self._address = None
