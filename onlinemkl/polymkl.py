"""Polynomial-kernel MKL by randomized mirror descent (Afkanpour, Gyorgy, Szepesvari & Bowling 2013).

The array-API face of :class:`onlinemkl.engines.polymkl.PolyMKLEngine`; the
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

from ._validation import store_params
from .engines.polymkl import make_engine, multiplicity  # noqa: F401  (multiplicity: part of the public API)
from .sklearn import MiniBatchRegressor

__all__ = ["PolyMKLRegressor", "multiplicity"]


class PolyMKLRegressor(RegressorMixin, MiniBatchRegressor):
    """Polynomial-kernel MKL regressor: KRR with learnt weights over products of base kernels.

    The active-set solver keeps at most half the window's rows as active kernels (so the kernel
    cannot interpolate the window) and its leave-one-out ridge within the grid's ends relative to
    the kernel's mean eigenvalue.
    Predictions are kept within the window's target range widened by its width on each side
    (``onlinemkl.engines._window.PREDICTION_MARGIN``): room for a trend to continue, none for a fit
    that would extrapolate a polynomial far beyond the targets it was fitted on.

    Parameters
    ----------
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        Base kernels ``kappa_1..kappa_r``.  None: one linear kernel per input
        column plus a constant (``constant=True``), the paper's set-up, with
        fast rank-one algebra.
    degree : int, default 3
        Maximum degree ``D`` of the product kernels.
    rho : float or sequence of degree + 1 floats, default None
        Priors ``rho_d`` per degree (weight ``rho_d^-2``); None: all 1.
    lam : 'auto' or float > 0, default 'auto'
        Ridge parameter for the *mean* squared loss (``alpha = (K + n lam I)^-1 y``).  'auto':
        chosen on every batch by exact leave-one-out error of the kernel ridge regression
        over a grid (one eigendecomposition of the predictor's kernel per batch; the first
        batch also tries the uniform kernel to start the solver); the choice is ``lam_``.
    n_iter : int >= 0, default 200
        Iterations of the stochastic and UCD solvers per (mini-)batch (the active-set solver
        runs rounds until its leave-one-out error stops improving).
    eta : float > 0, default 1.0
        Step multiplier: ``eta_k = eta / (||g||_1 sqrt(n_iter))`` (see the module notes).
    solver : {'active', 'stochastic', 'ucd', 'uniform'}, default 'active'
        'active': an active set of product kernels screened by exact gradient and re-solved
        exactly, the rounds stopped by leave-one-out error (:mod:`onlinemkl.engines._polyactive`;
        with ``kernels`` given it runs as 'stochastic'); 'stochastic': Algorithm 2 + 3;
        uniform coordinate descent over the same index set; or the fixed uniform kernel
        ``(sum_i kappa_i)^D`` (no kernel learning).
    iterate : {'average', 'last'}, default 'average'
        Which iterate of each batch the stochastic and UCD solvers' predictor uses.
    budget : int or None, default 500
        Support set size: the window of the most recent examples.  ``fit``
        feeds the data in mini-batches of ``budget`` rows.
    constant : bool, default True
        With ``kernels=None``: add the constant base kernel.
    tol : float, default 1e-6
        Relative residual at which conjugate gradients stop.
    standardize : bool, default True
        The kernels see every input column standardised by the window's mean and standard
        deviation, and the solver the target standardised likewise (predictions are in the
        target's units); False: inputs as given, target only centred.
    random_state : int or None
        Seed of the sampling.

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

    def __init__(self, kernels=None, degree=3, rho=None, lam="auto", n_iter=200, eta=1.0, solver="active",
                 iterate="average", budget=500, constant=True, tol=1e-6, standardize=True, random_state=None):
        store_params(self, locals())

    def _new_engine(self):
        return make_engine(self, self.random_state)

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
