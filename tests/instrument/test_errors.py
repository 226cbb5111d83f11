"""Bad input gets one clear line (or the compiler's own diagnostics) and a non-zero exit."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess

import pytest
from helpers import ffcc


def test_syntax_error_shows_compiler_diagnostics(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("int main(void) { return 0 }\n")
    done = ffcc("-c", str(src), "-o", str(tmp_path / "broken.o"), check=False)
    assert done.returncode != 0
    assert "broken.c:1" in done.stderr and "error" in done.stderr
    project = ffcc("-o", f"{tmp_path}/build/", str(src), check=False)
    assert project.returncode != 0 and "broken.c:1" in project.stderr
    assert "ffcc: error: compiling" in project.stderr


def test_missing_compiler_is_one_line(tmp_path):
    done = ffcc("--cc=no-such-cc", "-c", "x.c", check=False)
    assert done.returncode == 127
    assert done.stderr.strip() == "ffcc: error: compiler 'no-such-cc' not found (set --cc or FFCC_CC)"
    assert ffcc("-c", "x.c", env={"FFCC_CC": "no-such-cc"}, check=False).returncode == 127


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_dir_is_one_line_as_user(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    src = tmp_path / "a.c"
    src.write_text("int main(void) { return 0; }\n")
    done = ffcc("-o", f"{locked}/", str(src), check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"ffcc: error: cannot write to {locked}/")


def test_output_dir_below_a_file_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    src = tmp_path / "a.c"
    src.write_text("int main(void) { return 0; }\n")
    done = ffcc("-o", f"{blocker}/build/", str(src), check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"ffcc: error: cannot write to {blocker}/build/")


def test_unknown_option_is_one_line():
    done = ffcc("--mcc-maxx=3", "a.c", check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "unknown option '--mcc-maxx=3'" in done.stderr


@pytest.mark.parametrize("labels", [[], ["--mcc", "--wm"], ["--mcc", "--wm", "--prune"]])
@pytest.mark.parametrize("form", ["project", "compile"])
def test_a_missing_source_is_the_compilers_message_with_or_without_labels(tmp_path, form, labels):
    """A source that does not exist gets the compiler's own short diagnostics, never a
    traceback, whatever labels were asked for."""
    output = ["-o", f"{tmp_path}/"] if form == "project" else ["-c", "-o", str(tmp_path / "x.o")]
    done = ffcc(*labels, *output, str(tmp_path / "nonexist.c"), check=False)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 3
    assert "nonexist.c" in done.stderr


@pytest.mark.parametrize("driver", ["ffcc", "ffcc++"])
def test_version_names_ffcc_then_the_backend(driver):
    """ffcc's release and backend first, then the backend's own lines, which build systems
    read to tell which compiler they have."""
    done = subprocess.run([driver, "--cc=gcc", "--version"], capture_output=True, text=True)
    first, *rest = done.stdout.splitlines()
    assert done.returncode == 0
    assert first.startswith(f"{driver} (ffcc) {importlib.metadata.version('ffcc')}, compiling with ")
    assert rest and ("gcc" in rest[0] or "g++" in rest[0])
