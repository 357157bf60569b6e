"""The river faces' ``seed`` (replay draws) and the river proximal regressor's ``learn_many`` /
``predict_many``."""

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from onlinemkl.persist import load, save
from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        v = rng.normal(size=3)
        yield {f"f{i}": float(v[i]) for i in range(3)}, ("a" if v[0] + v[1] * v[2] > 0 else "b" if v[1] > 0 else "c")


def _fitted(cls, n=80, **params):
    model = cls(budget=30, **params)
    for x, y in _stream(n):
        model.learn_one(x, y)
    return model


def _state_arrays(model):
    return model._get_state()[1]


@pytest.mark.parametrize("cls", [OBSCUREClassifier, ProximalMKLClassifier])
def test_seed_sets_the_replay_draws_and_none_is_seed_0(cls):
    a, b, c, d = (_fitted(cls, seed=s) for s in (None, 0, 7, 7))
    same = lambda m, n: all(np.array_equal(v, _state_arrays(n)[k]) for k, v in _state_arrays(m).items())  # noqa: E731
    assert same(a, b) and same(c, d)
    assert not same(a, c)  # another seed, other replayed examples
    assert a.seed is None and c._get_params()["seed"] == 7


@pytest.mark.parametrize("cls", [OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor])
def test_a_bad_seed_is_named(cls):
    with pytest.raises(TypeError, match="seed='1': expected an integer"):
        cls(seed="1")
    with pytest.raises(TypeError, match="seed=1.5: expected an integer"):
        cls(seed=1.5)
    assert cls(seed=-3).seed == -3


def test_a_model_saved_before_seed_existed_loads_and_predicts_the_same(tmp_path):
    model = _fitted(OBSCUREClassifier)
    path = save(model, tmp_path / "m.omkl")
    with zipfile.ZipFile(path) as zin:  # the file an onlinemkl without the parameter wrote
        entries = {n: zin.read(n) for n in zin.namelist()}
    meta = json.loads(entries.pop("meta.json"))
    del meta["model"]["params"]["seed"]
    old = tmp_path / "old.omkl"
    with zipfile.ZipFile(old, "w") as zout:
        for n, data in entries.items():
            zout.writestr(n, data)
        zout.writestr("meta.json", json.dumps(meta))
    loaded = load(old)
    assert loaded.seed is None
    x = {"f0": 0.3, "f1": -0.2, "f2": 1.0}
    assert loaded.predict_proba_one(x) == model.predict_proba_one(x)


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"], index=np.arange(100, 100 + n))
    y = pd.Series(X["a"] * X["b"] + X["c"], index=X.index)
    return X, y


def test_regressor_learn_many_learns_what_a_learn_one_loop_learns_and_predict_many_matches():
    X, y = _frame(60)
    many, loop = ProximalMKLRegressor(budget=40), ProximalMKLRegressor(budget=40)
    many.learn_many(X[:30], y[:30])
    many.learn_many(X[30:50], y[30:50])
    for x, t in zip(X[:50].to_dict(orient="records"), y[:50]):
        loop.learn_one(x, t)
    for k, v in _state_arrays(loop).items():
        np.testing.assert_array_equal(_state_arrays(many)[k], v)
    p = many.predict_many(X[50:])
    assert isinstance(p, pd.Series) and list(p.index) == list(X.index[50:])
    np.testing.assert_allclose(p.to_numpy(), [many.predict_one(x) for x in X[50:].to_dict(orient="records")],
                               rtol=1e-9, atol=1e-12)


def test_regressor_learn_many_refuses_a_bad_batch_whole():
    X, y = _frame(20)
    model = ProximalMKLRegressor(budget=40)
    model.learn_many(X[:10], y[:10])
    before = {k: v.copy() for k, v in _state_arrays(model).items()}
    bad = X[10:].copy()
    bad.iloc[5, 1] = np.nan
    with pytest.raises(ValueError, match="'b'"):
        model.learn_many(bad, y[10:])
    with pytest.raises(ValueError, match="y="):
        model.learn_many(X[10:], y[10:].where(y[10:].index != 115, np.inf))
    with pytest.raises(ValueError, match="one target per row"):
        model.learn_many(X[10:], y[11:])
    for k, v in _state_arrays(model).items():
        np.testing.assert_array_equal(before[k], v)
