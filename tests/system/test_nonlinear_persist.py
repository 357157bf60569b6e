"""Non-linear KRR's model files: round trips with continued learning.
"""

import os
import tempfile

import numpy as np
import pytest
from _nonlinear_data import _data

from onlinemkl import NonlinearKRRRegressor, load
from onlinemkl.kernels import RBF, Linear


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
