"""Non-linear kernel combinations (Cortes et al. 2009): gradient, projection, Algorithm 1, persistence."""

import os
import tempfile

import numpy as np
import pytest

import naive_polymkl as nv
from onlinemkl import NonlinearKRRRegressor, load
from onlinemkl.kernels import RBF, Linear
from onlinemkl.nonlinear.sklearn import project


def _data(n=60, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, -1]
    return X, y


def _engine(**kw):
    return NonlinearKRRRegressor(**kw)._new_engine()


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("kernels", [None, (RBF(gamma=0.7), Linear(group=(0,)), Linear(group=(1, 2)))])
def test_gradient_matches_finite_differences_and_numpy(d, kernels):
    X, y = _data(n=25)
    yc = y - y.mean()
    lam = 1e-2
    eng = _engine(degree=d, lam=lam, kernels=kernels)
    eng.set_features(X.shape[1])
    r = eng.base.n_base(X.shape[1])
    mu = np.random.default_rng(1).uniform(0.2, 1.0, size=r)
    F, g = eng.objective_and_gradient(mu, X, yc)
    Kb, Fb = eng.base.arrays(X)
    Ks = Kb if Fb.size == 0 else nv.factor_kernels(Fb)
    assert F == pytest.approx(nv.cortes_objective(Ks, mu, yc, lam, d), rel=1e-9)
    np.testing.assert_allclose(g, nv.cortes_gradient(Ks, mu, yc, lam, d), rtol=1e-8, atol=1e-12)
    assert np.all(g <= 1e-12)  # every component is <= 0
    h = 1e-6
    fd = np.empty(r)
    for k in range(r):
        e = np.zeros(r)
        e[k] = h
        fd[k] = (eng.objective_and_gradient(mu + e, X, yc)[0] - eng.objective_and_gradient(mu - e, X, yc)[0]) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7 * np.abs(g).max())


@pytest.mark.parametrize("norm", ["l2", "l1"])
def test_projection_lands_on_boundary(norm):
    rng = np.random.default_rng(0)
    mu0 = np.full(5, 0.1)
    for _ in range(20):
        mu = project(rng.normal(size=5) * 3, mu0, 2.0, norm)
        assert np.all(mu >= 0)
        dist = np.linalg.norm(mu - mu0, 1 if norm == "l1" else 2)
        assert dist <= 2.0 + 1e-12
    mu = project(np.array([5.0, 1.0, 0.5, 0.3, 2.0]), mu0, 2.0, norm)  # no clipping needed
    assert np.linalg.norm(mu - mu0, 1 if norm == "l1" else 2) == pytest.approx(2.0)


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", [2, 3])
def test_algorithm1_decreases_objective_and_stops(norm, d):
    X, y = _data(n=80)
    m = NonlinearKRRRegressor(degree=d, norm=norm, lam=1e-3, standardize=False, max_iter=100, epsilon=1e-5,
                              Lambda=2.0, tol=0.0).fit(X, y)
    obj = m.objective_
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])  # monotone with the line search
    assert obj[-1] < obj[0]
    assert m._engine.n_iter_ < 100  # ||mu' - mu|| < epsilon reached
    nrm = np.linalg.norm(m.mu_, 1 if norm == "l1" else 2)
    assert nrm == pytest.approx(2.0, rel=1e-9) and np.all(m.mu_ >= 0)


def test_tol_stops_near_the_full_runs_objective():
    """The relative-decrease rule (tol) stops early under the tiny leave-one-out ridge, at an objective
    within a small multiple of tol of the run that goes on to max_iter (tol=0)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = X[:, 0] * X[:, 1] + X[:, 2]
    full = NonlinearKRRRegressor(tol=0.0, max_iter=60).fit(X, y)
    tol = 1e-4
    fast = NonlinearKRRRegressor(tol=tol, max_iter=60).fit(X, y)
    assert fast._engine.n_iter_ < full._engine.n_iter_ / 2  # without the rule mu keeps creeping
    F_full, F_fast = full.objective_[-1], fast.objective_
    assert (F_fast[-2] - F_fast[-1]) <= tol * F_fast[-2]  # stopped by the rule
    assert np.all(np.diff(F_fast[:-1]) < -tol * F_fast[:-2])  # and not before
    assert 0.0 <= (F_fast[-1] - F_full) / F_full < 10 * tol
    np.testing.assert_allclose(fast.objective_, full.objective_[: len(fast.objective_)], rtol=1e-10)


def test_direct_solve_equals_lapack_solve_and_falls_back():
    import scipy.linalg

    from onlinemkl._window import direct_solve

    rng = np.random.default_rng(1)
    A = rng.normal(size=(120, 40))
    y = rng.normal(size=120)
    K = A @ A.T + 1e-2 * np.eye(120)
    ref = scipy.linalg.solve(K, y, assume_a="pos")
    np.testing.assert_allclose(direct_solve(K, y), ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    S = A @ A.T  # singular: Cholesky fails, least squares answers
    x = direct_solve(S, y)
    np.testing.assert_allclose(x, np.linalg.lstsq(S, y, rcond=None)[0], rtol=1e-8, atol=1e-10)


def test_learns_product_target_better_than_linear():
    X, y = _data(n=200, seed=2)
    quad = NonlinearKRRRegressor(degree=2, lam=1e-4).fit(X[:150], y[:150])
    lin = NonlinearKRRRegressor(degree=1, lam=1e-4).fit(X[:150], y[:150])
    mse = lambda m: np.mean((m.predict(X[150:]) - y[150:]) ** 2)  # noqa: E731
    assert mse(quad) < 0.05 * np.var(y) < mse(lin)


def test_predict_matches_numpy_krr():
    X, y = _data(n=50)
    m = NonlinearKRRRegressor(degree=2, lam=1e-3, max_iter=3, standardize=False).fit(X[:40], y[:40])
    F = np.hstack([np.ones((50, 1)), X])
    Kfull = ((F * m.mu_) @ F.T) ** 2
    yc = y[:40] - y[:40].mean()
    alpha = nv.krr_dual(Kfull[:40, :40], yc, 1e-3)
    np.testing.assert_allclose(m.predict(X[40:]), y[:40].mean() + Kfull[40:, :40] @ alpha, rtol=1e-8)


def test_partial_fit_warm_starts_mu_and_keeps_window():
    X, y = _data(n=90)
    m = NonlinearKRRRegressor(degree=2, budget=40, max_iter=5)
    m.partial_fit(X[:30], y[:30])
    mu1 = m.mu_
    m.partial_fit(X[30:60], y[30:60])
    assert m.n_support_ == 40
    np.testing.assert_array_equal(m._engine.Xw, X[20:60])
    # warm start: a batch without iterations keeps mu from the previous batch
    mu2 = m.mu_
    assert not np.allclose(mu2, m._engine.initial_mu(4))
    m._engine.max_iter = 0
    m.partial_fit(X[60:], y[60:])
    np.testing.assert_allclose(m.mu_, mu2, rtol=1e-12)
    assert not np.allclose(mu1, mu2)  # the second batch moved mu


@pytest.mark.parametrize("params, match", [
    ({"degree": 5}, "degree"), ({"lam": 0}, "lam"), ({"Lambda": -1}, "Lambda"), ({"norm": "linf"}, "norm"),
    ({"eta": 0}, "eta"), ({"epsilon": -1}, "epsilon"), ({"max_iter": -1}, "max_iter"), ({"budget": 0}, "budget"),
    ({"mu0": -0.5}, "mu0"), ({"mu0": [1.0, 2.0]}, "mu0"), ({"line_search": 1}, "line_search"),
    ({"tol": -1e-4}, "tol"), ({"tol": float("nan")}, "tol"),
])
def test_bad_parameters_named(params, match):
    X, y = _data(n=10)
    with pytest.raises((ValueError, TypeError), match=match):
        NonlinearKRRRegressor(**params).fit(X, y)


def test_bad_input_leaves_model_unchanged():
    X, y = _data(n=40)
    m = NonlinearKRRRegressor(degree=2, max_iter=3).partial_fit(X[:20], y[:20])
    before = m.predict(X)
    Xn = X[20:].copy()
    Xn[0, 0] = np.inf
    for bad_X, bad_y in [(Xn, y[20:]), (X[20:, :2], y[20:]), (X[20:], y[:3]), (X[20:], np.full(20, np.nan))]:
        with pytest.raises(ValueError):
            m.partial_fit(bad_X, bad_y)
    np.testing.assert_array_equal(m.predict(X), before)


@pytest.mark.parametrize("params", [dict(degree=2, budget=30, max_iter=4),
                                    dict(degree=3, budget=30, max_iter=4, norm="l1", line_search=False),
                                    dict(kernels=(RBF(gamma=0.5), Linear()), degree=2, budget=30, max_iter=4)])
def test_save_load_round_trip_and_continued_learning(params):
    X, y = _data(n=80)
    m = NonlinearKRRRegressor(**params).partial_fit(X[:40], y[:40])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.omkl")
        m.save(path)
        m2 = load(path)
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    m.partial_fit(X[40:], y[40:])
    m2.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    np.testing.assert_array_equal(m2.mu_, m.mu_)
