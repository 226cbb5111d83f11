"""Show that a change left labelling untouched: snapshot what ffcc produces, compare snapshots.

``snapshot OUT`` builds the samples (project form, with and without ``--in-macros``), cJSON
and jq (drop-in, Debian sources) with ``--mcc --wm`` and keeps, under OUT, every annotated
unit as the compiler saw it (after ffcc's preamble, which carries the binary's ABI and may
change with it) and every label record of every linked program's label database (header
records left out for the same reason).  ``compare A B`` lists every file that differs and
exits 1 if any does.  Builds run in one fixed work directory so absolute paths, which label
records and unit ids contain, are the same from run to run.

    python bench/label_identity.py snapshot /tmp/before   # on the old commit
    python bench/label_identity.py snapshot /tmp/after    # on the new one
    python bench/label_identity.py compare /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.projects import CJSON, JQ, fresh_copy, run_step  # noqa: E402
from ffcc.runtime.abi import DB_SUFFIX, read_label_db  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LABEL_FLAGS = "--mcc --wm"
LINE_DIRECTIVE = "\n#line 1 "


def unit_body(text: str) -> str:
    """An annotated unit without ffcc's preamble (which ends with ``#line 1 "source"``)."""
    start = text.find(LINE_DIRECTIVE)
    return text if start < 0 else text[text.index("\n", start + 1) + 1:]


def label_records(db: Path) -> str:
    """The label records of a database, one JSON line each with its keys sorted; the header
    record left out."""
    database = read_label_db(str(db).removesuffix(DB_SUFFIX))
    labels = database.labels if database is not None else []
    return "".join(label.to_json(sort_keys=True) + "\n" for label in labels)


def collect(kept: Path, tree: Path, out: Path) -> None:
    """Copy kept annotated units and the tree's label databases into ``out``."""
    for unit in sorted(kept.rglob("*")):
        if unit.is_file():
            target = out / "annotated" / unit.relative_to(kept)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(unit_body(unit.read_text(errors="surrogateescape")),
                              errors="surrogateescape")
    for db in sorted(tree.rglob(f"*{DB_SUFFIX}")):
        target = out / "labels" / db.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(label_records(db))


def snapshot_samples(work: Path, out: Path) -> None:
    for sample in sorted(p for p in (ROOT / "samples").iterdir() if p.is_dir()):
        for variant, extra in (("plain", []), ("in-macros", ["--in-macros"])):
            tree = work / f"{sample.name}-{variant}"
            kept = tree / "kept"
            tree.mkdir(parents=True)
            shutil.copytree(sample, tree / "src")
            subprocess.run(["ffcc", *LABEL_FLAGS.split(), *extra, f"--keep-annotated={kept}",
                            "-o", f"{tree / 'build'}/", *map(str, sorted((tree / "src").glob("*.c")))],
                           check=True, capture_output=True)
            collect(kept, tree / "build", out / f"{sample.name}-{variant}")


def snapshot_project(project, work: Path, out: Path) -> None:
    tree = fresh_copy(project, work)
    kept = work / f"{project.name}-kept"
    env = {"FFCC_FLAGS": f"{LABEL_FLAGS} --keep-annotated={kept}"}
    run_step(project.configure.format(cc="ffcc"), tree, env)
    run_step(project.build, tree, env)
    collect(kept, tree, out / project.name)


def snapshot(out: Path, work: Path, projects: list[str]) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ["FFCC_SERVER"] = "0"  # every command runs this checkout's code, not a server's
    snapshot_samples(work, out)
    for project in (CJSON, JQ):
        if project.name in projects:
            snapshot_project(project, work, out)
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"snapshot: {files} files in {out}")


def compare(before: Path, after: Path) -> int:
    names_before = {p.relative_to(before) for p in before.rglob("*") if p.is_file()}
    names_after = {p.relative_to(after) for p in after.rglob("*") if p.is_file()}
    differ = sorted(n for n in names_before & names_after
                    if (before / n).read_bytes() != (after / n).read_bytes())
    for name in sorted(names_before - names_after):
        print(f"only before: {name}")
    for name in sorted(names_after - names_before):
        print(f"only after: {name}")
    for name in differ:
        print(f"differs: {name}")
    same = len(names_before & names_after) - len(differ)
    print(f"compare: {same} identical, {len(differ)} differ, "
          f"{len(names_before ^ names_after)} on one side only")
    return 1 if differ or names_before ^ names_after else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("out", type=Path)
    snap.add_argument("--work", type=Path, default=Path("/tmp/ffcc-label-identity"))
    snap.add_argument("--projects", default="cjson,jq", help="real projects to build (or '')")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.before, args.after)
    snapshot(args.out, args.work, [p for p in args.projects.split(",") if p])
    return 0


if __name__ == "__main__":
    sys.exit(main())
