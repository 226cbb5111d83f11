"""The one exception type ffuzz shows users: a problem they can fix, in one line."""


class FuzzerError(Exception):
    """Printed as `ffuzz: <message>` with a non-zero exit and no traceback."""
