"""Bind the fuzzer, and so its forkserver and every target run, to one free CPU.

afl-fuzz does the same by default: with fuzzer and target on one core, each execution's
hand-over (a pipe write, the target wakes, a pipe read) stays on that core instead of
waking another one, which on virtual machines costs an inter-processor interrupt per
execution.

A CPU is free when no other process is pinned to it alone (kernel threads, which are
pinned too, have no ``VmSize`` and do not count). ``AFL_NO_AFFINITY`` turns binding off,
as for afl-fuzz (the caller passes it in); a process already limited to one CPU (``taskset``)
keeps it.
"""

from __future__ import annotations

import os
from pathlib import Path


def pinned_cpus(proc: Path = Path("/proc")) -> set[int]:
    """CPUs that some other user process is bound to alone."""
    busy: set[int] = set()
    for status in proc.glob("[0-9]*/status"):
        if status.parent.name == str(os.getpid()):
            continue
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines()
                          if ":" in line)
        except OSError:
            continue  # the process ended while we looked
        allowed = fields.get("Cpus_allowed_list", "").strip()
        if "VmSize" in fields and allowed.isdigit():
            busy.add(int(allowed))
    return busy


def bind_to_free_cpu(no_affinity: bool, proc: Path = Path("/proc")) -> int | None:
    """Pin this process to a free CPU, unless no_affinity (AFL_NO_AFFINITY); returns it, or
    None when not bound.  ``proc``: where the other processes' bindings are read."""
    if no_affinity or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) == 1:
        return next(iter(allowed))
    free = sorted(allowed - pinned_cpus(proc))
    if not free:
        return None  # every core already has a fuzzer: share rather than pile onto one
    os.sched_setaffinity(0, {free[0]})
    return free[0]
