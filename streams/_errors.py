"""Exception and warning classes shared by every reader."""

from __future__ import annotations

__all__ = ["StreamError", "StreamWarning"]


class StreamError(ValueError):
    """A stream could not be opened or read, or it holds a bad line.

    The message always names the source (a path as given, ``<stdin>``,
    ``tcp://host:port`` or the ``name`` of a file object), the 1-based line
    number when there is one, what was wrong and how to fix it, e.g.::

        data.csv line 17: column 'age' = 'abc' is not a number; fix the value
        or pass on_error='skip' to skip bad lines

    Attributes
    ----------
    source : str or None
        Name of the source.
    line_no : int or None
        1-based line number (for :func:`~streams.iter_array`, the 0-based row
        index is given in the message instead and ``line_no`` is None).
    reason : str
        What was wrong, without the source name and line number.
    """

    def __init__(self, message: str, *, source: str | None = None,
                 line_no: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.source = source
        self.line_no = line_no
        self.reason = reason if reason is not None else message


class StreamWarning(UserWarning):
    """Emitted for skipped bad lines when a reader uses ``on_error='warn'``."""
