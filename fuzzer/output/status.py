"""The status display: a live panel on a terminal, plain lines otherwise.

The live panel redraws in place below the cursor (rich Live, not the
alternate screen), so the terminal's scrollback survives — AFL++'s full-screen
UI wiping it is a standing complaint (AFLplusplus#2498).  When stdout is not a
TTY, or AFL_NO_UI is set, one plain line is printed every few seconds.
"""
from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from ffcc.fuzzer.output.stats import VERSION, Snapshot


def _duration(seconds: int) -> str:
    d, rest = divmod(max(seconds, 0), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}d {h:02d}h {m:02d}m {s:02d}s" if d else f"{h:02d}h {m:02d}m {s:02d}s"


def _ago(now: int, then: int) -> str:
    return _duration(now - then) + " ago" if then else "none yet"


def _count(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}" if isinstance(n, float) else str(n)


class Status(Protocol):
    def update(self, snapshot: Snapshot) -> None: ...

    def message(self, text: str) -> None: ...

    def close(self) -> None: ...


def target_text(s: Snapshot) -> str:
    """The current target: `label N (file:line op)` when it is a label, else `edge M`."""
    site = s.target_site
    if site is not None:
        return f"label {site.label} ({site.file}:{site.line} {site.operator})"
    return "none" if s.target is None else f"edge {s.target}"


def stage_text(s: Snapshot) -> str:
    """The running stage and how far it is: `havoc 1.2k/4.1k`, or its executions alone when
    the C core decides how many it makes."""
    if not s.stage_done:
        return s.stage
    done = _count(s.stage_done)
    return f"{s.stage} {done}/{_count(s.stage_of)}" if s.stage_of else f"{s.stage} {done}"


def yields_text(s: Snapshot) -> str:
    """What each stage found (entries and crashes saved) over what it ran, as afl-fuzz's
    "fuzzing strategy yields": `havoc 12/45.2k, splice 3/10.1k`."""
    return ", ".join(f"{op} {finds}/{_count(execs)}" for op, finds, execs in s.yields) or "none yet"


def summary_line(s: Snapshot) -> str:
    labels = f"  labels {s.labels_found}/{s.labels_total}" if s.labels_total else ""
    target = f"  target {target_text(s)}" if s.target is not None else ""
    cmplog = f"  input-to-state {s.cmplog.finds} finds" if s.cmplog else ""
    return (f"[{_duration(s.run_time)}] cycle {s.cycles_done}  execs {_count(s.execs_done)} "
            f"({s.execs_per_sec:.0f}/s)  corpus {s.corpus_count} ({s.corpus_favored} fav)  "
            f"edges {s.edges_found}/{s.total_edges}{labels}  crashes {s.saved_crashes}  "
            f"hangs {s.saved_hangs}{cmplog}  stage {s.stage}{target}")


class PlainStatus:
    """A line every `interval` seconds, for logs and CI."""

    def __init__(self, stream: TextIO = sys.stderr, interval: float = 5.0) -> None:
        self.stream = stream
        self.interval = interval
        self._last = 0.0

    def update(self, snapshot: Snapshot) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            print(summary_line(snapshot), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        print(f"[ffuzz] {text}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class LiveStatus:
    """A rich panel refreshed in place, twice a second at most."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        self._live.start()
        self._last = 0.0

    def update(self, snapshot: Snapshot) -> None:
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._live.update(self._render(snapshot), refresh=True)

    def message(self, text: str) -> None:
        self.console.print(f"[bold]ffuzz[/bold] {text}")

    def close(self) -> None:
        self._live.stop()

    @staticmethod
    def _render(s: Snapshot) -> Table:
        t = Table(title=f"{VERSION} ({s.schedule}) — {s.banner}", show_header=False,
                  title_justify="left", box=None, padding=(0, 2))
        for _ in range(4):
            t.add_column()
        t.add_row("run time", _duration(s.run_time), "cycles done", str(s.cycles_done))
        t.add_row("last find", _ago(s.now, s.last_find),
                  "corpus", f"{s.corpus_count} ({s.corpus_favored} favoured; "
                            f"{s.corpus_found} found, {s.corpus_imported} imported)")
        t.add_row("last crash", _ago(s.now, s.last_crash),
                  "saved crashes", f"{s.saved_crashes} (of {s.total_crashes})")
        t.add_row("last hang", _ago(s.now, s.last_hang),
                  "saved hangs", f"{s.saved_hangs} (of {s.total_hangs})")
        t.add_row("execs", f"{_count(s.execs_done)} ({s.execs_per_sec:.0f}/s)", "edges",
                  f"{s.edges_found}/{s.total_edges} ({s.bitmap_cvg:.2f}%)")
        if s.labels_total:
            t.add_row("labels", f"{s.labels_found}/{s.labels_total}", "", "")
        if s.cmplog:
            t.add_row("input-to-state", f"{s.cmplog.finds} finds",
                      "its execs", f"{_count(s.cmplog.execs)} on {s.cmplog.entries} entries")
        t.add_row("timeout", f"{s.exec_timeout} ms per run", "slowest run", f"{s.slowest_exec_ms} ms")
        t.add_row("stage", stage_text(s), "target branch",
                  f"{target_text(s)} (rare <= {s.rarity_cutoff})")
        t.add_row("pending", f"{s.pending_total} ({s.pending_favs} favoured)",
                  "stability", f"{s.stability:.2f}%")
        t.add_row("current", str(s.cur_item), "dictionary", f"{s.tokens} ({s.auto_tokens} auto)")
        t.add_row("yields", yields_text(s), "", "")
        return t


def make_status(no_ui: bool) -> Status:
    """The live panel on a terminal, unless no_ui (AFL_NO_UI); plain lines otherwise."""
    if no_ui or not sys.stderr.isatty():
        return PlainStatus()
    return LiveStatus()
