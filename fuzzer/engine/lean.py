"""Lean rebuilds: the labelled target built again without the labels the campaign retired.

A retired label stops counting, but the running target still evaluates its predicate and
captures its operands; only compiled out does it cost nothing.  On cJSON's harness, after a
covering campaign retired 787 of its 1,382 labels, the build without them ran at 0.91 of the
unlabelled build's speed, against 0.46 with them retired in the segment (bench/retire_bench.py).

With ``--rebuild-retired S`` (by default S = 15 wherever the labelled target can be
rebuilt), once the running build has run S seconds (lean build N: S * 2**N seconds) and
labels were retired that it still has (at least a tenth of the covered ones it still has;
labels still being covered are no reason to wait: only retired ones are compiled out), ffuzz
has ffcc rebuild the labelled target (an ffcc project build: its directory holds ffcc-
build.json; or a drop-in build, whose link left its record beside it) into
``OUT/NAME/lean/N/`` with every retired and pruned label compiled out (``ffcc
--retired=FILE``). The build runs beside the campaign at low priority on any CPU.
When it succeeds and its label database is the full build's with exactly those labels
compiled out, the campaign goes on with it as a two-phase campaign goes on with its labelled
build: every queue entry is calibrated again (the program's edges are numbered anew; label
slots stay), and the labels it no longer has count as covered where they were. ``cmdline``,
reports and the label database stay the full build's. ``-i -`` resumes on the newest lean
build that still matches the full build.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path

import numpy as np

from ffcc.fuzzer.engine.census import Census
from ffcc.fuzzer.engine.queue import Queue
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.errors import FuzzerError
from ffcc.fuzzer.output.status import Status
from ffcc.runtime.abi import (
    BUILD_RECORD,
    RETIRED,
    LabelDatabase,
    LabelDbError,
    label_positions,
    label_region_start,
    link_record_path,
    read_label_db,
    read_retired,
    write_retired,
)

LEAN_DIR = "lean"            # OUT/NAME/lean/N/: the Nth rebuild, N/ only once it is verified
RETIRED_LIST = "retired.jsonl"
NICENESS = 10                # the rebuild yields the CPU to fuzzers
DEFAULT_PERIOD = 15.0        # --rebuild-retired's default, for targets ffcc can rebuild
# A rebuild is worth its build and the calibration of the whole queue again only once this
# share of the covered labels the running build still has are retired: the covered ones are
# what costs (they run), where most of a big program's labels may never run at all (libpng's
# harness covered 809 of 22,461 in 150 s).
WORTH_A_REBUILD = 0.1
IDENTITY = ("id", "slot", "file", "line", "column", "criterion", "operator", "predicate")


def project_build(binary: Path) -> bool:
    """Whether ``binary`` is an ffcc project build (its directory holds its build record)."""
    return (binary.parent / BUILD_RECORD).is_file()


def not_rebuildable(binary: Path) -> str | None:
    """Why ffcc cannot rebuild ``binary`` (None if it can): a project build has the record
    of how it was built, a drop-in build the record of its link (when each of its labelled
    units recorded its compile)."""
    if not (project_build(binary) or link_record_path(binary).is_file()):
        return (f"{binary} has no record of how ffcc built it (neither {BUILD_RECORD} nor "
                f"{link_record_path(binary).name} beside it): build it with ffcc --mcc --wm "
                "-o build/ src/*.c, or CC=ffcc with labels")
    if shutil.which("ffcc") is None:
        return "ffcc is not on PATH"
    return None


def check_rebuildable(binary: Path) -> None:
    """A one-line error unless ``binary`` is an ffcc project build ffcc can rebuild."""
    if (why := not_rebuildable(binary)) is not None:
        raise FuzzerError(f"--rebuild-retired: {why}")


def labels_to_drop(database: LabelDatabase, retired: set[int], covered: set[int]) -> dict[int, bool]:
    """What a lean rebuild compiles out, label id -> whether it was covered: the retired
    labels (with every label of a hot site: retire.py) and the pruned ones (which a rebuild
    without ``--prune`` would bring back)."""
    drop = {label.id: False for label in database.labels if label.pruned}
    drop.update({label: label in covered for label in retired})
    return drop


def rebuild_command(full: Path, directory: Path, database: LabelDatabase,
                    drop: dict[int, bool]) -> list[str]:
    """Make ``directory`` ready for a rebuild of ``full`` without the labels ``drop`` names
    (the retired-label list; a project build's record); the ffcc command that rebuilds
    into it: a project build again, a drop-in build linked again (instrument/relink.py)."""
    directory.mkdir(parents=True)
    write_retired(directory / RETIRED_LIST, database.labels, drop)
    retired = f"--retired={directory / RETIRED_LIST}"
    if not project_build(full):
        return ["ffcc", retired, str(full), "-o", str(directory / full.name)]
    shutil.copyfile(full.parent / BUILD_RECORD, directory / BUILD_RECORD)
    return ["ffcc", retired, f"{directory}/"]


def mismatch(full: LabelDatabase, lean: LabelDatabase | None, expected: set[int]) -> str | None:
    """Why ``lean`` is not ``full`` with the labels ``expected`` compiled out; None if it is."""
    if lean is None or len(lean.labels) != len(full.labels):
        return "its labels are not the full build's"
    for mine, theirs in zip(full.labels, lean.labels, strict=True):
        if any(getattr(mine, key) != getattr(theirs, key) for key in IDENTITY):
            return f"label {mine.id} differs from the full build's"
    compiled_out = {label.id for label in lean.labels if label.pruned == RETIRED}
    if compiled_out != expected:
        return (f"{len(compiled_out ^ expected)} labels compiled out are not the retired ones "
                "(a source file with more than one unit?)")
    return None


class LeanBuilds:
    """The lean rebuilds of one labelled target: when one is due, the one running, and
    what the running target has compiled out."""

    def __init__(self, full: Path, root: Path, period: float,
                 running: Path | None = None, census: Census | None = None) -> None:
        self.full = full                    # the labelled build the campaign is about
        self.root = root                    # OUT/NAME/lean
        self.period = period
        self.census = census                # of the sites, before each rebuild (census.py)
        try:
            database = read_label_db(full)
        except LabelDbError as exc:
            raise FuzzerError(str(exc)) from None
        if database is None:
            raise FuzzerError(f"--rebuild-retired: {full} has no labels")
        self.database = database
        self.running = running              # the lean build the campaign runs, None: the full
        self.compiled_out = self._compiled_out(running)  # label id -> covered, in ``running``
        self._process: subprocess.Popen[bytes] | None = None
        self._building: tuple[Path, set[int]] | None = None  # its directory, what it drops
        self.failed = False                 # a rebuild failed: no more are tried
        self.ready: Path | None = None      # a verified rebuild the campaign has yet to go on with
        # Rebuilds back off: the one after lean build N waits until that build has run
        # period * 2**N, so that a project that takes long to build, in a campaign
        # that retires labels now and then, is not rebuilt over and over.
        self._running_since = time.monotonic()
        self._backoff = period * 2 ** (int(running.parent.name) if running else 0)

    @classmethod
    def newest(cls, full: Path, root: Path, period: float,
               census: Census | None = None) -> LeanBuilds:
        """For a resumed campaign: on the newest lean build that still matches ``full``."""
        builds = cls(full, root, period, census=census)
        numbered = sorted((int(d.name), d) for d in root.glob("[0-9]*") if d.name.isdigit())
        for _, directory in reversed(numbered):
            binary = directory / full.name
            try:
                expected = set(builds._listed(directory))
                if mismatch(builds.database, read_label_db(binary), expected) is None:
                    return cls(full, root, period, binary, census)
            except (LabelDbError, OSError):
                continue
        return builds

    def _listed(self, directory: Path) -> dict[int, bool]:
        """Label id -> covered, for the labels the retired-label list in ``directory`` names."""
        listed = read_retired(directory / RETIRED_LIST)
        positions = label_positions(self.database.labels)
        return {label.id: listed[place] for label, place in zip(self.database.labels, positions)
                if place in listed}

    def _compiled_out(self, running: Path | None) -> dict[int, bool]:
        return {} if running is None else self._listed(running.parent)

    def keep_covered(self, virgin: np.ndarray) -> None:
        """The labels the running build compiled out after they were covered stay covered in
        the virgin map: no trace of this build can show them again."""
        slot = {label.id: label.slot for label in self.database.labels}
        covered = np.array([slot[i] for i, covered in self.compiled_out.items() if covered],
                           dtype=np.int64)
        virgin[label_region_start(len(virgin), self.database.label_region) + covered] = 0

    def step(self, retirement: Retirement, virgin: np.ndarray, status: Status,
             queue: Queue | None = None) -> Path | None:
        """Start a rebuild when one is due, or collect the one running: the lean build to
        go on with, once there is one, and the same one until the run stops for it (the run
        may step again on its way out, when the next rebuild could already be due)."""
        if self.ready is not None:
            return self.ready
        if self._process is None:
            if not self.failed and self._due(retirement):
                self._start(retirement, virgin, status, queue)
            return None
        if self._process.poll() is None:
            return None
        return self._collect(status)

    def _due(self, retirement: Retirement) -> bool:
        if time.monotonic() - self._running_since < self._backoff:
            return False
        newly = len(retirement.retired_ids() - self.compiled_out.keys())
        covered = len(retirement.covered_ids() - self.compiled_out.keys())
        return newly > 0 and newly >= WORTH_A_REBUILD * covered

    def _start(self, retirement: Retirement, virgin: np.ndarray, status: Status,
               queue: Queue | None) -> None:
        if self.census is not None and queue is not None:
            self.census.take(queue, retirement, status)
        start = retirement.labels.region_start(len(virgin))
        covered = {label.id for label in self.database.labels
                   if virgin[start + label.slot] != 0xFF}
        drop = labels_to_drop(self.database, retirement.retired_ids() | retirement.hot_ids(),
                              covered)
        number = 1 + max((int(d.name.lstrip(".")) for d in self.root.glob("*")
                          if d.name.lstrip(".").isdigit()), default=0)
        directory = self.root / f".{number}"  # N/ once verified
        shutil.rmtree(directory, ignore_errors=True)
        command = rebuild_command(self.full, directory, self.database, drop)
        with open(self.root / f"{number}.log", "wb") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_background, start_new_session=True)
        self._building = (directory, set(drop))
        status.message(f"rebuilding {self.full.name} without {len(drop)} retired and pruned "
                       f"labels ({self.root / f'{number}.log'})")

    def _collect(self, status: Status) -> Path | None:
        assert self._process is not None and self._building is not None
        code, (directory, expected) = self._process.returncode, self._building
        self._process, self._building = None, None
        number = directory.name.lstrip(".")
        why = f"ffcc exited with status {code}" if code else None
        if why is None:
            try:
                why = mismatch(self.database, read_label_db(directory / self.full.name), expected)
            except LabelDbError as exc:
                why = str(exc)
        if why is not None:
            self.failed = True
            status.message(f"lean rebuild {number} not used: {why} ({self.root / f'{number}.log'}); "
                           "going on with the build as it is")
            return None
        final = self.root / number
        os.replace(directory, final)
        self.ready = final / self.full.name
        return self.ready

    def close(self) -> None:
        """Stop a rebuild still running (its half-built directory stays hidden)."""
        if self._process is not None and self._process.poll() is None:
            with suppress(ProcessLookupError):  # it may end between the poll and the kill
                os.killpg(self._process.pid, signal.SIGTERM)
            self._process.wait()


def _background() -> None:
    """In the rebuild's process: low priority, on every CPU (ffuzz binds itself to one)."""
    os.nice(NICENESS)
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
