"""Non-linear (polynomial) kernel combinations with KRR (Cortes, Mohri & Rostamizadeh 2009).

The array-API face of :class:`onlinemkl.engines.nonlinear.CortesEngine`; the
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

from ._validation import store_params
from .engines.nonlinear import make_engine, project  # noqa: F401  (project: part of the public API)
from .sklearn import MiniBatchRegressor

__all__ = ["NonlinearKRRRegressor", "project"]


class NonlinearKRRRegressor(RegressorMixin, MiniBatchRegressor):
    """KRR with a learnt polynomial combination of kernels (Cortes et al. 2009), as a mini-batch learner.

    Predictions are kept within the window's target range widened by its width on each side
    (``onlinemkl.engines._window.PREDICTION_MARGIN``): room for a trend to continue, none for a fit
    that would extrapolate a polynomial far beyond the targets it was fitted on.

    Parameters
    ----------
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        Base kernels ``K_k``; None: one linear kernel per input column (plus a
        constant, ``constant=True``: lower-degree terms, as in the paper).
    degree : int in 1..4, default 2
        The Hadamard power ``d``.
    lam : 'auto' or float > 0, default 'auto'
        Ridge parameter for the mean squared loss.  'auto': chosen after every batch by exact
        leave-one-out error of the kernel ridge regression with the learnt kernel (one
        eigendecomposition), and used by Algorithm 1 on the next batch (the first batch
        chooses it for the initial combination too); the choice is ``lam_``.
    mu0 : float or array, default 0.0
        Centre of the feasible set.
    Lambda : float > 0, default 1.0
        Radius of the feasible set.
    norm : {'l2', 'l1'}, default 'l2'
        ``M_2`` or ``M_1``.
    eta : float > 0, default 1.0
        Step multiplier (the first step moves ``mu`` by about ``eta * Lambda``).
    line_search : bool, default True
    epsilon : float > 0, default 1e-4
        Stop when ``||mu' - mu|| < epsilon``.
    tol : float >= 0, default 1e-4
        Also stop when an accepted step lowers the objective ``F`` by less than ``tol`` times
        ``F`` (0: only ``epsilon`` and ``max_iter`` stop).  Near the optimum ``F`` falls by a
        nearly constant factor per iteration, so stopping there leaves ``F`` within a small
        multiple of ``tol`` (relative) of the full run's, at a fraction of its KRR solves.
    max_iter : int >= 0, default 50
        Iterations per (mini-)batch.
    budget : int or None, default 500
        Support set: the window of the most recent examples; ``fit`` feeds
        mini-batches of ``budget`` rows, warm-starting ``mu``.
    constant : bool, default True
    standardize : bool, default True
        The kernels see every input column standardised by the window's mean and standard
        deviation, the solver the target likewise (predictions are in the target's units);
        False: inputs as given, target only centred.
    random_state : ignored (deterministic); accepted for API symmetry.

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

    def __init__(self, kernels=None, degree=2, lam="auto", mu0=0.0, Lambda=1.0, norm="l2", eta=1.0,
                 line_search=True, epsilon=1e-4, max_iter=50, budget=500, constant=True, standardize=True,
                 tol=1e-4, random_state=None):
        store_params(self, locals())

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
