"""In-memory arrays and data frames as a stream."""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, Sequence, Tuple

import numpy as np

from ._base import Reader, _BadLine

__all__ = ["iter_array", "ArrayReader"]

_BLOCK = 1024  # rows converted to Python objects at a time


def _is_dataframe(obj: Any) -> bool:
    """pandas.DataFrame (or a subclass) -- detected without importing pandas."""
    return any(cls.__name__ == "DataFrame" and cls.__module__.split(".")[0] == "pandas"
               for cls in type(obj).__mro__)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    return type(value).__name__ in ("NAType", "NaTType")  # pandas.NA / pandas.NaT


class ArrayReader(Reader):
    """Iterable returned by :func:`iter_array` (see there)."""

    _unit = "row"

    def __init__(self, X: Any, y: Any = None, feature_names: Optional[Sequence] = None,
                 *, on_error: str = "raise"):
        super().__init__(on_error=on_error)
        self._frame = None
        self._sparse = None
        self._dense = None
        if _is_dataframe(X):
            if isinstance(y, str):
                if y not in X.columns:
                    raise ValueError(f"y={y!r} is not a column of X")
                X, y = X.drop(columns=[y]), X[y]
            self._frame = X
            n_rows, n_cols = X.shape
            names = list(X.columns)
            self.source_name = "<DataFrame>"
        elif hasattr(X, "tocsr") and hasattr(X, "shape") and not isinstance(X, np.ndarray):
            self._sparse = X.tocsr()
            n_rows, n_cols = self._sparse.shape
            names = list(range(n_cols))
            self.source_name = "<sparse matrix>"
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (rows x features), got shape {X.shape}; "
                                 "use X.reshape(-1, 1) for a single feature")
            self._dense = X
            n_rows, n_cols = X.shape
            names = list(range(n_cols))
            self.source_name = "<array>"
        if feature_names is not None:
            names = list(feature_names)
            if len(names) != n_cols:
                raise ValueError(f"feature_names has {len(names)} names, X has {n_cols} "
                                 "columns")
        if len(set(names)) != len(names):
            raise ValueError(f"feature names must be unique, got {names}")
        if y is not None:
            if isinstance(y, str):
                raise TypeError("y given as a column name needs X to be a pandas DataFrame")
            y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
            if y.ndim == 2 and y.shape[1] == 1:
                y = y[:, 0]
            if y.ndim != 1:
                raise ValueError(f"y must be 1-D, got shape {y.shape}")
            if len(y) != n_rows:
                raise ValueError(f"X has {n_rows} rows but y has {len(y)} values")
        self._y = y
        self._n_rows = n_rows
        #: feature keys, in column order
        self.feature_names = names

    def __len__(self) -> int:
        return self._n_rows

    def _rows(self, start: int, stop: int) -> Iterator[dict]:
        names = self.feature_names
        if self._dense is not None:
            for row in self._dense[start:stop].tolist():
                yield dict(zip(names, row))
        elif self._frame is not None:
            block = self._frame.iloc[start:stop]
            columns = [block.iloc[:, j].to_numpy().tolist() for j in range(len(names))]
            for row in zip(*columns):
                yield dict(zip(names, row))
        else:
            m = self._sparse
            indptr, indices, data = m.indptr, m.indices, m.data
            for i in range(start, stop):
                lo, hi = indptr[i], indptr[i + 1]
                yield {names[j]: v for j, v in zip(indices[lo:hi].tolist(),
                                                    data[lo:hi].tolist())}

    @staticmethod
    def _clean(row: dict) -> dict:
        out = {}
        for key, value in row.items():
            if _is_missing(value):
                continue
            if isinstance(value, float) and math.isinf(value):
                raise _BadLine(f"column {key!r} is {value}",
                               "replace infinite values (e.g. np.nan_to_num) or use NaN "
                               "for missing")
            out[key] = value
        return out

    def _records(self) -> Iterator[Tuple[dict, Any]]:
        y = self._y
        for start in range(0, self._n_rows, _BLOCK):
            stop = min(start + _BLOCK, self._n_rows)
            labels = [None] * (stop - start) if y is None else y[start:stop].tolist()
            for offset, (row, label) in enumerate(zip(self._rows(start, stop), labels)):
                try:
                    x = self._clean(row)
                    if y is not None and (_is_missing(label) or
                                          (isinstance(label, float) and math.isinf(label))):
                        raise _BadLine(f"the label is {label}", "fill in the label")
                except _BadLine as bad:
                    self._bad(start + offset, bad.problem, bad.fix)
                    continue
                yield x, label


def iter_array(X: Any, y: Any = None, feature_names: Optional[Sequence] = None, *,
               on_error: str = "raise") -> ArrayReader:
    """Stream the rows of an array or data frame as ``(x, y)`` pairs.

    Rows are converted to Python objects a block of 1024 at a time, so the
    stream adds no copy of the data (only numpy is needed; pandas objects are
    used through their own methods, pandas is never imported here).

    Parameters
    ----------
    X : array-like (n_rows, n_features), pandas.DataFrame or scipy sparse matrix
        Features. For a sparse matrix only the stored entries are given.
    y : array-like (n_rows,), pandas.Series, str or None
        Labels; ``None`` gives ``y = None`` for every row. With a DataFrame,
        a column name takes the labels from that column (and drops it from x).
    feature_names : sequence, optional
        Keys of ``x``. Default: the DataFrame's column labels, otherwise the
        column numbers ``0, 1, ...`` (as :func:`~streams.read_libsvm` keys).
    on_error : {"raise", "skip", "warn"}, default "raise"
        Policy for bad rows (an infinite value, a missing label). Positions in
        messages and in ``skipped`` are **0-based row indices**.

    Returns
    -------
    ArrayReader
        Iterable of ``(x, y)`` with ``len()``. Values are Python scalars
        (``ndarray.tolist()``: float, int, bool, str ...); NaN / None /
        ``pandas.NA`` are missing and **left out of x**.

    Examples
    --------
    >>> import numpy as np
    >>> from streams import iter_array
    >>> X = np.array([[1.0, 2.0], [np.nan, 4.0]])
    >>> list(iter_array(X, np.array([0, 1]), feature_names=["a", "b"]))
    [({'a': 1.0, 'b': 2.0}, 0), ({'b': 4.0}, 1)]
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": [1.5, 2.5], "city": ["Oslo", "Rio"], "y": [True, False]})
    >>> list(iter_array(df, "y"))
    [({'a': 1.5, 'city': 'Oslo'}, True), ({'a': 2.5, 'city': 'Rio'}, False)]
    """
    return ArrayReader(X, y, feature_names, on_error=on_error)
