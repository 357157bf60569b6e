"""What the nonlinear test modules share: data, kernels and fixtures."""


import numpy as np

from onlinemkl import NonlinearKRRRegressor


def _data(n=60, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, -1]
    return X, y


def _engine(**kw):
    return NonlinearKRRRegressor(**kw)._new_engine()
