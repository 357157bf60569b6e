"""What the obscure test modules share: data, kernels and fixtures."""

import naive
import numpy as np
import pytest

from onlinemkl import OBSCUREClassifier
from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial
from onlinemkl.obscure.engine import ObscureEngine, default_eta

D = 6


# The fit-path comparisons use all five too: fit's BLAS kernel matrices sum a BSpline group's squared
# distances directly, so their diagonal is the exact K(x, x) the norm updates use (the expanded
# |x|^2 + |z|^2 - 2 x.z left 1 - ~1e-8 there; test_fit_with_bspline_norms_equal_recomputation).
KERNELS = (
    RBF(gamma=0.2, group=(0, 1, 2)),
    Linear(group=(3, 4, 5), normalize=True),
    Polynomial(degree=2, normalize=True),
    Laplacian(gamma=0.1),
    BSpline(h=5.0, group=(0, 1, 2)),
)


def make_data(n, n_classes, seed, d=D, noise=0.5):
    """Noisy non-linear labels: updates keep happening in both stages."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if n_classes == 2:
        y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 3] + noise * rng.normal(size=n) > 0, 1, -1)
    else:
        y = (np.floor((X[:, 0] + X[:, 3] + noise * rng.normal(size=n)) * 1.2) % n_classes).astype(np.int64)
    return X, y


def engine_and_reference(n_classes, p, lam=0.01, budget=None, eviction="oldest", pegasos=False, kernels=KERNELS):
    binary = n_classes == 2
    q = p / (p - 1.0)
    eta = default_eta(len(kernels), q)
    eng = ObscureEngine(kernels, p, eta, lam, budget, eviction, pegasos, binary)
    eng.set_features(D)
    eng.set_n_classes(n_classes)
    ref = naive.NaiveObscure(kernels, p, eta, lam=lam, binary=binary, n_classes=n_classes, budget=budget,
                             eviction=eviction, pegasos=pegasos)
    return eng, ref


@pytest.fixture(scope="module", autouse=True)
def warm_up():
    """Compile once per module (the disk cache may be cold)."""
    X, y = make_data(30, 3, 0)
    OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(X, y)
    OBSCUREClassifier(kernels=KERNELS, budget=5, switch_after=10).partial_fit(X, y, classes=[0, 1, 2]).predict(X)


def recomputed_matches(eng, rtol=1e-9):
    rec = eng.recompute_theta_sq()
    np.testing.assert_allclose(eng.theta_sq, rec, rtol=rtol, atol=rtol * max(rec.max(), 1e-300))
