"""What the proximal test modules share: data, kernels and fixtures."""

from __future__ import annotations

import numpy as np
from naive import diag_table, kernel_matrix
from naive_fobos import NaiveFobos

from onlinemkl import ProximalMKLRegressor
from onlinemkl.kernels import RBF, Laplacian, Linear, Polynomial
from onlinemkl.proximal import _step as _cf
from onlinemkl.proximal._setup import settings

KERNELS = (RBF(gamma_scale=1.0, group=(0, 1, 2)), Linear(group=(3, 4, 5)), Polynomial(degree=2, normalize=True),
           Laplacian(gamma_scale=0.5, group=(1, 4)))


D = 6


def _stream(n, n_classes, regression, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if regression:
        return X, X[:, 0] - X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    if n_classes == 2:
        return X, np.where(X[:, 0] + X[:, 3] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, (np.floor(X[:, 0] * 1.5) % n_classes).astype(int)


class MergingNaiveFobos(NaiveFobos):
    """The reference with the proximal learners' eviction: the evictee is projected onto one partner.

    Written from the rule, in actual (scaled) coefficients: among the stored ``j != i`` whose
    class vector is parallel to the evictee's (``beta_i = rho beta_j``), the partner maximises
    ``sum_k (coef_ik K_k(x_i, x_j))^2 / K_k(x_j, x_j)``; then, per kernel group,
    ``coef_jk += a_k coef_ik`` and ``avg_jk += a_k avg_ik`` with ``a_k = rho K_k(x_i, x_j) /
    K_k(x_j, x_j)`` (the orthogonal projection of ``coef_ik phi_k(x_i) (x) beta_i`` onto
    ``phi_k(x_j) (x) beta_j``).  Group norms are still recomputed from the Gram matrices.
    """

    n_merges = 0

    def _evictee(self):
        i = super()._evictee()
        bi = self.beta[i]
        kij = np.array([kernel_matrix(ker, self.X[i][None], self.X)[0] for ker in self.kernels])  # (F, n)
        kjj = diag_table(self.kernels, self.X)
        best, partner = 0.0, -1
        for j in range(self.X.shape[0]):
            bj = self.beta[j]
            ej, jj, ii = bi @ bj, bj @ bj, bi @ bi
            if j == i or jj == 0 or ej == 0 or ej * ej < (1 - 1e-12) * ii * jj:
                continue
            ok = kjj[j] > 0
            gain = float(np.sum((self.coef[i, ok] * kij[ok, j]) ** 2 / kjj[j, ok]))
            if gain > best:
                best, partner = gain, j
        if partner >= 0:
            j = partner
            rho = (bi @ self.beta[j]) / (self.beta[j] @ self.beta[j])
            a = np.where(kjj[j] > 0, rho * kij[:, j] / np.where(kjj[j] > 0, kjj[j], 1.0), 0.0)
            self.coef[j] += a * self.coef[i]
            self.avg[j] += a * self.avg[i]
            self.n_merges += 1
        return i


def _engine_and_reference(est, n_classes, regression):
    """The compiled engine of ``est`` and a reference built from the same settings."""
    eng = est._new_engine() if regression else est._new_engine(np.arange(n_classes))
    eng.set_features(D)
    st = settings(est, regression, None)
    h, s = eng.hyper, eng.ihyper
    ref = MergingNaiveFobos(eng.ck.kernels, eng.explicit_groups, D, eng.n_outputs, int(s[_cf.IH_LOSS]), int(s[_cf.IH_PROX]),
                     h[_cf.H_LAM], h[_cf.H_PROX_PARAM], st["weights"], int(s[_cf.IH_SCHEDULE]), h[_cf.H_ETA0],
                     h[_cf.H_SIGMA_SC], h[_cf.H_GAMMA], int(s[_cf.IH_BUDGET]), est.eviction, h[_cf.H_EPSILON],
                     int(s[_cf.IH_GROUP_STEPS]))
    return eng, ref


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0) <= tol


def _fitted(cls, **kw):
    X, y = _stream(60, 3, cls is ProximalMKLRegressor, seed=1)
    return cls(kernels=KERNELS, n_epochs=1, random_state=0, **kw).fit(X, y), X, y


def _river_stream(n, seed, regression):
    rng = np.random.default_rng(seed)
    for i in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        if i > n // 3:
            x["late"] = float(rng.normal())  # a feature that appears mid-stream
        if regression:
            yield x, 2.0 * x["a"] - x["b"] ** 2
        else:
            yield x, ("up", "down", "flat")[int(x["a"] > 0) + int(i > n // 2 and x["b"] > 1)]
