"""The status screen: what afl-fuzz users look for (version, stage progress, timeout, own and
imported finds, what each stage yielded), and the yields the campaign counts."""
from __future__ import annotations

import dataclasses

from rich.console import Console
from test_fuzz_campaign import FakeExecutor, campaign_run

from ffcc.fuzzer.engine.scheduler import FairFuzzScheduler
from ffcc.fuzzer.output.stats import VERSION
from ffcc.fuzzer.output.status import LiveStatus, stage_text, yields_text


def test_the_campaign_counts_what_each_stage_found_and_ran(tmp_path) -> None:
    ex = FakeExecutor()
    campaign, _ = campaign_run(tmp_path, FairFuzzScheduler(), ex, b"\x01\x02\x01", 5000)
    yields = campaign.progress.yields
    assert "havoc" in yields
    assert sum(y.execs for y in yields.values()) <= ex.counters().execs
    assert sum(y.finds for y in yields.values()) == \
        len(campaign.queue) - 1 + campaign.progress.saved_crashes  # all but the seed
    snapshot = campaign.checkpoints.snapshot()
    assert {op for op, _, _ in snapshot.yields} == set(yields)


def test_the_panel_shows_version_stage_progress_timeout_and_yields(tmp_path) -> None:
    ex = FakeExecutor()
    campaign, _ = campaign_run(tmp_path, FairFuzzScheduler(), ex, b"\x01\x02\x01", 5000)
    snapshot = dataclasses.replace(campaign.checkpoints.snapshot(), stage="havoc",
                                   stage_done=1200, stage_of=4096, corpus_imported=2)
    assert stage_text(snapshot) == "havoc 1.2k/4.1k"
    assert stage_text(dataclasses.replace(snapshot, stage="bitflip 1/1", stage_of=0)) == \
        "bitflip 1/1 1.2k"
    console = Console(record=True, width=160)
    console.print(LiveStatus._render(snapshot))
    text = console.export_text()
    assert VERSION in text and "havoc 1.2k/4.1k" in text
    assert f"{snapshot.exec_timeout} ms per run" in text
    assert f"{snapshot.corpus_found} found, 2 imported" in text
    assert yields_text(snapshot) in text and "havoc " in yields_text(snapshot)
