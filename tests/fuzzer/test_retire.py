"""Label retirement (issue 12, item 3): a label the queue covers stops counting in the running
target, fork server and persistent batches alike, and stays counted as found."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from fuzz_targets import ffuzz_env, persistent_main, reading_main
from helpers import REPO, ffcc, one_seed, sample_sources
from test_label_targets import read_stats

from ffcc.fuzzer.engine.executor import NativeExecutor, TargetCommand
from ffcc.fuzzer.engine.labels import LabelMap
from ffcc.fuzzer.engine.retire import ENV_NAME, Retirement

# Labels on the first byte's boundaries (WM: 100 against < / <= / ...).
FORK_C = "#include <stdio.h>\n" + reading_main(8) + r"""  int level = b[0] < 100 ? 1 : 2;
  printf("%d %zu\n", level, n);
  return 0;
}
"""
PERSISTENT_C = persistent_main("""    volatile int level = n > 0 && buf[0] < 100 ? 1 : 2;
    (void)level;
""")


def build_labelled(tmp_path: Path, source: str, name: str) -> Path:
    (tmp_path / f"{name}.c").write_text(source)
    ffcc("--wm", "-O2", "-o", f"{tmp_path}/build/", str(tmp_path / f"{name}.c"))
    return tmp_path / "build" / name


@pytest.mark.parametrize("name, source, argv", [("fork", FORK_C, ("@@",)),
                                                 ("persistent", PERSISTENT_C, ())])
def test_a_retired_label_stays_zero_in_later_executions(tmp_path, name, source, argv) -> None:
    binary = build_labelled(tmp_path, source, name)
    labels = LabelMap.load(binary)
    assert labels is not None and labels.count
    retirement = Retirement(labels)
    with retirement.exported():
        executor = NativeExecutor(TargetCommand((str(binary), *argv)), tmp_path / "cur",
                                  1000, seed=1, batches=True)
    try:
        assert name == "fork" or executor.batch_size() > 1, "the persistent target runs batches"
        label_indices = labels.map_indices(executor.map_size)
        data = bytes([100])  # b[0] == 100: the boundary labels fire
        lit = np.intersect1d(executor.calibrate(data, 3, False).edges, label_indices)
        assert len(lit) >= 1
        virgin = np.full(executor.map_size, 0xFF, np.uint8)
        virgin[lit[0]] = 0  # the queue covers one of them
        assert list(retirement.retire_covered(virgin)) == [lit[0]]
        after = executor.calibrate(data, 3, False).edges
        assert lit[0] not in after, "retired: its slot stays 0"
        assert set(np.intersect1d(after, label_indices)) == set(lit[1:]), "the others count"
        hits = np.ones(executor.map_size, np.uint32)
        assert retirement.exclude(hits)[lit[0]] == 0 and retirement.exclude(hits).sum() \
            == executor.map_size - 1, "a retired label leaves the rarity computation"
    finally:
        executor.close()
        retirement.close()
    assert ENV_NAME not in __import__("os").environ


def campaign(tmp_path: Path, binary: Path, seeds: Path, *options: str) -> dict[str, str]:
    out = tmp_path / "out"
    done = subprocess.run(["ffuzz", "-i", str(seeds), "-o", str(out), "-E", "4000", "--seed", "2",
                           *options, "--", str(binary), "@@"], capture_output=True, text=True,
                          timeout=300, env=ffuzz_env())
    assert done.returncode == 0, done.stderr[-2000:]
    return read_stats(out)


def test_a_campaign_with_retirement_still_finds_labels(tmp_path) -> None:
    ffcc("--mcc", "--wm", "-o", f"{tmp_path}/build/", *sample_sources("temperature"), cwd=REPO)
    stats = campaign(tmp_path, tmp_path / "build/temperature", REPO / "samples/temperature/seeds")
    assert int(stats["labels_found"]) > 0, "retired labels stay found"
    assert int(stats["corpus_count"]) > 1


def test_a_persistent_campaign_with_retirement(tmp_path) -> None:
    binary = build_labelled(tmp_path, PERSISTENT_C, "persistent")
    stats = campaign(tmp_path, binary, one_seed(tmp_path, b"\xff"))
    assert int(stats["labels_found"]) > 0
    assert int(stats["execs_done"]) >= 4000
