"""river's own estimator checks on the mini-batch adapters, one test per check, plus buffering and persistence."""

import os
import pickle
import tempfile

import numpy as np
import pandas as pd
import pytest

from _river_checks import river_check_test
from onlinemkl import load
from onlinemkl.kernels import RBF, BSpline, Linear
from onlinemkl.river import NonlinearKRRRegressor, PolyMKLRegressor

CLASSES = [PolyMKLRegressor, NonlinearKRRRegressor]

test_river_check = river_check_test(*CLASSES)


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    for t in range(n):
        v = rng.uniform(-1, 1, size=4)
        x = {f"f{i}": float(v[i]) for i in range(3)}
        if t >= n // 2:
            x["late"] = float(v[3])  # a feature that appears halfway
        yield x, float(v[0] * v[1] + v[2] + (v[3] if t >= n // 2 else 0.0))


@pytest.mark.parametrize("cls, params", [(PolyMKLRegressor, dict(batch_size=7, degree=2, n_iter=10, budget=30, seed=0)),
                                         (NonlinearKRRRegressor, dict(batch_size=7, degree=2, max_iter=5, budget=30))])
def test_learn_many_equals_learn_one_exactly(cls, params):
    data = list(_stream(60))
    one, many = cls(**params), cls(**params)
    for x, y in data:
        one.learn_one(x, y)
    for s in range(0, 60, 11):  # chunks that do not align with batch_size
        chunk = data[s:s + 11]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]).fillna(0.0), pd.Series([y for _, y in chunk]))
    X = pd.DataFrame([x for x, _ in data]).fillna(0.0)
    np.testing.assert_allclose(many.predict_many(X).to_numpy(), one.predict_many(X).to_numpy(), rtol=1e-10)
    assert one.n_support_ == 30 and len(one._pending) == 60 % 7


def test_predictions_lag_until_batch_complete_and_memory_is_bounded():
    m = PolyMKLRegressor(batch_size=5, degree=2, n_iter=5, budget=12, seed=0)
    data = list(_stream(40))
    for x, y in data[:4]:
        m.learn_one(x, y)
    assert m.predict_one(data[0][0]) == 0.0  # no completed mini-batch yet
    for x, y in data[4:]:
        m.learn_one(x, y)
    assert m.n_support_ == 12 and len(m._pending) < 5


@pytest.mark.parametrize("cls", CLASSES)
def test_bad_input_rejected_and_state_unchanged(cls):
    m = cls(**next(iter(cls._unit_test_params())))
    data = list(_stream(20))
    for x, y in data:
        m.learn_one(x, y)
    before = m._get_state()
    with pytest.raises(ValueError, match="y="):
        m.learn_one(data[0][0], float("nan"))
    with pytest.raises((TypeError, ValueError), match="f0"):
        m.learn_one({"f0": "abc", "new": 1.0}, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        m.learn_many(pd.DataFrame({"f0": [1.0, np.nan], "zz": [0.0, 1.0]}), pd.Series([1.0, 2.0]))
    with pytest.raises(ValueError, match="y"):
        m.learn_many(pd.DataFrame({"f0": [1.0, 2.0], "zz": [0.0, 1.0]}), pd.Series([1.0]))
    after = m._get_state()
    assert after[0] == before[0]
    for k in before[1]:
        np.testing.assert_array_equal(after[1][k], before[1][k])


@pytest.mark.parametrize("cls", CLASSES)
def test_save_load_with_pending_buffer(cls):
    params = next(iter(cls._unit_test_params()))
    m = cls(**params)
    data = list(_stream(70))
    for x, y in data[:45]:
        m.learn_one(x, y)
    assert m._pending  # a partly filled mini-batch is saved too
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.omkl")
        m.save(path)
        m2 = load(path)
    assert type(m2) is cls
    xs = [x for x, _ in data]
    assert [m2.predict_one(x) for x in xs] == [m.predict_one(x) for x in xs]
    for x, y in data[45:]:
        m.learn_one(x, y)
        m2.learn_one(x, y)
    assert [m2.predict_one(x) for x in xs] == [m.predict_one(x) for x in xs]


@pytest.mark.parametrize("cls", CLASSES)
def test_group_without_features_yet_keeps_bandwidths_through_save_load(cls):
    """Saved while the group ('late',) has no feature: RBF() keeps gamma = 1/3 (resolved on the first
    batch) when 'late' joins it, RBF on ('late',) resolves then; the file and a pickle continue alike."""
    m = cls(batch_size=10, kernels=(RBF(), RBF(group=("late",)), BSpline(), Linear()))
    data = list(_stream(120))
    for x, y in data[:60]:  # six full batches; 'late' comes with the next one
        m.learn_one(x, y)
    ck = m._engine.base.ck
    assert ck.gfrozen.tolist() == [True, False] and ck.params[0, 0] == pytest.approx(1 / 3) and not m._pending
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.omkl")
        m.save(path)
        copies = [load(path), pickle.loads(pickle.dumps(m))]
    for x, y in data[60:]:
        m.learn_one(x, y)
        for other in copies:
            other.learn_one(x, y)
    assert ck.gfrozen.tolist() == [True, True]
    assert ck.params[0, 0] == pytest.approx(1 / 3) and ck.params[1, 0] == 1.0
    xs = [x for x, _ in data]
    for other in copies:
        np.testing.assert_array_equal(other._engine.base.ck.params, ck.params)
        assert [other.predict_one(x) for x in xs] == [m.predict_one(x) for x in xs]
