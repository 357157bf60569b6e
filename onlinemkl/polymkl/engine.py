"""Polynomial-kernel MKL by randomized mirror descent (Afkanpour, Gyorgy, Szepesvari & Bowling 2013).

The kernel family is every product of at most ``D`` base kernels ``kappa_1..kappa_r``
(by default one linear kernel per input variable plus a constant, the paper's
set-up).  :class:`PolyMKLRegressor` learns non-negative weights ``theta`` over
this exponentially large family with Algorithm 2 (importance-sampled
coordinate steps, projection onto the positive part of the unit l2 ball) and
Algorithm 3 (sampling a multi-index in ``O(r n^2 D)`` with Hadamard powers of
``S = sum_j K_j``).  ``solver='active'`` (the default) minimises the same objective
over an active set of kernels screened by exact gradient (:mod:`._active`),
``solver='ucd'`` is the uniform coordinate descent baseline over the same index
set and ``solver='uniform'`` is the fixed kernel ``(sum_i kappa_i)^D``.

Conventions (the readings of the paper this module chose):

* **Index set.**  A kernel is a *multiset* ``m`` of base kernels (permutations
  are one kernel), stored canonically as a sorted tuple; only visited
  multisets are stored.  Multiset ``m`` of degree ``d`` carries the prior
  weight ``c(m) rho_d^-2`` with ``c(m) = d! / prod(multiplicities!)`` its
  number of orderings: this is the paper's ordered-tuple index set with the
  orderings of one multiset merged, so that uniform weights give exactly
  ``(sum_i kappa_i)^D`` and Algorithm 3 samples multisets with probability
  ``|g_m| / ||g||_1`` exactly.
* **Objective and lambda.**  Mean squared loss:
  ``J(theta) = min_w 1/(2n) sum_t (y_t - f(x_t))^2 + lam/2 sum_m ||w_m||^2 / (c(m) rho_d^-2 theta_m)``
  ``= lam/2 y'(K_theta + n lam I)^-1 y`` with ``K_theta = sum_m theta_m c(m) rho_d^-2 K_m``;
  the dual is ``alpha = (K_theta + n lam I)^-1 y`` and ``dJ/dtheta_m = -lam/2 c(m) rho_d^-2 alpha' K_m alpha``.
  Targets are centred on the support set's mean (the intercept is not penalised).
* **Step size.**  ``eta_k = eta / (C_ref sqrt(T))``: the paper's ``1/sqrt(B T)``
  (Corollary 3.3) with ``sqrt(B)`` estimated by ``C_ref = ||g||_1`` at the
  start of the batch (the gradient estimate ``-C e_I`` has l2 norm ``C``).
  ``eta`` is a dimensionless multiplier.
* **Dual re-solve.**  One coordinate step changes ``K_theta`` by a scaled
  product kernel (updated in place, ``O(n^2)``); ``alpha`` is re-solved by
  conjugate gradients warm-started from the previous ``alpha``, so a step
  costs a few ``O(n^2)`` products instead of an ``O(n^3)`` factorisation.
  Only when CG has not converged after ``n`` iterations (an ill-conditioned
  system: tiny ``lam`` or unscaled inputs, where floating-point CG stalls)
  does it fall back to a direct solve.
* **Reported iterate.**  ``iterate='average'`` (default): the predictor uses
  the average of the batch's iterates, which Theorem 3.1 / Corollary 3.3
  bound (``J`` is convex in ``theta``); it costs nothing in sparsity because
  the iterates never drop a visited index (the projection only rescales).
  The chain itself continues from the last iterate.  ``iterate='last'`` uses
  the last iterate.
* **Mini-batches and the support set.**  The predictor is KRR over a
  sliding window of the ``budget`` most recent examples.  Each
  ``partial_fit`` appends the batch to the window (dropping the oldest rows),
  warm-starts ``theta`` (the last iterate) and ``alpha`` (kept rows) from the
  previous batch and runs ``n_iter`` iterations on the window.

The faces are :class:`onlinemkl.PolyMKLRegressor` and its river adapter.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._lazy import lazy_module
from .._params import Bool, Choice, Int, Param, Real, Rule, Table
from .._validation import check_number
from ._active import solve_active
from ..kernels import KERNELS_RULE
from .._window import (LAM_PARAM, RIVER_MINIBATCH_PARAMS, WindowEngine, direct_solve, duplicate_groups,
                       loo_ridge)

_cp = lazy_module("onlinemkl._core.polynomial")

__all__ = ["SOLVERS", "PolyMKLEngine", "check_rho", "dual_solve", "make_engine", "multiplicity"]

SOLVERS = ("active", "stochastic", "ucd", "uniform")

#: Conjugate-gradient steps before a dual re-solve falls back to a direct factorisation.
CG_MAX_ITER = 50


def multiplicity(z) -> int:
    """Number of orderings of a multiset: ``d! / prod(mult!)``.

    >>> multiplicity((0, 0, 3))
    3
    >>> multiplicity(())
    1
    """
    out = math.factorial(len(z))
    for v in set(z):
        out //= math.factorial(list(z).count(v))
    return out


def dual_solve(K, shift, y, x, tol):
    """``x <- (K + shift I)^-1 y``: conjugate gradients warm-started from ``x`` (at most ``CG_MAX_ITER``
    iterations, fewer than ``n``), falling back to a direct solve when CG has not converged by then
    (ill-conditioned: a tiny ridge or unscaled inputs, where a Cholesky factorisation costs less than
    hundreds of CG steps).  Returns the number of CG iterations (``maxiter + 1``: the direct solve ran)."""
    n = y.shape[0]
    maxiter = min(n, CG_MAX_ITER)
    it = _cp.cg_solve(K, shift, y, x, tol, maxiter)
    if it > maxiter:
        x[:] = direct_solve(K + shift * np.eye(n), y)
    return it


def _uniform_multiset(rng, r, d):
    """A uniformly random multiset of size ``d`` from ``r`` symbols (stars and bars)."""
    pos = np.sort(rng.choice(r + d - 1, size=d, replace=False))
    return tuple(int(p - i) for i, p in enumerate(pos))


def check_rho(rho, degree):
    """``rho_d`` for ``d = 0..D``: None (all 1), a positive number, or a sequence of ``D + 1`` positives."""
    if rho is None:
        return np.ones(degree + 1)
    if isinstance(rho, (int, float)) and not isinstance(rho, bool):
        check_number("rho", rho, low=0.0, low_open=True)
        return np.full(degree + 1, float(rho))
    try:
        arr = np.asarray(rho, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"rho={rho!r}: expected None, a positive number, or {degree + 1} positive numbers") from None
    if arr.shape != (degree + 1,) or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"rho={rho!r}: give {degree + 1} finite positive priors rho_0..rho_{degree} "
                         f"(one per degree 0..degree), or a single number")
    return arr


class PolyMKLEngine(WindowEngine):
    """State and steps of the polynomial-kernel solvers (internal; use the estimators).

    State (plain numpy): the support window ``Xw, yw``; the visited
    multi-indices ``Z`` (rows, ``-1`` padded) with their last-iterate weights
    ``theta`` and the predictor's weights ``theta_pred``; the dual ``alpha`` of
    the chain and ``alpha_pred`` of the predictor.  Protocol: see
    :class:`onlinemkl._window.WindowEngine`.
    """

    _ARRAYS = ("Xw", "yw", "Z", "theta", "theta_pred", "alpha", "alpha_pred")
    _LEARNER = "PolyMKL"

    def __init__(self, kernels, constant, degree, rho, lam, n_iter, eta, solver, iterate, budget, tol, seed,
                 standardize=False, rules=None):
        self._remember_init(locals())
        self._init_window(kernels, constant, budget, standardize, lam, rules)
        self.D = int(degree)
        self.wdeg = np.asarray(rho, dtype=np.float64) ** -2.0
        self.n_iter = int(n_iter)
        self.eta = float(eta)
        self.solver = solver
        self.iterate = iterate
        self.tol = float(tol)
        self.seed = int(seed)
        self.batches = 0
        self.Z = np.zeros((0, max(self.D, 1)), dtype=np.int64)
        self.theta = np.zeros(0)
        self.theta_pred = np.zeros(0)
        self.alpha = np.zeros(0)
        self.alpha_pred = np.zeros(0)
        self.index: dict = {}
        self.history: list = []  # J(theta_k) per iteration of the last batch (diagnostic, not saved)
        self.history_t: list = []  # seconds since the batch started, per iteration
        self.cg_iters = 0

    # -- index set -----------------------------------------------------------------------------

    def _key_index(self, key) -> int:
        k = self.index.get(key)
        if k is None:
            k = self.Z.shape[0]
            row = np.full((1, self.Z.shape[1]), -1, dtype=np.int64)
            row[0, : len(key)] = key
            self.Z = np.vstack([self.Z, row])
            self.theta = np.append(self.theta, 0.0)
            self.index[key] = k
        return k

    def multiplicity_prior(self, key) -> float:
        """``c(m) rho_d^-2`` of one multiset (a sorted tuple)."""
        return multiplicity(key) * float(self.wdeg[len(key)])

    def prior(self) -> np.ndarray:
        """``c(m) rho_d^-2`` per stored multi-index."""
        out = np.empty(self.Z.shape[0])
        for k in range(self.Z.shape[0]):
            key = tuple(int(v) for v in self.Z[k] if v >= 0)
            out[k] = multiplicity(key) * self.wdeg[len(key)]
        return out

    def rebuild_index(self):
        self.index = {tuple(int(v) for v in row if v >= 0): k for k, row in enumerate(self.Z)}

    # -- learning -----------------------------------------------------------------------------

    def set_features(self, n_features: int):
        """Declare ``n_features`` columns (grows, never shrinks)."""
        if n_features > self.n_features:
            self._widen(n_features)

    def remap_features(self, mapping, width):
        """New feature columns were inserted: old column ``c`` is now ``mapping[c]`` of ``width``."""
        self._remap_window(mapping, width)
        if self.base.kernels is None and self.Z.shape[0]:
            off = 1 if self.base.constant else 0
            base_map = np.concatenate([np.arange(off), np.asarray(mapping, dtype=np.int64) + off])
            Z = self.Z.copy()
            for row in Z:
                d = int(np.sum(row >= 0))
                row[:d] = np.sort(base_map[row[:d]])
            self.Z = Z
            self.rebuild_index()

    def _learn_batch(self, X: np.ndarray, y: np.ndarray):
        """Append a (validated) batch to the window and run the solver on the window."""
        n_old = self.Xw.shape[0]
        alpha0 = np.concatenate([self.alpha if self.alpha.shape[0] == n_old else np.zeros(n_old),
                                 np.zeros(X.shape[0])])
        (alpha0,) = self._append(X, y, alpha0)
        rng = np.random.default_rng([self.seed, self.batches])
        self.batches += 1
        self._solve(rng, np.ascontiguousarray(alpha0))

    def _solve(self, rng, alpha):
        Zw, yc, _ = self.scaled_window()
        n, D = Zw.shape[0], self.D
        self._check_kernel_range(Zw, D)
        Kb, Fb = self.base.arrays(Zw)
        mode = self.base.mode
        S = _cp.base_sum(Kb, Fb, mode, n)
        groups = duplicate_groups(Zw, self.near_copy) if self.lam_auto else None
        self.history, self.history_t = [], []
        t0 = time.perf_counter()
        if self.solver == "uniform":
            K = S ** D
            if self.lam_auto:
                self.lam, self.alpha, _ = loo_ridge(K, yc, self.ridge_grid, groups)
            else:
                self.alpha = alpha
                self.cg_iters += dual_solve(K, n * self.lam, yc, self.alpha, self.tol)
            self.alpha_pred = self.alpha.copy()
            return
        if self.solver == "active" and mode == _cp.MODE_FACTOR:
            solve_active(self, Fb, yc)
            return
        r = self.base.n_base(self.n_features)
        order = self.base.order(self.n_features)
        P = _cp.hadamard_powers(S, D)
        if self.lam_auto and not self.lam > 0:
            # first batch: the ridge that suits the uniform kernel on the unit l2 ball of theta
            self.lam = loo_ridge(P[D] / math.sqrt(math.comb(r + D, D)), yc, self.ridge_grid, groups)[0]
        shift = n * self.lam
        prior = self.prior()
        Ktheta = _cp.combined_kernel(self.Z, self.theta * prior, Kb, Fb, mode, n)
        self.cg_iters += dual_solve(Ktheta, shift, yc, alpha, self.tol)
        delta = np.empty(D + 1)
        C_ref = _cp.degree_masses(P, alpha, self.wdeg, delta)
        T = self.n_iter
        eta = self.eta / (C_ref * math.sqrt(max(T, 1))) if C_ref > 0 else 0.0
        theta_sum = np.zeros(self.theta.shape[0])
        z = np.full(max(D, 1), -1, dtype=np.int64)
        KI = np.empty((n, n))
        if self.solver == "ucd":
            counts = np.array([math.comb(r + d - 1, d) for d in range(D + 1)], dtype=float)
            n_total = counts.sum()
        for _ in range(T if eta > 0 else 0):
            if self.solver in ("stochastic", "active"):
                u = rng.random(D + 1)
                d, C = _cp.sample_multi_index(P, alpha, self.wdeg, Kb, Fb, mode, u, order, z)
                if d < 0:
                    break
                key = tuple(int(v) for v in z[:d])
                _cp.product_kernel(z, Kb, Fb, mode, n, KI)
                step = eta * C
            else:
                d = int(rng.choice(D + 1, p=counts / n_total))
                key = tuple(sorted(int(order[v]) for v in _uniform_multiset(rng, r, d)))
                z[:] = -1
                z[:d] = key
                _cp.product_kernel(z, Kb, Fb, mode, n, KI)
                g = multiplicity(key) * self.wdeg[d] * _cp.quad(KI, alpha)
                step = eta * n_total * max(g, 0.0)
            k = self._key_index(key)
            if k == theta_sum.shape[0]:
                theta_sum = np.append(theta_sum, 0.0)
            w_k = multiplicity(key) * self.wdeg[d]
            self.theta[k] += step
            s = 1.0 / max(1.0, float(np.sqrt(np.dot(self.theta, self.theta))))
            self.theta *= s
            theta_sum += self.theta
            _cp.scale_update(Ktheta, KI, step * w_k, s)
            self.cg_iters += dual_solve(Ktheta, shift, yc, alpha, self.tol)
            self.history.append(0.5 * self.lam * float(np.dot(yc, alpha)))
            self.history_t.append(time.perf_counter() - t0)
        self.alpha = alpha
        averaged = self.iterate == "average" and T > 0 and eta > 0 and len(self.history)
        self.theta_pred = theta_sum / len(self.history) if averaged else self.theta.copy()
        if self.lam_auto:  # the ridge by leave-one-out for the predictor's kernel (the chain keeps its own)
            K = _cp.combined_kernel(self.Z, self.theta_pred * self.prior(), Kb, Fb, mode, n)
            self.lam, self.alpha_pred, _ = loo_ridge(K, yc, self.ridge_grid, groups)
        elif averaged:
            K = _cp.combined_kernel(self.Z, self.theta_pred * self.prior(), Kb, Fb, mode, n)
            self.alpha_pred = alpha.copy()
            self.cg_iters += dual_solve(K, shift, yc, self.alpha_pred, self.tol)
        else:
            self.alpha_pred = alpha.copy()

    def objective(self, theta=None) -> float:
        """``J(theta) = lam/2 y'(K_theta + n lam I)^-1 y`` on the current window (direct solve; for tests)."""
        Zw, yc, _ = self.scaled_window()
        n = Zw.shape[0]
        theta = self.theta_pred if theta is None else theta
        Kb, Fb = self.base.arrays(Zw)
        K = _cp.combined_kernel(self.Z, theta * self.prior(), Kb, Fb, self.base.mode, n)
        return 0.5 * self.lam * float(yc @ np.linalg.solve(K + n * self.lam * np.eye(n), yc))

    # -- prediction ---------------------------------------------------------------------------

    def _predict(self, X: np.ndarray) -> np.ndarray:
        n = self.Xw.shape[0]
        Zw, _, sc = self.scaled_window()
        ym, ys = sc[2], sc[3]
        X = self.scaled_queries(X, sc)
        a = self.alpha_pred * ys
        if self.base.mode == _cp.MODE_FACTOR:
            Fw, Fq = self.base.factor(Zw), self.base.factor(X)
            if self.solver == "uniform":
                return ym + _cp.power_kernel_predict(Fq, Fw, np.ones(Fw.shape[1]), self.D, a)
            w = self.theta_pred * self.prior()
            out = np.full(X.shape[0], ym)
            for k in range(self.Z.shape[0]):
                if w[k] == 0.0:
                    continue
                z = self.Z[k]
                gw = _cp.product_features(z, Fw)
                gq = _cp.product_features(z, Fq)
                out += (w[k] * float(gw @ a)) * gq
            return out
        Kq = self.base.cross(X, Zw)
        if self.solver == "uniform":
            return ym + (Kq.sum(axis=0) ** self.D) @ a
        w = self.theta_pred * self.prior()
        out = np.full(X.shape[0], ym)
        for k in range(self.Z.shape[0]):
            if w[k] == 0.0:
                continue
            Kk = np.ones((X.shape[0], n))
            for j in self.Z[k]:
                if j < 0:
                    break
                Kk *= Kq[j]
            out += w[k] * (Kk @ a)
        return out

    # -- state (the onlinemkl.engine protocol) ------------------------------------------------

    def get_state(self):
        params = {"batches": int(self.batches), "n_features": int(self.n_features), "lam_": float(self.lam),
                  "seed": int(self.seed), "cg_iters": int(self.cg_iters)}
        arrays = self._window_arrays()
        self.base.save_ck(params, arrays)
        return params, arrays

    def set_state(self, params, arrays, strict=True):
        """Restore onto an engine built from the same parameters; every shape and index is checked."""
        need = self._restore_window(params, arrays)
        n, Z = arrays["Xw"].shape[0], arrays["Z"]
        m = Z.shape[0] if Z.ndim == 2 else -1
        need(Z.ndim == 2 and Z.shape[1] == max(self.D, 1) and Z.dtype.kind == "i",
             f"Z has shape {Z.shape} / dtype {Z.dtype}, expected (m, {max(self.D, 1)}) integers")
        r = self.base.n_base(int(params["n_features"]))
        for row in Z:
            d = int(np.sum(row >= 0))
            need(bool(np.all(row[:d] >= 0)) and bool(np.all(row[d:] == -1)) and bool(np.all(np.diff(row[:d]) >= 0)),
                 f"multi-index {row.tolist()} is not sorted and -1 padded")
            need(d <= self.D and (d == 0 or row[d - 1] < r), f"multi-index {row.tolist()} is out of range")
        for name in ("theta", "theta_pred"):
            need(arrays[name].shape == (m,) and (not strict or bool(np.all(arrays[name] >= 0))),
                 f"{name} must be (m,) and >= 0")
        for name in ("alpha", "alpha_pred"):
            need(arrays[name].shape in ((n,), (0,)), f"{name} has shape {arrays[name].shape} for {n} rows")
        self._set_window(params, arrays)
        self.Z = self.Z.astype(np.int64)
        self.batches = int(params["batches"])
        lam = params.get("lam_", self.lam)
        need(isinstance(lam, (int, float)) and not isinstance(lam, bool) and math.isfinite(lam) and lam >= 0
             and (lam > 0 or self.lam_auto), f"lam_={lam!r} is not a ridge > 0")
        self.lam = float(lam)
        self.seed = int(params["seed"])
        self.cg_iters = int(params["cg_iters"])
        self.rebuild_index()
        need(len(self.index) == m, "a multi-index is stored twice")


def _check_rho(name, value):
    """The form of ``rho`` (its length is checked against ``degree`` by :func:`check_rho`)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Real(low=0.0, low_open=True).check(name, value)
    return value


_SEED_DOC = "Seed of the sampling (the stochastic and UCD solvers); None: a fresh seed per model."

#: The parameters of the polynomial-kernel MKL learner, for both faces (:mod:`onlinemkl._params`).
PARAMS = Table(
    Param("kernels", KERNELS_RULE, None,
          "Base kernels ``kappa_1..kappa_r``.  None: one linear kernel per input column plus a constant\n"
          "(``constant=True``), the paper's set-up, with fast rank-one algebra; a river face numbers\n"
          "features in sorted name order, and kernels given there group features by name."),
    Param("degree", Int(1, 20), 3, "Maximum degree ``D`` of the product kernels."),
    Param("rho", Rule("None, float > 0 or sequence of degree + 1 floats > 0", _check_rho), None,
          "Priors ``rho_d`` per degree (weight ``rho_d^-2``); None: all 1."),
    LAM_PARAM,
    Param("n_iter", Int(low=0), 50,
          "Iterations of the stochastic and UCD solvers per mini-batch (the active-set solver runs rounds\n"
          "until its leave-one-out error stops improving).  A batch ``fit`` solves each window once, so it\n"
          "affords more.", fit_default=200),
    Param("eta", Real(low=0.0, low_open=True), 1.0, "Step multiplier: ``eta_k = eta / (||g||_1 sqrt(n_iter))``."),
    Param("solver", Choice(SOLVERS), "active",
          "'active': an active set of product kernels screened by exact gradient and re-solved exactly,\n"
          "the rounds stopped by leave-one-out error (with ``kernels`` given it runs as 'stochastic');\n"
          "'stochastic': the paper's Algorithms 2 + 3; 'ucd': uniform coordinate descent over the same\n"
          "index set; 'uniform': the fixed kernel ``(sum_i kappa_i)^D`` (no kernel learning)."),
    Param("iterate", Choice(("average", "last")), "average",
          "Which iterate of each batch the stochastic and UCD solvers' predictor uses."),
    Param("budget", Int(low=1, none=True), 200,
          "Support set: the window of the most recent examples (None: every example).  A batch ``fit``\n"
          "feeds the data in mini-batches of ``budget`` rows, so a wider window sees more of it at once.",
          fit_default=500),
    Param("constant", Bool(), True, "With ``kernels=None``: add the constant base kernel."),
    Param("tol", Real(low=0.0, low_open=True), 1e-6, "Relative residual at which conjugate gradients stop."),
    Param("standardize", Bool(), True,
          "The kernels see every input column standardised by the window's mean and standard deviation,\n"
          "and the solver the target likewise (predictions are in the target's units); False: inputs as\n"
          "given, target only centred."),
    *RIVER_MINIBATCH_PARAMS,
    Param("seed", Int(low=0, none=True), None, _SEED_DOC, faces=("river",)),
    Param("random_state", Int(low=0, none=True), None, _SEED_DOC + "  (river's name for it: ``seed``.)",
          faces=("sklearn",)),
)


def make_engine(p, face_name):
    """The engine of face ``p`` (parameters as attributes; ``face_name`` 'river' or 'sklearn'), every
    parameter validated by :data:`PARAMS`."""
    v = PARAMS.validated(p, face_name)
    D = v["degree"]
    rho = check_rho(p.rho, D)
    seed = v["seed"] if face_name == "river" else v["random_state"]
    seed = seed if seed is not None else int(np.random.default_rng().integers(2**62))
    return PolyMKLEngine(p.kernels, v["constant"], D, rho, p.lam, v["n_iter"], v["eta"], v["solver"], v["iterate"],
                         v["budget"], v["tol"], seed, v["standardize"])
