"""Polynomial-kernel MKL (Afkanpour et al. 2013): compiled code vs plain numpy, exact sampling, the solver."""

import os
import sys
import tempfile

import numpy as np
import pytest
from scipy.stats import chisquare

import naive_polymkl as nv
from onlinemkl import PolyMKLRegressor, load
from onlinemkl._core import polynomial as cp
from onlinemkl.kernels import RBF, Linear
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


# -- compiled pieces vs numpy -----------------------------------------------------------------------


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


# -- Algorithm 3: exact sampling ---------------------------------------------------------------------


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


# -- Algorithm 2: the solver against plain numpy ------------------------------------------------------


def _data(n=60, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] + X[:, -1] ** 3
    return X, y


def _naive_state(model, X, y):
    """Recompute K_theta (predictor weights) and alpha from the stored multi-indices, in plain numpy."""
    eng = model._engine
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
    eng = m._engine
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
    eng = m._engine
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
    eng = m._engine
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


# -- mini-batches, the support window, warm starts ----------------------------------------------------


def test_partial_fit_window_and_warm_start():
    X, y = _data(n=90)
    m = PolyMKLRegressor(degree=2, n_iter=10, budget=50, random_state=0)
    m.partial_fit(X[:30], y[:30])
    first = dict(zip(m.multi_indices_, m._engine.theta))
    m.partial_fit(X[30:60], y[30:60])
    assert m.n_support_ == 50
    np.testing.assert_array_equal(m._engine.Xw, X[10:60])
    # warm start: the second batch keeps every multi-index of the first
    assert set(first) <= set(m.multi_indices_)
    m.partial_fit(X[60:], y[60:])
    np.testing.assert_array_equal(m._engine.Xw, X[40:])


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


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("params, match", [
    ({"degree": 0}, "degree"), ({"lam": -1.0}, "lam"), ({"n_iter": 1.5}, "n_iter"), ({"eta": 0}, "eta"),
    ({"solver": "sgd"}, "solver"), ({"iterate": "best"}, "iterate"), ({"budget": 0}, "budget"),
    ({"rho": [1.0, 2.0]}, "rho"), ({"rho": -1.0}, "rho"), ({"tol": float("nan")}, "tol"),
    ({"kernels": ["rbf"]}, "kernels"), ({"constant": "yes"}, "constant"), ({"random_state": "x"}, "random_state"),
])
def test_bad_parameters_named(params, match):
    X, y = _data(n=10)
    with pytest.raises((ValueError, TypeError), match=match):
        PolyMKLRegressor(**params).fit(X, y)


def test_bad_input_leaves_model_unchanged():
    X, y = _data(n=40)
    m = PolyMKLRegressor(degree=2, n_iter=5, random_state=0).partial_fit(X[:20], y[:20])
    before = m.predict(X)
    state = m._get_state()
    Xn = X[20:].copy()
    Xn[3, 1] = np.nan
    for bad_X, bad_y, match in [(Xn, y[20:], "NaN"), (X[20:, :3], y[20:], "features"), (X[20:], y[21:], "y"),
                                (X[20:], np.full(20, np.inf), "y"), (X[20], y[20:21], "2-D")]:
        with pytest.raises(ValueError, match=match):
            m.partial_fit(bad_X, bad_y)
    np.testing.assert_array_equal(m.predict(X), before)
    after = m._get_state()
    assert after[0] == state[0]
    for k in state[1]:
        np.testing.assert_array_equal(after[1][k], state[1][k])
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])


def test_predict_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PolyMKLRegressor().predict(np.zeros((1, 2)))


# -- persistence ----------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    dict(degree=3, n_iter=12, budget=30, random_state=0),
    dict(degree=2, n_iter=6, budget=25, solver="ucd", iterate="last", random_state=3),
    dict(degree=2, budget=25, solver="uniform"),
    dict(kernels=(RBF(gamma_scale=1.0), Linear(group=(0, 1))), degree=2, n_iter=6, budget=25, random_state=1),
])
def test_save_load_round_trip_and_continued_learning(params):
    X, y = _data(n=90)
    m = PolyMKLRegressor(**params)
    m.partial_fit(X[:30], y[:30]).partial_fit(X[30:50], y[30:50])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.omkl")
        m.save(path)
        m2 = load(path)
    assert type(m2) is PolyMKLRegressor and m2.get_params()["budget"] == params["budget"]
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    m.partial_fit(X[50:], y[50:])
    m2.partial_fit(X[50:], y[50:])
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    assert m2.multi_indices_ == m.multi_indices_


def test_load_rejects_inconsistent_state():
    X, y = _data(n=30)
    m = PolyMKLRegressor(degree=2, n_iter=5, random_state=0).fit(X, y)
    state, arrays = m._get_state()
    bad = dict(arrays, Z=np.full_like(arrays["Z"], 99))
    with pytest.raises(ValueError, match="multi-index"):
        PolyMKLRegressor(degree=2, n_iter=5, random_state=0)._set_state(state, bad)
    bad = dict(arrays, theta=-arrays["theta"] - 1)
    with pytest.raises(ValueError, match="theta"):
        PolyMKLRegressor(degree=2, n_iter=5, random_state=0)._set_state(state, bad)


from onlinemkl import NonlinearKRRRegressor  # noqa: E402


def test_state_with_parameter_rows_of_another_width_is_refused():
    """``ck_params`` has one layout (with the ladder columns); narrower rows are inconsistent."""
    X, y = _data(n=60)
    kernels = (RBF(gamma_scale=0.5), RBF(gamma_scale=1.0), Linear(group=(0, 1)))
    m = PolyMKLRegressor(kernels=kernels, degree=2, n_iter=6, budget=25, random_state=1).fit(X[:40], y[:40])
    state, arrays = m._get_state()
    assert arrays["ck_params"].shape[1] == 8 and arrays["ck_params"][1, 4] == 2  # a ladder: k = 2
    narrow = dict(arrays, ck_params=np.ascontiguousarray(arrays["ck_params"][:, :4]))
    m2 = PolyMKLRegressor(kernels=kernels, degree=2, n_iter=6, budget=25, random_state=1)
    with pytest.raises(ValueError, match="ck_params must be float64 of shape"):
        m2._set_state(state, narrow)


def _whole_state(model):
    state, arrays = model._get_state()
    return state, {k: v.copy() for k, v in arrays.items()}


@pytest.mark.parametrize("cls", ["poly", "cortes"])
@pytest.mark.parametrize("value, match", [(5e49, "overflow"), (1e100, "too large"), (1e200, "(?:overflows|too large)"), (np.inf, "infinite"),
                                          (np.nan, "NaN")])
def test_bad_values_in_a_batch_name_the_column_and_leave_the_whole_state_unchanged(cls, value, match):
    """5e49 is valid but its degree-3 kernel values overflow; 1e100 and 1e200 pass the bound; inf and NaN.
    Through the face (partial_fit) and the engine (what the river adapters call): a ValueError naming
    column 2, and get_state() before and after equal, array by array."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(60, 4))
    y = X[:, 0] * X[:, 1]
    make = {"poly": lambda: PolyMKLRegressor(degree=3, n_iter=10, budget=40, random_state=0, standardize=False),
            "cortes": lambda: NonlinearKRRRegressor(degree=3, max_iter=5, budget=40, standardize=False)}[cls]
    m = make().partial_fit(X[:30], y[:30])
    before = _whole_state(m)
    Xb = X[30:].copy()
    Xb[3, 2] = value
    for learn in (m.partial_fit, m._engine.learn_many):
        with pytest.raises(ValueError, match=f"(?s)(column 2|X contains|X\\[3, 2\\]).*{match}|{match}.*column 2"):
            learn(Xb, y[30:])
        after = _whole_state(m)
        assert after[0] == before[0]
        assert after[1].keys() == before[1].keys()
        for k in before[1]:
            np.testing.assert_array_equal(after[1][k], before[1][k], err_msg=k)
    # and it goes on learning as if the bad batch had never come
    fresh = make().partial_fit(X[:30], y[:30]).partial_fit(X[30:], y[30:])
    m.partial_fit(X[30:], y[30:])
    np.testing.assert_array_equal(m.predict(X), fresh.predict(X))


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


def test_defaults_fit_section_5_2_at_r5():
    """The defaults (lam='auto', standardised inside) with degree=3 on the paper's synthetic data at r = 5:
    R^2 >= 0.99 on held-out points (lam=0.1 gives 0.735)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    from bench_polymkl import synthetic

    (Xt, yt), _, (Xs, ys), _ = synthetic(5, 5)
    m = PolyMKLRegressor(degree=3, random_state=0).fit(Xt, yt)
    assert 1 - np.mean((m.predict(Xs) - ys) ** 2) / np.var(ys) >= 0.99


@pytest.mark.parametrize("lam", ["best", -1.0, 0.0, float("nan")])
def test_bad_lam_named(lam):
    X = np.random.default_rng(0).normal(size=(10, 2))
    for make in (PolyMKLRegressor, NonlinearKRRRegressor):
        with pytest.raises((TypeError, ValueError), match="lam"):
            make(lam=lam).fit(X, X[:, 0])


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
    eng = m._engine
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
