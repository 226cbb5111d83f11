"""AFL++'s own afl-fuzz fuzzes an ffcc binary, and its corpus grows."""

from __future__ import annotations

import subprocess

from helpers import AFL_ENV, REPO, ffcc, needs_afl, sample_sources


def fuzzer_stats(out) -> dict[str, str]:
    lines = (out / "default" / "fuzzer_stats").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


@needs_afl
def test_afl_fuzz_grows_the_corpus_of_an_ffcc_binary(tmp_path):
    ffcc("-o", f"{tmp_path}/build/", *sample_sources("keywords"), cwd=REPO)
    seeds = REPO / "samples/keywords/seeds"
    out = tmp_path / "out"
    # Bounded by executions, not seconds: 2,000 grow the corpus past 15 entries.
    done = subprocess.run(
        ["afl-fuzz", "-E", "2000", "-i", str(seeds), "-o", str(out), "--",
         str(tmp_path / "build/keywords"), "@@"],
        capture_output=True, text=True, env={**AFL_ENV, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    stats = fuzzer_stats(out)
    seeds_count = len(list(seeds.iterdir()))
    assert int(stats["corpus_count"]) > seeds_count
    assert int(stats["execs_done"]) > 1000
    queue = [p for p in (out / "default/queue").iterdir() if p.is_file()]
    assert len(queue) == int(stats["corpus_count"])


@needs_afl
def test_labels_built_with_afl_clang_fast_are_afl_edges(tmp_path):
    """--cc=afl-clang-fast keeps each label a branch, so afl-showmap sees more edges on an
    input that covers labels, and the program prints what the unlabelled one prints."""
    seed = REPO / "samples/temperature/seeds/warm-49C"
    tuples, outputs = [], []
    for flags in ([], ["--mcc", "--wm"]):
        build = tmp_path / ("labelled" if flags else "plain")
        ffcc("--cc=afl-clang-fast", *flags, "-o", f"{build}/", *sample_sources("temperature"),
             cwd=REPO)
        program = build / "temperature"
        outputs.append(subprocess.run([str(program), str(seed)], capture_output=True).stdout)
        done = subprocess.run(["afl-showmap", "-q", "-o", str(build / "map"), "--", str(program),
                               str(seed)], capture_output=True, env=AFL_ENV, timeout=60)
        assert done.returncode == 0, done.stderr
        tuples.append(len((build / "map").read_text().splitlines()))
    assert outputs[0] == outputs[1]
    assert tuples[1] > tuples[0] + 5, tuples
