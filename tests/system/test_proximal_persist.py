"""Online proximal MKL's model files: bit-for-bit predictions and identical continued learning,
both faces and a river pipeline.
"""

from __future__ import annotations

import numpy as np
import pytest
from _proximal_data import KERNELS, _river_stream, _stream

from onlinemkl.persist import load, save
from onlinemkl.proximal import ProximalMKLClassifier, ProximalMKLRegressor
from onlinemkl.river import ProximalMKLClassifier as RiverClassifier
from onlinemkl.river import ProximalMKLRegressor as RiverRegressor

C, R = ProximalMKLClassifier, ProximalMKLRegressor

PERSIST_PARAMS = [
    (C, dict(kernels=KERNELS, explicit_groups=((0, 1),), regularizer="sparse_group_lasso", budget=30, average=True)),
    (C, dict(loss="logistic", regularizer="nonsparse", q=1.5)),
    (R, dict(budget=40, eviction="least_impact", explicit_groups=(None,))),
    (R, dict(loss="epsilon_insensitive", average=False)),
    (R, dict(group_steps="norms", explicit_groups=((0, 1),), average=False)),
    (C, dict(group_steps="norms", budget=40)),
]


@pytest.mark.parametrize("cls, params", PERSIST_PARAMS)
def test_sklearn_round_trip_predicts_bit_for_bit_and_continues_identically(tmp_path, cls, params):
    X, y = _stream(160, 3, cls is R, seed=4)
    model = cls(random_state=0, n_epochs=1, **params).fit(X[:100], y[:100])
    loaded = load(model.save(tmp_path / "m.omkl"))
    assert type(loaded) is cls and loaded.get_params() == model.get_params()
    predict = model.decision_function if cls is C else model.predict
    predict_l = loaded.decision_function if cls is C else loaded.predict
    assert np.array_equal(predict(X[100:]), predict_l(X[100:]))
    if cls is C:
        assert np.array_equal(model.classes_, loaded.classes_)
    for i in range(100, 160, 10):
        model.partial_fit(X[i:i + 10], y[i:i + 10])
        loaded.partial_fit(X[i:i + 10], y[i:i + 10])
    assert np.array_equal(predict(X[:50]), predict_l(X[:50]))
    assert np.array_equal(model.kernel_weights_, loaded.kernel_weights_)
    s1, a1 = model._get_state()
    s2, a2 = loaded._get_state()
    assert s1 == s2 and all(np.array_equal(a1[k], a2[k]) for k in a1)


def test_sklearn_string_labels_and_unfitted_round_trip(tmp_path):
    X, _ = _stream(60, 2, False, seed=2)
    y = np.where(X[:, 0] > 0, "yes", "no").astype(object)
    model = C(random_state=0).fit(X, y)
    loaded = load(model.save(tmp_path / "s.omkl"))
    assert list(loaded.predict(X)) == list(model.predict(X))
    for cls in (C, R):
        again = load(cls(lam=0.5).save(tmp_path / "u.omkl"))
        assert again.lam == 0.5 and not hasattr(again, "_engine")


@pytest.mark.parametrize("cls, params", [
    (RiverClassifier, dict(budget=40, explicit_groups=(None,), average=True)),
    (RiverClassifier, dict(loss="logistic", regularizer="l21", lam=0.01, eviction="least_impact", budget=30)),
    (RiverRegressor, dict(budget=50)),
    (RiverRegressor, dict(loss="epsilon_insensitive", regularizer="elastic_net", average=False)),
])
def test_river_round_trip_mid_stream_then_learn_identically(tmp_path, cls, params):
    regression = cls is RiverRegressor
    data = list(_river_stream(300, 7, regression))
    model = cls(**params)
    for x, y in data[:120]:
        model.learn_one(x, y)
    loaded = load(model.save(tmp_path / "r.omkl"))
    for x, y in data[120:]:
        assert model.predict_one(x) == loaded.predict_one(x)
        if not regression:
            assert model.predict_proba_one(x) == loaded.predict_proba_one(x)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert np.array_equal(model.kernel_weights_, loaded.kernel_weights_)
    # an untrained adapter round-trips too
    fresh = load(cls(**params).save(tmp_path / "fresh.omkl"))
    fresh.learn_one(*data[0])


def test_river_pipeline_round_trip(tmp_path):
    from river import preprocessing

    data = list(_river_stream(200, 3, True))
    pipe = preprocessing.StandardScaler() | RiverRegressor(budget=60)
    for x, y in data[:150]:
        pipe.learn_one(x, y)
    again = load(save(pipe, tmp_path / "pipe.omkl"))
    for x, y in data[150:]:
        assert pipe.predict_one(x) == again.predict_one(x)
        pipe.learn_one(x, y)
        again.learn_one(x, y)
