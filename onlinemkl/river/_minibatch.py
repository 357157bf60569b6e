"""The base of the river mini-batch regressors (PolyMKL and the non-linear KRR).

``learn_one`` buffers examples; every ``batch_size`` examples the buffer is
one mini-batch for the engine (:class:`onlinemkl.PolyMKLRegressor` or
:class:`onlinemkl.NonlinearKRRRegressor`), which warm-starts from the previous
batch.  ``learn_many`` feeds its rows through the same buffer, so
``learn_many`` and a ``learn_one`` loop cut the same mini-batches and learn
the same model.  Predictions use the model of the last completed mini-batch
(0.0 before the first one); examples still in the buffer do not count yet.
Memory is bounded: the buffer holds at most ``batch_size`` rows and the
support window ``budget`` rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from river import base

from .._validation import check_feature_value, check_number, first_out_of_range
from ._base import EngineAdapter, check_regression_target


class _MiniBatchRiver(EngineAdapter, base.MiniBatchRegressor):
    """Shared buffering, feature mapping and persistence (mixin).

    Features are numbered in sorted name order (``FeatureMap(ordered='sorted')``): the
    engine's columns, and with them the numbering of the base kernels, every sum over them
    and every draw of the sampler, do not depend on the order in which features first
    appeared, so shuffled dicts and DataFrames with permuted columns give bit-identical models.
    """

    def _setup(self, engine):
        check_number("batch_size", self.batch_size, low=1, integer=True)
        self._attach(engine, self._feature_map(ordered="sorted"))
        self._pending: list = []  # (validated {name: value}, y)

    def _register(self, names):
        mapping = self._features.add(names)
        if mapping is not None:
            self._engine.remap_features(mapping, len(self._features))

    # -- input ----------------------------------------------------------------------------------

    def _flush_if_full(self):
        if len(self._pending) < self.batch_size:
            return
        X = np.array([self._features.row(v) for v, _ in self._pending]).reshape(len(self._pending), -1)
        y = np.array([t for _, t in self._pending], dtype=np.float64)
        self._pending = []
        self._engine.learn_many(X, y)

    def learn_one(self, x, y, **kwargs):
        y = check_regression_target(y)
        values = self._features.values(x)  # validate before any change
        self._register(values)
        self._pending.append((values, y))
        self._flush_if_full()

    def _frame(self, X, name="X"):
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame; got {type(X).__name__}")
        try:
            A = X.to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            for col in X.columns:
                for v in X[col]:
                    check_feature_value(col, v)
            raise
        found = first_out_of_range(A) if A.size else None
        if found is not None:
            (r, c), v, why = found
            if math.isfinite(v):
                raise ValueError(f"{name}: feature {X.columns[c]!r} = {v!r} (row {r}) {why}")
            raise ValueError(f"{name} has a NaN or infinite value in column {X.columns[c]!r} (row {r}); "
                             "impute or drop it before the learner")
        return A

    def learn_many(self, X, y, **kwargs):
        A = self._frame(X)
        yv = y.to_numpy(dtype=np.float64) if isinstance(y, pd.Series) else np.asarray(y, dtype=np.float64)
        if yv.shape != (A.shape[0],):
            raise ValueError(f"y must hold one target per row of X ({A.shape[0]} rows); got shape {yv.shape}")
        found = first_out_of_range(yv)
        if found is not None:
            (i,), v, why = found
            if math.isfinite(v):
                raise ValueError(f"y[{i}] = {v!r} {why}")
            raise ValueError("y contains NaN or infinite values; drop or impute them")
        cols = list(X.columns)
        self._register(cols)
        for i in range(A.shape[0]):
            self._pending.append((dict(zip(cols, A[i].tolist())), float(yv[i])))
            self._flush_if_full()

    # -- prediction -----------------------------------------------------------------------------

    def predict_one(self, x, **kwargs):
        values = self._features.values(x)
        return float(self._engine.predict_many(self._features.row(values)[None, :])[0])

    def predict_many(self, X):
        A = self._frame(X)
        M = np.zeros((A.shape[0], len(self._features)))
        for i, c in enumerate(X.columns):
            col = self._features.columns.get(c)
            if col is not None:
                M[:, col] = A[:, i]
        return pd.Series(self._engine.predict_many(M), index=X.index, dtype=float)

    # -- persistence: the pending mini-batch beside the engine and the feature map ---------------

    def _adapter_state(self):
        pend = np.array([self._features.row(v) for v, _ in self._pending], dtype=np.float64).reshape(
            len(self._pending), len(self._features))  # also when no example is pending
        return {}, {"pending_X": pend, "pending_y": np.array([t for _, t in self._pending], dtype=np.float64)}

    def _restore_adapter(self, state, arrays):
        pend, pend_y = arrays["pending_X"], arrays["pending_y"]
        names = self._features.names
        if pend.shape != (pend_y.shape[0], len(names)) or pend_y.ndim != 1 or pend_y.shape[0] >= self.batch_size:
            raise ValueError("the pending mini-batch does not match the features or batch_size")
        # a missing feature and a stored 0 read the same, so pending rows come back over every name
        self._pending = [(dict(zip(names, pend[i].tolist())), float(pend_y[i])) for i in range(pend.shape[0])]
