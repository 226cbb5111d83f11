"""What pyproject.toml cannot say: the cffi modules (fuzzer's native/ and the rewriters' walk of a
unit's top level; cffi hooks into the build only from setup.py, python-cffi/cffi#55) and the
compiled ``ffcc`` command, installed as ``ffcc++`` too.

``ffcc`` runs once per compile of a build, so it is a small C program (instrument/ffcc_client.c)
that hands commands to the compile server and leaves everything else to Python's client, run
by the interpreter installing it.  It includes instrument/ffcc_server_protocol.h, found beside
it (``#include "..."``), which Python's client reads too and the package installs.  Without a C
compiler (which ffcc itself needs anyway), the command is the Python client alone.  ``ffcc++``
is a copy of the command: the name it runs under makes it ffcc's C++ driver
(toolchain.driver_of).  Everything else lives in pyproject.toml.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_SOURCE = os.path.join("instrument", "ffcc_client.c")
COMMAND = os.path.join("build", "ffcc-command", "ffcc")
CXX_COMMAND = os.path.join("build", "ffcc-command", "ffcc++")
PYTHON_COMMAND = f"""#!{sys.executable}
import sys
from ffcc.instrument.client import main
sys.exit(main())
"""


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_command() -> str:
    """Write ``COMMAND``: compiled for this interpreter, or the Python client's script."""
    target = os.path.join(HERE, COMMAND)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    for compiler in ("cc", "gcc", "clang"):
        if shutil.which(compiler) is None:
            continue
        done = subprocess.run(
            [compiler, "-std=c11", "-O2", f"-DFFCC_PYTHON={_c_string(sys.executable)}", "-o",
             target, os.path.join(HERE, CLIENT_SOURCE)], capture_output=True)
        if done.returncode == 0:
            return COMMAND
    with open(target, "w") as script:
        script.write(PYTHON_COMMAND)
    os.chmod(target, 0o755)
    return COMMAND


def build_commands() -> list[str]:
    """``COMMAND`` (build_command) and its copy ``CXX_COMMAND``."""
    command = build_command()
    shutil.copy(os.path.join(HERE, command), os.path.join(HERE, CXX_COMMAND))
    return [command, CXX_COMMAND]


class BuildScripts(Distribution().get_command_class("build_scripts")):  # type: ignore[misc]
    """Copies the command as it is: the stock command reads every script as Python text."""

    def copy_scripts(self):
        self.mkpath(self.build_dir)
        outfiles = []
        for script in self.scripts:
            outfile = os.path.join(self.build_dir, os.path.basename(script))
            shutil.copyfile(script, outfile)
            os.chmod(outfile, 0o755)
            outfiles.append(outfile)
        return outfiles, outfiles


setup(cffi_modules=["native/_build.py:ffibuilder", "rewriters/_build.py:ffibuilder"],
      scripts=build_commands(), cmdclass={"build_scripts": BuildScripts})
