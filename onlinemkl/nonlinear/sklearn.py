"""Non-linear (polynomial) kernel combinations with KRR (Cortes, Mohri & Rostamizadeh 2009).

The array-API face of :class:`onlinemkl.nonlinear.engine.CortesEngine`; the
readings chosen (``lam``, gradient, projection, step size) are the engine
module's.

>>> import numpy as np
>>> from onlinemkl import NonlinearKRRRegressor
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(150, 4))
>>> y = X[:, 0] * X[:, 1] + X[:, 2]
>>> m = NonlinearKRRRegressor(degree=2, lam=1e-3, random_state=0).fit(X[:100], y[:100])
>>> bool(np.mean((m.predict(X[100:]) - y[100:]) ** 2) < 0.1 * np.var(y))
True
"""

from __future__ import annotations

from sklearn.base import RegressorMixin

from .._params import face
from .engine import PARAMS, make_engine, project
from ..sklearn import MiniBatchRegressor

__all__ = ["NonlinearKRRRegressor", "project"]


@face(PARAMS, "sklearn")
class NonlinearKRRRegressor(RegressorMixin, MiniBatchRegressor):
    """KRR with a learnt polynomial combination of kernels (Cortes et al. 2009), as a mini-batch learner.

    Predictions are kept within the window's target range widened by its width on each side
    (``onlinemkl._window.PREDICTION_MARGIN``): room for a trend to continue, none for a fit
    that would extrapolate a polynomial far beyond the targets it was fitted on.

    {parameters}

    Attributes
    ----------
    mu_ : ndarray of shape (n_base_kernels,)
    lam_ : float
        The ridge parameter of the last batch (``lam`` itself unless 'auto').
    objective_ : ndarray
        ``F(mu)`` per accepted iteration of the last batch.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinemkl import NonlinearKRRRegressor
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> m = NonlinearKRRRegressor(degree=2).fit(X, X[:, 0] * X[:, 1])
    >>> m.mu_.shape
    (4,)
    >>> bool(abs(np.linalg.norm(m.mu_) - 1.0) < 1e-9)
    True
    """

    def _new_engine(self):
        return make_engine(self)

    @property
    def mu_(self):
        return self._fitted_engine().mu.copy()

    @property
    def lam_(self):
        return float(self._fitted_engine().lam)

    @property
    def n_iter_(self):
        """Iterations of Algorithm 1 in the last batch."""
        return int(self._fitted_engine().n_iter_)
