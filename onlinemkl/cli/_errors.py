"""The command line's one error type."""


class CommandError(Exception):
    """An error reported as one line and a non-zero exit code, without a traceback."""
