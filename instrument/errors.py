"""The one error type the driver reports: a single line, then a non-zero exit."""


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
