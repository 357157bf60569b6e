"""Polynomial-kernel MKL's compiled code (``onlinemkl._core.polynomial``) against plain numpy:
powers, masses and products, the solves, exact sampling (Algorithm 3), screening, the
leave-one-out ridge.
"""

import naive_polymkl as nv
import numpy as np
import pytest
from scipy.stats import chisquare

from onlinemkl._core import polynomial as cp
from onlinemkl.polymkl.sklearn import multiplicity


def _psd_kernels(rng, r, n):
    """``r`` random PSD matrices (n x n) of various ranks, as base kernels."""
    Ks = np.empty((r, n, n))
    for j in range(r):
        A = rng.normal(size=(n, 1 + j % 3))
        Ks[j] = A @ A.T + 0.1 * np.eye(n)
    return Ks


def _empty3():
    return np.zeros((0, 0, 0))


def _empty2():
    return np.zeros((0, 0))


def _args(Ks=None, F=None):
    if F is not None:
        return _empty3(), np.ascontiguousarray(F), cp.MODE_FACTOR
    return np.ascontiguousarray(Ks), _empty2(), cp.MODE_DENSE


def _base_kernels(mode, rng, r, n):
    """``(Ks, Kb, Fb, code)``: ``r`` random base kernels on ``n`` points as dense matrices ``Ks`` and
    in the compiled code's form: rank-one features (``mode="factor"``) or the dense matrices."""
    if mode == "factor":
        F = rng.normal(size=(n, r))
        return (nv.factor_kernels(F), *_args(F=F))
    Ks = _psd_kernels(rng, r, n)
    return (Ks, *_args(Ks=Ks))


@pytest.mark.parametrize("mode", ["dense", "factor"])
def test_powers_masses_products_match_numpy(mode):
    rng = np.random.default_rng(0)
    n, r, D = 6, 3, 3
    Ks, Kb, Fb, code = _base_kernels(mode, rng, r, n)
    S = cp.base_sum(Kb, Fb, code, n)
    np.testing.assert_allclose(S, Ks.sum(axis=0), rtol=1e-12, atol=1e-12)
    P = cp.hadamard_powers(S, D)
    for d in range(D + 1):
        np.testing.assert_allclose(P[d], S ** d, rtol=1e-12)
    alpha = rng.normal(size=n)
    rho = np.array([1.0, 0.5, 2.0, 1.5])
    delta = np.empty(D + 1)
    C = cp.degree_masses(P, alpha, rho ** -2.0, delta)
    g = nv.gradient_abs(Ks, alpha, rho, D)
    assert C == pytest.approx(sum(g.values()), rel=1e-10)  # C is the enumerated ||g||_1
    for d in range(D + 1):
        assert delta[d] == pytest.approx(sum(v for m, v in g.items() if len(m) == d), rel=1e-10)
    out = np.empty((n, n))
    for m in [(), (1,), (0, 2), (1, 1, 2)]:
        z = np.full(D, -1, dtype=np.int64)
        z[: len(m)] = m
        cp.product_kernel(z, Kb, Fb, code, n, out)
        np.testing.assert_allclose(out, nv.product_kernel(Ks, m), rtol=1e-12, atol=1e-12)
    Z = np.array([[-1, -1, -1], [0, -1, -1], [0, 2, 2]], dtype=np.int64)
    w = np.array([0.3, 1.2, 0.7])
    K = cp.combined_kernel(Z, w, Kb, Fb, code, n)
    ref = 0.3 * nv.product_kernel(Ks, ()) + 1.2 * Ks[0] + 0.7 * nv.product_kernel(Ks, (0, 2, 2))
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12)


def test_multiplicity_counts_orderings():
    for m in nv.multisets(4, 4):
        assert multiplicity(m) == nv.n_orderings(m)
    # sum over multisets of c(m) = number of ordered tuples r^d
    assert sum(nv.n_orderings(m) for m in nv.multisets(3, 4) if len(m) == 4) == 3 ** 4


def test_cg_warm_start_solves_and_saves_iterations():
    rng = np.random.default_rng(1)
    n = 40
    A = rng.normal(size=(n, n))
    K = A @ A.T
    y = rng.normal(size=n)
    x = np.zeros(n)
    it_cold = cp.cg_solve(K, 0.5, y, x, 1e-10, 1000)
    np.testing.assert_allclose(x, np.linalg.solve(K + 0.5 * np.eye(n), y), rtol=1e-7, atol=1e-9)
    K2 = K + 1e-3 * np.outer(A[:, 0], A[:, 0])  # a small change, as one coordinate step
    it_warm = cp.cg_solve(K2, 0.5, y, x, 1e-10, 1000)
    np.testing.assert_allclose(x, np.linalg.solve(K2 + 0.5 * np.eye(n), y), rtol=1e-7, atol=1e-9)
    assert it_warm < it_cold


def test_dual_solve_falls_back_on_ill_conditioned_systems():
    from onlinemkl.polymkl.engine import dual_solve

    rng = np.random.default_rng(2)
    n = 40
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    K = (Q * np.logspace(-3, 10, n)) @ Q.T  # condition ~ 1e13 (as unscaled inputs give)
    K = 0.5 * (K + K.T)
    x_true = rng.normal(size=n)
    y = K @ x_true + 1e-3 * x_true
    x = np.zeros(n)
    it = dual_solve(K, 1e-3, y, x, 1e-14)
    assert it == n + 1  # CG gave up within n iterations; the direct solve ran
    np.testing.assert_allclose(x, x_true, rtol=1e-3, atol=1e-3)
    x = np.zeros(n)  # a well-conditioned system stays with CG
    assert dual_solve(K, 1e9, y, x, 1e-10) <= n
    np.testing.assert_allclose(x, np.linalg.solve(K + 1e9 * np.eye(n), y), rtol=1e-8, atol=1e-14)


def _sample_counts(P, alpha, wdeg, Kb, Fb, code, D, n_samples, seed):
    rng = np.random.default_rng(seed)
    z = np.full(D, -1, dtype=np.int64)
    counts = {}
    Cs = set()
    U = rng.random((n_samples, D + 1))
    r = Kb.shape[0] if code == cp.MODE_DENSE else Fb.shape[1]
    order = np.arange(r)[::-1].copy() if seed % 2 else np.arange(r)
    for s in range(n_samples):
        d, C = cp.sample_multi_index(P, alpha, wdeg, Kb, Fb, code, U[s], order, z)
        Cs.add(C)
        key = tuple(int(v) for v in z[:d])
        assert list(key) == sorted(key) and all(v == -1 for v in z[d:])
        counts[key] = counts.get(key, 0) + 1
    return counts, Cs


@pytest.mark.parametrize("mode, r, D", [("dense", 3, 3), ("factor", 4, 2), ("dense", 2, 4)])
def test_algorithm3_frequencies_match_enumerated_probabilities(mode, r, D):
    rng = np.random.default_rng(2)
    n = 5
    Ks, Kb, Fb, code = _base_kernels(mode, rng, r, n)
    alpha = rng.normal(size=n)
    rho = np.linspace(0.7, 1.3, D + 1)
    P = cp.hadamard_powers(cp.base_sum(Kb, Fb, code, n), D)
    g = nv.gradient_abs(Ks, alpha, rho, D)
    keys = list(g)
    C_enum = sum(g.values())
    q = np.array([g[k] / C_enum for k in keys])
    N = 20000
    counts, Cs = _sample_counts(P, alpha, rho ** -2.0, Kb, Fb, code, D, N, seed=3)
    assert set(counts) <= set(keys)
    (C,) = Cs
    assert C == pytest.approx(C_enum, rel=1e-10)
    obs = np.array([counts.get(k, 0) for k in keys], dtype=float)
    res = chisquare(obs, N * q)
    assert res.pvalue > 1e-3, (res, dict(zip(keys, zip(obs, N * q))))
    # the test has power: the same counts are far from uniform over multisets, and from the
    # ordered-tuple probabilities without the multiplicity c(m) (a plausible wrong reading)
    assert chisquare(obs, np.full(len(keys), N / len(keys))).pvalue < 1e-6
    wrong = np.array([g[k] / nv.n_orderings(k) for k in keys])
    assert chisquare(obs, N * wrong / wrong.sum()).pvalue < 1e-6


def test_uniform_multiset_sampler_is_uniform():
    from onlinemkl.polymkl.engine import _uniform_multiset

    rng = np.random.default_rng(4)
    r, d, N = 4, 3, 20000
    keys = [m for m in nv.multisets(r, d) if len(m) == d]
    counts = {k: 0 for k in keys}
    for _ in range(N):
        counts[_uniform_multiset(rng, r, d)] += 1
    assert chisquare(np.array(list(counts.values()), dtype=float)).pvalue > 1e-3


def test_loo_ridge_is_exact_leave_one_out_and_picks_the_grid_minimum():
    from onlinemkl._window import loo_ridge

    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 3))
    K = (1 + X @ X.T) ** 2
    y = X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=25)
    y -= y.mean()
    n = 25
    grid = np.array([1e-4, 1e-2, 1.0])
    scale = np.trace(K) / n

    def brute(shift):  # refit without example i, predict it
        e = []
        for i in range(n):
            keep = np.arange(n) != i
            a = np.linalg.solve(K[np.ix_(keep, keep)] + shift * np.eye(n - 1), y[keep])
            e.append(y[i] - K[i, keep] @ a)
        return np.mean(np.square(e))

    loo = [brute(scale * g) for g in grid]
    lam, alpha, best = loo_ridge(K, y, grid)
    k = int(np.argmin(loo))
    assert lam == pytest.approx(scale * grid[k] / n, rel=1e-9) and best == pytest.approx(loo[k], rel=1e-6)
    np.testing.assert_allclose(alpha, np.linalg.solve(K + n * lam * np.eye(n), y), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("D", [1, 2, 3, 4])
def test_screening_finds_the_exact_top_gradients(D):
    """screen_top scores every multiset of non-constant base kernels: its top list equals a brute-force
    enumeration of rho_d^-2 (alpha' g_m)^2 / ||g_m||^2."""
    import itertools

    rng = np.random.default_rng(D)
    n, r, K = 30, 6, 12
    F = np.hstack([np.ones((n, 1)), rng.normal(size=(n, r - 1))])
    alpha = rng.normal(size=n)
    wdeg = np.array([1.0, 1.0, 0.5, 0.25, 0.3])[: D + 1]
    top_z, top_s = np.empty((K, D), dtype=np.int64), np.empty(K)
    cp.screen_top(np.ascontiguousarray(F.T), alpha, wdeg, 1, top_z, top_s)
    def score(m):
        g = np.prod(F[:, list(m)], axis=1)
        return wdeg[len(m)] * (g @ alpha) ** 2 / (g @ g)

    brute = sorted(((score(m), m)
                    for d in range(1, D + 1) for m in itertools.combinations_with_replacement(range(1, r), d)),
                   reverse=True)[:K]
    got = sorted(((s, tuple(int(v) for v in z if v >= 0)) for s, z in zip(top_s, top_z) if s >= 0), reverse=True)
    assert [m for _, m in got] == [m for _, m in brute]
    np.testing.assert_allclose([s for s, _ in got], [s for s, _ in brute], rtol=1e-10)
