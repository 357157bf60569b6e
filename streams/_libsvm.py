"""LIBSVM / svmlight reader."""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterator, Tuple, Union

from ._base import LineReader, _BadLine, to_float
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT

__all__ = ["read_libsvm", "LibSVMReader", "AUTO_LINES"]

#: ``zero_based="auto"`` looks for an index 0 in this many lines before the first record ...
AUTO_LINES = 1000
#: ... and in at most this many characters of them.
_AUTO_CHARS = 8 << 20


def parse_label(token: str) -> Union[int, float]:
    """``int`` when the label is a whole number (``1``, ``+1``, ``-1``, ``2.0``), else ``float``."""
    try:
        return int(token)
    except ValueError:
        pass
    try:
        value = float(token)
    except ValueError:
        if ":" in token:
            raise _BadLine(f"the line starts with {token!r}, not with a label",
                           "put the label first (label idx:val idx:val ...)") from None
        if "," in token:
            raise _BadLine(f"label {token!r} looks multilabel, which is not supported",
                           "keep one label per line") from None
        raise _BadLine(f"label {token!r} is not a number", "fix the label") from None
    if not math.isfinite(value):
        raise _BadLine(f"label {token!r} is not a finite number", "fix the label")
    return int(value) if value.is_integer() else value


class LibSVMReader(LineReader):
    """Iterable returned by :func:`read_libsvm` (see there)."""

    def __init__(self, source: Any, *, zero_based: Union[bool, str] = False, on_error: str = "raise",
                 encoding: str = "utf-8", timeout: float | None = DEFAULT_TIMEOUT,
                 connect_timeout: float | None = DEFAULT_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        super().__init__(source, on_error=on_error, encoding=encoding, timeout=timeout,
                         connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
        if not isinstance(zero_based, bool) and zero_based != "auto":
            raise TypeError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
        self.zero_based = zero_based
        #: 0 or 1: the first feature index, given or (``zero_based="auto"``) detected when the
        #: first record is read; None before.
        self.index_base = None if zero_based == "auto" else (0 if zero_based else 1)
        self._detected = False

    def _detect(self, lines) -> Tuple[int, list]:
        """``zero_based="auto"``: 0 if an index 0 is among the first :data:`AUTO_LINES` lines, else 1;
        and the lines read ahead (to be parsed again)."""
        head = []
        size = 0
        base = 1
        for item in lines:
            head.append(item)
            size += len(item[1])
            if base == 1 and _has_index_zero(item[1]):
                base = 0
            if len(head) >= AUTO_LINES or size > _AUTO_CHARS:
                break
        return base, head

    def _records(self) -> Iterator[Tuple[dict, Any]]:
        if self.zero_based != "auto":
            yield from super()._records()
            return
        lines = self._lines()
        try:
            self.index_base, head = self._detect(lines)
            self._detected = True
            yield from self._parsed(itertools.chain(head, lines))
        finally:
            lines.close()

    def _parse(self, text: str):
        cut = text.find("#")
        if cut >= 0:
            text = text[:cut]
        tokens = text.split()
        if not tokens:
            return None
        y = parse_label(tokens[0])
        offset = self.index_base
        x = {}
        for token in tokens[1:]:
            index, sep, value = token.partition(":")
            if not sep:
                raise _BadLine(f"token {token!r} is not index:value",
                               "write features as index:value separated by blanks")
            if index == "qid":
                continue
            try:
                key = int(index) - offset
            except ValueError:
                raise _BadLine(f"feature index {index!r} (in {token!r}) is not an integer",
                               "use integer feature indices") from None
            if key < 0:
                if offset == 0 or key < -1:
                    raise _BadLine(f"feature index {index} is negative", "fix the index")
                if self._detected:
                    raise _BadLine(f"feature index 0, but the first {AUTO_LINES} lines hold none "
                                   "(zero_based='auto' read them as numbered from 1)",
                                   "pass zero_based=True if the file numbers features from 0")
                raise _BadLine(f"feature index {index} in a 1-based file",
                               "pass zero_based=True if the file numbers features from 0")
            if key in x:
                raise _BadLine(f"feature index {index} appears twice",
                               "keep one value per index")
            x[key] = to_float(value, f"feature {index}")
        return x, y


def _has_index_zero(text: str) -> bool:
    """Whether a line holds the feature index 0 (``0:value``), read leniently (bad lines are
    reported when parsed)."""
    cut = text.find("#")
    for token in (text if cut < 0 else text[:cut]).split()[1:]:
        index, sep, _ = token.partition(":")
        if sep and index != "qid":
            try:
                if int(index) == 0:
                    return True
            except ValueError:
                pass
    return False


def read_libsvm(source: Any, *, zero_based: Union[bool, str] = False, on_error: str = "raise",
                encoding: str = "utf-8", timeout: float | None = DEFAULT_TIMEOUT,
                connect_timeout: float | None = DEFAULT_TIMEOUT,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> LibSVMReader:
    """Lazily read ``(x, y)`` pairs in LIBSVM / svmlight format.

    Each line is ``label index:value index:value ...``, read one line at a time
    (constant memory).

    Parameters
    ----------
    source : str, os.PathLike, file object or iterable of lines
        A path (``.gz``, ``.bz2``, ``.xz`` decompressed by suffix), ``"-"`` for
        standard input, ``"tcp://host:port"``, or an open text or binary file
        object. See :func:`~streams.open_source`.
    zero_based : bool or "auto", default False
        ``False``: the file numbers features from 1 (the LIBSVM convention) and
        index ``i`` becomes key ``i - 1``; an index 0 is a bad line.
        ``True``: index ``i`` becomes key ``i`` (scikit-learn's ``dump_svmlight_file``
        writes such files). ``"auto"``: as scikit-learn's ``load_svmlight_file``, an
        index 0 means the file numbers from 0; a stream cannot be read twice, so the
        reader looks ahead over the first :data:`AUTO_LINES` lines (at most 8 MiB; on
        a socket it waits for them or for the end) before the first record, and an
        index 0 after them in a file read as 1-based is a bad line naming
        ``zero_based=True``. ``index_base`` holds the decision. Either way the keys
        of ``x`` start at 0, matching the column numbers of :func:`~streams.iter_array`
        and scikit-learn's ``load_svmlight_file``.
    on_error : {"raise", "skip", "warn"}, default "raise"
        Bad-line policy, as in :func:`~streams.read_csv`.
    encoding, timeout, connect_timeout, max_line_bytes
        Passed to :func:`~streams.open_source`.

    Returns
    -------
    LibSVMReader
        Iterable of ``(x, y)``: ``x`` maps ``int`` feature keys to ``float``
        values (only the features written on the line: absent = zero/missing;
        explicit zeros are kept); ``y`` is an ``int`` when the label is a whole
        number (``1``, ``+1``, ``-1``, ``3.0``), otherwise a ``float``.

    Notes
    -----
    Tolerated: blank lines, any run of spaces / tabs between tokens, ``#``
    comments (whole lines and after the features), ``\\r\\n`` line endings,
    ``qid:n`` tokens (ignored) and indices in any order. Bad lines: a label or
    value that is not a finite number (``nan`` / ``inf`` included), a token
    without ``:``, a non-integer or out-of-range index, an index given twice,
    multilabel labels (``1,2``), undecodable or over-long lines.

    Examples
    --------
    >>> import io
    >>> from streams import read_libsvm
    >>> data = io.StringIO(
    ...     "# a comment line\\n"
    ...     "+1 qid:3 1:0.5   3:2\\t4:-1  # trailing comment\\r\\n"
    ...     "\\n"
    ...     "-1 2:1e-3\\n"
    ...     "2.5 1:nan\\n")                 # bad: nan value
    >>> reader = read_libsvm(data, on_error="skip")
    >>> list(reader)
    [({0: 0.5, 2: 2.0, 3: -1.0}, 1), ({1: 0.001}, -1)]
    >>> reader.skipped
    [(5, "feature 1 = 'nan' is not a finite number")]

    >>> for x, y in read_libsvm("tcp://127.0.0.1:9000"):  # doctest: +SKIP
    ...     model.learn_one(x, y)
    """
    return LibSVMReader(source, zero_based=zero_based, on_error=on_error, encoding=encoding,
                        timeout=timeout, connect_timeout=connect_timeout,
                        max_line_bytes=max_line_bytes)
