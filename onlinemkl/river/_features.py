"""Dict examples -> rows of the model's feature space (river's side of the boundary)."""

from __future__ import annotations

import numpy as np

from .._validation import check_feature_value


class FeatureIndex:
    """Maps feature names to columns in order of first appearance.

    A feature missing from an example reads 0 (after a ``StandardScaler`` that
    is the feature's mean).  New features get new columns; stored examples read
    0 there.  Values are validated *before* any new column is registered, so a
    rejected example leaves the index unchanged.
    """

    __slots__ = ("columns",)

    def __init__(self):
        self.columns: dict = {}

    def __len__(self):
        return len(self.columns)

    def lookup(self, name):
        return self.columns.get(name)

    def new_names(self, x: dict) -> list:
        return [k for k in x if k not in self.columns]

    def row(self, x: dict, grow: bool) -> np.ndarray:
        """Validated float64 row of ``x``; with ``grow`` unseen features get columns (else dropped)."""
        values = {k: check_feature_value(k, v) for k, v in x.items()}
        if grow:
            for k in values:
                if k not in self.columns:
                    self.columns[k] = len(self.columns)
        out = np.zeros(len(self.columns))
        cols = self.columns
        for k, v in values.items():
            c = cols.get(k)
            if c is not None:
                out[c] = v
        return out


class LabelIndex:
    """Maps labels (any hashable) to output indices in order of first appearance."""

    __slots__ = ("labels", "index")

    def __init__(self):
        self.labels: list = []
        self.index: dict = {}

    def __len__(self):
        return len(self.labels)

    def known(self, y) -> bool:
        try:
            return y in self.index
        except TypeError:
            raise TypeError(f"label {y!r} is not hashable; labels must be hashable values") from None

    def add(self, y) -> int:
        idx = self.index.get(y)
        if idx is None:
            idx = len(self.labels)
            self.labels.append(y)
            self.index[y] = idx
        return idx
