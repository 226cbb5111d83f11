"""The one error type the driver reports: a single line, then a non-zero exit; and how the
driver writes a line to stderr."""

import sys


class FfccError(Exception):
    """A user-facing failure; ``str(err)`` is the whole message."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def reported_by(self, driver: str) -> str:
        """The message as ``driver`` prints it: messages are written as ffcc's (``ffcc:
        error: ...``), and ffcc++ reports under its own name, as g++ does."""
        message = str(self)
        return driver + message[len("ffcc"):] if message.startswith("ffcc:") else message


def say(line: str) -> None:
    """Write one line to stderr in one write: a project build compiles its units in threads,
    and print() writes a line and its newline apart, so two threads' messages could share a
    line (test_labels_required saw main.c's error run on after check.c's)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
