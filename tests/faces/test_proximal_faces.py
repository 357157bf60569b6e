"""Online proximal MKL's faces: bad input raises errors that name the parameter and leaves a fitted
model unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from _proximal_data import KERNELS, _fitted, _stream
from sklearn.exceptions import NotFittedError

from onlinemkl.proximal import ProximalMKLClassifier, ProximalMKLRegressor
from onlinemkl.river import ProximalMKLClassifier as RiverClassifier
from onlinemkl.river import ProximalMKLRegressor as RiverRegressor

C, R = ProximalMKLClassifier, ProximalMKLRegressor


def _snapshot(model):
    state, arrays = model._get_state()
    return state, {k: np.array(v, copy=True) for k, v in arrays.items()}


def _same(snap, model):
    state, arrays = model._get_state()
    return state == snap[0] and arrays.keys() == snap[1].keys() and all(
        np.array_equal(arrays[k], snap[1][k]) for k in arrays)


@pytest.mark.parametrize("cls", [C, R])
def test_bad_arrays_raise_and_leave_the_model_unchanged(cls):
    model, X, y = _fitted(cls)
    snap = _snapshot(model)
    bad_X = X[:5].copy()
    bad_X[2, 3] = np.nan
    cases = [
        (lambda: model.partial_fit(bad_X, y[:5]), "NaN"),
        (lambda: model.partial_fit(X[:5, :4], y[:5]), "features"),
        (lambda: model.partial_fit(X[:5], y[:4]), "y"),
        (lambda: model.predict(bad_X), "NaN"),
        (lambda: model.predict(X[:5, :4]), "features"),
        (lambda: model.predict(X[0]), "2-D"),
    ]
    if cls is C:
        cases.append((lambda: model.partial_fit(X[:5], np.array([0, 1, 2, 7, 0])), "7"))
    else:
        cases.append((lambda: model.partial_fit(X[:5], np.array([0.0, np.inf, 1.0, 2.0, 3.0])), "y"))
        cases.append((lambda: model.partial_fit(X[:5], np.ones(5) + 1j), "complex"))
    for call, word in cases:
        with pytest.raises((ValueError, TypeError), match=word):
            call()
        assert _same(snap, model)


@pytest.mark.parametrize("param, value", [
    ("lam", -1.0), ("eta0", 0.0), ("eta0", float("nan")), ("regularizer", "lasso"), ("schedule", "fast"),
    ("budget", 0), ("eviction", "random"), ("gamma", -2.0), ("n_epochs", 0), ("loss", "absolute"),
    ("kernels", ()), ("explicit_groups", "abc"),
])
@pytest.mark.parametrize("cls", [C, R])
def test_bad_parameters_name_themselves_and_leave_a_fitted_model_unchanged(cls, param, value):
    model, X, y = _fitted(cls)
    snap = _snapshot(model)
    model.set_params(**{param: value})
    with pytest.raises((ValueError, TypeError), match=param):
        model.fit(X, y)
    model.set_params(**{param: getattr(cls(), param) if param != "kernels" else KERNELS})
    assert _same(snap, model)


@pytest.mark.parametrize("param, value", [("q", 3.0), ("q", 1.0), ("sigma", -1.0), ("l1_ratio", -0.5)])
def test_regulariser_parameters_are_checked(param, value):
    reg = {"q": "nonsparse", "sigma": "elastic_net", "l1_ratio": "sparse_group_lasso"}[param]
    X, y = _stream(20, 2, False, seed=0)
    with pytest.raises(ValueError, match=param):
        C(kernels=KERNELS, regularizer=reg, **{param: value}).fit(X, y)
    with pytest.raises(ValueError, match="group_weights"):
        C(kernels=KERNELS, regularizer="weighted_sq_l1", group_weights=[1.0, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="strongly_convex"):
        C(kernels=KERNELS, regularizer="l21", schedule="strongly_convex").fit(X, y)
    with pytest.raises(ValueError, match="epsilon"):
        R(kernels=KERNELS, epsilon=-1.0).fit(X, y.astype(float))
    with pytest.raises(ValueError, match="group_steps"):
        R(kernels=KERNELS, group_steps="kernels").fit(X, y.astype(float))
    from onlinemkl.river import ProximalMKLRegressor as RiverRegressor

    with pytest.raises(ValueError, match="group_steps"):
        RiverRegressor(group_steps=None)
    with pytest.raises(ValueError, match="group_steps"):
        C(kernels=KERNELS, group_steps="kernel").fit(X, y)
    with pytest.raises(ValueError, match="group_steps"):
        RiverClassifier(group_steps="Norms")


def test_classifier_labels_and_unfitted_errors():
    X, y = _stream(20, 2, False, seed=0)
    with pytest.raises(ValueError, match="classes"):
        C(kernels=KERNELS).partial_fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        C(kernels=KERNELS).fit(X, np.ones(20))
    for cls in (C, R):
        with pytest.raises(NotFittedError):
            cls().predict(X)


@pytest.mark.parametrize("cls", [RiverClassifier, RiverRegressor])
def test_river_bad_input_leaves_the_model_unchanged(cls):
    model = cls(kernels=KERNELS[:1], budget=20)
    rng = np.random.default_rng(0)
    for i in range(40):
        x = {f"f{j}": float(v) for j, v in enumerate(rng.normal(size=3))}
        model.learn_one(x, ("a", "b")[i % 2] if cls is RiverClassifier else float(x["f0"]))
    snap = _snapshot(model)
    good_y = "a" if cls is RiverClassifier else 1.0
    for x, yv, word in [({"f0": float("nan")}, good_y, "f0"), ({"f0": "text", "new": 1.0}, good_y, "f0"),
                        ({"f0": 1.0, "new": 2.0}, None, "y")]:
        with pytest.raises((ValueError, TypeError), match=word):
            model.learn_one(x, yv)
        assert _same(snap, model)
    if cls is RiverRegressor:
        with pytest.raises(ValueError, match="target"):
            model.learn_one({"f0": 1.0}, float("inf"))
        assert _same(snap, model)
    else:
        with pytest.raises(TypeError, match="hashable"):
            model.learn_one({"f0": 1.0}, ["unhashable"])
        assert _same(snap, model)
