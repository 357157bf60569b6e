"""``onlinemkl.river.Guard``: a bad example is refused before any step of a river pipeline learns it;
a learner's error about a value a step made says where it may have come from."""

import math

import numpy as np
import pandas as pd
import pytest
from river import compose, preprocessing

from onlinemkl.persist import load, save
from onlinemkl.river import Guard, OBSCUREClassifier, ProximalMKLRegressor

BAD = [
    ({"a": float("nan"), "b": 1.0}, "'a' = nan is not finite"),
    ({"a": 1.0, "b": float("-inf")}, "'b' = -inf is not finite"),
    ({"a": 1e155, "b": 1.0}, "'a' = 1e\\+155 is too large"),
    ({"a": 10**400, "b": 1.0}, "'a' = 1000.* is too large"),
    ({"a": 1.0, "b": "red"}, "'b' = 'red' is not a number"),
    ({"a": None, "b": 1.0}, "'a' = None is not a number"),
]


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        v = rng.normal(size=2) * 3 + 10
        yield {"a": float(v[0]), "b": float(v[1])}, bool(v[0] > 10)


def _snapshot(pipe):
    scaler = pipe["StandardScaler"]
    stats = {k: dict(getattr(scaler, k)) for k in ("counts", "means", "vars")}
    return stats, {k: v.copy() for k, v in pipe["OBSCUREClassifier"]._get_state()[1].items()}


def _same(a, b):
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys() and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


@pytest.mark.parametrize("x, message", BAD)
def test_the_guard_refuses_a_bad_example_before_the_scaler_learns_it(x, message):
    pipe = Guard() | preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
    assert isinstance(pipe, compose.Pipeline)
    for xi, yi in _stream(40):
        pipe.learn_one(xi, yi)
    before = _snapshot(pipe)
    with pytest.raises(ValueError, match=f"Guard refused the example.*feature {message}"):
        pipe.learn_one(x, True)
    with pytest.raises(ValueError, match=f"feature {message}"):
        pipe.predict_one(x)
    _same(before, _snapshot(pipe))  # no step learnt anything
    for xi, yi in _stream(40, seed=1):  # the stream goes on
        pipe.learn_one(xi, yi)
    proba = pipe.predict_proba_one({"a": 10.0, "b": 10.0})
    assert all(math.isfinite(p) for p in proba.values())


def test_the_guard_refuses_a_bad_batch_before_the_scaler_learns_it():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 2)) + 5, columns=["a", "b"])
    y = X["a"] - X["b"]
    pipe = Guard() | preprocessing.StandardScaler() | ProximalMKLRegressor(budget=40)
    pipe.learn_many(X[:20], y[:20])
    means = dict(pipe["StandardScaler"].means)
    bad = X[20:].copy()
    bad.loc[25, "b"] = 1e200
    with pytest.raises(ValueError, match="Guard refused the example.*feature 'b' = 1e\\+200 \\(row 25\\)"):
        pipe.learn_many(bad, y[20:])
    assert dict(pipe["StandardScaler"].means) == means
    pipe.learn_many(X[20:], y[20:])
    assert np.isfinite(pipe.predict_many(X).to_numpy()).all()


def test_valid_examples_pass_through_unchanged():
    x = {"a": 1, "b": 2.5, "c": True}
    g = Guard()
    g.learn_one(x)
    assert g.transform_one(x) is x


def test_without_the_guard_the_learner_says_the_value_may_come_from_the_step_before_it():
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
    for xi, yi in _stream(20):
        pipe.learn_one(xi, yi)
    with pytest.raises(ValueError):
        pipe.learn_one({"a": float("nan"), "b": 1.0}, True)  # the scaler has learnt it already
    with pytest.raises(ValueError, match="feature 'a' = nan .*may have come out of it rather than from your data.*"
                                         "put onlinemkl.river.Guard\\(\\) first"):
        pipe.learn_one({"a": 10.0, "b": 10.0}, True)  # a good example, poisoned by the scaler
    with pytest.raises(ValueError, match="Guard\\(\\) first"):
        pipe.predict_one({"a": 10.0, "b": 10.0})
    with pytest.raises(ValueError, match="Guard\\(\\) first"):
        pipe["OBSCUREClassifier"].predict_proba_many(pd.DataFrame({"a": [np.nan]}))


def test_a_pipeline_with_the_guard_saves_and_loads(tmp_path):
    pipe = Guard() | preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
    for xi, yi in _stream(40):
        pipe.learn_one(xi, yi)
    again = load(save(pipe, tmp_path / "p.omkl"))
    assert list(again.steps) == list(pipe.steps) and isinstance(again["Guard"], Guard)
    x = {"a": 9.0, "b": 11.0}
    assert again.predict_proba_one(x) == pipe.predict_proba_one(x)
    with pytest.raises(ValueError, match="Guard refused"):
        again.learn_one({"a": float("nan")}, True)
