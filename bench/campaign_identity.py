"""Show that a change left the fuzzer's behaviour untouched: snapshot fixed-seed campaigns, compare.

``snapshot OUT`` builds two samples (labelled with ``--mcc --wm``, and a ``--cmplog`` build) and
runs short campaigns bounded by executions with a fixed ``--seed`` in each configuration that
has its own code path: FairFuzz, AFL selection, shadow mode, deterministic stages with target
trimming, one child per request (``--no-batch``), input-to-state (``-c 0``), a resumed
campaign, and a two-instance sync directory (``-M``/``-S``, stepped one after the other).  It
keeps under OUT, per configuration, every queue, crash and hang file (name and bytes) and the
counters of ``fuzzer_stats`` that do not measure time.  ``compare A B`` lists what differs and
exits 1 if anything does.

A campaign is reproducible only when nothing it decides depends on a clock.  AFL's energy
weighs an entry's measured run time against the queue's mean, so the campaigns run under a
wrapper that reports every calibration as taking ``FIXED_EXEC_US``, sizes the C core's calls
by executions instead of by the clock and leaves the periodic checkpoints (which re-rank the
queue) to the end; the timeout is fixed (``-t``) so a loaded machine cannot turn a run into a
timeout.  Every other decision depends only on the seed and the target.  Names drop their ``time:`` field.

    python bench/campaign_identity.py snapshot /tmp/before   # on the old commit
    python bench/campaign_identity.py snapshot /tmp/after    # on the new one
    python bench/campaign_identity.py compare /tmp/before /tmp/after

To snapshot an older commit from a separate checkout, put a directory holding ``ffcc/`` (an
``__init__.py`` and links to the checkout's rooms) first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = Path("/tmp/ffcc-campaign-identity")
PROGRAMS = Path("/tmp/ffcc-campaign-identity-programs")  # built once, kept: the same binaries
FIXED_EXEC_US = 200
EXECS = "6000"
SEED = "7"
TIMEOUT_MS = "1000"
# fuzzer_stats lines that measure time, speed or the machine rather than what was found
TIMED_STATS = re.compile(r"^(start_time|last_update|run_time|fuzzer_pid|execs_per_sec|"
                         r"last_\w+|cycles_wo_finds|exec_timeout|slowest_exec_ms|peak_rss_mb|"
                         r"cpu_affinity|command_line|afl_version|target_mode|time_wo_finds|"
                         r"stability|execs_ps_last_min|\w+_time)\s*:")
TIME_FIELD = re.compile(r",time:\d+")

# Runs ffuzz with every calibration measured as FIXED_EXEC_US, C calls sized by a fixed number
# of executions rather than by the clock (a call's end is where -E is checked), and no
# checkpoint before the last (a checkpoint re-ranks the queue).  Modules are looked up where
# they live now and where they lived before fuzzer/ had sub-rooms.
WRAPPER = f"""
import importlib, sys
for name in ("ffcc.fuzzer.engine.executor", "ffcc.fuzzer.executor"):
    try:
        executor = importlib.import_module(name)
        break
    except ImportError:
        continue
measured = executor.Calibration.__init__
def fixed(self, *args, **kwargs):
    measured(self, *args, **kwargs)
    object.__setattr__(self, "exec_us", {FIXED_EXEC_US})
executor.Calibration.__init__ = fixed
executor.NativeExecutor.SLICE_SECONDS = 3600.0
executor.NativeExecutor._adapt_slice = lambda self, execs, seconds: None
for name in ("ffcc.fuzzer.engine.checkpoint", "ffcc.fuzzer.engine.campaign", "ffcc.fuzzer.campaign"):
    try:
        module = importlib.import_module(name)
    except ImportError:
        continue
    if hasattr(module, "STATS_INTERVAL"):
        module.STATS_INTERVAL = 1e9
from ffcc.fuzzer.cli import main
sys.argv[0] = "ffuzz"
main()
"""

LABELLED = ("keywords", "--mcc --wm")
CMPLOG = ("magic", "--cmplog")
# name: (build, extra ffuzz arguments)
CONFIGURATIONS: dict[str, tuple[tuple[str, str], list[str]]] = {
    "fairfuzz": (LABELLED, []),
    "afl": (LABELLED, ["-p", "afl"]),
    "shadow": (LABELLED, ["-s"]),
    "deterministic-trim": (LABELLED, ["-D", "-r"]),
    "no-batch": (LABELLED, ["--no-batch"]),
    "cmplog": (CMPLOG, ["-c", "0"]),
}


def build(sample: str, flags: str) -> Path:
    """The sample's program built by ffcc with ``flags``, in PROGRAMS: built by the first
    snapshot and reused by later ones, so that two snapshots fuzz the same binaries."""
    out = PROGRAMS / f"{sample}-{flags.replace(' ', '').replace('-', '')}"
    if (out / sample).exists():
        return out / sample
    out.mkdir(parents=True, exist_ok=True)
    source = ROOT / "samples" / sample / f"{sample}.c"
    subprocess.run(["ffcc", *flags.split(), "-o", f"{out}/", str(source)], check=True,
                   stdout=subprocess.DEVNULL)
    return out / sample


def ffuzz(args: list[str]) -> None:
    subprocess.run([sys.executable, "-c", WRAPPER, *args], check=True, cwd=WORK,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={"PATH": "/usr/bin:/bin", "AFL_NO_UI": "1", "AFL_NO_AFFINITY": "1",
                        "HOME": str(WORK), "PYTHONHASHSEED": "0",
                        "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def campaign(name: str, sample: str, program: Path, extra: list[str],
             seeds: str | None = None, execs: str = EXECS) -> Path:
    out = WORK / f"out-{name}"
    ffuzz(["-i", seeds or str(ROOT / "samples" / sample / "seeds"), "-o", str(out), "-E", execs,
           "-t", TIMEOUT_MS, "--seed", SEED, *extra, "--", str(program), "@@"])
    return out


def keep(instance: Path, into: Path) -> None:
    """The instance's saved inputs (name without time, digest) and untimed stats."""
    lines = []
    for kind in ("queue", "crashes", "hangs"):
        for path in sorted((instance / kind).glob("id:*")):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            lines.append(f"{kind}/{TIME_FIELD.sub('', path.name)} {digest}")
    stats = [line for line in (instance / "fuzzer_stats").read_text().splitlines()
             if not TIMED_STATS.match(line)]
    into.mkdir(parents=True, exist_ok=True)
    (into / "files").write_text("\n".join(lines) + "\n")
    (into / "stats").write_text("\n".join(stats) + "\n")


def snapshot(out: Path) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    programs = {build_: build(*build_) for build_ in (LABELLED, CMPLOG)}
    for name, (build_, extra) in CONFIGURATIONS.items():
        keep(campaign(name, build_[0], programs[build_], extra) / "default", out / name)
    labelled = programs[LABELLED]
    resumed = campaign("resume", "keywords", labelled, [], execs="3000")
    campaign("resume", "keywords", labelled, [], seeds="-", execs=EXECS)
    keep(resumed / "default", out / "resume")
    for instance in ("-M", "-S"):
        name = "main" if instance == "-M" else "second"
        synced = campaign("sync", "keywords", labelled, [instance, name])
        keep(synced / name, out / f"sync-{name}")
    print(f"snapshot: {len(list(out.iterdir()))} campaigns in {out}")


def compare(before: Path, after: Path) -> int:
    differ = 0
    for old in sorted(before.rglob("*")):
        if old.is_file():
            new = after / old.relative_to(before)
            if not new.exists() or new.read_text() != old.read_text():
                print(f"differs: {old.relative_to(before)}")
                differ += 1
    print(f"{differ} files differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("snapshot").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "snapshot":
        snapshot(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
