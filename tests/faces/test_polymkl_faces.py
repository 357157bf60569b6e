"""The mini-batch regressors' faces (PolyMKL, non-linear KRR): bad parameters and input are named
and leave the model unchanged.
"""

import numpy as np
import pytest

from onlinemkl import PolyMKLRegressor


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


from _helpers import engine_of
from _polymkl_data import _data

from onlinemkl import NonlinearKRRRegressor  # noqa: E402


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
    for learn in (m.partial_fit, engine_of(m).learn_many):
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


@pytest.mark.parametrize("lam", ["best", -1.0, 0.0, float("nan")])
def test_bad_lam_named(lam):
    X = np.random.default_rng(0).normal(size=(10, 2))
    for make in (PolyMKLRegressor, NonlinearKRRRegressor):
        with pytest.raises((TypeError, ValueError), match="lam"):
            make(lam=lam).fit(X, X[:, 0])
