"""Plain-numpy references for the group proximal operators (``onlinemkl.proximal._prox``).

Written independently of the compiled code: the squared (weighted) l1 prox is
found as the root of the scalar equation its KKT conditions give for the
common shrinkage ``tau``, located between consecutive breakpoints and solved
exactly there (no ``rho`` formula); the non-sparse prox by plain bisection in
``x``; the others by their textbook formulas.  ``prox_full_vector`` applies
Prop. 1 to explicit group vectors.
"""

from __future__ import annotations

import numpy as np


def prox_weighted_sq_l1(b, d, lam):
    """Prox of ``lam * 0.5 (sum_k d_k b_k)^2`` on norms ``b >= 0`` with weights ``d > 0``.

    KKT: ``b'_k = max(0, b_k - d_k tau)`` with ``tau = lam * sum_k d_k b'_k``, so
    ``tau`` is the root of ``phi(tau) = tau - lam sum_k d_k max(0, b_k - d_k tau)``,
    which is continuous, increasing and piecewise linear with kinks at
    ``b_k / d_k``; ``phi(0) <= 0 < phi(max b/d)`` (when b != 0).  Evaluate phi at the
    sorted kinks, find the piece with the sign change, solve the line there.
    """
    b = np.asarray(b, dtype=float)
    d = np.asarray(d, dtype=float)
    if lam == 0.0 or not np.any(b > 0):
        return b.copy()

    def phi(tau):
        return tau - lam * np.sum(d * np.maximum(0.0, b - d * tau))

    kinks = np.unique(np.concatenate([[0.0], b / d]))  # ascending
    values = np.array([phi(t) for t in kinks])
    i = int(np.argmax(values >= 0.0))  # first kink with phi >= 0 (exists: the last kink)
    if values[i] == 0.0:
        tau = kinks[i]
    else:
        lo, hi = kinks[i - 1], kinks[i]
        # on (lo, hi) the active set is {k : b_k/d_k > lo}... i.e. >= hi
        active = b / d >= hi
        # phi(tau) = tau - lam sum_active d_k b_k + lam tau sum_active d_k^2 = 0
        tau = lam * np.sum(d[active] * b[active]) / (1.0 + lam * np.sum(d[active] ** 2))
        assert lo - 1e-12 * hi <= tau <= hi * (1 + 1e-12)
    return np.maximum(0.0, b - d * tau)


def prox_sq_l21(b, lam):
    """Prox of ``lam * 0.5 (sum_k b_k)^2`` (the weighted one with ``d = 1``)."""
    b = np.asarray(b, dtype=float)
    return prox_weighted_sq_l1(b, np.ones_like(b), lam)


def prox_sq_l21_rho_search(b, lam):
    """Second reference: try every support size and keep the self-consistent one.

    The support is a top-``rho`` set of the sorted norms with
    ``tau = lam S_rho / (1 + rho lam)`` and ``y_rho > tau >= y_{rho+1}``.
    """
    b = np.asarray(b, dtype=float)
    if not np.any(b > 0):
        return b.copy()
    y = np.sort(b)[::-1]
    for rho in range(1, len(y) + 1):
        tau = lam * y[:rho].sum() / (1.0 + rho * lam)
        nxt = y[rho] if rho < len(y) else -np.inf
        if y[rho - 1] > tau >= nxt:
            return np.maximum(0.0, b - tau)
    raise AssertionError("no consistent support size")


def prox_l21(b, lam):
    """Group lasso: ``max(0, b - lam)``."""
    return np.maximum(0.0, np.asarray(b, dtype=float) - lam)


def soft_threshold(v, lam):
    """Elementwise soft threshold (prox of ``lam ||v||_1``)."""
    v = np.asarray(v, dtype=float)
    return np.sign(v) * np.maximum(0.0, np.abs(v) - lam)


def prox_elastic_net(b, lam, sigma):
    """Prox of ``lam (sum b + sigma/2 sum b^2)``: solve ``x (1 + lam sigma) = b - lam`` when positive."""
    b = np.asarray(b, dtype=float)
    x = (b - lam) / (1.0 + lam * sigma)
    return np.where(b > lam, x, 0.0)


def prox_nonsparse_q(b, lam, q, iters=1200):
    """Prox of ``lam * 0.5 sum b^q`` by bisection on ``x - b + lam (q/2) x^(q-1)`` over ``[0, b]``.

    Plain arithmetic bisection for a fixed number of halvings (enough to reach the
    spacing of doubles from ``b`` down to the subnormals), vectorised over groups.
    """
    b = np.asarray(b, dtype=float)
    c = 0.5 * lam * q
    lo = np.zeros_like(b)
    hi = b.copy()
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore"):
            h = mid - b + c * mid ** (q - 1.0)
        pos = h > 0.0
        hi = np.where(pos, mid, hi)
        lo = np.where(pos, lo, mid)
    return 0.5 * (lo + hi)


def prox_norms(code, b, lam, param=0.0, weights=None):
    """Reference dispatcher with the same integer codes as the compiled one."""
    b = np.asarray(b, dtype=float)
    if code == 1:
        return prox_sq_l21(b, lam)
    if code == 2:
        return prox_weighted_sq_l1(b, weights, lam)
    if code in (3, 4):
        return prox_l21(b, lam)
    if code == 5:
        return b / (1.0 + lam) if param == 2.0 else prox_nonsparse_q(b, lam, param)
    if code == 6:
        return prox_elastic_net(b, lam, param)
    return b.copy()


def prox_full_vector(theta_groups, norm_prox):
    """Prop. 1 on explicit group vectors: prox the norms, rescale each group (0 if its norm is 0)."""
    b = np.array([np.linalg.norm(g) for g in theta_groups])
    b_new = norm_prox(b)
    return [g * (bn / bk) if bk > 0 else np.zeros_like(g) for g, bk, bn in zip(theta_groups, b, b_new)]


def regulariser(code, b, param=0.0, weights=None):
    """``R(b)`` for each code (sparse group lasso: its group part), for objective values."""
    b = np.asarray(b, dtype=float)
    if code == 1:
        return 0.5 * b.sum() ** 2
    if code == 2:
        return 0.5 * np.dot(weights, b) ** 2
    if code in (3, 4):
        return b.sum()
    if code == 5:
        return 0.5 * np.sum(b ** param)
    if code == 6:
        return b.sum() + 0.5 * param * np.sum(b ** 2)
    return 0.0
