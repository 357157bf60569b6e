"""PolyMKL's model files: round trips with continued learning, inconsistent states refused.
"""

import os
import tempfile

import numpy as np
import pytest
from _polymkl_data import _data

from onlinemkl import PolyMKLRegressor, load
from onlinemkl.kernels import RBF, Linear


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
