"""Non-linear kernel combinations' engine (Cortes et al. 2009): Algorithm 1, predictions against
numpy's KRR, warm starts over windows.
"""

import naive_polymkl as nv
import numpy as np
import pytest
from _helpers import engine_of
from _nonlinear_data import _data

from onlinemkl import NonlinearKRRRegressor


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", [2, 3])
def test_algorithm1_decreases_objective_and_stops(norm, d):
    X, y = _data(n=80)
    m = NonlinearKRRRegressor(degree=d, norm=norm, lam=1e-3, standardize=False, max_iter=100, epsilon=1e-5,
                              Lambda=2.0, tol=0.0).fit(X, y)
    obj = m.objective_
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])  # monotone with the line search
    assert obj[-1] < obj[0]
    assert engine_of(m).n_iter_ < 100  # ||mu' - mu|| < epsilon reached
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
    assert engine_of(fast).n_iter_ < engine_of(full).n_iter_ / 2  # without the rule mu keeps creeping
    F_full, F_fast = full.objective_[-1], fast.objective_
    assert (F_fast[-2] - F_fast[-1]) <= tol * F_fast[-2]  # stopped by the rule
    assert np.all(np.diff(F_fast[:-1]) < -tol * F_fast[:-2])  # and not before
    assert 0.0 <= (F_fast[-1] - F_full) / F_full < 10 * tol
    np.testing.assert_allclose(fast.objective_, full.objective_[: len(fast.objective_)], rtol=1e-10)


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
    np.testing.assert_array_equal(engine_of(m).Xw, X[20:60])
    # warm start: a batch without iterations keeps mu from the previous batch
    mu2 = m.mu_
    assert not np.allclose(mu2, engine_of(m).initial_mu(4))
    engine_of(m).max_iter = 0
    m.partial_fit(X[60:], y[60:])
    np.testing.assert_allclose(m.mu_, mu2, rtol=1e-12)
    assert not np.allclose(mu1, mu2)  # the second batch moved mu
