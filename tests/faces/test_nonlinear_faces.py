"""Non-linear KRR's face: bad parameters and input are named and leave the model unchanged.
"""

import numpy as np
import pytest
from _nonlinear_data import _data

from onlinemkl import NonlinearKRRRegressor


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
