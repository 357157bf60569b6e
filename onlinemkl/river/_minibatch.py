"""river mini-batch regressors over the polynomial-kernel MKL solvers.

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

import numbers

import numpy as np
import pandas as pd
from river import base

from .. import nonlinear as _nl
from .. import polymkl as _pm
from .._validation import check_feature_value


def _name_key(name):
    return (type(name).__name__, str(name))


class SortedFeatures:
    """Feature names -> engine columns, kept in sorted name order.

    The engine's columns (and so the numbering of the base kernels, every sum over them and every
    draw of the sampler) do not depend on the order in which features first appeared: shuffled
    dicts and DataFrames with permuted columns give bit-identical models.  A new name is inserted
    at its sorted place and the engine remaps its state (:meth:`register`).
    """

    __slots__ = ("names", "columns")

    def __init__(self):
        self.names: list = []
        self.columns: dict = {}

    def __len__(self):
        return len(self.names)

    def lookup(self, name):
        return self.columns.get(name)

    def register(self, names, engine):
        new = [k for k in dict.fromkeys(names) if k not in self.columns]
        if not new:
            return
        old = self.names
        self.names = sorted(old + new, key=_name_key)
        self.columns = {k: i for i, k in enumerate(self.names)}
        mapping = np.array([self.columns[k] for k in old], dtype=np.int64)
        engine.remap_features(mapping, len(self.names))

    def row(self, values: dict) -> np.ndarray:
        out = np.zeros(len(self.names))
        for k, v in values.items():
            c = self.columns.get(k)
            if c is not None:
                out[c] = v
        return out


class _MiniBatchRiver(base.MiniBatchRegressor):
    """Shared buffering, feature mapping and persistence (mixin)."""

    _estimator_cls: type

    def _setup(self, est_params):
        check = self._estimator_cls(**est_params)
        self._engine = check._new_engine()  # validates every parameter now, not mid-stream
        self._features = SortedFeatures()
        self._engine.base.lookup = self._features.lookup
        self._pending: list = []  # (validated {name: value}, y)

    # -- input ----------------------------------------------------------------------------------

    @staticmethod
    def _check_y(y):
        if isinstance(y, bool) or not isinstance(y, numbers.Real) or not np.isfinite(y):
            raise ValueError(f"y={y!r}: a regression target must be a finite number")
        return float(y)

    def _flush_if_full(self):
        if len(self._pending) < self.batch_size:
            return
        X = np.array([self._features.row(v) for v, _ in self._pending]).reshape(len(self._pending), -1)
        y = np.array([t for _, t in self._pending], dtype=np.float64)
        self._pending = []
        self._engine.learn_batch(X, y)

    def learn_one(self, x, y, **kwargs):
        y = self._check_y(y)
        values = {k: check_feature_value(k, v) for k, v in x.items()}  # validate before any change
        self._features.register(values, self._engine)
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
        if A.size and not np.all(np.isfinite(A)):
            r, c = np.argwhere(~np.isfinite(A))[0]
            raise ValueError(f"{name} has a NaN or infinite value in column {X.columns[c]!r} (row {r}); "
                             "impute or drop it before the learner")
        return A

    def learn_many(self, X, y, **kwargs):
        A = self._frame(X)
        yv = y.to_numpy(dtype=np.float64) if isinstance(y, pd.Series) else np.asarray(y, dtype=np.float64)
        if yv.shape != (A.shape[0],):
            raise ValueError(f"y must hold one target per row of X ({A.shape[0]} rows); got shape {yv.shape}")
        if not np.all(np.isfinite(yv)):
            raise ValueError("y contains NaN or infinite values; drop or impute them")
        cols = list(X.columns)
        self._features.register(cols, self._engine)
        for i in range(A.shape[0]):
            self._pending.append((dict(zip(cols, A[i].tolist())), float(yv[i])))
            self._flush_if_full()

    # -- prediction -----------------------------------------------------------------------------

    def predict_one(self, x, **kwargs):
        values = {k: check_feature_value(k, v) for k, v in x.items()}
        return float(self._engine.predict(self._features.row(values)[None, :])[0])

    def predict_many(self, X):
        A = self._frame(X)
        M = np.zeros((A.shape[0], len(self._features)))
        for i, c in enumerate(X.columns):
            col = self._features.columns.get(c)
            if col is not None:
                M[:, col] = A[:, i]
        return pd.Series(self._engine.predict(M), index=X.index, dtype=float)

    @property
    def n_support_(self):
        return int(self._engine.Xw.shape[0])

    # -- persistence ----------------------------------------------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        Feature names must be JSON-representable (see :mod:`onlinemkl.persist`).  Returns the path.
        """
        from ..persist import save

        return save(self, path)

    def _get_state(self):
        state, arrays = self._engine._get_state()
        pend = np.array([self._features.row(v) for v, _ in self._pending], dtype=np.float64).reshape(
            len(self._pending), len(self._features))  # also when no example is pending
        arrays = dict(arrays, pending_X=pend, pending_y=np.array([t for _, t in self._pending], dtype=np.float64))
        return {"engine": state, "features": list(self._features.names)}, arrays

    def _set_state(self, state, arrays):
        eng_arrays = {k: v for k, v in arrays.items() if not k.startswith("pending_")}
        self._engine._set_state(state["engine"], eng_arrays)
        names = list(state["features"])
        if len(set(names)) != len(names) or names != sorted(names, key=_name_key):
            raise ValueError("the feature names must be unique and sorted")
        if len(names) != self._engine.n_features:
            raise ValueError(f"{len(names)} feature names for {self._engine.n_features} engine features")
        pend, pend_y = arrays["pending_X"], arrays["pending_y"]
        if pend.shape != (pend_y.shape[0], len(names)) or pend_y.ndim != 1 or pend_y.shape[0] >= self.batch_size:
            raise ValueError("the pending mini-batch does not match the features or batch_size")
        self._features.names = names
        self._features.columns = {k: i for i, k in enumerate(names)}
        # a missing feature and a stored 0 read the same, so pending rows come back over every name
        self._pending = [(dict(zip(names, pend[i].tolist())), float(pend_y[i])) for i in range(pend.shape[0])]


class PolyMKLRegressor(_MiniBatchRiver):
    """Polynomial-kernel MKL (Afkanpour et al. 2013) as a river mini-batch regressor.

    Base kernels are one linear kernel per feature (in order of first
    appearance) plus a constant; ``kernels`` may instead list kernels of
    :mod:`onlinemkl.kernels` whose groups are tuples of feature names.  Other
    parameters mean the same as in :class:`onlinemkl.PolyMKLRegressor`
    (``seed`` is its ``random_state``).  Put a ``StandardScaler`` in front.

    Parameters
    ----------
    batch_size
        Examples per mini-batch (``learn_one`` buffers them).
    kernels, degree, rho, lam, n_iter, eta, solver, iterate, budget, constant, tol
        See :class:`onlinemkl.PolyMKLRegressor`.
    seed
        Random seed of the sampling.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import PolyMKLRegressor
    >>> model = preprocessing.StandardScaler() | PolyMKLRegressor(degree=2, n_iter=20, budget=100, seed=0)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    _estimator_cls = _pm.PolyMKLRegressor

    def __init__(self, batch_size: int = 32, kernels: tuple | None = None, degree: int = 3, rho=None,
                 lam: float = 0.1, n_iter: int = 50, eta: float = 1.0, solver: str = "stochastic",
                 iterate: str = "average", budget: int | None = 200, constant: bool = True, tol: float = 1e-6,
                 seed: int | None = None):
        self.batch_size = batch_size
        self.kernels = kernels
        self.degree = degree
        self.rho = rho
        self.lam = lam
        self.n_iter = n_iter
        self.eta = eta
        self.solver = solver
        self.iterate = iterate
        self.budget = budget
        self.constant = constant
        self.tol = tol
        self.seed = seed
        _pm.check_number("batch_size", batch_size, low=1, integer=True)
        self._setup(dict(kernels=kernels, degree=degree, rho=rho, lam=lam, n_iter=n_iter, eta=eta, solver=solver,
                         iterate=iterate, budget=budget, constant=constant, tol=tol, random_state=seed))

    @property
    def _is_stochastic(self):
        return self.seed is None and self.solver != "uniform"

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "n_iter": 10, "budget": 40, "seed": 1}
        yield {"batch_size": 5, "degree": 3, "n_iter": 8, "budget": 30, "solver": "ucd", "iterate": "last",
               "seed": 2}
        yield {"batch_size": 10, "degree": 2, "budget": 30, "solver": "uniform"}


class NonlinearKRRRegressor(_MiniBatchRiver):
    """Non-linear kernel combination KRR (Cortes et al. 2009) as a river mini-batch regressor.

    Parameters mean the same as in :class:`onlinemkl.NonlinearKRRRegressor`;
    ``batch_size`` examples make one mini-batch.  With ``kernels=None`` the
    base kernels are one linear kernel per feature plus a constant; a new
    feature's weight starts at ``mu0``.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import NonlinearKRRRegressor
    >>> model = preprocessing.StandardScaler() | NonlinearKRRRegressor(degree=2, budget=100)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    _estimator_cls = _nl.NonlinearKRRRegressor

    def __init__(self, batch_size: int = 32, kernels: tuple | None = None, degree: int = 2, lam: float = 0.1,
                 mu0: float = 0.0, Lambda: float = 1.0, norm: str = "l2", eta: float = 1.0,
                 line_search: bool = True, epsilon: float = 1e-4, max_iter: int = 20, budget: int | None = 200,
                 constant: bool = True):
        self.batch_size = batch_size
        self.kernels = kernels
        self.degree = degree
        self.lam = lam
        self.mu0 = mu0
        self.Lambda = Lambda
        self.norm = norm
        self.eta = eta
        self.line_search = line_search
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.budget = budget
        self.constant = constant
        _pm.check_number("batch_size", batch_size, low=1, integer=True)
        self._setup(dict(kernels=kernels, degree=degree, lam=lam, mu0=mu0, Lambda=Lambda, norm=norm, eta=eta,
                         line_search=line_search, epsilon=epsilon, max_iter=max_iter, budget=budget,
                         constant=constant))

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "max_iter": 5, "budget": 40}
        yield {"batch_size": 6, "degree": 3, "max_iter": 5, "budget": 30, "norm": "l1", "line_search": False}
