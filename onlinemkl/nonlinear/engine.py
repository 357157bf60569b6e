"""Non-linear (polynomial) kernel combinations with KRR (Cortes, Mohri & Rostamizadeh 2009).

The kernel is ``K_mu = (sum_k mu_k K_k)^(o d)`` (Hadamard power, ``d`` in 1..4)
and ``mu`` minimises ``F(mu) = y'(K_mu + n lam I)^-1 y`` over
``M_2 = {mu >= 0 : ||mu - mu_0||_2 <= Lambda}`` (``norm='l2'``) or its l1 version
``M_1`` (``norm='l1'``), by the projected gradient descent of Algorithm 1.

Readings of the paper chosen here:

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
  Iterations stop when ``||mu' - mu|| < epsilon``, when an accepted step lowers ``F`` by less
  than ``tol`` times ``F`` (the iterates converge linearly, so the objective left
  on the table is a small multiple of ``tol``; a tiny leave-one-out ridge otherwise keeps
  ``mu`` creeping for every one of the ``max_iter`` iterations), or after ``max_iter``.
* Each KRR solve is a Cholesky factorisation (the paper's algorithm; ``n``
  is the support-set size).

The faces are :class:`onlinemkl.NonlinearKRRRegressor` and its river adapter.
"""


from __future__ import annotations

import numpy as np

from .._lazy import lazy_module
from .._params import Bool, Choice, Int, Param, Real, Rule, Table
from ..kernels import KERNELS_RULE
from .._window import (LAM_PARAM, RIVER_MINIBATCH_PARAMS, WindowEngine, direct_solve, duplicate_groups,
                       loo_ridge)

_cp = lazy_module("onlinemkl._core.polynomial")

__all__ = ["CortesEngine", "make_engine", "project"]


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


class CortesEngine(WindowEngine):
    """State and steps of Algorithm 1 on a sliding support window (internal; use the estimators).

    State (plain numpy): the window ``Xw, yw``, the kernel weights ``mu`` and
    the dual ``alpha``.  Protocol: see :class:`onlinemkl._window.WindowEngine`.
    """

    _ARRAYS = ("Xw", "yw", "mu", "alpha")
    _LEARNER = "Cortes"

    def __init__(self, kernels, constant, degree, lam, mu0, Lambda, norm, eta, line_search, epsilon, max_iter,
                 budget, standardize=False, tol=0.0, rules=None):
        self._remember_init(locals())
        self._init_window(kernels, constant, budget, standardize, lam, rules)
        self.d = int(degree)
        self.mu0_param = mu0
        self.Lambda = float(Lambda)
        self.norm = norm
        self.eta = float(eta)
        self.line_search = bool(line_search)
        self.epsilon = float(epsilon)
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.mu = np.zeros(0)
        self.alpha = np.zeros(0)
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

    def check_columns(self, n_features):
        super().check_columns(n_features)
        self.mu0(self.base.n_base(n_features))  # raises on a mu0 of the wrong length

    def initial_mu(self, r):
        """``mu_0`` plus ``Lambda`` spread evenly: on the boundary of ``M``."""
        mu0 = self.mu0(r)
        step = self.Lambda / (r if self.norm == "l1" else np.sqrt(r))
        return mu0 + step

    def remap_features(self, mapping, width):
        """New feature columns were inserted: old column ``c`` is now ``mapping[c]`` of ``width``."""
        old_r = self.mu.shape[0]
        self._remap_window(mapping, width)
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
        """Declare ``n_features`` columns (grows, never shrinks); new base kernels start at ``mu_0``."""
        if n_features > self.n_features:
            r_old = self.mu.shape[0]
            self._widen(n_features)
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

    def _learn_batch(self, X, y):
        """Append a (validated) batch to the window and run Algorithm 1 on the window."""
        self._append(X, y)
        self._run()

    def _run(self):
        Zw, yc, _ = self.scaled_window()
        n = Zw.shape[0]
        self._check_kernel_range(Zw, self.d)
        Kb, Fb = self.base.arrays(Zw)
        groups = duplicate_groups(Zw, self.near_copy) if self.lam_auto else None
        r = self.mu.shape[0]
        mu0 = self.mu0(r)
        mu = project(self.mu, mu0, self.Lambda, self.norm)
        U = self.combined(mu, Kb, Fb, n)
        if self.lam_auto and not self.lam > 0:  # first batch: the ridge for the initial combination
            self.lam = loo_ridge(U ** self.d, yc, self.ridge_grid, groups)[0]
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
            small = F - F_new <= self.tol * abs(F)
            mu, U, alpha, F = new, U_new, a_new, F_new
            self.history.append(F)
            if moved < self.epsilon or small:
                break
            g = self.gradient(U, alpha, Kb, Fb)
        self.n_iter_ = it
        if self.lam_auto:  # the ridge by leave-one-out for the learnt combination (used by the next batch too)
            self.lam, alpha, _ = loo_ridge(U ** self.d, yc, self.ridge_grid, groups)
        self.mu, self.alpha = mu, alpha

    def _predict(self, X):
        Zw, _, sc = self.scaled_window()
        X = self.scaled_queries(X, sc)
        a = self.alpha * sc[3]
        if self.base.mode == _cp.MODE_FACTOR:
            return sc[2] + _cp.power_kernel_predict(self.base.factor(X), self.base.factor(Zw), self.mu, self.d, a)
        Uq = np.tensordot(self.mu, self.base.cross(X, Zw), axes=(0, 0))
        return sc[2] + (Uq ** self.d) @ a

    # -- state (the onlinemkl.engine protocol) ------------------------------------------------

    def get_state(self):
        params = {"n_features": int(self.n_features), "lam_": float(self.lam), "step": float(self.step),
                  "n_iter_": int(self.n_iter_)}
        arrays = self._window_arrays()
        self.base.save_ck(params, arrays)
        return params, arrays

    def set_state(self, params, arrays, strict=True):
        """Restore onto an engine built from the same parameters; every shape is checked."""
        need = self._restore_window(params, arrays)
        n_features = int(params["n_features"])
        n, r = arrays["Xw"].shape[0], self.base.n_base(n_features) if n_features else 0  # mu starts with features
        need(arrays["alpha"].shape == (n,), "alpha does not match Xw")
        need(arrays["mu"].shape == (r,) and (not strict or bool(np.all(arrays["mu"] >= 0))),
             f"mu must have {r} non-negative entries")
        self._set_window(params, arrays)
        lam = params.get("lam_", self.lam)
        need(isinstance(lam, (int, float)) and not isinstance(lam, bool) and np.isfinite(lam) and lam >= 0
             and (lam > 0 or self.lam_auto), f"lam_={lam!r} is not a ridge > 0")
        self.lam = float(lam)
        self.step, self.n_iter_ = float(params["step"]), int(params["n_iter_"])


def _check_mu0(name, value):
    if np.ndim(value) == 0:
        return Real(low=0.0).check(name, value)
    m = np.asarray(value, dtype=np.float64)
    if m.ndim != 1 or not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ValueError(f"{name}={value!r}: give a number >= 0 or a 1-D array of finite numbers >= 0")
    return value


#: The parameters of the non-linear KRR learner, for both faces (:mod:`onlinemkl._params`).
PARAMS = Table(
    Param("kernels", KERNELS_RULE, None,
          "Base kernels ``K_k``; None: one linear kernel per input column (plus a constant with\n"
          "``constant=True``: the lower-degree terms, as in the paper)."),
    Param("degree", Int(1, 4), 2, "The Hadamard power ``d`` of the combination ``(sum_k mu_k K_k)^d``."),
    LAM_PARAM,
    Param("mu0", Rule("float >= 0 or array of floats >= 0", _check_mu0), 0.0,
          "Centre of the feasible set of ``mu`` (one number, or one per base kernel)."),
    Param("Lambda", Real(low=0.0, low_open=True), 1.0, "Radius of the feasible set."),
    Param("norm", Choice(("l2", "l1")), "l2", "The feasible set ``M_2`` or ``M_1``."),
    Param("eta", Real(low=0.0, low_open=True), 1.0,
          "Step multiplier (the first step moves ``mu`` by about ``eta * Lambda``)."),
    Param("line_search", Bool(), True, "Halve a step until the objective decreases, and double it after an accepted step."),
    Param("epsilon", Real(low=0.0, low_open=True), 1e-4, "Stop when ``||mu' - mu|| < epsilon``."),
    Param("max_iter", Int(low=0), 20,
          "Iterations of Algorithm 1 per mini-batch.  A batch ``fit`` solves each window once, so it\n"
          "affords more.", fit_default=50),
    Param("budget", Int(low=1, none=True), 200,
          "Support set: the window of the most recent examples (None: every example).  A batch ``fit``\n"
          "feeds mini-batches of ``budget`` rows, warm-starting ``mu``, so a wider window sees more of the\n"
          "data at once.", fit_default=500),
    Param("constant", Bool(), True, "Add a constant base kernel (with ``kernels=None``)."),
    Param("standardize", Bool(), True,
          "The kernels see every input column standardised by the window's mean and standard deviation,\n"
          "the solver the target likewise (predictions are in the target's units); False: inputs as\n"
          "given, target only centred."),
    Param("tol", Real(low=0.0), 1e-4,
          "Also stop when an accepted step lowers the objective ``F`` by less than ``tol`` times ``F``\n"
          "(0: only ``epsilon`` and ``max_iter`` stop): near the optimum ``F`` falls by a nearly constant\n"
          "factor per iteration, so this leaves ``F`` within a small multiple of ``tol`` of the full run's."),
    *RIVER_MINIBATCH_PARAMS,
    Param("random_state", Rule("any", lambda name, value: value), None,
          "Ignored (the learner is deterministic); accepted for the scikit-learn API's symmetry.",
          faces=("sklearn",)),
)


def make_engine(p):
    """The engine of face ``p`` (parameters as attributes), every parameter validated by :data:`PARAMS`."""
    v = PARAMS.validated(p)
    return CortesEngine(p.kernels, v["constant"], v["degree"], p.lam, p.mu0, v["Lambda"], v["norm"], v["eta"],
                        v["line_search"], v["epsilon"], v["max_iter"], v["budget"], v["standardize"], v["tol"])
