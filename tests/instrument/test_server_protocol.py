"""The compile server's protocol has one definition, ffcc_server_protocol.h, and both clients
agree on it: Python's client reads every define the C compiler sees, with the values it sees,
and neither client spells a value of the header itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import have

from ffcc.instrument import client

CC = shutil.which("cc") or "gcc"
needs_cc = pytest.mark.skipif(not have(CC), reason="no C compiler")
HEADER = client.PROTOCOL_HEADER
C_CLIENT = HEADER.with_name("ffcc_client.c")


def compiler_macros(source: str, tmp_path: Path) -> dict[str, str]:
    """NAME -> replacement text of every macro defined after preprocessing ``source``."""
    path = tmp_path / "macros.c"
    path.write_text(source)
    out = subprocess.run([CC, "-dM", "-E", "-I", str(HEADER.parent), str(path)], check=True,
                         capture_output=True, text=True).stdout
    return {name: value[0] if value else ""
            for _, name, *value in (line.split(" ", 2) for line in out.splitlines())}


@needs_cc
def test_python_reads_every_valued_define_of_the_header(tmp_path: Path) -> None:
    baseline = compiler_macros("", tmp_path)
    macros = compiler_macros(f'#include "{HEADER.name}"\n', tmp_path)
    assert {name for name, value in macros.items() if name not in baseline and value} \
        == set(client.PROTOCOL)


@needs_cc
def test_python_values_are_what_c_compiles(tmp_path: Path) -> None:
    prints = [f'printf("%s=%s\\n", "{name}", {name});' if isinstance(value, str)
              else f'printf("%s=%ld\\n", "{name}", (long)({name}));'
              for name, value in client.PROTOCOL.items()]
    source = tmp_path / "values.c"
    source.write_text(f'#include <stdio.h>\n#include "{HEADER.name}"\n'
                      "int main(void) {\n" + "\n".join(prints) + "\nreturn 0;\n}\n")
    subprocess.run([CC, "-I", str(HEADER.parent), "-o", str(tmp_path / "values"), str(source)],
                   check=True)
    out = subprocess.run([str(tmp_path / "values")], check=True, capture_output=True,
                         text=True).stdout
    assert dict(line.split("=", 1) for line in out.splitlines()) \
        == {name: str(value) for name, value in client.PROTOCOL.items()}


def test_the_clients_take_the_protocol_from_the_header_only() -> None:
    spelled = {str(value) for value in client.PROTOCOL.values() if isinstance(value, str)}
    for source in (C_CLIENT, Path(client.__file__)):
        text = source.read_text()
        assert [value for value in spelled if f'"{value}"' in text] == [], source.name
    assert '#include "ffcc_server_protocol.h"' in C_CLIENT.read_text()


def test_the_python_client_reads_the_socket_directory_rules(monkeypatch) -> None:
    monkeypatch.setenv(client.DIR_ENV, "")  # empty: as unset
    assert client.socket_dir() == f"{client.DIR_FALLBACK}/{client.DIR_PREFIX}{os.geteuid()}"
    assert client.DIR_MODE == 0o700


# The compiled ``ffcc``, and Python's client run as the compiled one runs it.
CLIENTS = {"ffcc_client.c": ["ffcc"],
           "client.py": [sys.executable, "-c", "import sys; from ffcc.instrument.client import main; "
                         "sys.argv[0] = 'ffcc'; main()"]}


@pytest.mark.parametrize("command", CLIENTS.values(), ids=CLIENTS.keys())
@pytest.mark.parametrize(("setting", "wanted"), [
    ("0", False), ("off", False), ("no", False), ("false", False),
    ("1", True), ("", True), ("of", True), ("offf", True), ("0 off", True)])
def test_both_clients_turn_the_server_off_for_the_same_words(command: list[str], setting: str,
                                                              wanted: bool) -> None:
    """A client that wants a server makes its socket directory; an off switch leaves it
    unmade.  The directory is short: a socket path too long for sun_path means no server."""
    runtime_dir = Path(tempfile.mkdtemp(prefix="ffcc-test-", dir="/tmp"))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir), "FFCC_SERVER": setting,
           "FFCC_SERVER_IDLE": "1"}
    try:
        done = subprocess.run([*command, "--version"], env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert (setting in client.OFF) != wanted
        assert any(runtime_dir.glob(f"{client.DIR_PREFIX}*")) == wanted
    finally:
        shutil.rmtree(runtime_dir, ignore_errors=True)
