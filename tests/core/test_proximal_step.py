"""Online proximal MKL's compiled step (``onlinemkl.proximal._step``) against the plain-numpy
reference ``tests/naive_fobos.py`` for a few hundred examples per case: every regulariser, every
loss (regression too), implicit and explicit groups, budgets with both eviction policies,
averaging on and off (~1e-9).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from naive import kernel_matrix
from naive_fobos import NaiveFobos

from onlinemkl.proximal import _step as _cf
from onlinemkl.proximal._setup import settings
from onlinemkl.kernels import RBF, Laplacian, Linear, Polynomial
from onlinemkl.proximal import ProximalMKLClassifier, ProximalMKLRegressor

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
        kjj = np.array([[kernel_matrix(ker, x[None], x[None])[0, 0] for ker in self.kernels] for x in self.X])
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
    h = eng.hyper
    ref = MergingNaiveFobos(eng.ck.kernels, eng.explicit_groups, D, eng.n_outputs, int(h[_cf.H_LOSS]), int(h[_cf.H_PROX]),
                     h[_cf.H_LAM], h[_cf.H_PROX_PARAM], st["weights"], int(h[_cf.H_SCHEDULE]), h[_cf.H_ETA0],
                     h[_cf.H_SIGMA_SC], h[_cf.H_GAMMA], int(h[_cf.H_BUDGET]), est.eviction, h[_cf.H_EPSILON],
                     int(h[_cf.H_GROUP_STEPS]))
    return eng, ref


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0) <= tol


C, R = ProximalMKLClassifier, ProximalMKLRegressor

REFERENCE_CASES = [
    # (estimator, n_classes (0: regression), n_examples)
    (C(kernels=KERNELS, lam=0.01), 2, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="l21", lam=0.02, explicit_groups=((0, 1), None), budget=40), 2, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="sparse_group_lasso", lam=0.02, l1_ratio=0.5,
       explicit_groups=((0, 1), None), budget=40, eviction="least_impact"), 3, 250),
    (C(kernels=KERNELS, regularizer="nonsparse", q=1.3, lam=0.05, schedule="constant", eta0=0.3,
       explicit_groups=((0, 1),)), 4, 250),
    (C(kernels=KERNELS, regularizer="elastic_net", sigma=0.5, lam=0.05, schedule="strongly_convex",
       explicit_groups=((0, 1),)), 3, 250),
    (C(kernels=KERNELS, regularizer="weighted_sq_l1", group_weights=[1, 2, 0.5, 1.5, 1], lam=0.05, gamma=2.0,
       explicit_groups=((0, 1),)), 3, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="none", budget=25, eviction="least_impact"), 3, 200),
    # strong group lasso: groups are zeroed and revived along the way
    (C(kernels=KERNELS, regularizer="l21", lam=0.6, explicit_groups=((2,), (5,))), 2, 250),
    (C(kernels=KERNELS, regularizer="sq_l21", lam=0.1, schedule="strongly_convex", gamma="auto", budget=30), 2, 250),
    # a long stream with strong shrinkage: the lazy scales fall by many decades (folds; averaged model)
    (C(kernels=KERNELS, regularizer="elastic_net", sigma=5.0, lam=0.2, schedule="constant", eta0=0.5, budget=15,
       average=True), 3, 1500),
    (R(kernels=KERNELS, explicit_groups=((0, 1),)), 0, 250),
    (R(kernels=KERNELS, loss="epsilon_insensitive", epsilon=0.2, regularizer="l21", lam=0.05, budget=30), 0, 250),
    (R(kernels=KERNELS, regularizer="elastic_net", lam=0.02, eviction="least_impact", budget=50,
       explicit_groups=(None,)), 0, 250),
    # the step split among the groups by their norms (the river regressor's default)
    (R(kernels=KERNELS, explicit_groups=((0, 1),), group_steps="norms", eta0=0.5), 0, 250),
    (R(kernels=KERNELS, loss="epsilon_insensitive", regularizer="l21", lam=0.05, budget=30, group_steps="norms"),
     0, 250),
    # the same split for the classifiers (an option there, not the default)
    (C(kernels=KERNELS, explicit_groups=((0, 1),), group_steps="norms"), 3, 250),
    (C(kernels=KERNELS, loss="logistic", budget=25, group_steps="norms"), 2, 200),
]


@pytest.mark.parametrize("est, n_classes, n", REFERENCE_CASES,
                         ids=[f"{type(e).__name__[12:]}-{e.regularizer}-{e.loss}-{i}"
                              for i, (e, _, _) in enumerate(REFERENCE_CASES)])
def test_compiled_step_matches_reference(est, n_classes, n):
    regression = n_classes == 0
    X, y = _stream(n, n_classes, regression, seed=n_classes + n)
    Xt = np.random.default_rng(99).normal(size=(7, D))
    eng, ref = _engine_and_reference(est, n_classes, regression)
    n_zeroed = 0
    for i in range(n):
        yc, yv = (0, float(y[i])) if regression else (int(y[i]), 0.0)
        loss, _, updated, _ = eng._step(X[i], yc, yv)
        loss_ref, updated_ref = ref.learn(X[i], yc, yv)
        assert updated == updated_ref, f"step {i}"
        assert _close(loss, loss_ref), f"step {i}: loss {loss} != {loss_ref}"
        if i % 25 == 24:
            assert _close(eng.group_norms(), ref.norms()), f"step {i}"
            n_zeroed += int(np.sum(eng.group_norms() == 0.0))
            # lazily scaled squared norms (eq. 17) equal the recomputation from the buffer
            assert _close(eng.theta_sq, eng.recompute_theta_sq(), 1e-9)
    assert eng.n_support == ref.X.shape[0]
    if eng.istate[_cf.I_EVICTIONS] and (regression or n_classes == 2 or est.loss == "hinge"):
        assert ref.n_merges > 0  # evictions merged into partners (one output: always possible)
    ref_scores = np.array([ref.scores(x) for x in Xt])
    ref_avg = np.array([ref.scores(x, average=True) for x in Xt])
    assert _close(eng.scores_many(Xt, average=False), ref_scores)
    assert _close(eng.scores_many(Xt, average=True), ref_avg)
    for k, x in enumerate(Xt[:3]):  # the per-example compiled scoring path as well
        assert _close(eng.scores_one(x, average=False), ref_scores[k])
        assert _close(eng.scores_one(x, average=True), ref_avg[k])
    if est.regularizer == "l21" and est.lam >= 0.5:
        assert n_zeroed > 0  # the zeroing path was exercised


def test_group_gamma_auto_is_appendix_e_radius():
    est = C(kernels=KERNELS, regularizer="sq_l21", lam=0.1, gamma="auto")
    eng = est._new_engine(np.arange(2))
    assert eng.hyper[_cf.H_GAMMA] == pytest.approx(math.sqrt(2 * 1.0 / 0.1))  # hinge: L(0) = 1
    eng = C(kernels=KERNELS, loss="logistic", lam=0.1)._new_engine(np.arange(4))
    assert eng.hyper[_cf.H_GAMMA] == pytest.approx(math.sqrt(2 * math.log(4) / 0.1))
