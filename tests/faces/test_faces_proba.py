"""``predict_proba`` of the scikit-learn classifiers: the river faces' mapping from scores, columns in
``classes_`` order, the same probabilities as the river faces give on the same stream."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from onlinemkl import OBSCUREClassifier, ProximalMKLClassifier
from onlinemkl.river import OBSCUREClassifier as RiverOBSCURE
from onlinemkl.river import ProximalMKLClassifier as RiverProximal
from onlinemkl.kernels import default_kernels

COLS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    order = np.random.default_rng(0).permutation(len(X))
    return X[order], y[order]


def _dicts(X):
    return [dict(zip(COLS, row.tolist())) for row in X]


def test_binary_obscure_gives_the_river_probabilities_on_the_same_stream(iris):
    X, y = iris
    yb = y == 2
    # the river face's default kernels on both (the scikit-learn face's default adds one for fit)
    sk = OBSCUREClassifier(kernels=default_kernels(), loss="hinge", budget=40, random_state=3)
    rv = RiverOBSCURE(loss="hinge", budget=40, seed=3)
    for i, x in enumerate(_dicts(X[:120])):
        sk.partial_fit(X[i:i + 1], yb[i:i + 1], classes=[False, True])
        rv.learn_one(x, bool(yb[i]))
    P = sk.predict_proba(X[120:])
    assert P.shape == (30, 2) and list(sk.classes_) == [False, True]
    many = rv.predict_proba_many(pd.DataFrame(X[120:], columns=COLS))
    assert list(many.columns) == [False, True]
    np.testing.assert_array_equal(P, many.to_numpy())  # same scores path: bit for bit
    one = np.array([[p[False], p[True]] for p in map(rv.predict_proba_one, _dicts(X[120:]))])
    np.testing.assert_allclose(P, one, rtol=0, atol=1e-12)  # per-example scores: up to rounding
    np.testing.assert_allclose(P[:, 1], 1.0 / (1.0 + np.exp(-sk.decision_function(X[120:]))), rtol=1e-12)


@pytest.mark.parametrize("sk_cls, river_cls, params", [
    (OBSCUREClassifier, RiverOBSCURE, {}),
    (ProximalMKLClassifier, RiverProximal, {"eta0": "auto", "group_steps": "norms"}),
])
def test_multiclass_faces_map_the_same_model_to_the_same_probabilities(iris, sk_cls, river_cls, params):
    # A river model discovers its labels one by one while the scikit-learn face knows them all from
    # the start, so a multiclass stream trains two different models; the same model (the river
    # one's state, restored into the scikit-learn face) gives the same probabilities.
    X, y = iris
    rv = river_cls(budget=40)
    first = [int(np.argmax(y == c)) for c in (0, 1, 2)]  # labels arrive in sorted order: classes_
    for i in first + [i for i in range(120) if i not in first]:
        rv.learn_one(dict(zip(COLS, X[i].tolist())), int(y[i]))
    state, arrays = rv._get_state()
    sk = sk_cls(budget=40, **params)
    sk._set_state({"fitted": True, "engine": state["engine"], "n_features_in_": 4},
                  {**arrays, "classes_": np.array([0, 1, 2])})
    P = sk.predict_proba(X[120:])
    many = rv.predict_proba_many(pd.DataFrame(X[120:], columns=COLS))
    np.testing.assert_array_equal(P, many[[0, 1, 2]].to_numpy())
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(sk.classes_[P.argmax(axis=1)], sk.predict(X[120:]))


@pytest.mark.parametrize("cls", [OBSCUREClassifier, ProximalMKLClassifier])
def test_predict_proba_columns_follow_classes(cls, iris):
    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = cls(random_state=0, budget=40).partial_fit(X[:100], labels[:100], classes=["virginica", "setosa",
                                                                                        "versicolor"])
    P = clf.predict_proba(X[100:])
    assert list(clf.classes_) == ["setosa", "versicolor", "virginica"]
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[100:]))
    assert (P > 0).all() and np.allclose(P.sum(axis=1), 1.0)
