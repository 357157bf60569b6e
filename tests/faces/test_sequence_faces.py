"""The sequence labeller's face: dicts and arrays agree, bad input names the parameter and leaves
the model unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from _sequence_data import _assert_same, _small_problem, _snapshot, _trained

from onlinemkl.kernels import RBF
from onlinemkl.sequence import SequenceMKLLabeler


def test_dict_and_array_inputs_agree():
    X, Ys = _small_problem(8, n_seq=25)
    arr = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), random_state=0)
    dic = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), random_state=0)
    names = ["a", "b", "c", "d"]
    as_dicts = [[dict(zip(names, row)) for row in xs] for xs in X]
    for xs, xd, ys in zip(X, as_dicts, Ys):
        arr.learn_one(xs, ys)
        dic.learn_one(xd, ys)
    assert arr.predict(X) == dic.predict(as_dicts)
    # lists of rows are arrays; unseen dict features are ignored, missing ones read 0
    assert arr.predict_one([list(r) for r in X[0]]) == arr.predict_one(X[0])
    extra = [dict(d, unseen=5.0) for d in as_dicts[0]]
    assert dic.predict_one(extra) == dic.predict_one(as_dicts[0])
    with pytest.raises(TypeError, match="feature dicts"):
        arr.learn_one(as_dicts[0], Ys[0])
    with pytest.raises(TypeError, match="rows of numbers"):
        dic.predict_one(X[0])


BAD = [
    (lambda: ([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0]], [0, 1]), ValueError, "xs is ragged: position 1"),
    (lambda: (np.array([[0.0, np.nan, 0.0, 0.0]]), [0]), ValueError, "xs contains NaN"),
    (lambda: (np.array([[0.0, np.inf, 0.0, 0.0]]), [0]), ValueError, "xs contains NaN"),
    (lambda: (np.zeros((2, 4)), [0]), ValueError, "xs has 2 positions but ys has 1"),
    (lambda: (np.zeros((2, 5)), [0, 1]), ValueError, "xs has 5 features"),
    (lambda: (np.zeros(4), [0, 0, 0, 0]), ValueError, "xs is a 1-D array"),
    (lambda: (np.zeros((2, 4)), [0, [1]]), TypeError, r"ys\[1\] = \[1\] is not hashable"),
    (lambda: (np.zeros((2, 4)), [0, float("nan")]), ValueError, r"ys\[1\] is NaN"),
    (lambda: ([[0.0] * 4, {"a": 1.0}], [0, 1]), TypeError, r"xs\[1\] is a feature dict"),
    (lambda: ([["a", "b", "c", "d"]], [0]), ValueError, "xs must hold numbers"),
    (lambda: ({"a": 1.0}, [0]), TypeError, "xs is a dict"),
    (lambda: (np.zeros((2, 4)), 3), TypeError, "ys must be a sequence"),
]


@pytest.mark.parametrize("make,exc,msg", BAD)
def test_bad_input_names_the_parameter_and_leaves_the_model_unchanged(make, exc, msg):
    model, X, Ys = _trained(n=12)
    before = _snapshot(model)
    xs, ys = make()
    with pytest.raises(exc, match=msg):
        model.learn_one(xs, ys)
    _assert_same(before, _snapshot(model))
    if "ys" not in msg and "positions but" not in msg:
        with pytest.raises(exc, match=msg):
            model.predict_one(xs)
    if "features" in msg:
        return  # any number of columns is valid for a fresh model
    # a fresh model rejecting its first sequence stays unfitted
    fresh = SequenceMKLLabeler()
    with pytest.raises(exc):
        fresh.learn_one(xs, ys)
    assert fresh._get_state() == ({"fitted": False}, {})


def test_bad_dict_features_and_fit_restores_the_previous_model():
    dic = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),))
    dic.learn_one([{"a": 1.0}, {"a": 2.0}], ["x", "y"])
    before = _snapshot(dic)
    with pytest.raises(ValueError, match="xs: feature 'b'"):
        dic.learn_one([{"a": 1.0}, {"b": float("nan")}], ["x", "z"])
    with pytest.raises(TypeError, match="xs: feature 'b'"):
        dic.learn_one([{"b": "text"}], ["x"])
    _assert_same(before, _snapshot(dic))
    assert dic.classes_ == ["x", "y"]
    model, X, Ys = _trained(n=12)
    before = _snapshot(model)
    with pytest.raises(ValueError, match="sequence 3: xs contains NaN"):
        model.fit(X[:3] + [np.full((2, 4), np.nan)], Ys[:4])
    _assert_same(before, _snapshot(model))
    with pytest.raises(ValueError, match="3 sequences but 2 label sequences"):
        model.fit(X[:3], Ys[:2])


def test_hyperparameters_are_checked_at_the_first_step():
    for params, name in ((dict(loss="hinge"), "loss"), (dict(cost=-1.0), "cost"), (dict(lam=-1.0), "lam"),
                         (dict(group_weights=(1.0,)), "group_weights"), (dict(budget=0), "budget")):
        model = SequenceMKLLabeler(**params)
        with pytest.raises(ValueError, match=name):
            model.learn_one(np.zeros((1, 2)), [0])
        assert not hasattr(model, "_engine")
