"""What ffuzz says of itself: its version, and every command in its help."""

from __future__ import annotations

import importlib.metadata

from ffcc.fuzzer.cli import main


def test_version_names_ffuzz_and_ffcc_release(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ffuzz (ffcc) {importlib.metadata.version('ffcc')}\n"


def test_help_lists_the_other_commands(capsys):
    assert main(["--help"]) == 0
    help_text = capsys.readouterr().out
    for command in ("ffuzz report", "ffuzz plot", "ffuzz cluster"):
        assert command in help_text
