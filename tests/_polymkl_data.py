"""What the polymkl test modules share: data, kernels and fixtures."""


import numpy as np


def _data(n=60, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] + X[:, -1] ** 3
    return X, y
