"""Writing the files that ffcc's tools leave for each other and for users.

Every result file (label databases, build records, reports, queue entries, stats) is
replaced atomically: a reader, or a tool resumed after a kill, sees the old content or
the new, never a torn file.  The temporary sits beside the target (same file system,
so the rename is atomic) and starts with TMP_PREFIX so that a directory's owner can
recognise and remove leftovers of a killed writer.
"""

from __future__ import annotations

import os
from pathlib import Path

TMP_PREFIX = ".tmp-"


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Make ``path`` hold either its old content or all of ``data`` (str: UTF-8)."""
    target = Path(path)
    tmp = target.with_name(f"{TMP_PREFIX}{os.getpid()}-{target.name}")
    payload = data.encode() if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
