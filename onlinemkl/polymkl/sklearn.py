"""Polynomial-kernel MKL by randomized mirror descent (Afkanpour, Gyorgy, Szepesvari & Bowling 2013).

The array-API face of :class:`onlinemkl.polymkl.engine.PolyMKLEngine`; the
conventions (index set, objective, step size, dual re-solves, reported
iterate, mini-batches) are the engine module's.

>>> import numpy as np
>>> from onlinemkl import PolyMKLRegressor
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(200, 5))
>>> y = X[:, 0] * X[:, 1] + X[:, 2] ** 3
>>> model = PolyMKLRegressor(degree=3, lam=1e-3, n_iter=100, random_state=0).fit(X[:150], y[:150])
>>> bool(np.mean((model.predict(X[150:]) - y[150:]) ** 2) < 0.1 * np.var(y))
True
"""

from __future__ import annotations

from sklearn.base import RegressorMixin

from .._params import face
from .engine import PARAMS, make_engine, multiplicity
from ..sklearn import MiniBatchRegressor

__all__ = ["PolyMKLRegressor", "multiplicity"]


@face(PARAMS, "sklearn")
class PolyMKLRegressor(RegressorMixin, MiniBatchRegressor):
    """Polynomial-kernel MKL regressor: KRR with learnt weights over products of base kernels.

    The active-set solver keeps at most half the window's rows as active kernels (so the kernel
    cannot interpolate the window) and its leave-one-out ridge within the grid's ends relative to
    the kernel's mean eigenvalue.
    Predictions are kept within the window's target range widened by its width on each side
    (``onlinemkl._window.PREDICTION_MARGIN``): room for a trend to continue, none for a fit
    that would extrapolate a polynomial far beyond the targets it was fitted on.

    {parameters}

    Attributes
    ----------
    multi_indices_ : list of tuples
        The visited product kernels (sorted tuples of base-kernel indices;
        with ``kernels=None`` index 0 is the constant and ``j + 1`` is column ``j``).
    theta_ : ndarray
        The predictor's weight of each visited product kernel.
    lam_ : float
        The ridge parameter of the last batch (``lam`` itself unless 'auto').
    objective_ : ndarray
        ``J(theta_k)`` after each iteration (active set: each round) of the last batch.
    n_support_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from onlinemkl import PolyMKLRegressor
    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(-1, 1, size=(120, 4))
    >>> y = 2 * X[:, 0] * X[:, 3]
    >>> model = PolyMKLRegressor(degree=2, n_iter=50, random_state=0).fit(X, y)
    >>> (0, 1, 4) in model.multi_indices_ or (1, 4) in model.multi_indices_
    True
    """

    def _new_engine(self):
        return make_engine(self, "sklearn")

    @property
    def multi_indices_(self):
        return [tuple(int(v) for v in row if v >= 0) for row in self._fitted_engine().Z]

    @property
    def theta_(self):
        return self._fitted_engine().theta_pred.copy()

    @property
    def lam_(self):
        return float(self._fitted_engine().lam)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None and self.solver != "uniform"
        # UCD is the paper's slow baseline: a few uniform coordinate steps over thousands of kernels fit poorly
        tags.regressor_tags.poor_score = self.solver == "ucd"
        return tags
