"""The base of the river mini-batch regressors (PolyMKL and the non-linear KRR).

``learn_one`` buffers examples; every ``batch_size`` examples the buffer is
one mini-batch for the engine (:class:`onlinemkl.PolyMKLRegressor` or
:class:`onlinemkl.NonlinearKRRRegressor`), which warm-starts from the previous
batch.  ``learn_many`` feeds its rows through the same buffer, so
``learn_many`` and a ``learn_one`` loop cut the same mini-batches and learn
the same model.  Predictions use the model of the last completed mini-batch;
examples still in the buffer do not count yet.  Before the first mini-batch
completes, predictions come from what has been seen: the running mean of the
targets, then (from ``MIN_PARTIAL`` buffered examples on) a model fitted on the
partial buffer, refitted each time the buffer doubles (4, 8, 16, ... examples),
so that a stream's first ``batch_size`` predictions are not all 0.
Memory is bounded: the buffer holds at most ``batch_size`` rows and the
support window ``budget`` rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from river import base

from ._validation import FeatureValueError, check_feature_value, check_number, first_out_of_range
from ._river_adapter import EngineAdapter, check_regression_target, upstream_hint

#: Buffered examples from which a model fitted on the partial first mini-batch replaces the running mean.
MIN_PARTIAL = 4


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
        self._y_sum, self._y_count = 0.0, 0  # running mean of the targets (before the first mini-batch)
        self._partial = None  # a model of the partial first mini-batch (derived from the buffer)

    def _link(self):
        super()._link()
        self._engine.column_names = self._features.names

    def _register(self, names):
        mapping = self._features.add(names)
        if mapping is not None:
            self._engine.remap_features(mapping, len(self._features))
            self._engine.column_names = self._features.names
            if self._partial is not None:
                self._fit_partial()  # its columns moved: refit on the same buffered examples

    def _buffer_arrays(self, pending):
        X = np.array([self._features.row(v) for v, _ in pending]).reshape(len(pending), len(self._features))
        return X, np.array([t for _, t in pending], dtype=np.float64)

    def _fit_partial(self):
        """Fit a fresh engine on the first ``2^k`` buffered examples (the largest power of two held), or
        forget it once a mini-batch has completed; a function of the buffer and the feature map, so a
        restored adapter rebuilds the same model."""
        n = len(self._pending)
        if self._engine.n_support or n < MIN_PARTIAL:
            self._partial = None
            return
        k = 1 << (n.bit_length() - 1)
        engine = type(self._engine)(**self._engine._init_args)
        engine.set_lookup(self._features.lookup)
        engine.column_names = self._features.names
        try:
            engine.learn_many(*self._buffer_arrays(self._pending[:k]))
        except ValueError:  # the buffered examples overflow the kernels: keep the running mean
            engine = None
        self._partial = engine

    def _predictor(self):
        """The engine that predicts: the last mini-batch's, else the partial buffer's; None: the running mean."""
        if self._engine.n_support:
            return self._engine
        return self._partial

    # -- input ----------------------------------------------------------------------------------

    def _add(self, values, y):
        """Buffer one validated example; a full buffer is one mini-batch for the engine."""
        self._pending.append((values, y))
        self._y_sum += y
        self._y_count += 1
        n = len(self._pending)
        if n >= self.batch_size:
            X, yv = self._buffer_arrays(self._pending)
            self._pending = []
            self._partial = None
            self._engine.learn_many(X, yv)
        elif not self._engine.n_support and n >= MIN_PARTIAL and n & (n - 1) == 0:
            self._fit_partial()

    def _transaction(self, work):
        """Run ``work()``; on an error, put the whole adapter back as it was and re-raise."""
        saved = self._get_state()
        try:
            work()
        except Exception:
            self._set_state(*saved)
            raise

    def learn_one(self, x, y, **kwargs):
        y = check_regression_target(y)  # finite, and no square overflows (as every feature value)
        with upstream_hint():
            values = self._features.values(x)  # validate before any change

        def work():
            self._register(values)
            self._add(values, y)

        if len(self._pending) + 1 >= self.batch_size:
            self._transaction(work)  # a mini-batch the engine rejects leaves the adapter unchanged
        else:
            work()

    def _frame(self, X, name="X"):
        with upstream_hint():
            return self._checked_frame(X, name)

    def _checked_frame(self, X, name):
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
                raise FeatureValueError(f"{name}: feature {X.columns[c]!r} = {v!r} (row {r}) {why}")
            raise FeatureValueError(f"{name} has a NaN or infinite value in column {X.columns[c]!r} (row {r}); "
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

        def work():
            self._register(cols)
            for i in range(A.shape[0]):
                self._add(dict(zip(cols, A[i].tolist())), float(yv[i]))

        self._transaction(work)

    # -- prediction -----------------------------------------------------------------------------

    def predict_one(self, x, **kwargs):
        with upstream_hint():
            values = self._features.values(x)
        engine = self._predictor()
        if engine is None:
            return self._y_sum / self._y_count if self._y_count else 0.0
        return float(engine.predict_many(self._features.row(values)[None, :])[0])

    def predict_many(self, X):
        A = self._frame(X)
        M = np.zeros((A.shape[0], len(self._features)))
        for i, c in enumerate(X.columns):
            col = self._features.columns.get(c)
            if col is not None:
                M[:, col] = A[:, i]
        engine = self._predictor()
        if engine is None:
            return pd.Series(self._y_sum / self._y_count if self._y_count else 0.0, index=X.index, dtype=float)
        return pd.Series(engine.predict_many(M), index=X.index, dtype=float)

    # -- persistence: the pending mini-batch beside the engine and the feature map ---------------

    def _adapter_state(self):
        pend = np.array([self._features.row(v) for v, _ in self._pending], dtype=np.float64).reshape(
            len(self._pending), len(self._features))  # also when no example is pending
        return ({"y_sum": float(self._y_sum), "y_count": int(self._y_count)},
                {"pending_X": pend, "pending_y": np.array([t for _, t in self._pending], dtype=np.float64)})

    def _restore_adapter(self, state, arrays):
        pend, pend_y = arrays["pending_X"], arrays["pending_y"]
        names = self._features.names
        if pend.shape != (pend_y.shape[0], len(names)) or pend_y.ndim != 1 or pend_y.shape[0] >= self.batch_size:
            raise ValueError("the pending mini-batch does not match the features or batch_size")
        # a missing feature and a stored 0 read the same, so pending rows come back over every name
        self._pending = [(dict(zip(names, pend[i].tolist())), float(pend_y[i])) for i in range(pend.shape[0])]
        y_sum, y_count = state.get("y_sum", float(pend_y.sum())), state.get("y_count", pend_y.shape[0])
        if not isinstance(y_count, int) or y_count < 0 or not np.isfinite(y_sum):
            raise ValueError("the running mean's y_sum / y_count are not a finite number and a count")
        self._y_sum, self._y_count = float(y_sum), int(y_count)
        self._fit_partial()
