"""The iterable reader object and the bad-line policy shared by all readers."""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Iterator, List, Optional, Tuple

from ._errors import StreamError, StreamWarning
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT, open_source, resolve_source

__all__ = ["Reader", "ON_ERROR"]

ON_ERROR = ("raise", "skip", "warn")
_PACKAGE = __name__.rpartition(".")[0]


class _BadLine(Exception):
    """Raised by record parsers; turned into the reader's on_error policy."""

    def __init__(self, problem: str, fix: str | None = None):
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


def _caller_stacklevel() -> int:
    """stacklevel pointing at the first frame outside this package."""
    frame = sys._getframe(2)
    level = 2
    while frame is not None and (frame.f_globals.get("__name__", "") == _PACKAGE or
                                 frame.f_globals.get("__name__", "").startswith(_PACKAGE + ".")):
        frame = frame.f_back
        level += 1
    return level


def to_float(text: str, what: str, hint: str = "", missing_hint: bool = False) -> float:
    """Parse a finite float or raise :class:`_BadLine` explaining the fix."""
    try:
        value = float(text)
    except ValueError:
        fix = "fix the value"
        if "," in text and text.replace(",", "", 1).replace(".", "", 1).lstrip("+-").isdigit():
            fix = "use '.' as the decimal separator"
        raise _BadLine(f"{what} = {text!r} is not a number", fix + hint) from None
    if not math.isfinite(value):
        fix = "replace it with a finite number"
        if missing_hint:
            fix += f" or list {text!r} in missing= to treat it as missing"
        raise _BadLine(f"{what} = {text!r} is not a finite number", fix)
    return value


class Reader:
    """Lazy iterable of ``(x, y)`` pairs that counts and reports bad lines.

    Every reader of this package returns an instance of a subclass. Iterating
    it reads the source from the start (a path is reopened and re-read, so
    several passes are possible; a file object or socket continues where it
    is) and resets the counters below.

    Attributes
    ----------
    source_name : str
        Name used in messages (path as given, ``<stdin>``, ``tcp://host:port``).
    on_error : {"raise", "skip", "warn"}
        Bad-line policy.
    n_read : int
        Records yielded so far in the current (or last) pass.
    n_skipped : int
        Bad lines (records) skipped so far; always 0 with ``on_error="raise"``.
    skipped : list of (int, str)
        ``(line_no, reason)`` of the first :attr:`max_reported` skipped lines.
    max_reported : int
        How many skipped lines are kept in :attr:`skipped` and, with
        ``on_error="warn"``, warned about individually (default 10).
    """

    max_reported = 10
    _unit = "line"

    def __init__(self, *, on_error: str = "raise"):
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        self.on_error = on_error
        self.source_name = "<data>"
        self._reset()

    # -- policy ------------------------------------------------------------
    def _reset(self) -> None:
        self.n_read = 0
        self.n_skipped = 0
        self.skipped: List[Tuple[int, str]] = []

    def _bad(self, pos: int, problem: str, fix: Optional[str] = None) -> None:
        """Apply the on_error policy to a bad line / row at ``pos``."""
        where = f"{self.source_name} {self._unit} {pos}"
        if self.on_error == "raise":
            raise StreamError(f"{where}: {problem}; {fix or 'fix the ' + self._unit}, "
                              f"or pass on_error='skip' to skip bad {self._unit}s",
                              source=self.source_name,
                              line_no=pos if self._unit == "line" else None,
                              reason=problem)
        self.n_skipped += 1
        if len(self.skipped) < self.max_reported:
            self.skipped.append((pos, problem))
        if self.on_error == "warn":
            if self.n_skipped <= self.max_reported:
                warnings.warn(f"{where}: {problem} (skipped)", StreamWarning,
                              stacklevel=_caller_stacklevel())
            elif self.n_skipped == self.max_reported + 1:
                warnings.warn(f"{self.source_name}: more than {self.max_reported} bad "
                              f"{self._unit}s, further ones are skipped and counted "
                              f"without a warning (see .n_skipped / .summary())",
                              StreamWarning, stacklevel=_caller_stacklevel())

    # -- iteration ---------------------------------------------------------
    def _records(self) -> Iterator[Tuple[dict, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __iter__(self) -> Iterator[Tuple[dict, Any]]:
        self._reset()
        records = self._records()
        try:
            for record in records:
                self.n_read += 1
                yield record
        finally:
            records.close()
        if self.on_error == "warn" and self.n_skipped > self.max_reported:
            warnings.warn(self.summary(), StreamWarning, stacklevel=2)

    def summary(self) -> str:
        """One line: records read, bad lines skipped and the first few of them.

        Returns
        -------
        str
            e.g. ``"data.csv: 998 records read, 2 bad lines skipped (first at
            line 17: column 'age' = 'abc' is not a number; lines 17, 40)"``.
        """
        s = "" if self.n_read == 1 else "s"
        text = f"{self.source_name}: {self.n_read} record{s} read"
        if self.n_skipped:
            s = "" if self.n_skipped == 1 else "s"
            pos, why = self.skipped[0]
            detail = f"{self._unit} {pos}: {why}"
            if self.n_skipped > 1:
                more = ", ..." if self.n_skipped > len(self.skipped) else ""
                numbers = ", ".join(str(p) for p, _ in self.skipped)
                detail = f"first at {detail}; {self._unit}s {numbers}{more}"
            text += f", {self.n_skipped} bad {self._unit}{s} skipped ({detail})"
        else:
            text += f", no bad {self._unit}s"
        return text

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.source_name} on_error={self.on_error!r} "
                f"n_read={self.n_read} n_skipped={self.n_skipped}>")


class LineReader(Reader):
    """Base of the readers built on :func:`~streams.open_source`."""

    def __init__(self, source: Any, *, on_error: str = "raise", encoding: str = "utf-8",
                 timeout: float | None = DEFAULT_TIMEOUT,
                 connect_timeout: float | None = DEFAULT_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        super().__init__(on_error=on_error)
        self._spec = resolve_source(source)
        self.source_name = self._spec.name
        self._source_options = dict(encoding=encoding, timeout=timeout,
                                    connect_timeout=connect_timeout,
                                    max_line_bytes=max_line_bytes)
        # validate the options now rather than at the first line
        open_source(self._spec, **self._source_options).close()

    def _lines(self) -> Iterator[Tuple[int, str]]:
        return open_source(self._spec, on_bad=self._bad, **self._source_options)

    def _parse(self, text: str) -> Optional[Tuple[dict, Any]]:  # pragma: no cover - abstract
        """One line's ``(x, y)``, ``None`` for a line without a record (blank, comment); raises
        :class:`_BadLine` for a bad one."""
        raise NotImplementedError

    def _records(self) -> Iterator[Tuple[dict, Any]]:
        """The records of :meth:`_parse` line by line, bad lines through the on_error policy."""
        lines = self._lines()
        try:
            yield from self._parsed(lines)
        finally:
            lines.close()

    def _parsed(self, numbered) -> Iterator[Tuple[dict, Any]]:
        """:meth:`_parse` over ``(line_no, text)`` pairs: the records, bad lines through the on_error policy."""
        for line_no, text in numbered:
            try:
                record = self._parse(text)
            except _BadLine as bad:
                self._bad(line_no, bad.problem, bad.fix)
                continue
            if record is not None:
                yield record
