"""The compiler zygote runs a command as the command would run on its own.

The zygote is generic (a preloaded library that takes over main()), so most of these tests use
/bin/sh as the compiler: a shell shows where and how it ran.  The last ones run clang in the
compile server's zygote."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import needs_clang, poll_until

from ffcc.instrument import zygote

SHELL = "/bin/sh"


@pytest.fixture
def shell_zygote(tmp_path):
    """A zygote of /bin/sh, for this test process (and its forks) alone."""
    started = zygote.start(SHELL, str(tmp_path / "z.sock"))
    assert started is not None, "the preload library did not build"
    yield started
    zygote.stop_all()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_command_runs_in_the_zygote_not_as_a_child_of_the_caller(shell_zygote, tmp_path):
    script = f"cat /proc/$PPID/stat > {tmp_path}/relay"
    assert zygote.run([SHELL, "-c", script]).returncode == 0
    relay_parent = int((tmp_path / "relay").read_text().rsplit(")", 1)[1].split()[1])
    assert relay_parent == shell_zygote.pid


def test_working_directory_environment_umask_and_streams(shell_zygote, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FFCC_ZYGOTE_TEST", "from the caller")
    old = os.umask(0o027)
    try:
        done = zygote.run([SHELL, "-c", 'pwd; echo "$FFCC_ZYGOTE_TEST"; umask; echo err >&2; '
                           'echo "${LD_PRELOAD:-none} ${FFCC_ZYGOTE_FD:-none}"; exit 3'],
                          capture=True)
    finally:
        os.umask(old)
    assert done.returncode == 3
    assert done.stdout.decode().split("\n") == [str(tmp_path), "from the caller", "0027",
                                                 "none none", ""]
    assert done.stderr == b"err\n"


def test_niceness_is_the_callers(shell_zygote):
    here = os.getpriority(os.PRIO_PROCESS, 0)
    done = zygote.run([SHELL, "-c", "cut -d' ' -f19 /proc/$$/stat"], capture=True)
    assert int(done.stdout) == here


def test_command_ended_by_a_signal_reports_it(shell_zygote):
    assert zygote.run([SHELL, "-c", "kill -TERM $$"]).returncode == -signal.SIGTERM


def test_other_compilers_run_as_processes_of_their_own(shell_zygote):
    done = zygote.run([sys.executable, "-c", "import os; print(os.getppid())"], capture=True)
    assert int(done.stdout) == os.getpid()


def test_switched_off_by_environment(shell_zygote, monkeypatch):
    monkeypatch.setenv("FFCC_ZYGOTE", "0")
    done = zygote.run([SHELL, "-c", "echo $PPID"], capture=True)
    assert int(done.stdout) == os.getpid()


def test_a_dead_zygote_means_a_process_of_its_own(shell_zygote):
    os.kill(shell_zygote.pid, signal.SIGKILL)
    os.waitpid(shell_zygote.pid, 0)
    done = zygote.run([SHELL, "-c", "echo $PPID"], capture=True)
    assert int(done.stdout) == os.getpid()


def test_other_loader_settings_mean_a_process_of_its_own(shell_zygote, monkeypatch):
    """LD_PRELOAD, LD_LIBRARY_PATH and the like act when a process starts: a command that sets
    them differently from the zygote's start must start for them to apply."""
    monkeypatch.setenv("LD_BIND_NOW", "1")
    done = zygote.run([SHELL, "-c", "echo $PPID"], capture=True)
    assert int(done.stdout) == os.getpid()


def test_an_upgraded_compiler_runs_as_a_process_of_its_own(tmp_path):
    """The zygote holds the compiler as it was when it started: once the file is replaced
    (a package upgrade), commands run the new one."""
    shell = tmp_path / "sh"
    shutil.copy(SHELL, shell)
    started = zygote.start(str(shell), str(tmp_path / "z.sock"))
    assert started is not None
    try:
        script = [str(shell), "-c", "echo $PPID"]
        assert int(zygote.run(script, capture=True).stdout) != os.getpid()
        replacement = tmp_path / "sh.new"
        shutil.copy(SHELL, replacement)
        os.replace(replacement, shell)
        assert int(zygote.run(script, capture=True).stdout) == os.getpid()
    finally:
        zygote.stop_all()


def test_zygote_gone_during_a_command_is_an_error(shell_zygote, tmp_path, capsys):
    pid_file = tmp_path / "pid"
    stopper = threading.Thread(target=lambda: os.kill(parent_of(_started(pid_file)),
                                                      signal.SIGKILL))
    stopper.start()
    try:
        done = zygote.run([SHELL, "-c", f"echo $$ > {pid_file}; exec sleep 30"])
    finally:
        stopper.join()
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert done.returncode == 1
    assert zygote.STOPPED in capsys.readouterr().err


def _caller(argv: list[str]) -> int:
    """Fork a caller that runs ``argv`` in the zygote and exits with its code (+128 when
    negative)."""
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            code = zygote.run(argv).returncode
            os._exit(code if code >= 0 else 128 - code)
        finally:
            os._exit(99)  # the interrupt was not passed on: it ended the caller
    return pid


def _started(pid_file: Path) -> int:
    assert poll_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 10)
    return int(pid_file.read_text())


def test_callers_interrupt_reaches_the_command(shell_zygote, tmp_path):
    pid_file = tmp_path / "pid"
    caller = _caller([SHELL, "-c", f"echo $$ > {pid_file}; exec sleep 30"])
    _started(pid_file)
    os.kill(caller, signal.SIGINT)
    _, status = os.waitpid(caller, 0)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGINT


def test_callers_death_stops_the_command(shell_zygote, tmp_path):
    pid_file = tmp_path / "pid"
    caller = _caller([SHELL, "-c", f"echo $$ > {pid_file}; exec sleep 30"])
    command = _started(pid_file)
    os.kill(caller, signal.SIGKILL)
    os.waitpid(caller, 0)
    assert poll_until(lambda: not Path(f"/proc/{command}").exists(), 10)


@needs_clang
def test_compile_server_compiles_in_its_zygote(tmp_path):
    """ffcc through its compile server: the server starts a clang zygote, and a compile
    there gives the object a direct clang compile gives, and the same diagnostics."""
    runtime_dir = Path(subprocess.check_output(["mktemp", "-d", "/tmp/ffcc-z-XXXXXX"],
                                               text=True).strip())
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir), "FFCC_SERVER_IDLE": "5",
           "FFCC_SERVER": "1", "FFCC_CC": "clang"}
    (tmp_path / "ok.c").write_text("int twice(int x) { return 2 * x; }\n")
    (tmp_path / "bad.c").write_text("int f(void) { return 0 }\n")
    try:
        def ffcc(*args):
            return subprocess.run(["ffcc", *args], cwd=tmp_path, env=env, capture_output=True,
                                  timeout=120)

        assert ffcc("-c", "ok.c", "-o", "first.o").returncode == 0  # starts the server
        assert poll_until(lambda: zygotes_under(runtime_dir), 20)
        assert ffcc("-c", "ok.c", "-o", "ok.o").returncode == 0
        bad = ffcc("-c", "bad.c", "-o", "bad.o")
        assert bad.returncode == 1
        assert b"expected ';'" in bad.stderr
        assert not (tmp_path / "bad.o").exists()
        nm = subprocess.run(["nm", str(tmp_path / "ok.o")], capture_output=True, text=True)
        assert " T twice" in nm.stdout
    finally:
        subprocess.run(["rm", "-rf", str(runtime_dir)])


def zygotes_under(directory: Path) -> list[int]:
    """Running zygotes whose compile server's socket is under ``directory``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
            if zygote.PROCESS_NAME.encode() not in argv:
                continue
            server = Path(f"/proc/{parent_of(int(cmdline.parent.name))}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if bytes(directory) in server:
            found.append(int(cmdline.parent.name))
    return found


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_zygote_library_is_clean_under_werror(compiler, tmp_path):
    path = shutil.which(compiler)
    if path is None:
        pytest.skip(f"{compiler} not installed")
    done = subprocess.run([path, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC",
                           "-shared", str(zygote.SOURCE), "-o", str(tmp_path / "z.so"), "-ldl"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
