"""How ffcc's processes end: the client, the compile server's workers and the child that
annotates a command (annotate_child.py) all stand for a command, and end as it would.

The standard library only, and of it the C module ``_signal``: the client imports this
module on every command it runs itself (client.py's start-up).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython's C module behind signal
import os
import sys


def flush_streams() -> None:
    """Flush the standard streams, whatever state they are in: a forked copy must not write
    its parent's buffered output a second time, nor lose its own at os._exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def end_by_signal(signo: int) -> None:
    """End this process by the signal that ended the command it stands for (Ctrl-C included),
    so that make and shells report it as they would without ffcc in between.  SIGKILL and
    SIGSTOP keep their default action (setting it fails); a signal whose default is to be
    ignored returns, and the caller exits."""
    try:
        _signal.signal(signo, _signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    flush_streams()
    os.kill(os.getpid(), signo)
