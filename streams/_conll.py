"""CoNLL-style sequence reader: one token per line, a blank line between sequences."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np

from ._base import LineReader, _BadLine, to_float
from ._errors import StreamError
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT, open_source

__all__ = ["read_conll", "CoNLLReader", "DEFAULT_MAX_SEQUENCE_LENGTH", "MAX_SEQUENCE_VALUES"]

#: Default longest accepted sequence, in tokens.
DEFAULT_MAX_SEQUENCE_LENGTH = 10_000
#: Most feature values one sequence may hold (tokens x feature columns): 128 MiB of float64.
MAX_SEQUENCE_VALUES = 1 << 24


def _columns(option: Iterable[int], name: str) -> Tuple[int, ...]:
    """``drop=``'s 1-based column numbers, checked."""
    if isinstance(option, (str, int)):
        raise TypeError(f"{name}= takes a list of 1-based column numbers, got {option!r}; "
                        f"write {name}=[{option!r}]")
    out = []
    for c in option:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ValueError(f"{name}= holds {c!r}: columns are numbered from 1 (the first column is 1)")
        out.append(int(c))
    return tuple(sorted(set(out)))


class CoNLLReader(LineReader):
    """Iterable returned by :func:`read_conll` (see there)."""

    def __init__(self, source: Any, *, has_target: Union[bool, str] = True,
                 n_features: Optional[int] = None, delimiter: Optional[str] = None,
                 drop: Iterable[int] = (), comment: Optional[str] = "#",
                 max_sequence_length: int = DEFAULT_MAX_SEQUENCE_LENGTH,
                 on_error: str = "raise", encoding: str = "utf-8",
                 timeout: float | None = DEFAULT_TIMEOUT,
                 connect_timeout: float | None = DEFAULT_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        super().__init__(source, on_error=on_error, encoding=encoding, timeout=timeout,
                         connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
        if has_target not in (True, False, "auto"):
            raise ValueError(f"has_target must be True, False or 'auto', got {has_target!r}")
        if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, int)
                                       or n_features < 1):
            raise ValueError(f"n_features must be a positive int or None, got {n_features!r}")
        if has_target == "auto" and n_features is None:
            raise ValueError("has_target='auto' needs n_features= (a token line with n_features + 1 "
                             "columns is labelled, one with n_features columns is not)")
        if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                      or delimiter in "\r\n"):
            raise ValueError(f"delimiter must be None (any run of blanks) or one character such as "
                             f"'\\t', got {delimiter!r}")
        if comment is not None and (not isinstance(comment, str) or not comment):
            raise ValueError(f"comment must be a non-empty string or None, got {comment!r}")
        if isinstance(max_sequence_length, bool) or not isinstance(max_sequence_length, int) \
                or max_sequence_length < 1:
            raise ValueError(f"max_sequence_length must be a positive int, got {max_sequence_length!r}")
        self.has_target = has_target
        self.n_features = n_features
        self.delimiter = delimiter
        self.drop = _columns(drop, "drop")
        self.comment = comment
        self.max_sequence_length = max_sequence_length
        #: columns per token line, fixed by the first token line of a pass (None before)
        self.n_columns: Optional[int] = None
        #: whether the token lines carry a label (``has_target``, or decided by the first line)
        self.labelled: Optional[bool] = None if has_target == "auto" else has_target
        #: 1-based line number of the first token of the sequence last yielded
        self.line_no: Optional[int] = None
        self._framing_bad = False

    # -- lines -----------------------------------------------------------------------------
    def _lines(self):
        def on_bad(line_no, problem, fix):
            self._bad(line_no, problem, fix)
            self._framing_bad = True  # skipped: its sequence would lack a token

        return open_source(self._spec, on_bad=on_bad, **self._source_options)

    def _fields(self, text: str) -> List[str]:
        if self.delimiter is None:
            return text.split()
        return [f.strip() for f in text.split(self.delimiter)]

    def _plan(self, n: int, line_no: int) -> None:
        """Fix the columns from the first token line (``n`` fields); a drop= column past them is an error."""
        labelled = self.labelled
        if labelled is None:  # has_target="auto"
            k = self.n_features + len(self.drop)
            if n not in (k, k + 1):
                raise _BadLine(f"has {n} columns, but n_features={self.n_features} means {k} (unlabelled) "
                               f"or {k + 1} (with the label last)"
                               + (f", counting the {len(self.drop)} dropped" if self.drop else ""),
                               "give every token the features it was trained with")
            labelled = n == k + 1
        elif self.n_features is not None:
            k = self.n_features + len(self.drop) + labelled
            if n != k:
                raise _BadLine(f"has {n} columns, but n_features={self.n_features} means {k} ("
                               + ("the features then the label" if labelled else "the features")
                               + (f", counting the {len(self.drop)} dropped" if self.drop else "") + ")",
                               "give every token the features it was trained with")
        past = [c for c in self.drop if c > n]
        if past:
            raise StreamError(f"{self.source_name} line {line_no}: drop= column {past[0]} is past the last "
                              f"column (token lines have {n}); columns are numbered from 1",
                              source=self.source_name, line_no=line_no)
        if labelled and n in self.drop:
            raise StreamError(f"{self.source_name} line {line_no}: column {n}, the label (the last column), "
                              "is also in drop=", source=self.source_name, line_no=line_no)
        if n - labelled - len(self.drop) < 1:
            raise _BadLine(f"has {n} column{'s' if n != 1 else ''} and no feature column"
                           + (" besides the label" if labelled else ""),
                           "put the token's features, then its label, on each line")
        self.labelled = labelled
        self.n_columns = n
        self._first_token = line_no
        self._keep = [i for i in range(n - labelled) if i + 1 not in self.drop]

    def _token(self, text: str, line_no: int) -> Tuple[np.ndarray, Optional[str]]:
        fields = self._fields(text)
        if self.n_columns is None:
            self._plan(len(fields), line_no)
        elif len(fields) != self.n_columns:
            raise _BadLine(f"has {len(fields)} columns, the first token line (line {self._first_token}) "
                           f"has {self.n_columns}",
                           "give every token the same columns (features, then the label last)")
        values = np.empty(len(self._keep))
        for j, i in enumerate(self._keep):
            value = fields[i]
            if not value:
                raise _BadLine(f"column {i + 1} is empty", "fill in the value")
            values[j] = to_float(value, f"column {i + 1}",
                                 f", or list column {i + 1} in drop= to ignore it (token features are numbers)")
        label = None
        if self.labelled:
            label = fields[-1]
            if not label:
                raise _BadLine(f"the label (column {len(fields)}, the last) is empty", "fill in the label")
        return values, label

    # -- records -----------------------------------------------------------------------------
    def _records(self) -> Iterator[Tuple[np.ndarray, Optional[List[str]]]]:
        self.n_columns = None
        self.labelled = None if self.has_target == "auto" else self.has_target
        self._first_token = None
        self._framing_bad = False
        lines = self._lines()
        rows: list = []
        labels: list = []
        start = None     # line of the sequence's first token
        skipping = False  # the rest of a sequence with a bad line
        try:
            for line_no, text in lines:
                if self._framing_bad:  # a line open_source skipped belonged to this sequence
                    self._framing_bad = False
                    rows, labels, skipping = [], [], True
                stripped = text.strip()
                if not stripped:
                    if rows and not skipping:
                        yield self._sequence(rows, labels, start)
                    rows, labels, start, skipping = [], [], None, False
                    continue
                if self.comment is not None and stripped.startswith(self.comment):
                    continue
                if start is None:
                    start = line_no
                if skipping:
                    continue
                try:
                    if len(rows) >= self.max_sequence_length:
                        raise _BadLine(f"the sequence starting at line {start} is longer than "
                                       f"max_sequence_length={self.max_sequence_length} tokens",
                                       "end every sequence with a blank line, or pass a larger "
                                       "max_sequence_length=")
                    if self.n_columns is not None and (len(rows) + 1) * len(self._keep) > MAX_SEQUENCE_VALUES:
                        raise _BadLine(f"the sequence starting at line {start} holds more than "
                                       f"{MAX_SEQUENCE_VALUES} feature values",
                                       "split it into shorter sequences (blank lines between them)")
                    values, label = self._token(text, line_no)
                except _BadLine as bad:
                    where = "" if line_no == start or "starting at line" in bad.problem else \
                        f" (in the sequence starting at line {start})"
                    self._bad(line_no, bad.problem + where, bad.fix)
                    rows, labels, skipping = [], [], True
                    continue
                rows.append(values)
                labels.append(label)
            if self._framing_bad:
                rows, skipping = [], True
            if rows and not skipping:
                yield self._sequence(rows, labels, start)
        finally:
            lines.close()

    def _sequence(self, rows, labels, start):
        self.line_no = start
        return np.vstack(rows), (labels if self.labelled else None)


def read_conll(source: Any, *, has_target: Union[bool, str] = True, n_features: Optional[int] = None,
               delimiter: Optional[str] = None, drop: Iterable[int] = (), comment: Optional[str] = "#",
               max_sequence_length: int = DEFAULT_MAX_SEQUENCE_LENGTH, on_error: str = "raise",
               encoding: str = "utf-8", timeout: float | None = DEFAULT_TIMEOUT,
               connect_timeout: float | None = DEFAULT_TIMEOUT,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> CoNLLReader:
    """Lazily read labelled sequences from a CoNLL-style file, standard input or a socket.

    One token per line: its feature columns, then its label in the last column; a
    blank line ends a sequence. Each sequence becomes one ``(xs, ys)`` pair, what
    :meth:`onlinemkl.SequenceMKLLabeler.learn_one` takes; one sequence is held in
    memory at a time.

    Parameters
    ----------
    source : str, os.PathLike, file object or iterable of lines
        A path (``.gz``, ``.bz2``, ``.xz`` decompressed by suffix), ``"-"`` for
        standard input, ``"tcp://host:port"``, or an open text or binary file
        object. See :func:`~streams.open_source`.
    has_target : True, False or "auto", default True
        ``True``: the last column is the label. ``False``: every column is a feature
        (data to predict) and ``ys`` is ``None``. ``"auto"`` (needs ``n_features``):
        the first token line decides, ``n_features + 1`` columns (plus the dropped
        ones) meaning labelled and ``n_features`` unlabelled; ``labelled`` holds the choice.
    n_features : int or None, default None
        Feature columns every token must have (after ``drop``), e.g. a trained
        model's; ``None``: the first token line fixes the columns.
    delimiter : str or None, default None
        ``None`` splits on any run of blanks (spaces and tabs, as CoNLL files are
        written); one character (``"\\t"``) splits on it, fields stripped, so a label
        may then contain spaces.
    drop : list of int
        1-based numbers of columns to ignore (e.g. ``[1]`` for a word column).
    comment : str or None, default "#"
        Lines starting with it (after blanks) are skipped (CoNLL-U's ``# text = ...``).
    max_sequence_length : int, default 10 000
        Longest accepted sequence, in tokens. A longer one is a bad line at the
        token past the bound (:data:`MAX_SEQUENCE_VALUES` also caps tokens times
        feature columns), so a file without blank lines cannot exhaust memory.
    on_error : {"raise", "skip", "warn"}, default "raise"
        Bad-line policy, as in :func:`~streams.read_csv`; skipping a bad line skips
        its whole sequence (a sequence missing a token would teach wrong transitions).
    encoding, timeout, connect_timeout, max_line_bytes
        Passed to :func:`~streams.open_source`.

    Returns
    -------
    CoNLLReader
        Iterable of ``(xs, ys)``: ``xs`` a float64 array of shape ``(tokens,
        features)``, ``ys`` a list of the tokens' labels as the strings found in
        the file (``None`` without labels). ``n_read`` counts sequences;
        ``line_no`` is the line of the first token of the sequence last yielded.

    Notes
    -----
    The first token line of a pass fixes the number of columns. A line is **bad**
    when it has another number of columns, a feature column holds something that
    is not a finite number (a text column, such as the word itself, must be listed
    in ``drop=``: features are numbers), a field is empty (with a ``delimiter``),
    the sequence passes ``max_sequence_length``, or the line cannot be decoded or
    is longer than ``max_line_bytes``. With ``on_error="skip"`` / ``"warn"`` the
    rest of its sequence is read and dropped and the next sequence is read as
    usual; ``n_skipped`` counts bad lines, each one sequence. ``drop=`` naming a
    column past the last, or the label, always raises :class:`~streams.StreamError`.

    Examples
    --------
    >>> import io
    >>> from streams import read_conll
    >>> data = io.StringIO(
    ...     "# a comment\\n"
    ...     "0.5 1.0 B\\n"
    ...     "0.1 -2  I\\n"
    ...     "\\n"
    ...     "3   4   O\\n"
    ...     "x   4   O\\n"          # bad: column 1 is not a number
    ...     "\\n"
    ...     "1   1   B\\n")
    >>> reader = read_conll(data, on_error="skip")
    >>> for xs, ys in reader:
    ...     print(xs.tolist(), ys)
    [[0.5, 1.0], [0.1, -2.0]] ['B', 'I']
    [[1.0, 1.0]] ['B']
    >>> reader.summary()
    "<stream>: 2 records read, 1 bad line skipped (line 6: column 1 = 'x' is not a number (in the sequence starting at line 5))"

    A word column, dropped:

    >>> [ys for _, ys in read_conll(io.StringIO("EU 1 0 B-ORG\\nrejects 0 1 O\\n"), drop=[1])]
    [['B-ORG', 'O']]

    From a socket:

    >>> for xs, ys in read_conll("tcp://127.0.0.1:9000", timeout=60):  # doctest: +SKIP
    ...     model.learn_one(xs, ys)
    """
    return CoNLLReader(source, has_target=has_target, n_features=n_features, delimiter=delimiter,
                       drop=drop, comment=comment, max_sequence_length=max_sequence_length,
                       on_error=on_error, encoding=encoding, timeout=timeout,
                       connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
