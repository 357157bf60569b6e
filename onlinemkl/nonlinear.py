"""Non-linear (polynomial) kernel combinations with KRR (Cortes, Mohri & Rostamizadeh 2009).

The kernel is ``K_mu = (sum_k mu_k K_k)^(o d)`` (Hadamard power, ``d`` in 1..4)
and ``mu`` minimises ``F(mu) = y'(K_mu + n lam I)^-1 y`` over
``M_2 = {mu >= 0 : ||mu - mu_0||_2 <= Lambda}`` (``norm='l2'``) or its l1 version
``M_1`` (``norm='l1'``), by the projected gradient descent of Algorithm 1.

Readings chosen here (see ``ALGORITHMS.md`` section 4):

* ``lam`` is for the *mean* squared loss, as in :mod:`onlinemkl.polymkl`
  (the paper's ``lambda`` is ``n lam``); targets are centred.
* Gradient (Prop. 1, any ``d``): ``dF/dmu_k = -d alpha' (U^(o(d-1)) o K_k) alpha``,
  ``U = sum_r mu_r K_r``, ``alpha = (K_mu + n lam I)^-1 y``.
* Projection (Algorithm 1): clip at zero, then rescale ``mu - mu_0`` to norm
  ``Lambda`` (the optimum lies on the boundary: every gradient component is
  ``<= 0``), then clip again (rescaling can only make a component negative
  when ``mu_0`` has a zero there).
* Step size: ``eta`` times ``Lambda / ||grad F(mu_init)||`` (so ``eta=1``
  first moves ``mu`` by about ``Lambda``); with ``line_search=True`` the step
  is halved until ``F`` decreases and doubled after an accepted step.
  Iterations stop when ``||mu' - mu|| < epsilon`` or after ``max_iter``.
* Each KRR solve is a Cholesky factorisation (the paper's algorithm; ``n``
  is the support-set size).

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

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._core import polymkl as _cp
from ._validation import check_choice, check_number
from .kernels import resolve_group_columns
from .polymkl import BaseKernels, _fit_width, check_targets, check_X, direct_solve

__all__ = ["NonlinearKRRRegressor", "CortesEngine", "project"]


def project(mu, mu0, Lambda, norm):
    """Algorithm 1's projection: clip, rescale ``mu - mu0`` to norm ``Lambda``, clip.

    >>> project(np.array([3.0, 4.0]), np.zeros(2), 1.0, "l2")
    array([0.6, 0.8])
    """
    mu = np.maximum(mu, 0.0)
    diff = mu - mu0
    nrm = np.linalg.norm(diff, 1 if norm == "l1" else 2)
    if nrm > 0:
        mu = mu0 + (Lambda / nrm) * diff
    return np.maximum(mu, 0.0)


class CortesEngine:
    """State and steps of Algorithm 1 on a sliding support window (internal)."""

    def __init__(self, base: BaseKernels, degree, lam, mu0, Lambda, norm, eta, line_search, epsilon, max_iter,
                 budget):
        self.base = base
        self.d = int(degree)
        self.lam = float(lam)
        self.mu0_param = mu0
        self.Lambda = float(Lambda)
        self.norm = norm
        self.eta = float(eta)
        self.line_search = bool(line_search)
        self.epsilon = float(epsilon)
        self.max_iter = int(max_iter)
        self.budget = budget
        self.n_features = 0
        self.Xw = np.zeros((0, 0))
        self.yw = np.zeros(0)
        self.mu = np.zeros(0)
        self.alpha = np.zeros(0)
        self.ybar = 0.0
        self.step = 0.0
        self.history: list = []
        self.n_iter_ = 0

    def mu0(self, r):
        if np.ndim(self.mu0_param) == 0:
            return np.full(r, float(self.mu0_param))
        m = np.asarray(self.mu0_param, dtype=np.float64)
        if m.shape != (r,):
            raise ValueError(f"mu0 has {m.shape[0]} entries but there are {r} base kernels; give one per base kernel")
        return m

    def initial_mu(self, r):
        """``mu_0`` plus ``Lambda`` spread evenly: on the boundary of ``M``."""
        mu0 = self.mu0(r)
        step = self.Lambda / (r if self.norm == "l1" else np.sqrt(r))
        return mu0 + step

    def remap_features(self, mapping, width):
        """New feature columns were inserted: old column ``c`` is now ``mapping[c]`` of ``width``."""
        old_r = self.mu.shape[0]
        Xw = np.zeros((self.Xw.shape[0], width))
        Xw[:, mapping[: self.Xw.shape[1]]] = self.Xw
        self.Xw, self.n_features = Xw, width
        r = self.base.n_base(width)
        if self.base.kernels is None and old_r:
            off = 1 if self.base.constant else 0
            mu = self.mu0(r).copy()
            mu[:off] = self.mu[:off]
            mu[np.asarray(mapping, dtype=np.int64) + off] = self.mu[off:]
            self.mu = mu
        elif not old_r:
            self.mu = self.initial_mu(r)

    def set_features(self, n_features):
        if n_features > self.n_features:
            if self.Xw.shape[0]:
                self.Xw = np.hstack([self.Xw, np.zeros((self.Xw.shape[0], n_features - self.Xw.shape[1]))])
            else:
                self.Xw = np.zeros((0, n_features))
            r_old = self.mu.shape[0]
            self.n_features = n_features
            r = self.base.n_base(n_features)
            if r_old == 0:
                self.mu = self.initial_mu(r)
            elif r > r_old:
                # new base kernels start at mu_0 (the projection of the next step rescales)
                self.mu = np.concatenate([self.mu, self.mu0(r)[r_old:]])

    # -- objective and gradient ------------------------------------------------------------------

    def combined(self, mu, Kb, Fb, n):
        """``U = sum_k mu_k K_k``."""
        if self.base.mode == _cp.MODE_FACTOR:
            return (Fb * mu) @ Fb.T
        return np.tensordot(mu, Kb, axes=(0, 0))

    def solve(self, U, yc):
        """``(alpha, F)`` for ``K_mu = U^(o d)``."""
        n = yc.shape[0]
        K = U ** self.d
        K[np.diag_indices(n)] += n * self.lam
        alpha = direct_solve(K, yc)  # Cholesky; least squares if K is numerically singular
        return alpha, float(yc @ alpha)

    def gradient(self, U, alpha, Kb, Fb):
        r = Kb.shape[0] if self.base.mode == _cp.MODE_DENSE else Fb.shape[1]
        g = np.empty(r)
        Ud = np.ascontiguousarray(U ** (self.d - 1))
        _cp.cortes_gradient(Ud, np.ascontiguousarray(alpha), Kb, Fb, self.base.mode, float(self.d), g)
        return g

    def objective_and_gradient(self, mu, X, y):
        """``F(mu)`` and its gradient on ``(X, y)`` (centred ``y``); for tests and diagnostics."""
        Kb, Fb = self.base.arrays(X)
        U = self.combined(mu, Kb, Fb, X.shape[0])
        alpha, F = self.solve(U, y)
        return F, self.gradient(U, alpha, Kb, Fb)

    # -- learning ----------------------------------------------------------------------------------

    def learn_batch(self, X, y):
        self.set_features(X.shape[1])
        if X.shape[1] < self.n_features:
            X = np.hstack([X, np.zeros((X.shape[0], self.n_features - X.shape[1]))])
        Xw = np.vstack([self.Xw, X])
        yw = np.concatenate([self.yw, y])
        if self.budget is not None and Xw.shape[0] > self.budget:
            Xw, yw = Xw[-self.budget:], yw[-self.budget:]
        self.Xw, self.yw = np.ascontiguousarray(Xw), np.ascontiguousarray(yw)
        self._run()

    def _run(self):
        n = self.Xw.shape[0]
        self.ybar = float(self.yw.mean())
        yc = self.yw - self.ybar
        Kb, Fb = self.base.arrays(self.Xw)
        r = self.mu.shape[0]
        mu0 = self.mu0(r)
        mu = project(self.mu, mu0, self.Lambda, self.norm)
        U = self.combined(mu, Kb, Fb, n)
        alpha, F = self.solve(U, yc)
        self.history = [F]
        g = self.gradient(U, alpha, Kb, Fb)
        if self.step == 0.0:
            gn = float(np.linalg.norm(g))
            self.step = self.eta * self.Lambda / gn if gn > 0 else 0.0
        it = 0
        while it < self.max_iter and self.step > 0:
            it += 1
            eta = self.step
            new = project(mu - eta * g, mu0, self.Lambda, self.norm)
            U_new = self.combined(new, Kb, Fb, n)
            a_new, F_new = self.solve(U_new, yc)
            if self.line_search:
                tries = 0
                while F_new > F and tries < 30:
                    eta *= 0.5
                    new = project(mu - eta * g, mu0, self.Lambda, self.norm)
                    U_new = self.combined(new, Kb, Fb, n)
                    a_new, F_new = self.solve(U_new, yc)
                    tries += 1
                self.step = 2.0 * eta if tries == 0 else eta
            moved = float(np.linalg.norm(new - mu))
            if self.line_search and F_new > F:
                break  # no decrease along the projected path: stationary within round-off
            mu, U, alpha, F = new, U_new, a_new, F_new
            self.history.append(F)
            if moved < self.epsilon:
                break
            g = self.gradient(U, alpha, Kb, Fb)
        self.n_iter_ = it
        self.mu, self.alpha = mu, alpha

    def predict(self, X):
        if self.Xw.shape[0] == 0:
            return np.zeros(X.shape[0])
        X = _fit_width(X, self.n_features)
        if self.base.mode == _cp.MODE_FACTOR:
            return self.ybar + _cp.power_kernel_predict(self.base.factor(X), self.base.factor(self.Xw), self.mu,
                                                        self.d, self.alpha)
        else:
            Uq = np.tensordot(self.mu, self.base.cross(X, self.Xw), axes=(0, 0))
        return self.ybar + (Uq ** self.d) @ self.alpha

    # -- persistence ----------------------------------------------------------------------------

    _ARRAYS = ("Xw", "yw", "mu", "alpha")

    def _get_state(self):
        state = {"n_features": int(self.n_features), "ybar": float(self.ybar), "step": float(self.step),
                 "n_iter_": int(self.n_iter_)}
        arrays = {name: getattr(self, name).copy() for name in self._ARRAYS}
        self.base.save_ck(state, arrays)
        return state, arrays

    def _set_state(self, state, arrays):
        for name in self._ARRAYS:
            if name not in arrays:
                raise ValueError(f"the saved state lacks the array {name!r}")
        nf = int(state["n_features"])
        Xw = arrays["Xw"]
        n = Xw.shape[0] if Xw.ndim == 2 else -1
        r = self.base.n_base(nf)
        if Xw.ndim != 2 or Xw.shape[1] != nf:
            raise ValueError(f"inconsistent Cortes state: Xw has shape {Xw.shape} for {nf} features")
        if arrays["yw"].shape != (n,) or arrays["alpha"].shape != (n,):
            raise ValueError("inconsistent Cortes state: yw / alpha do not match Xw")
        if arrays["mu"].shape != (r,) or not np.all(arrays["mu"] >= 0):
            raise ValueError(f"inconsistent Cortes state: mu must have {r} non-negative entries")
        if self.budget is not None and n > self.budget:
            raise ValueError(f"inconsistent Cortes state: {n} rows exceed budget={self.budget}")
        for name in self._ARRAYS:
            setattr(self, name, np.ascontiguousarray(arrays[name]))
        self.n_features = nf
        self.ybar, self.step, self.n_iter_ = float(state["ybar"]), float(state["step"]), int(state["n_iter_"])
        self.base.restore_ck(state, arrays, "Cortes")


class NonlinearKRRRegressor(RegressorMixin, BaseEstimator):
    """KRR with a learnt polynomial combination of kernels (Cortes et al. 2009), as a mini-batch learner.

    Parameters
    ----------
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        Base kernels ``K_k``; None: one linear kernel per input column (plus a
        constant, ``constant=True``: lower-degree terms, as in the paper).
    degree : int in 1..4, default 2
        The Hadamard power ``d``.
    lam : float > 0, default 0.1
        Ridge parameter for the mean squared loss.
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
    max_iter : int >= 0, default 50
        Iterations per (mini-)batch.
    budget : int or None, default 500
        Support set: the window of the most recent examples; ``fit`` feeds
        mini-batches of ``budget`` rows, warm-starting ``mu``.
    constant : bool, default True
    random_state : ignored (deterministic); accepted for API symmetry.

    Attributes
    ----------
    mu_ : ndarray of shape (n_base_kernels,)
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

    def __init__(self, kernels=None, degree=2, lam=0.1, mu0=0.0, Lambda=1.0, norm="l2", eta=1.0,
                 line_search=True, epsilon=1e-4, max_iter=50, budget=500, constant=True, random_state=None):
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
        self.random_state = random_state

    def _new_engine(self):
        d = check_number("degree", self.degree, low=1, high=4, integer=True)
        check_number("lam", self.lam, low=0.0, low_open=True)
        if np.ndim(self.mu0) == 0:
            check_number("mu0", self.mu0, low=0.0)
        else:
            m = np.asarray(self.mu0, dtype=np.float64)
            if m.ndim != 1 or not np.all(np.isfinite(m)) or np.any(m < 0):
                raise ValueError(f"mu0={self.mu0!r}: give a number >= 0 or a 1-D array of finite numbers >= 0")
        check_number("Lambda", self.Lambda, low=0.0, low_open=True)
        check_choice("norm", self.norm, ("l2", "l1"))
        check_number("eta", self.eta, low=0.0, low_open=True)
        if not isinstance(self.line_search, (bool, np.bool_)):
            raise TypeError(f"line_search={self.line_search!r}: expected True or False")
        check_number("epsilon", self.epsilon, low=0.0, low_open=True)
        check_number("max_iter", self.max_iter, low=0, integer=True)
        check_number("budget", self.budget, low=1, integer=True, allow_none=True)
        if not isinstance(self.constant, (bool, np.bool_)):
            raise TypeError(f"constant={self.constant!r}: expected True or False")
        base = BaseKernels(self.kernels, self.constant)
        return CortesEngine(base, d, self.lam, self.mu0, self.Lambda, self.norm, self.eta, self.line_search,
                            self.epsilon, self.max_iter, self.budget)

    def _prepare(self, engine, X):
        if engine.base.kernels is not None:
            resolve_group_columns(engine.base.ck.groups, X.shape[1])
        engine.mu0(engine.base.n_base(X.shape[1]))  # raises on a mu0 of the wrong length

    def fit(self, X, y):
        """Learn from scratch: mini-batches of ``budget`` rows in order."""
        engine = self._new_engine()
        X = check_X(X)
        y = check_targets(y, X.shape[0])
        self._prepare(engine, X)
        step = X.shape[0] if self.budget is None else self.budget
        for start in range(0, X.shape[0], step):
            engine.learn_batch(X[start:start + step], y[start:start + step])
        self._engine, self.n_features_in_ = engine, X.shape[1]
        return self

    def partial_fit(self, X, y):
        """Learn from one mini-batch, warm-starting ``mu`` and the step.  A rejected batch changes nothing."""
        first = not hasattr(self, "_engine")
        X = check_X(X, n_features=None if first else self.n_features_in_, owner=type(self).__name__)
        y = check_targets(y, X.shape[0])
        if first:
            engine = self._new_engine()
            self._prepare(engine, X)
        else:
            engine = self._engine
        engine.learn_batch(X, y)
        self._engine, self.n_features_in_ = engine, X.shape[1]
        return self

    def predict(self, X):
        check_is_fitted(self, "_engine")
        X = check_X(X, n_features=self.n_features_in_, owner=type(self).__name__)
        return self._engine.predict(X)

    @property
    def mu_(self):
        check_is_fitted(self, "_engine")
        return self._engine.mu.copy()

    @property
    def objective_(self):
        check_is_fitted(self, "_engine")
        return np.asarray(self._engine.history)

    @property
    def n_support_(self):
        check_is_fitted(self, "_engine")
        return int(self._engine.Xw.shape[0])

    @property
    def n_iter_(self):
        """Iterations of Algorithm 1 in the last batch."""
        check_is_fitted(self, "_engine")
        return int(self._engine.n_iter_)

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it."""
        from .persist import save

        return save(self, path)

    def _get_state(self):
        if not hasattr(self, "_engine"):
            return {"fitted": False}, {}
        state, arrays = self._engine._get_state()
        return {"fitted": True, "engine": state, "n_features_in_": int(self.n_features_in_)}, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
        engine = self._new_engine()
        engine._set_state(state["engine"], arrays)
        if int(state["n_features_in_"]) != engine.n_features:
            raise ValueError(f"n_features_in_={state['n_features_in_']} but the engine has {engine.n_features}")
        self._engine, self.n_features_in_ = engine, engine.n_features
