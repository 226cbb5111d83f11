"""ffuzz's C core (forkserver client, coverage maps, mutators, stage batches).

`ffi` and `lib` come from the cffi extension built from native/_build.py when
the package is installed; ffcc_native.h is the whole API.
"""
from ffcc.native._core import ffi, lib

__all__ = ["ffi", "lib"]
