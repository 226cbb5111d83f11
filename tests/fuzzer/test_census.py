"""The site census before a lean rebuild (census.py): queue entries run on the full build,
where every label counts, find the hot sites whose own labels retired before they showed it."""
from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from helpers import ffcc

from ffcc.fuzzer.engine.census import CHUNK, SECONDS, Census
from ffcc.fuzzer.engine.executor import NativeExecutor, TargetCommand
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.retire import Retirement
from ffcc.fuzzer.output.status import PlainStatus
from ffcc.runtime.abi import LabelDatabase, LabelRecord

# The loop's condition is a site that runs once per unit of the input's number; the check
# before it, once a run.
LOOP = ("#include <stdio.h>\nint main(int argc, char **argv) {\n"
        "  int n = 0, odd = 0; FILE *f = fopen(argv[1], \"r\");\n"
        "  if (!f || fscanf(f, \"%d\", &n) != 1) return 1;\n"
        "  if (n > 1000 || n < 0) return 2;\n"
        "  for (int i = 0; i < n; i++)\n    if (i >= 0 && n > 0) odd += i & 1;\n"
        "  printf(\"%d\\n\", odd);\n  return 0;\n}\n")


def entries(*numbers: int) -> list[SimpleNamespace]:
    """Queue entries as the census reads them: their data, in queue order."""
    return [SimpleNamespace(data=str(n).encode()) for n in numbers]


@contextmanager
def loop_census(tmp_path: Path, *flags: str, program: Path | None = None,
                seconds: float = SECONDS) -> Iterator[tuple[LabelMap, Retirement, io.StringIO,
                                                            PlainStatus, Census]]:
    """LOOP built with MCC labels (and ``flags``), its retirement, a status whose lines
    go to a string, and a census of ``program`` (the build itself unless given)."""
    (tmp_path / "loop.c").write_text(LOOP)
    ffcc("--mcc", *flags, "-o", f"{tmp_path}/b/", "loop.c", cwd=tmp_path)
    built = tmp_path / "b" / "loop"
    labels = LabelMap.load(built)
    assert labels is not None
    retirement = Retirement(labels)
    stream = io.StringIO()
    status = PlainStatus(stream, interval=3600)
    census = Census(partial(NativeExecutor, TargetCommand((str(program or built), "@@")),
                            tmp_path / "input", 1000, 1), seconds)
    try:
        yield labels, retirement, stream, status, census
    finally:
        retirement.close()
        status.close()


def test_a_census_finds_the_hot_site_whose_labels_retired_on_short_runs(tmp_path) -> None:
    with loop_census(tmp_path, "-O2") as (labels, retirement, stream, status, census):
        line_of = {site.label: site.line for site in labels.sites if site is not None}
        by_site: dict[int, set[int]] = {}
        for label, site in zip(labels.label_ids, labels.site_of):
            if label >= 0:
                by_site.setdefault(site, set()).add(label)
        (loop,) = [ids for ids in by_site.values() if {line_of[i] for i in ids} == {7}]
        (check,) = [ids for ids in by_site.values() if {line_of[i] for i in ids} == {5}]
        queue = entries(3, 31)
        census.take(queue, retirement, status)  # type: ignore[arg-type]
        assert census.counted == {0, 1} and not retirement.hot_ids(), "31 runs: not hot"
        queue += entries(700, 5)
        census.take(queue, retirement, status)  # type: ignore[arg-type]
        assert census.counted == {0, 1, 2, 3}
        assert retirement.hot_ids() == loop, "the loop's site ran 700 times in one run"
        assert "2 queue entries run on the full build" in stream.getvalue()
        assert "1 more sites hot" in stream.getvalue()
        census.take(queue, retirement, status)  # type: ignore[arg-type]
        assert stream.getvalue().count("site census:") == 2, "nothing new, nothing run"
        assert not retirement.hot_ids() & check


def test_a_census_out_of_time_runs_the_newest_entries_and_leaves_the_rest_for_the_next(
        tmp_path) -> None:
    with loop_census(tmp_path, seconds=0) as (_, retirement, stream, status, census):
        queue = entries(700, *[3] * (CHUNK + 7))
        census.take(queue, retirement, status)  # type: ignore[arg-type]
        assert census.counted == set(range(8, CHUNK + 8)), "one chunk, the newest entries"
        assert not retirement.hot_ids() and "(8 left for the next)" in stream.getvalue()
        census.take(queue, retirement, status)  # type: ignore[arg-type]
        assert len(census.counted) == CHUNK + 8 and retirement.hot_ids()


def test_a_census_that_cannot_run_the_full_build_says_so_once(tmp_path) -> None:
    with loop_census(tmp_path, program=tmp_path / "gone") as (_, retirement, stream, status,
                                                              census):
        for _ in range(2):
            census.take(entries(700), retirement, status)  # type: ignore[arg-type]
        assert census.failed and stream.getvalue().count("site census not taken") == 1
        assert not retirement.hot_ids()


def test_a_census_marks_sites_by_their_labels_top_class() -> None:
    """note_census reads the classes a census saw (bits set, unlike the virgin map's cleared
    ones) at the full build's label region, whatever its map's size."""
    records = [LabelRecord(id=i, slot=i, file="/t.c", line=line, column=5)
               for i, line in enumerate((3, 3, 9, 12))]
    retirement = Retirement(LabelMap.of(LabelDatabase(16, records)))
    try:
        classes = np.zeros(48, np.uint8)
        classes[32:36] = (1, 0, 0x20, 0)  # 16-31 times in a run: warm, not hot
        assert retirement.note_census(classes) == 0 and not retirement.hot_ids()
        classes[33] = 0x40 | 1  # 32-127 times
        assert retirement.note_census(classes) == 1 and retirement.hot_ids() == {0, 1}
        assert retirement.note_census(classes) == 0, "hot already"
    finally:
        retirement.close()
