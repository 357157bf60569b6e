"""JSON Lines reader."""

from __future__ import annotations

import json
import math
from typing import Any, Optional

from ._base import LineReader, _BadLine
from ._source import DEFAULT_MAX_LINE_BYTES, DEFAULT_TIMEOUT

__all__ = ["read_jsonl", "JSONLReader"]

_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}


def _feature(key: Any, value: Any):
    """JSON value -> feature value; ``None`` means missing."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:
            out = math.inf
        if not math.isfinite(out):
            raise _BadLine(f"feature {key!r} = {value!r} is not a finite number",
                           "replace it with a finite number or null (missing)")
        return out
    raise _BadLine(f"feature {key!r} is {_JSON_TYPES.get(type(value), 'not a scalar')}",
                   "flatten nested values into separate features")


class JSONLReader(LineReader):
    """Iterable returned by :func:`read_jsonl` (see there)."""

    def __init__(self, source: Any, *, target: str = "y", features: Optional[str] = "x",
                 has_target: bool = True, on_error: str = "raise", encoding: str = "utf-8",
                 timeout: float | None = DEFAULT_TIMEOUT,
                 connect_timeout: float | None = DEFAULT_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        super().__init__(source, on_error=on_error, encoding=encoding, timeout=timeout,
                         connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
        if has_target and not isinstance(target, str):
            raise TypeError(f"target must be a key name (str), got {target!r}")
        self.target = target
        self.features = features
        self.has_target = has_target
        #: the keys of the record last yielded whose value was ``null`` (left out of x)
        self.last_missing: tuple = ()

    def _parse(self, text: str):
        if not text.strip():
            return None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _BadLine(f"not valid JSON ({exc.msg} at column {exc.colno})",
                           "fix the line (each line must hold one complete JSON "
                           "object)") from None
        except RecursionError:
            raise _BadLine("JSON nested too deeply", "flatten the record") from None
        if not isinstance(obj, dict):
            raise _BadLine(f"the line is {_JSON_TYPES.get(type(obj), 'not an object')}, "
                           "not a JSON object", 'write one object per line, e.g. '
                           '{"x": {"a": 1}, "y": 0}')
        target, feats = self.target, self.features
        nested = feats is not None and isinstance(obj.get(feats), (dict, list))
        if self.has_target:
            if target not in obj:
                raise _BadLine(f"no {target!r} key (the label)",
                               "add the label, pass target= with the right key, or "
                               "has_target=False for unlabelled data")
            y = obj[target]
            if y is None or isinstance(y, (dict, list)):
                raise _BadLine(f"the label {target!r} is {_JSON_TYPES[type(y)]}",
                               "give a number, string or boolean label")
            if isinstance(y, float) and not math.isfinite(y):
                raise _BadLine(f"the label {target!r} = {y!r} is not a finite number",
                               "fix the label")
        else:
            y = None
        if nested:
            raw = obj[feats]
            items = enumerate(raw) if isinstance(raw, list) else raw.items()
        elif self.has_target:
            items = ((k, v) for k, v in obj.items() if k != target)
        else:
            items = obj.items()
        x = {}
        absent = []
        for key, value in items:
            value = _feature(key, value)
            if value is not None:
                x[key] = value
            else:
                absent.append(key)
        self.last_missing = tuple(absent)
        return x, y


def read_jsonl(source: Any, *, target: str = "y", features: Optional[str] = "x",
               has_target: bool = True, on_error: str = "raise", encoding: str = "utf-8",
               timeout: float | None = DEFAULT_TIMEOUT,
               connect_timeout: float | None = DEFAULT_TIMEOUT,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> JSONLReader:
    """Lazily read ``(x, y)`` pairs from JSON Lines (one JSON object per line).

    Two forms are accepted, line by line (they may be mixed):

    * **nested**: ``{"x": {"a": 1, "b": "red"}, "y": 0}`` -- the object under
      ``features`` holds the features (other keys besides ``features`` and
      ``target``, e.g. an id, are ignored). ``"x"`` may also be an array
      ``[1.5, 2]``: keys are then the positions ``0, 1, ...``;
    * **flat**: ``{"a": 1, "b": "red", "y": 0}`` -- every key except ``target``
      is a feature. Used whenever ``features`` is not a key of the line holding
      an object or array (or when ``features=None``).

    Parameters
    ----------
    source : str, os.PathLike, file object or iterable of lines
        A path (``.gz``, ``.bz2``, ``.xz`` decompressed by suffix), ``"-"`` for
        standard input, ``"tcp://host:port"``, or an open text or binary file
        object. See :func:`~streams.open_source`.
    target : str, default "y"
        Key of the label.
    features : str or None, default "x"
        Key of the nested feature object; ``None`` accepts the flat form only.
    has_target : bool, default True
        ``False`` for unlabelled input: ``y`` is ``None``, a ``target`` key is
        not required, and in the flat form *every* key is a feature.
    on_error : {"raise", "skip", "warn"}, default "raise"
        Bad-line policy, as in :func:`~streams.read_csv`.
    encoding, timeout, connect_timeout, max_line_bytes
        Passed to :func:`~streams.open_source`.

    Returns
    -------
    JSONLReader
        Iterable of ``(x, y)``. Feature values: JSON numbers become ``float``,
        ``true`` / ``false`` become ``1.0`` / ``0.0``, strings are kept as
        ``str`` (categorical, river's convention), ``null`` means missing and
        the key is **left out** (the reader's ``last_missing`` names such keys of
        the record last yielded). The label is returned as JSON typed it (``int``,
        ``float``, ``str`` or ``bool``).

    Notes
    -----
    Blank lines are ignored. Bad lines: invalid JSON, a line that is not an
    object, a missing or ``null`` label (when ``has_target``), a nested
    object/array as a feature value, and non-finite numbers (``NaN``,
    ``Infinity``, ``1e999``) as a feature or label.

    Examples
    --------
    >>> import io
    >>> from streams import read_jsonl
    >>> data = io.StringIO(
    ...     '{"x": {"a": 1, "color": "red"}, "y": true}\\n'
    ...     '{"a": 2.5, "b": null, "y": false}\\n'        # flat form, b missing
    ...     '{"x": [0.5, 1], "y": "cat", "id": 7}\\n'    # array features
    ...     '{"x": {"a": 1}}\\n')                        # bad: no label
    >>> reader = read_jsonl(data, on_error="skip")
    >>> for x, y in reader:
    ...     print(x, y)
    {'a': 1.0, 'color': 'red'} True
    {'a': 2.5} False
    {0: 0.5, 1: 1.0} cat
    >>> reader.skipped
    [(4, "no 'y' key (the label)")]

    >>> for x, y in read_jsonl("tcp://127.0.0.1:9000"):  # doctest: +SKIP
    ...     model.learn_one(x, y)
    """
    return JSONLReader(source, target=target, features=features, has_target=has_target,
                       on_error=on_error, encoding=encoding, timeout=timeout,
                       connect_timeout=connect_timeout, max_line_bytes=max_line_bytes)
