"""Polynomial-kernel MKL's engine (Afkanpour et al. 2013): incremental state against
recomputation, the first step, the solvers, windows and warm starts, and the section 5.2 fit
(marked ``accuracy``).
"""

import os
import sys
import tempfile

import naive_polymkl as nv
import numpy as np
import pytest
from _helpers import engine_of

from onlinemkl import PolyMKLRegressor, load
from onlinemkl.kernels import RBF, Linear


def _naive_state(model, X, y):
    """Recompute K_theta (predictor weights) and alpha from the stored multi-indices, in plain numpy."""
    eng = engine_of(model)
    F = np.hstack([np.ones((X.shape[0], 1)), X]) if eng.base.kernels is None else None
    Ks = nv.factor_kernels(F) if F is not None else None
    theta = {tuple(int(v) for v in row if v >= 0): t for row, t in zip(eng.Z, eng.theta_pred)}
    rho = eng.wdeg ** -0.5
    K = nv.combined_kernel(Ks, theta, rho)
    yc = y - y.mean()
    return K, nv.krr_dual(K, yc, eng.lam), theta


@pytest.mark.parametrize("solver", ["stochastic", "ucd"])
@pytest.mark.parametrize("iterate", ["last", "average"])
def test_incremental_state_equals_recomputation(solver, iterate):
    X, y = _data()
    m = PolyMKLRegressor(degree=3, n_iter=30, solver=solver, iterate=iterate, lam=1e-3, standardize=False, tol=1e-12,
                         random_state=0).fit(X, y)
    eng = engine_of(m)
    K, alpha, theta = _naive_state(m, X, y)
    np.testing.assert_allclose(eng.alpha_pred, alpha, rtol=1e-6, atol=1e-8)
    assert np.all(eng.theta >= 0) and np.linalg.norm(eng.theta) <= 1.0 + 1e-12
    assert np.linalg.norm(eng.theta_pred) <= 1.0 + 1e-12
    Kq = nv.combined_kernel(nv.factor_kernels(np.hstack([np.ones((X.shape[0], 1)), X])), theta, eng.wdeg ** -0.5)
    np.testing.assert_allclose(m.predict(X), y.mean() + Kq @ alpha, rtol=1e-6, atol=1e-8)
    # objective trace is J(theta_k) = lam/2 y'alpha_k
    assert eng.history[-1] == pytest.approx(eng.objective(eng.theta), rel=1e-6)


def test_first_step_is_algorithm2_with_algorithm3_sample():
    """One iteration from theta = 0 equals the plain-numpy Algorithm 2 step at the sampled index."""
    X, y = _data(n=30, p=3)
    lam, eta = 1e-2, 0.7
    m = PolyMKLRegressor(degree=2, n_iter=1, eta=eta, lam=lam, iterate="last", standardize=False, tol=1e-13,
                         solver="stochastic", random_state=5).fit(X, y)
    eng = engine_of(m)
    ((I,),) = [m.multi_indices_]
    n = X.shape[0]
    yc = y - y.mean()
    Ks = nv.factor_kernels(np.hstack([np.ones((n, 1)), X]))
    alpha0 = yc / (n * lam)  # K_theta = 0
    C = sum(nv.gradient_abs(Ks, alpha0, np.ones(3), 2).values())
    step_eta = eta / (C * np.sqrt(1))  # eta / (C_ref sqrt(T)) with C_ref = C at theta = 0
    theta = nv.algorithm2_step({}, I, C, step_eta)
    assert eng.theta[0] == pytest.approx(theta[I], rel=1e-10)
    alpha1 = nv.krr_dual(nv.combined_kernel(Ks, theta, np.ones(3)), yc, lam)
    np.testing.assert_allclose(eng.alpha, alpha1, rtol=1e-8, atol=1e-10)


def test_dense_base_kernels_match_factor_form():
    """Linear(group=(j,)) base kernels (dense path) give the same model as the factor path."""
    X, y = _data(n=40, p=3)
    kw = dict(degree=2, n_iter=15, lam=1e-3, tol=1e-12, random_state=3, constant=False, solver="stochastic")
    a = PolyMKLRegressor(**kw).fit(X, y)
    b = PolyMKLRegressor(kernels=[Linear(group=(j,)) for j in range(3)], **kw).fit(X, y)
    assert a.multi_indices_ == b.multi_indices_
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=1e-8)
    np.testing.assert_allclose(a.predict(X[:7]), b.predict(X[:7]), rtol=1e-6, atol=1e-8)


def test_rbf_base_kernels_run_and_reduce_objective():
    X, y = _data(n=50, p=4)
    m = PolyMKLRegressor(kernels=[RBF(gamma=0.5, group=(0, 1)), RBF(gamma=0.5, group=(2, 3)), Linear()],
                         degree=2, n_iter=40, random_state=0).fit(X, y)
    obj = m.objective_
    assert obj[-1] < obj[0]
    assert np.all(np.isfinite(m.predict(X)))


def test_objective_decreases_and_learns_monomials():
    X, y = _data(n=200, p=5, seed=1)
    m = PolyMKLRegressor(degree=3, n_iter=150, lam=1e-4, random_state=0).fit(X[:150], y[:150])
    eng = engine_of(m)
    zero = eng.objective(np.zeros_like(eng.theta))
    assert eng.objective() < 0.5 * zero
    mse = np.mean((m.predict(X[150:]) - y[150:]) ** 2)
    assert mse < 0.2 * np.var(y[150:])
    # the true monomials are found: (1,2) = x0 x1, (4,4,4) = x3^3 (index j + 1 reads column j)
    top = [m.multi_indices_[k] for k in np.argsort(-m.theta_)[:8]]
    assert any(set(t) - {0} == {1, 2} for t in top)


def test_uniform_solver_is_krr_with_power_kernel():
    X, y = _data(n=50, p=3)
    m = PolyMKLRegressor(degree=3, solver="uniform", lam=1e-3, standardize=False, tol=1e-13).fit(X[:40], y[:40])
    K = (1.0 + X[:40] @ X[:40].T) ** 3
    yc = y[:40] - y[:40].mean()
    alpha = nv.krr_dual(K, yc, 1e-3)
    ref = y[:40].mean() + (1.0 + X[40:] @ X[:40].T) ** 3 @ alpha
    np.testing.assert_allclose(m.predict(X[40:]), ref, rtol=1e-7, atol=1e-9)


def test_partial_fit_window_and_warm_start():
    X, y = _data(n=90)
    m = PolyMKLRegressor(degree=2, n_iter=10, budget=50, random_state=0)
    m.partial_fit(X[:30], y[:30])
    first = dict(zip(m.multi_indices_, engine_of(m).theta))
    m.partial_fit(X[30:60], y[30:60])
    assert m.n_support_ == 50
    np.testing.assert_array_equal(engine_of(m).Xw, X[10:60])
    # warm start: the second batch keeps every multi-index of the first
    assert set(first) <= set(m.multi_indices_)
    m.partial_fit(X[60:], y[60:])
    np.testing.assert_array_equal(engine_of(m).Xw, X[40:])


def test_fit_equals_partial_fit_in_budget_chunks():
    X, y = _data(n=70)
    a = PolyMKLRegressor(degree=2, n_iter=8, budget=30, random_state=1).fit(X, y)
    b = PolyMKLRegressor(degree=2, n_iter=8, budget=30, random_state=1)
    for s in range(0, 70, 30):
        b.partial_fit(X[s:s + 30], y[s:s + 30])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_same_seed_same_model_and_n_iter_zero():
    X, y = _data()
    a = PolyMKLRegressor(degree=2, n_iter=5, random_state=7).fit(X, y)
    b = PolyMKLRegressor(degree=2, n_iter=5, random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    z = PolyMKLRegressor(n_iter=0, solver="stochastic").fit(X, y)  # theta = 0: predicts the mean
    np.testing.assert_allclose(z.predict(X), y.mean())


from _polymkl_data import _data

from onlinemkl import NonlinearKRRRegressor  # noqa: E402


@pytest.mark.parametrize("cls", ["poly", "cortes"])
def test_standardised_inside_predictions_do_not_depend_on_units(cls):
    """standardize=True: rescaling and shifting every column and the target changes nothing but the
    units of the predictions; the chosen lam_ is the same and is kept by save/load."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(80, 3))
    y = X[:, 0] * X[:, 1] + X[:, 2]
    make = {"poly": lambda: PolyMKLRegressor(degree=2, n_iter=20, budget=40, random_state=0),
            "cortes": lambda: NonlinearKRRRegressor(degree=2, max_iter=10, budget=40)}[cls]
    a = make().fit(X, y)
    units = np.array([1000.0, 0.01, 7.0])
    b = make().fit(X * units + 5.0, 3.0 * y - 2.0)
    # equal up to the rounding of the scaled inputs, which the solvers' iterations carry (tolerance ~1e-7)
    np.testing.assert_allclose(b.predict(X[:20] * units + 5.0), 3.0 * a.predict(X[:20]) - 2.0, rtol=1e-4, atol=1e-4)
    assert b.lam_ == pytest.approx(a.lam_, rel=1e-4)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.omkl")
        b.save(path)
        c = load(path)
    assert c.lam_ == b.lam_
    np.testing.assert_array_equal(c.predict(X * units + 5.0), b.predict(X * units + 5.0))


@pytest.mark.accuracy
def test_defaults_fit_section_5_2_at_r5():
    """The defaults (lam='auto', standardised inside) with degree=3 on the paper's synthetic data at r = 5:
    R^2 >= 0.99 on held-out points (lam=0.1 gives 0.735)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    from bench_polymkl import synthetic

    (Xt, yt), _, (Xs, ys), _ = synthetic(5, 5)
    m = PolyMKLRegressor(degree=3, random_state=0).fit(Xt, yt)
    assert 1 - np.mean((m.predict(Xs) - ys) ** 2) / np.var(ys) >= 0.99


def test_active_solver_recovers_a_sparse_polynomial_among_thousands_of_kernels():
    """r = 30 inputs, degree 3 (5,456 product kernels): the default solver finds the target's monomials
    and predicts held-out points almost exactly (the stochastic solver's MSE / variance: 0.27 at r = 40)."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(700, 30))
    y = X[:, 3] * X[:, 7] * X[:, 12] + X[:, 5] ** 2 + X[:, 20] * X[:, 21] - X[:, 9]
    m = PolyMKLRegressor(degree=3, random_state=0).fit(X[:400], y[:400])
    assert np.mean((m.predict(X[400:]) - y[400:]) ** 2) / np.var(y[400:]) < 0.01
    top = {m.multi_indices_[k] for k in np.argsort(-m.theta_)[:8]}
    assert {(4, 8, 13), (6, 6), (21, 22), (10,)} <= top  # base kernel j + 1 reads column j


def test_active_solver_is_optimal_over_its_active_set():
    """At the returned weights the restricted problem's optimality condition holds: the gradient magnitude
    q_m = c(m) rho_d^-2 (alpha' g_m)^2 is proportional to theta_m (theta on the unit sphere), and
    alpha is the KRR dual of K_theta with the chosen lam."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(200, 6))
    y = X[:, 0] * X[:, 1] + X[:, 2] ** 3 + 0.1 * rng.normal(size=200)
    m = PolyMKLRegressor(degree=3, random_state=0).fit(X, y)
    eng = engine_of(m)
    Z, yc, _ = eng.scaled_window()
    Fb = eng.base.factor(Z)
    G = np.column_stack([np.prod(Fb[:, list(k)], axis=1) for k in m.multi_indices_])
    p = eng.prior()
    n = Fb.shape[0]
    K = (G * (p * eng.theta)) @ G.T
    np.testing.assert_allclose(eng.alpha_pred, np.linalg.solve(K + n * eng.lam * np.eye(n), yc), rtol=1e-6, atol=1e-9)
    q = p * (G.T @ eng.alpha_pred) ** 2  # minus the gradient, up to lam / 2
    assert np.linalg.norm(eng.theta) == pytest.approx(1.0)
    ratio = q / eng.theta  # KKT on the sphere: the gradient is a multiple of theta
    assert np.ptp(ratio) < 1e-3 * ratio.mean()
