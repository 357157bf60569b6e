"""Lazy, constant-memory readers that turn data into ``(x: dict, y)`` pairs (sequences into ``(xs, ys)``).

The pairs are what online learners consume one at a time
(``model.learn_one(x, y)``). Every reader returns a :class:`Reader`: an
iterable that reads its source only as far as you iterate, and counts what it
read and skipped.

Readers
-------
read_csv(source, target=None, ...)
    CSV with a header row; the target defaults to the last column.
read_libsvm(source, zero_based=False, ...)
    LIBSVM / svmlight ``label idx:val ...`` lines; int keys from 0.
read_jsonl(source, target="y", features="x", ...)
    One JSON object per line, ``{"x": {...}, "y": ...}`` or flat.
read_conll(source, drop=(), ...)
    CoNLL-style sequences: one token per line (numeric feature columns, the
    label last), a blank line between sequences; ``(xs, ys)`` per sequence.
iter_array(X, y=None, feature_names=None)
    numpy arrays, pandas DataFrame/Series, scipy sparse matrices.

Sources (line-based readers)
----------------------------
A path (``str`` or ``pathlib.Path``; ``.gz`` / ``.bz2`` / ``.xz`` decompressed
by suffix), ``"-"`` for standard input, an open text or binary file object,
an iterable of lines, or ``"tcp://host:port"`` (newline framed text from a
socket, with connect / read timeouts and a ``max_line_bytes`` guard). All go
through :func:`open_source`, which yields ``(line_no, line)``.

Bad lines
---------
``on_error="raise"`` (default) raises :class:`StreamError` (a ``ValueError``)
naming the source, the 1-based line number, the problem and the fix;
``"skip"`` skips and counts (``reader.n_skipped``, ``reader.skipped`` holds the
first 10 ``(line_no, reason)``, ``reader.summary()``); ``"warn"`` also emits a
:class:`StreamWarning` for each of the first 10. Missing values (empty CSV
fields, JSON ``null``, NaN in arrays) are left out of ``x`` (the CSV and JSON-lines
readers' ``last_missing`` names them for the record last yielded); non-finite
numbers in files are bad lines. ``read_csv(delimiter=None)`` sniffs the delimiter
and ``read_libsvm(zero_based="auto")`` the index base from the first lines.

This package depends only on the standard library and numpy; it does not
import ``onlinemkl``.

Examples
--------
>>> import io
>>> from streams import read_csv
>>> for x, y in read_csv(io.StringIO("a,b,y\\n1,2,yes\\n3,,no\\n")):
...     print(x, y)
{'a': 1.0, 'b': 2.0} yes
{'a': 3.0} no
"""

from ._array import ArrayReader, iter_array
from ._base import LineReader, Reader
from ._conll import DEFAULT_MAX_SEQUENCE_LENGTH, MAX_SEQUENCE_VALUES, CoNLLReader, read_conll
from ._csv import SNIFF_DELIMITERS, SNIFF_LINES, CSVReader, read_csv, sniff_delimiter
from ._errors import StreamError, StreamWarning
from ._jsonl import JSONLReader, read_jsonl
from ._libsvm import LibSVMReader, read_libsvm
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT, open_source

__all__ = [
    "read_csv",
    "sniff_delimiter",
    "SNIFF_DELIMITERS",
    "SNIFF_LINES",
    "read_libsvm",
    "read_jsonl",
    "read_conll",
    "iter_array",
    "open_source",
    "StreamError",
    "StreamWarning",
    "Reader",
    "LineReader",
    "CSVReader",
    "LibSVMReader",
    "JSONLReader",
    "CoNLLReader",
    "ArrayReader",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_SEQUENCE_LENGTH",
    "MAX_SEQUENCE_VALUES",
]
