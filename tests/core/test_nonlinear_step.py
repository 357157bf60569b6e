"""Non-linear kernel combinations (Cortes et al. 2009): the gradient against finite differences
and numpy, the projection, the direct solve against LAPACK's.
"""

import naive_polymkl as nv
import numpy as np
import pytest
from _nonlinear_data import _data, _engine

from onlinemkl.kernels import RBF, Linear
from onlinemkl.nonlinear.sklearn import project


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
