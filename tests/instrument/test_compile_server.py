"""The compile server runs a command exactly as ffcc would run it in the client's place."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import SAMPLES, needs_clang, poll_until

from ffcc.instrument import client as client_module

BROKEN = "int main(void) { return 0 }\n"
LABELLED = {"FFCC_FLAGS": "--mcc --wm"}


@pytest.fixture
def private_server(monkeypatch):
    """A server of our own (its own socket directory), gone a few seconds after the test.
    The directory is short: pytest's own paths can be longer than a socket path may be."""
    runtime_dir = tempfile.mkdtemp(prefix="ffcc-test-", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    monkeypatch.setenv("FFCC_SERVER_IDLE", "5")
    monkeypatch.delenv("FFCC_SERVER", raising=False)
    from ffcc.instrument.client import socket_path
    yield Path(socket_path())
    shutil.rmtree(runtime_dir, ignore_errors=True)


def run(args, cwd, env=None, stdin=None, server=True):
    env = {**os.environ, **(env or {}), "FFCC_SERVER": "1" if server else "0"}
    return subprocess.run(["ffcc", *args], cwd=cwd, env=env, input=stdin, capture_output=True,
                          timeout=120)


def accepts(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(path))
    except OSError:
        return False
    return True


def wait_for_server(path: Path) -> None:
    assert poll_until(lambda: accepts(path), 10), f"no server at {path}"


def servers_under(directory: Path) -> list[int]:
    """Running compile servers whose socket is under ``directory``. A client starts its server
    before its command runs, so once the client has exited, a server it started is here: no
    waiting needed to see that none was started."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if b"ffcc.instrument.server" in argv and \
                any(arg.startswith(bytes(directory)) for arg in argv):
            pids.append(int(cmdline.parent.name))
    return pids


def recorder(tmp_path: Path, body: str) -> Path:
    """A stand-in backend compiler (FFCC_CC) that runs a shell body."""
    script = tmp_path / "cc-stand-in"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_first_command_starts_the_server_and_runs_in_it(tmp_path, private_server):
    """The server listens before it loads ffcc, so the command that starts it waits for it
    rather than loading ffcc in its own process too; so do the ones that follow."""
    backend = recorder(tmp_path, 'tr "\\0" " " < /proc/$PPID/cmdline; echo; echo "$@"')
    first = run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend)})
    assert first.returncode == 0 and b"ffcc.instrument.server" in first.stdout
    assert stat.S_IMODE(private_server.parent.stat().st_mode) == 0o700
    second = run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend)})
    assert second.stdout == first.stdout


def test_a_server_that_leaves_without_the_command_leaves_it_to_the_client(tmp_path,
                                                                           private_server):
    """A server idle for no time leaves as soon as it has loaded ffcc, taking none of the
    commands waiting for it: each runs in its client."""
    backend = recorder(tmp_path, 'tr "\\0" " " < /proc/$PPID/cmdline')
    done = run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend), "FFCC_SERVER_IDLE": "0"})
    assert done.returncode == 0 and done.stdout and b"ffcc.instrument.server" not in done.stdout


def test_a_command_that_cannot_be_handed_over_runs_here(tmp_path, private_server):
    """With its standard input closed, a command cannot give the server its streams."""
    backend = recorder(tmp_path, 'tr "\\0" " " < /proc/$PPID/cmdline')
    done = subprocess.run(["ffcc", "-c", "x.c"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, preexec_fn=lambda: os.close(0),
                          env={**os.environ, "FFCC_SERVER": "1", "FFCC_CC": str(backend)})
    assert done.returncode == 0 and done.stdout and b"ffcc.instrument.server" not in done.stdout
    wait_for_server(private_server)  # started for the commands that follow


@needs_clang
def test_same_output_status_and_files_as_without_it(tmp_path, private_server):
    (tmp_path / "broken.c").write_text(BROKEN)
    sources = [str(p) for p in sorted((SAMPLES / "temperature").glob("*.c"))]
    commands = [
        (["-c", "broken.c", "-o", "broken.o"], None),
        (["-E", "-x", "c", "-"], b"#ifdef __FFCC__\nffcc_defined\n#endif\n"),
        (["--help"], None),
        (["--cc=no-such-cc", "-c", "x.c"], None),
        ([*sources, "-o", "temperature"], None),
    ]
    run(["--help"], tmp_path)
    wait_for_server(private_server)
    for args, stdin in commands:
        outcomes = []
        for server in (True, False):
            done = run(args, tmp_path, LABELLED, stdin, server)
            outcomes.append((done.returncode, done.stdout, done.stderr.replace(b"temperature-1", b"")))
            if args[-1] == "temperature":
                db = tmp_path / "temperature.labels.jsonl"
                outcomes[-1] += (db.read_bytes(), (tmp_path / "temperature").stat().st_mode)
                db.unlink()
        assert outcomes[0] == outcomes[1], args
    assert run(["-E", "-x", "c", "-"], tmp_path, stdin=b"__FFCC__\n").stdout.endswith(b"1\n")


def test_umask_and_working_directory_are_the_clients(tmp_path, private_server):
    backend = recorder(tmp_path, 'pwd; touch made')
    sub = tmp_path / "sub"
    sub.mkdir()
    run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend)})
    wait_for_server(private_server)
    done = subprocess.run("umask 077 && exec ffcc -c x.c", shell=True, cwd=sub, capture_output=True,
                          env={**os.environ, "FFCC_CC": str(backend)})
    assert done.stdout.decode().strip() == str(sub)
    assert stat.S_IMODE((sub / "made").stat().st_mode) == 0o600


def test_server_imports_no_package_from_its_working_directory(tmp_path, private_server):
    """``python -m`` puts the server's working directory first on its module path: it runs in
    the socket's directory, not in / (where this very container has an ``ffcc`` directory
    whose package shadowed the client's)."""
    run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(recorder(tmp_path, "true"))})
    servers = servers_under(private_server.parent)
    assert servers
    assert all(Path(f"/proc/{pid}/cwd").resolve() == private_server.parent for pid in servers)


def test_preload_loads_what_commands_use():
    """A command forked off the server finds libclang loaded and pyelftools' parsers built:
    else each pays for them (a link about 100 ms more)."""
    code = ("import sys\nfrom ffcc.instrument.server import preload\npreload()\n"
            "from clang.cindex import conf\n"
            "print('elftools.elf.elffile' in sys.modules, 'lib' in vars(conf))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_server_warms_up_on_a_unit_with_every_kind_of_label():
    """preload() ignores failures (a command reports them itself): a warm-up that stopped
    labelling would only show as slower commands."""
    from ffcc.instrument.server import warm_up
    from ffcc.rewriters import annotate
    groups = {record.label.operator.split(".")[1 if record.label.criterion == "wm" else 0]
              for record in warm_up(annotate)}
    assert {"mcc", "ror", "aor", "cor", "abs", "uod", "bor", "asr"} <= groups


def test_command_runs_at_the_clients_niceness(tmp_path, private_server):
    """A server started by a niced command does not nice the commands that follow, nor the
    other way round: each command's compiler runs at its client's priority."""
    backend = recorder(tmp_path, "nice")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base <= 15:
        server_nice, client_nice = 4, 0
    elif os.geteuid() == 0:
        server_nice, client_nice = 0, -4
    else:
        pytest.skip("running at a niceness this test cannot go below without privileges")
    env = {**os.environ, "FFCC_CC": str(backend)}

    def niced(delta: int) -> subprocess.CompletedProcess:
        return subprocess.run(["nice", "-n", str(delta), "ffcc", "-c", "x.c"], cwd=tmp_path,
                              env=env, capture_output=True, timeout=120)

    assert int(niced(server_nice).stdout) == base + server_nice  # starts the server
    assert int(niced(client_nice).stdout) == base + client_nice
    assert int(niced(server_nice).stdout) == base + server_nice


@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGKILL])
def test_exit_status_and_signals_reach_the_client(tmp_path, private_server, signo):
    """Ctrl-C is passed on to the command; a client killed outright takes it along."""
    pidfile = tmp_path / "backend.pid"
    slow = recorder(tmp_path, 'case " $* " in *" --version "*) exit 0;; *" -c "*) exit 3;; esac; '
                    f'echo $$ > {pidfile}; exec sleep 60')
    env = {**os.environ, "FFCC_CC": str(slow)}
    assert run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(slow)}).returncode == 3
    client = subprocess.Popen(["ffcc", "-E", "x.c"], cwd=tmp_path, env=env)
    assert poll_until(lambda: pidfile.exists() and pidfile.read_text().endswith("\n"), 10)
    backend = int(pidfile.read_text())
    client.send_signal(signo)
    assert client.wait(timeout=10) == -signo
    assert poll_until(lambda: not Path(f"/proc/{backend}").exists(), 10), \
        "the backend outlived its client"


@pytest.mark.parametrize("signo", [signal.SIGKILL, signal.SIGTERM])
def test_a_signal_that_ends_the_command_ends_its_client(tmp_path, private_server, signo):
    """The out-of-memory killer's SIGKILL too, which a process cannot set a handler for: the
    client re-raises it, with no traceback."""
    dies = recorder(tmp_path, 'case " $* " in *" --version "*) exit 0;; esac; '
                    f"kill -{int(signo)} $$")
    env = {"FFCC_CC": str(dies)}
    for _ in range(2):  # the first starts the server
        done = run(["-E", "x.c"], tmp_path, env)
        assert (done.returncode, done.stderr) == (-signo, b"")


def test_stale_socket_is_replaced(tmp_path, private_server):
    private_server.parent.mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(private_server))  # bound, never listening: a crashed server's leftover
    done = run(["--help"], tmp_path)
    assert done.returncode == 0 and b"ffcc options" in done.stdout
    wait_for_server(private_server)


def test_foreign_socket_directory_is_not_used(tmp_path, private_server):
    private_server.parent.mkdir(mode=0o777, exist_ok=True)
    private_server.parent.chmod(0o777)
    assert run(["--help"], tmp_path).returncode == 0
    assert not servers_under(private_server.parent) and not private_server.exists()


def test_socket_path_too_long_runs_in_process(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    done = run(["--help"], tmp_path)
    assert done.returncode == 0 and b"ffcc options" in done.stdout
    assert not servers_under(deep) and not any(deep.rglob("*.sock*"))


# --- the compiled command (instrument/ffcc_client.c) ----------------------------------------

INSTALLED = Path(sys.executable).parent / "ffcc"


def cached_servers(directory: Path) -> list[str]:
    """The socket paths the compiled command has been told of, in ``directory``."""
    return [p.read_text() for p in directory.glob("client-*") if p.is_file()]


def test_installed_command_is_the_compiled_client():
    """setup.py builds it; a Python script in its place would cost each compile of a build
    tens of milliseconds of interpreter start-up."""
    assert INSTALLED.read_bytes()[:4] == b"\x7fELF", f"{INSTALLED} is not the compiled client"


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_compiled_client_is_clean_under_werror(compiler, tmp_path):
    path = shutil.which(compiler)
    if path is None:
        pytest.skip(f"{compiler} not installed")
    source = Path(client_module.__file__).with_name("ffcc_client.c")
    done = subprocess.run([path, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2",
                           '-DFFCC_PYTHON="/usr/bin/python3"', str(source), "-o",
                           str(tmp_path / "ffcc")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_python_client_records_the_server_for_the_compiled_one(tmp_path, private_server):
    backend = recorder(tmp_path, 'tr "\\0" " " < /proc/$PPID/cmdline')
    run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend)})
    assert cached_servers(private_server.parent) == [str(private_server)]
    wait_for_server(private_server)
    done = subprocess.run([INSTALLED, "-c", "x.c"], cwd=tmp_path, capture_output=True,
                          env={**os.environ, "FFCC_CC": str(backend)}, timeout=120)
    assert b"ffcc.instrument.server" in done.stdout  # run in the server...
    assert b"FFCC_CLIENT_CACHE" not in Path("/proc/self/environ").read_bytes()
    environ = subprocess.run([INSTALLED, "-c", "x.c"], cwd=tmp_path, capture_output=True,
                             env={**os.environ, "FFCC_CC": str(recorder(tmp_path, "env"))})
    assert b"FFCC_CLIENT_CACHE" not in environ.stdout  # ...with the client's environment alone


def test_arguments_that_are_not_utf8_reach_the_command(tmp_path, private_server):
    backend = recorder(tmp_path, 'printf "%s\\n" "$@"')
    name = b"caf\xe9.c"
    for _ in range(2):  # the first starts the server (through Python's client), both run in it
        done = subprocess.run([INSTALLED, "-c", name], cwd=tmp_path, capture_output=True,
                              env={**os.environ, "FFCC_CC": str(backend)}, timeout=120)
        assert name in done.stdout.splitlines()


def test_out_of_date_server_refuses_and_the_command_still_runs(tmp_path, private_server):
    """A server whose code changed since it started (here: one whose socket is not the
    installation's) takes no command; the compiled client then leaves it to Python's client,
    which records the current server."""
    backend = recorder(tmp_path, "echo ran")
    run(["-c", "x.c"], tmp_path, {"FFCC_CC": str(backend)})  # records the cache file
    (cache,) = private_server.parent.glob("client-*")
    old = private_server.parent / "server-0000000000000000.sock"
    server = subprocess.Popen([sys.executable, "-m", "ffcc.instrument.server", str(old)],
                              cwd=private_server.parent)
    try:
        wait_for_server(old)
        cache.write_text(str(old))
        done = subprocess.run([INSTALLED, "-c", "x.c"], cwd=tmp_path, capture_output=True,
                              env={**os.environ, "FFCC_CC": str(backend)}, timeout=120)
        assert (done.returncode, done.stdout) == (0, b"ran\n")
        assert server.wait(timeout=30) == 0 and not old.exists()
        assert cache.read_text() == str(private_server)
    finally:
        server.kill()
