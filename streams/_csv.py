"""CSV reader."""

from __future__ import annotations

import csv
import itertools
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Tuple

from ._base import LineReader, _BadLine, to_float
from ._errors import StreamError
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT

__all__ = ["read_csv", "CSVReader", "sniff_delimiter", "SNIFF_DELIMITERS", "SNIFF_LINES"]

#: The delimiters ``delimiter=None`` chooses among, and that a one-column header may not contain.
SNIFF_DELIMITERS = ",;\t|"
#: ``delimiter=None`` looks at the header and at most this many lines after it.
SNIFF_LINES = 20
#: ... and at most this many characters of them.
_SNIFF_CHARS = 64 * 1024

_NUMBER_HINT = (", list the column in categorical= to keep it as a string or in "
                "drop= to ignore it")


def _to_int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    value = to_float(text, what)
    if not value.is_integer():
        raise _BadLine(f"{what} = {text!r} is not an integer",
                       "fix the value or use target_type=float")
    return int(value)


def sniff_delimiter(lines: Iterable[str]) -> str:
    """The delimiter of CSV text among ``,;\\t|`` (:class:`csv.Sniffer` on ``lines``), ``","`` when
    it cannot tell (e.g. a single column).

    >>> sniff_delimiter(["a;b;y", "1,5;2;0", "3;4,5;1"])
    ';'
    >>> sniff_delimiter(["a,b,y", '1,"x; y",0']), sniff_delimiter(["label", "1"])
    (',', ',')
    """
    sample = "\n".join(lines)
    try:
        return csv.Sniffer().sniff(sample, delimiters=SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return ","


def _show_delimiter(delimiter: str) -> str:
    return "'\\t' (tab)" if delimiter == "\t" else repr(delimiter)


class CSVReader(LineReader):
    """Iterable returned by :func:`read_csv` (see there)."""

    def __init__(self, source: Any, target: Optional[str] = None, *,
                 has_target: bool = True, delimiter: Optional[str] = ",", quotechar: str = '"',
                 categorical: Iterable[str] = (), drop: Iterable[str] = (),
                 converters: Optional[Mapping[str, Callable[[str], Any]]] = None,
                 missing: Iterable[str] = ("",), target_type: Any = None,
                 on_error: str = "raise", encoding: str = "utf-8",
                 timeout: float | None = DEFAULT_TIMEOUT,
                 connect_timeout: float | None = DEFAULT_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        super().__init__(source, on_error=on_error, encoding=encoding, timeout=timeout,
                         connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
        if target is not None and not has_target:
            raise ValueError(f"target={target!r} contradicts has_target=False")
        for name, value in (("categorical", categorical), ("drop", drop),
                            ("missing", missing)):
            if isinstance(value, str):
                raise TypeError(f"{name}= takes a list of strings, got the string {value!r}"
                                f"; write {name}=[{value!r}]")
        self.target = target
        self.has_target = has_target
        self.delimiter = delimiter
        self.quotechar = quotechar
        self.categorical = tuple(categorical)
        self.drop = tuple(drop)
        self.converters = dict(converters or {})
        self.missing = frozenset(missing)
        if target_type not in (None, str, int, float) and not callable(target_type):
            raise TypeError("target_type must be None, str, int, float or a callable, "
                            f"got {target_type!r}")
        if target is not None and target in self.converters and target_type is not None:
            raise ValueError(f"give either converters[{target!r}] or target_type, not both")
        self.target_type = target_type
        # validate the dialect
        csv.reader([], delimiter="," if delimiter is None else delimiter, quotechar=quotechar)
        #: column names of the header, once read
        self.columns: Optional[list] = None
        #: the feature columns of the record last yielded whose cells were missing (left out of x)
        self.last_missing: tuple = ()
        #: the delimiter in use (``delimiter``, or the sniffed one), once the header is read
        self.delimiter_used: Optional[str] = delimiter

    # -- header ----------------------------------------------------------------
    def _fatal(self, line_no: int, problem: str) -> StreamError:
        return StreamError(f"{self.source_name} line {line_no}: {problem}",
                           source=self.source_name, line_no=line_no, reason=problem)

    def _plan(self, header: list, line_no: int):
        seen = {}
        for i, name in enumerate(header):
            if not name:
                raise self._fatal(line_no, f"header column {i + 1} has no name; "
                                  "give every column a name in the header row")
            if name in seen:
                raise self._fatal(line_no, f"header has column {name!r} twice (columns "
                                  f"{seen[name] + 1} and {i + 1}); rename one of them")
            seen[name] = i
        cols = ", ".join(map(repr, header))

        def need(name, what):
            if name not in seen:
                raise self._fatal(line_no, f"{what} column {name!r} is not in the header "
                                  f"({cols}); check the name and the delimiter "
                                  f"(delimiter={self.delimiter_used!r})")

        target = None
        if self.has_target:
            target = self.target if self.target is not None else header[-1]
            need(target, "target")
        for name in self.drop:
            need(name, "drop=")
        for name in self.categorical:
            need(name, "categorical=")
        for name in self.converters:
            need(name, "converters=")
        if target is not None and target in self.drop:
            raise self._fatal(line_no, f"the target column {target!r} is also in drop=")
        features = []
        for i, name in enumerate(header):
            if name == target or name in self.drop:
                continue
            conv = self.converters.get(name)
            kind = "conv" if conv else ("cat" if name in self.categorical else "num")
            features.append((i, name, kind, conv))
        t_index = None if target is None else seen[target]
        t_conv = None
        if target is not None:
            t_conv = self.converters.get(target)
            if t_conv is None and self.target_type not in (None, str):
                if self.target_type is int:
                    t_conv = lambda v: _to_int(v, f"target column {target!r}")  # noqa: E731
                elif self.target_type is float:
                    t_conv = lambda v: to_float(v, f"target column {target!r}", "", True)  # noqa: E731
                else:
                    t_conv = self.target_type
        return features, target, t_index, t_conv, len(header)

    def _malformed(self, feed: "_Feed", exc: Exception) -> None:
        """Report a record ``csv`` cannot parse; after an unterminated quote, re-read the lines after it."""
        first, last = feed.first or feed.last, feed.last
        opened = feed.open_quote(self.delimiter_used, self.quotechar)
        if opened is None:
            span = f" (record spans lines {first}-{last})" if last > first else ""
            self._bad(first, f"malformed CSV: {exc}{span}",
                      f"fix the quoting (a field containing {self.delimiter_used!r}, a quote or a line "
                      "break must be quoted, quotes inside doubled)")
            return
        start = f" (in the record starting at line {first})" if first != opened else ""
        self._bad(opened, f"unterminated quote: the quote opened at line {opened}{start} is never "
                  f"closed (the parser read to line {last}: {exc})",
                  "close the quote (a quote inside a quoted field is written twice: \"\")")
        feed.reread_after(opened)  # on_error="skip"/"warn": the lines it swallowed are records again

    # -- records ---------------------------------------------------------------
    def _sniff(self, lines) -> Tuple[str, list]:
        """The delimiter sniffed from the first non-blank line and up to :data:`SNIFF_LINES` after
        it (a socket: the header alone, not to wait for lines the peer has not sent yet), and the
        lines read to sniff (to be parsed again)."""
        most = 1 if self._spec.kind == "tcp" else SNIFF_LINES + 1
        head: list = []
        sample: list = []
        size = 0
        for item in lines:
            head.append(item)
            text = item[1]
            if not sample and not text.strip():
                continue
            sample.append(text)
            size += len(text)
            if len(sample) >= most or size > _SNIFF_CHARS:
                break
        return sniff_delimiter(sample), head

    def _check_header(self, header: list, line_no: int) -> None:
        """Refuse a one-column header holding another delimiter: a file split on the wrong one."""
        if len(header) != 1:
            return
        others = [d for d in SNIFF_DELIMITERS if d != self.delimiter_used and d in header[0]]
        if others:
            raise self._fatal(line_no, f"the header is one column, {header[0]!r}, containing "
                              f"{_show_delimiter(others[0])}: the file is not delimited by "
                              f"{_show_delimiter(self.delimiter_used)}; pass "
                              f"delimiter={others[0]!r} (or delimiter=None to sniff it)")

    def _records(self) -> Iterator[Tuple[dict, Any]]:
        lines = source_lines = self._lines()
        if self.delimiter is None:
            self.delimiter_used, head = self._sniff(source_lines)
            lines = itertools.chain(head, source_lines)
        feed = _Feed(lines, self._source_options["max_line_bytes"] + 2 * csv.field_size_limit())
        rows = csv.reader(feed, delimiter=self.delimiter_used, quotechar=self.quotechar,
                          strict=True)
        try:
            header = None
            while header is None:
                feed.start_record()
                try:
                    row = next(rows)
                except StopIteration:
                    raise StreamError(f"{self.source_name}: no header row (the input is "
                                      "empty); the first line must name the columns",
                                      source=self.source_name) from None
                except csv.Error as exc:
                    opened = feed.open_quote(self.delimiter_used, self.quotechar)
                    what = (f"an unterminated quote opened at line {opened}" if opened is not None
                            else str(exc))
                    raise self._fatal(opened or feed.first or feed.last,
                                      f"cannot parse the header row ({what})") from None
                if any(cell.strip() for cell in row):
                    header = [cell.strip() for cell in row]
            self._check_header(header, feed.first)
            self.columns = header
            features, target, t_index, t_conv, n_cols = self._plan(header, feed.first)
            missing = self.missing
            delim = self.delimiter_used
            while True:
                feed.start_record()
                try:
                    row = next(rows)
                except StopIteration:
                    return
                except csv.Error as exc:
                    self._malformed(feed, exc)
                    continue
                if not any(cell.strip() for cell in row):
                    continue  # blank line: not a record
                line_no = feed.first
                try:
                    if len(row) != n_cols:
                        raise _BadLine(f"has {len(row)} fields, the header has {n_cols}",
                                       f"fix the row (quote fields that contain "
                                       f"{delim!r})")
                    x = {}
                    absent = []
                    for i, name, kind, conv in features:
                        value = row[i].strip()
                        if value in missing:
                            absent.append(name)
                            continue
                        if kind == "num":
                            x[name] = to_float(value, f"column {name!r}", _NUMBER_HINT, True)
                        elif kind == "cat":
                            x[name] = value
                        else:
                            try:
                                out = conv(value)
                            except Exception as exc:
                                raise _BadLine(f"converters[{name!r}] failed on {value!r} "
                                               f"({type(exc).__name__}: {exc})",
                                               "fix the value or the converter") from None
                            if out is not None:
                                x[name] = out
                            else:
                                absent.append(name)
                    if t_index is None:
                        y = None
                    else:
                        value = row[t_index].strip()
                        if value in missing:
                            raise _BadLine(f"the target column {target!r} is empty",
                                           "fill in the label (or use has_target=False "
                                           "for unlabelled data)")
                        if t_conv is None:
                            y = value
                        else:
                            try:
                                y = t_conv(value)
                            except _BadLine:
                                raise
                            except Exception as exc:
                                raise _BadLine(f"target column {target!r} = {value!r} "
                                               f"cannot be converted ({type(exc).__name__}"
                                               f": {exc})", "fix the value") from None
                except _BadLine as bad:
                    self._bad(line_no, bad.problem, bad.fix)
                    continue
                self.last_missing = tuple(absent)
                yield x, y
        finally:
            source_lines.close()


class _Feed:
    """The lines :mod:`csv` parses, remembering those of the record in progress (up to ``cap``
    characters) to find where an unterminated quote opened and to re-read the lines after it."""

    def __init__(self, lines, cap: int):
        self._lines = lines
        self._pending: deque = deque()
        self._record: list = []
        self._size = 0
        self._cap = cap
        self.first: Optional[int] = None
        self.last = 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self._pending:
            line_no, text = self._pending.popleft()
        else:
            line_no, text = next(self._lines)
        if self.first is None:
            self.first = line_no
        self.last = line_no
        if self._size <= self._cap:
            self._record.append((line_no, text))
            self._size += len(text)
        return text + "\n"

    def start_record(self) -> None:
        self.first = None
        self._record.clear()
        self._size = 0

    def open_quote(self, delimiter: str, quotechar: str) -> Optional[int]:
        """The line where a quote still open at the end of the record's lines opened, or None."""
        if not quotechar or self._size > self._cap:
            return None
        in_quote, opened, at_start = False, None, True
        for line_no, text in self._record:
            i, n = 0, len(text)
            while i < n:
                ch = text[i]
                if in_quote:
                    if ch == quotechar:
                        if i + 1 < n and text[i + 1] == quotechar:
                            i += 1  # a doubled quote inside the field
                        else:
                            in_quote = False
                elif ch == quotechar and at_start:
                    in_quote, opened = True, line_no
                at_start = not in_quote and ch == delimiter
                i += 1
            at_start = True  # a line break inside quotes is part of the field; outside, a new record
        return opened if in_quote else None

    def reread_after(self, line_no: int) -> None:
        """Hand the remembered lines after ``line_no`` to the parser again (before any new line)."""
        if self._size <= self._cap:
            self._pending.extendleft(reversed([item for item in self._record if item[0] > line_no]))


def read_csv(source: Any, target: Optional[str] = None, *, has_target: bool = True,
             delimiter: Optional[str] = ",", quotechar: str = '"', categorical: Iterable[str] = (),
             drop: Iterable[str] = (),
             converters: Optional[Mapping[str, Callable[[str], Any]]] = None,
             missing: Iterable[str] = ("",), target_type: Any = None,
             on_error: str = "raise", encoding: str = "utf-8",
             timeout: float | None = DEFAULT_TIMEOUT,
             connect_timeout: float | None = DEFAULT_TIMEOUT,
             max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> CSVReader:
    """Lazily read ``(x, y)`` pairs from a CSV file, standard input or a socket.

    The first non-blank line is the header (required); each later row becomes
    one ``(x, y)`` pair, read one line at a time (constant memory). Quoting
    follows the :mod:`csv` module (``"a, b"`` is one field, ``""`` inside
    quotes is a quote, quoted fields may span lines).

    Parameters
    ----------
    source : str, os.PathLike, file object or iterable of lines
        A path (``.gz``, ``.bz2``, ``.xz`` decompressed by suffix), ``"-"`` for
        standard input, ``"tcp://host:port"`` (the header is the first line the
        peer sends), or an open text or binary file object. See
        :func:`~streams.open_source`.
    target : str or None, default None
        Name of the label column. ``None`` means the **last column** is the
        label (unless ``has_target=False``).
    has_target : bool, default True
        ``False`` for unlabelled input (e.g. data to predict): every column
        (except ``drop``) is a feature and ``y`` is ``None``.
    delimiter : str or None, default ","
        Field separator (``","``; ``"\\t"`` for TSV, ``";"`` ...). ``None`` sniffs it
        (:class:`csv.Sniffer`) among ``,``, ``;``, tab and ``|`` from the header and up to
        :data:`SNIFF_LINES` lines after it (from a socket, the header alone), read ahead and
        then parsed as usual; ``","``
        when the sniffer cannot tell (one column). ``delimiter_used`` holds the choice
        once the header is read. Whatever the delimiter, a header that parses as one
        column containing another of those four is an error (the file was split on the
        wrong delimiter).
    quotechar : str
        The quote character.
    categorical : list of str
        Feature columns whose values are kept as strings (river's convention
        for categorical features). Every other feature column must be numeric.
    drop : list of str
        Columns to ignore.
    converters : dict of str to callable, optional
        ``{column: f}``: ``f(value_str)`` gives the value of that column (feature
        or target) instead of the default conversion. A converter returning
        ``None`` marks a feature as missing; one raising marks the line bad.
    missing : list of str, default ``("",)``
        Field values (after stripping blanks) that mean "missing". A missing
        feature is **left out of x** (river's convention for sparse / missing
        values; the converter is not called); a missing label makes the line
        bad. Add e.g. ``"NA"``, ``"?"`` or ``"nan"`` to treat them as missing.
        The reader's ``last_missing`` names the feature columns missing in the
        record last yielded (to tell a missing value from an absent column).
    target_type : None, str, int, float or callable
        Type of the label. ``None`` (default) keeps it as the **string** found
        in the file (``"yes"``, ``"1"``); ``float`` / ``int`` convert it
        (``int`` accepts ``"3.0"``); any other callable is applied to the string.
    on_error : {"raise", "skip", "warn"}, default "raise"
        Bad-line policy. ``"raise"`` raises :class:`~streams.StreamError` naming
        the source, the line and the fix; ``"skip"`` skips the line and counts
        it (``n_skipped``, ``skipped``, ``summary()``); ``"warn"`` also emits a
        :class:`~streams.StreamWarning` for each of the first 10 skipped lines.
    encoding, timeout, connect_timeout, max_line_bytes
        Passed to :func:`~streams.open_source` (``timeout`` and
        ``connect_timeout`` only matter for ``tcp://`` sources).

    Returns
    -------
    CSVReader
        Iterable of ``(x, y)``: ``x`` maps column name to ``float`` (``str`` for
        categorical columns), ``y`` is described above. After the header is read
        its ``columns`` attribute holds the column names.

    Notes
    -----
    Values are stripped of surrounding blanks. Blank lines are ignored (they
    are not records). A line is **bad** when it has a different number of
    fields than the header, a numeric column holds something that is not a
    number, or a **non-finite** number (``nan``, ``inf``, ``1e999``: learners
    reject them; list them in ``missing=`` to drop them instead), the label is
    missing, a converter fails, the quoting is malformed (reported at the
    record's first line; an unterminated quote at the line where it opened, and
    with ``on_error="skip"`` the lines it swallowed are read again as records), or the line cannot be decoded or is longer than
    ``max_line_bytes``. Problems with the header itself (no header, an unnamed
    or duplicate column, ``target`` / ``drop`` / ``categorical`` / ``converters``
    naming an unknown column), failing to open the source and network errors
    always raise :class:`~streams.StreamError`, whatever ``on_error``.

    Examples
    --------
    >>> import io
    >>> from streams import read_csv
    >>> data = io.StringIO(
    ...     "age,city,income,label\\n"
    ...     "31,Paris,2.5e3,yes\\n"
    ...     '42,"Rio, BR",,no\\n'          # empty income: left out of x
    ...     "abc,Oslo,1.0,yes\\n")           # bad line (age is not a number)
    >>> reader = read_csv(data, "label", categorical=["city"], on_error="skip")
    >>> for x, y in reader:
    ...     print(x, y)
    {'age': 31.0, 'city': 'Paris', 'income': 2500.0} yes
    {'age': 42.0, 'city': 'Rio, BR'} no
    >>> reader.n_read, reader.n_skipped, reader.skipped
    (2, 1, [(4, "column 'age' = 'abc' is not a number")])
    >>> reader.summary()
    "<stream>: 2 records read, 1 bad line skipped (line 4: column 'age' = 'abc' is not a number)"

    Unlabelled data and a numeric label:

    >>> list(read_csv(io.StringIO("a,b\\n1,2\\n"), has_target=False))
    [({'a': 1.0, 'b': 2.0}, None)]
    >>> list(read_csv(io.StringIO("a,b\\n1,2\\n"), target_type=int))
    [({'a': 1.0}, 2)]

    From a socket (the sender's first line is the header):

    >>> for x, y in read_csv("tcp://127.0.0.1:9000", timeout=60):  # doctest: +SKIP
    ...     model.learn_one(x, y)
    """
    return CSVReader(source, target, has_target=has_target, delimiter=delimiter,
                     quotechar=quotechar, categorical=categorical, drop=drop,
                     converters=converters, missing=missing, target_type=target_type,
                     on_error=on_error, encoding=encoding, timeout=timeout,
                     connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
