"""PolyMKL's default solver: an active set of product kernels, screened by gradient, re-solved exactly.

What the stochastic solver (Algorithm 2 + 3) lacks when the index set is large: it samples a
kernel with probability proportional to its gradient magnitude, and when ``r`` grows the
probability mass of the hundreds of thousands of kernels that merely correlate by chance
with the residual outweighs the few that explain the target, so at ``r = 100`` it rarely
draws a right one.  This solver keeps the same objective ``J(theta)`` (mean squared loss,
``theta`` on the positive part of the unit l2 ball, priors ``c(m) rho_d^-2``) and the same
kernels, and works in rounds:

1. **Screening by gradient.**  The ``ROUND_ADD`` kernels (``ROUND_ADD_LARGE`` when one
   screening is costly: fewer, larger rounds) of largest gradient
   ``(alpha' g_m)^2`` per unit of feature norm, ``rho_d^-2 (alpha' g_m)^2 / ||g_m||^2``, outside
   the active set join it: the decrease of the squared residual each alone would bring
   (orthogonal matching pursuit's rule; the raw gradient ``c(m) rho_d^-2 (alpha' g_m)^2`` prefers
   ``x_1 x_9^2`` to ``x_1`` for a linear target, as ``c(m)`` and ``x_9^2``'s mean inflate it).
   With rank-one base kernels (``kernels=None``) every multiset is scored exactly,
   ``_core.polynomial.screen_top``, while ``n`` times their number stays under
   ``SCREEN_BUDGET``; beyond, the candidates are ``N_SAMPLES`` draws of Algorithm 3, ranked
   by their exact gradient.  Multisets holding the constant base kernel are skipped: their
   feature is that of the multiset without it; the empty multiset (the constant kernel,
   the offset that products of standardised inputs such as ``x^2`` need) is always active.
2. **Exact re-solve over the active set.**  ``J`` restricted to the active kernels is
   minimised by alternating its two closed forms, the ridge coefficients for fixed ``theta``
   (an ``m x m`` Cholesky factorisation, ``m`` active kernels) and the minimising ``theta``
   for fixed coefficients (``theta_m`` proportional to ``(theta_m^2 q_m)^(1/3)``, ``q_m`` the
   gradient magnitude, normalised): each alternation lowers ``J``, which is jointly convex.
3. **The ridge and the stopping rule by leave-one-out.**  With ``lam='auto'`` the ridge is
   chosen by exact leave-one-out error from one thin SVD of the features per round, within
   the ridge grid's ends (the engine's ``rules``) times the kernel's mean eigenvalue (the local grid around the last choice
   included: below that end the solve's rounding, amplified by ``1 / lam``, is what the
   leave-one-out error measures); the
   leave-one-out error also decides when to stop: after ``PATIENCE`` rounds without a
   relative improvement of ``IMPROVE``, once it is below ``FLOOR`` times the target's variance
   (nothing left worth finding), or after ``MAX_ROUNDS``.  The round of least error is kept.

**Size of the active set.**  At most ``ACTIVE_SHARE`` of the window's rows: with as many
kernels as rows, ``K_theta`` has full rank, a tiny ridge interpolates the window (the
leave-one-out error, blind to the kernels having been chosen on the same rows, favours it) and
predictions elsewhere go far off.  Once full, the set changes only as weights reach 0 (replacing
the lightest kernels with new ones every round churns with the window's noise and predicts worse).

Warm starts: the next mini-batch starts from the kept active set and weights.  With dense
base kernels (``kernels`` given) the solver is Algorithm 2 + 3 (``solver='stochastic'``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.linalg

from .._lazy import lazy_module
from .._window import direct_solve, duplicate_groups, loo_errors

_cp = lazy_module("onlinemkl._core.polynomial")

ROUND_ADD = 2  # kernels added per round ...
ROUND_ADD_LARGE = 8  # ... or, when one screening costs more than LARGE_SCREEN (n times the multisets), this many
LARGE_SCREEN = 5e7
MAX_ROUNDS = 25
PATIENCE = 2
INNER_ITER = 60
SCREEN_BUDGET = 3e8
N_SAMPLES = 64
IMPROVE = 3e-2  # relative decrease of the leave-one-out error that counts as progress
FLOOR = 1e-3  # leave-one-out error, relative to the target's variance, below which the rounds stop
ACTIVE_SHARE = 0.5  # at most this share of the window's rows as active kernels (at least 1)


def n_multisets(r, D):
    """Multisets of size 1..D over r symbols."""
    return sum(math.comb(r + d - 1, d) for d in range(1, D + 1))


def _loo(B, y, shifts, groups=None):
    """Leave-one-out mean squared error of ridge regression on features ``B`` (kernel ``K = B B'``) for
    each shift ``c``, from one thin SVD ``B = U diag(s) V'``: the hat matrix is
    ``U diag(s^2 / (s^2 + c)) U'``.  The residual ``(I - H) y`` and ``1 - H_ii`` are summed from their
    non-negative parts ``c / (s^2 + c)`` and the part of ``y`` outside ``U``'s span, never as a
    difference of nearly equal numbers: when the features outnumber the rows and ``c`` is small both
    tend to 0 together, and cancellation would turn their ratio into noise."""
    U, s, _ = scipy.linalg.svd(B, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    s2 = s * s
    Uy = U.T @ y
    out_y = y - U @ Uy  # the part of y no shift can fit
    out_lev = np.maximum(1.0 - np.sum(U * U, axis=1), 0.0)
    F = shifts[None, :] / (s2[:, None] + shifts[None, :])  # (I - H) in U's basis
    resid = out_y[:, None] + U @ (F * Uy[:, None])
    one_minus_lev = out_lev[:, None] + (U * U) @ F
    if groups is None:
        return np.mean((resid / np.maximum(one_minus_lev, 1e-300)) ** 2, axis=0)
    return np.mean(loo_errors(resid, one_minus_lev, groups) ** 2, axis=0)  # equal rows left out together


def _choose_shift(eng, G, w, y, auto, c, groups=None):
    """``(c, loo)``: with ``auto`` the shift of least leave-one-out error over the engine's ridge grid
    (relative to the kernel's mean eigenvalue; once a shift ``c > 0`` is known, its local grid around
    it), else ``c`` itself with its error."""
    B = G * np.sqrt(w)
    if auto:
        scale = float(np.sum(B * B)) / G.shape[0]
        scale = scale if scale > 0 else 1.0
        if c > 0:  # around the last choice, never beyond the grid's ends for this kernel
            grid = eng.ridge_grid
            shifts = np.clip(c * eng.local_ridge_grid, scale * grid[0], scale * grid[-1])
        else:
            shifts = scale * eng.ridge_grid
    else:
        shifts = np.array([c])
    loo = _loo(B, y, shifts, groups)
    k = int(np.argmin(loo))
    return float(shifts[k]), float(loo[k])


def _inner(G, p, theta, y, c):
    """Minimise ``J`` over ``theta`` on the active kernels (features ``G``, priors ``p``) at shift ``c``;
    returns ``(theta, alpha)``."""
    A = G.T @ G
    b = G.T @ y
    m = A.shape[0]

    def solve(theta):
        # u = S (S A S + c I)^-1 S b with S = diag(sqrt(p theta)); then G' alpha.  The matrix is
        # positive definite in exact arithmetic; with a tiny shift from leave-one-out, rounding can
        # make Cholesky fail, and direct_solve then falls back to least squares.
        s = np.sqrt(p * theta)
        M = s[:, None] * A * s[None, :]
        M[np.diag_indices(m)] += c
        u = s * direct_solve(M, s * b)
        return (b - A @ u) / c

    for it in range(INNER_ITER + 1):
        Gta = solve(theta)
        if it == INNER_ITER:
            break
        new = np.cbrt(theta * theta * p * Gta * Gta)
        nrm = float(np.linalg.norm(new))
        if not nrm > 0:
            break
        new /= nrm
        done = float(np.max(np.abs(new - theta))) < 1e-7
        theta = new
        if done:
            Gta = solve(theta)  # the coefficients of the final theta
            break
    alpha = (y - G @ (p * theta * Gta)) / c
    return theta, alpha


def _candidates(eng, Fb, alpha, first, want):
    """Multisets (sorted tuples) of largest gradient magnitude, best first, at most ``want``."""
    n, r = Fb.shape
    D = eng.D
    if n * n_multisets(r - first, D) <= SCREEN_BUDGET:
        top_z = np.empty((want, max(D, 1)), dtype=np.int64)
        top_s = np.empty(want)
        _cp.screen_top(np.ascontiguousarray(Fb.T), np.ascontiguousarray(alpha), eng.wdeg, first, top_z, top_s)
        order = np.argsort(-top_s)
        return [tuple(int(v) for v in top_z[k] if v >= 0) for k in order if top_s[k] > 0]
    P = _cp.hadamard_powers(Fb @ Fb.T, D)
    rng = np.random.default_rng([eng.seed, eng.batches, 7])
    order_b = eng.base.order(eng.n_features)
    z = np.full(max(D, 1), -1, dtype=np.int64)
    found = {}
    for _ in range(N_SAMPLES):
        d, _C = _cp.sample_multi_index(P, alpha, eng.wdeg, np.zeros((0, 0, 0)), Fb, _cp.MODE_FACTOR,
                                       rng.random(D + 1), order_b, z)
        key = tuple(int(v) for v in z[:d] if v >= first) if d > 0 else ()
        if key and key not in found:
            g = _cp.product_features(np.array(key + (-1,) * (z.shape[0] - len(key)), dtype=np.int64), Fb)
            gg = float(g @ g)
            found[key] = eng.wdeg[len(key)] * float(g @ alpha) ** 2 / gg if gg > 0 else 0.0
    return sorted(found, key=lambda k: -found[k])[:want]


def solve_active(eng, Fb, yc):
    """Run the rounds on the (scaled) window features ``Fb`` and centred targets ``yc``; sets ``Z``,
    ``theta``, ``theta_pred``, ``alpha``, ``alpha_pred``, ``lam`` and the history of the engine."""
    n = Fb.shape[0]
    first = 1 if eng.base.constant else 0
    auto = eng.lam_auto
    groups = duplicate_groups(Fb, eng.near_copy)
    keys = [tuple(int(v) for v in row if v >= 0) for row in eng.Z]
    cap = max(1, int(ACTIVE_SHARE * n))
    act = [k for k in range(len(keys)) if eng.theta[k] > 0]
    room = cap if any(keys[k] == () for k in act) else cap - 1  # the constant kernel joins below
    if len(act) > room:  # a smaller window than the last (a partial first batch): keep the heaviest
        act = sorted(sorted(act, key=lambda k: -eng.theta[k])[:room])
    active = [keys[k] for k in act]
    theta = eng.theta[act].copy()
    if () not in active:  # the constant kernel (degree 0): the offset that non-centred products need
        active.insert(0, ())
        theta = np.concatenate([[float(np.mean(theta)) if theta.size else 1.0], theta])
    p = np.array([eng.multiplicity_prior(k) for k in active])
    G = np.column_stack([_feature(k, Fb) for k in active]) if active else np.zeros((n, 0))
    c = n * eng.lam if eng.lam > 0 else 0.0
    t0 = time.perf_counter()
    if active:
        theta /= np.linalg.norm(theta)
        if c <= 0:
            c, _ = _choose_shift(eng, G, p * theta, yc, True, 0.0, groups)
        theta, alpha = _inner(G, p, theta, yc, c)
        c, loo = _choose_shift(eng, G, p * theta, yc, auto, c, groups)
        theta, alpha = _inner(G, p, theta, yc, c)
    else:
        alpha, loo = yc.copy(), float(np.mean(yc * yc)) * (n / max(n - 1, 1)) ** 2
    best = (loo, list(active), theta.copy(), c, alpha.copy())
    eng.history, eng.history_t = [], []
    stall = 0
    add = ROUND_ADD if n * n_multisets(Fb.shape[1] - first, eng.D) <= LARGE_SCREEN else ROUND_ADD_LARGE
    for _ in range(MAX_ROUNDS):
        have = set(active)
        new = [k for k in _candidates(eng, Fb, alpha, first, add + len(active)) if k not in have]
        new = new[:min(add, cap - len(active))]
        if not new:
            break
        start = float(np.mean(theta)) if theta.size else 1.0
        active += new
        theta = np.concatenate([theta, np.full(len(new), start)])
        theta /= np.linalg.norm(theta)
        p = np.concatenate([p, [eng.multiplicity_prior(k) for k in new]])
        G = np.column_stack([G] + [_feature(k, Fb) for k in new])
        if c <= 0:
            c, _ = _choose_shift(eng, G, p * theta, yc, True, c, groups)
        theta, alpha = _inner(G, p, theta, yc, c)
        c_new, loo = _choose_shift(eng, G, p * theta, yc, auto, c, groups)
        if c_new != c:
            c = c_new
            theta, alpha = _inner(G, p, theta, yc, c)
        eng.history.append(0.5 * (c / n) * float(yc @ alpha))
        eng.history_t.append(time.perf_counter() - t0)
        if loo < best[0] * (1.0 - IMPROVE):
            best = (loo, list(active), theta.copy(), c, alpha.copy())
            stall = 0
            if loo <= FLOOR * float(np.mean(yc * yc)):
                break
        else:
            stall += 1
            if stall >= PATIENCE:
                break
    loo, active, theta, c, alpha = best
    keep = theta > 0
    active = [k for k, ok in zip(active, keep) if ok]
    theta = theta[keep]
    Z = np.full((len(active), max(eng.D, 1)), -1, dtype=np.int64)
    for i, k in enumerate(active):
        Z[i, : len(k)] = k
    eng.Z, eng.theta = Z, theta
    eng.rebuild_index()
    eng.theta_pred = theta.copy()
    if c > 0 and active:
        # The predictor's dual from the n x n system itself: the rounds' alpha, a residual divided by
        # c, loses about (largest eigenvalue / c)^2 of its precision when the ridge is small.
        G = np.column_stack([_feature(k, Fb) for k in active])
        K = (G * np.array([eng.multiplicity_prior(k) for k in active]) * theta) @ G.T
        K[np.diag_indices(n)] += c
        alpha = direct_solve(K, yc)
    eng.alpha = alpha
    eng.alpha_pred = alpha.copy()
    if c > 0:
        eng.lam = c / n


def _feature(key, Fb):
    g = np.ones(Fb.shape[0])
    for j in key:
        g = g * Fb[:, j]
    return g
