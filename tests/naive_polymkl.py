"""Plain-numpy references for the polynomial-kernel MKL solvers (Afkanpour et al.; Cortes et al.).

Everything here enumerates the index set explicitly: only for tiny ``r`` and ``D``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def multisets(r, D):
    """Every multiset of base kernels of size 0..D, as sorted tuples."""
    out = []
    for d in range(D + 1):
        out.extend(itertools.combinations_with_replacement(range(r), d))
    return out


def n_orderings(m):
    c = math.factorial(len(m))
    for v in set(m):
        c //= math.factorial(m.count(v))
    return c


def product_kernel(Ks, m):
    n = Ks.shape[1]
    K = np.ones((n, n))
    for j in m:
        K = K * Ks[j]
    return K


def factor_kernels(F):
    """Dense ``K_j = f_j f_j'`` from a factor matrix ``F`` (n, r)."""
    return np.einsum("aj,bj->jab", F, F)


def gradient_abs(Ks, alpha, rho, D):
    """``{m: c(m) rho_d^-2 alpha' K_m alpha}`` (``|g_m|`` without the factor lam/2), enumerated."""
    out = {}
    for m in multisets(Ks.shape[0], D):
        out[m] = n_orderings(m) * rho[len(m)] ** -2.0 * float(alpha @ product_kernel(Ks, m) @ alpha)
    return out


def combined_kernel(Ks, theta, rho):
    """``sum_m theta_m c(m) rho_d^-2 K_m`` for a dict ``theta``."""
    n = Ks.shape[1]
    K = np.zeros((n, n))
    for m, t in theta.items():
        K += t * n_orderings(m) * rho[len(m)] ** -2.0 * product_kernel(Ks, m)
    return K


def krr_dual(K, y, lam):
    """``(K + n lam I)^-1 y``."""
    n = y.shape[0]
    return np.linalg.solve(K + n * lam * np.eye(n), y)


def algorithm2_step(theta, I, C, eta):
    """One step of Algorithm 2: ``theta_I += eta C``, then scale into the unit l2 ball (theta >= 0)."""
    theta = dict(theta)
    theta[I] = theta.get(I, 0.0) + eta * C
    nrm = math.sqrt(sum(v * v for v in theta.values()))
    s = 1.0 / max(1.0, nrm)
    return {k: v * s for k, v in theta.items()}


def cortes_kernel(Ks, mu, d):
    return np.tensordot(mu, Ks, axes=(0, 0)) ** d


def cortes_objective(Ks, mu, y, lam, d):
    """``F(mu) = y'(K_mu + n lam I)^-1 y``."""
    return float(y @ krr_dual(cortes_kernel(Ks, mu, d), y, lam))


def cortes_gradient(Ks, mu, y, lam, d):
    """``-d alpha' (U^(o(d-1)) o K_k) alpha`` per ``k`` (Prop. 1 of Cortes et al.)."""
    U = np.tensordot(mu, Ks, axes=(0, 0))
    alpha = krr_dual(U ** d, y, lam)
    return np.array([-d * alpha @ ((U ** (d - 1)) * Ks[k]) @ alpha for k in range(Ks.shape[0])])
