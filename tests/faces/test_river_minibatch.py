"""The river mini-batch adapters: buffering, partial first batches and persistence."""

import os
import pickle
import tempfile

import numpy as np
import pandas as pd
import pytest

from onlinemkl import load
from onlinemkl.kernels import RBF, BSpline, Linear
from onlinemkl.river import NonlinearKRRRegressor, OBSCUREClassifier, PolyMKLRegressor, ProximalMKLClassifier
from _helpers import engine_of

CLASSES = [PolyMKLRegressor, NonlinearKRRRegressor]


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
    assert m.n_support_ == 0 and m._partial is not None  # no completed mini-batch yet: the partial buffer's model
    for x, y in data[4:]:
        m.learn_one(x, y)
    assert m.n_support_ == 12 and len(m._pending) < 5 and m._partial is None


@pytest.mark.parametrize("cls", CLASSES)
def test_before_the_first_batch_running_mean_then_partial_buffer(cls):
    """0 examples: 0.0; fewer than MIN_PARTIAL: the running mean of the targets; then a model fitted on
    the first 2^k buffered examples, which the one-at-a-time and the DataFrame paths agree on."""
    from onlinemkl._river_minibatch import MIN_PARTIAL

    data = list(_stream(40))
    params = dict(batch_size=32, degree=2, budget=40, **({"seed": 0} if cls is PolyMKLRegressor else {}))
    m = cls(**params)
    x0 = data[0][0]
    assert m.predict_one(x0) == 0.0
    for t, (x, y) in enumerate(data[:MIN_PARTIAL - 1]):
        m.learn_one(x, y)
        assert m.predict_one(x0) == pytest.approx(np.mean([v for _, v in data[:t + 1]]))
    X = pd.DataFrame([x for x, _ in data[:20]])
    np.testing.assert_allclose(m.predict_many(X).to_numpy(), np.mean([v for _, v in data[:MIN_PARTIAL - 1]]))
    for x, y in data[MIN_PARTIAL - 1:20]:
        m.learn_one(x, y)
    assert m._partial is not None and m._partial.n_support == 16  # refitted at 4, 8, 16 examples
    fitted = [m.predict_one(x) for x, _ in data[:20]]
    assert np.std(fitted) > 0  # a model, not a constant
    # the buffer's model fits the buffered examples far better than their mean
    ys = np.array([y for _, y in data[:16]])
    assert np.mean((np.array(fitted[:16]) - ys) ** 2) < 0.5 * np.var(ys)
    np.testing.assert_allclose(m.predict_many(X).to_numpy(), fitted, rtol=1e-9, atol=1e-12)
    many = cls(**params)
    many.learn_many(X, pd.Series([y for _, y in data[:20]]))
    np.testing.assert_allclose(many.predict_many(X).to_numpy(), fitted, rtol=1e-9, atol=1e-12)
    # a restored adapter rebuilds the same partial model
    m2 = pickle.loads(pickle.dumps(m))
    assert [m2.predict_one(x) for x, _ in data[:20]] == fitted


@pytest.mark.accuracy
def test_trump_approval_beats_the_running_mean_from_the_start():
    """Prequential MAE on the whole stream with the defaults (behind river's scaler) is no worse than the
    running mean's, which the adapter itself predicts before it has any example to fit."""
    from river import datasets, evaluate, metrics, preprocessing, stats

    mean = stats.Mean()
    mae_mean = metrics.MAE()
    for _, y in datasets.TrumpApproval():
        mae_mean.update(y, mean.get())
        mean.update(y)
    model = preprocessing.StandardScaler() | PolyMKLRegressor(seed=0)
    mae = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE()).get()
    assert mae <= mae_mean.get()


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
    ck = engine_of(m).base.ck
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
        np.testing.assert_array_equal(engine_of(other).base.ck.params, ck.params)
        assert [other.predict_one(x) for x in xs] == [m.predict_one(x) for x in xs]


@pytest.mark.parametrize("cls", CLASSES)
def test_huge_values_rejected_naming_the_feature_and_state_unchanged(cls):
    m = cls(batch_size=5, degree=3, budget=20)
    data = list(_stream(12))
    for x, y in data:
        m.learn_one(x, y)
    before = m._get_state()
    with pytest.raises(ValueError, match="'f1'"):
        m.learn_one({"f0": 0.5, "f1": 1e200}, 1.0)
    with pytest.raises(ValueError, match="'f1'"):
        m.learn_many(pd.DataFrame({"f0": [0.5, 0.2], "f1": [0.1, -1e200]}), pd.Series([1.0, 2.0]))
    with pytest.raises(ValueError, match="y"):
        m.learn_many(pd.DataFrame({"f0": [0.5, 0.2]}), pd.Series([1.0, 1e200]))
    after = m._get_state()
    assert after[0] == before[0]
    assert before[1].keys() == after[1].keys()
    for k in before[1]:
        np.testing.assert_array_equal(after[1][k], before[1][k])


def _classification_frame(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    y = pd.Series(np.where(X["a"] + X["b"] > 0, "yes", "no"))
    return X, y


@pytest.mark.parametrize("make", [lambda: ProximalMKLClassifier(budget=50),
                                  lambda: OBSCUREClassifier(budget=50, loss="multiclass_hinge")],
                         ids=["proximal", "obscure"])
def test_classifiers_learn_many_and_predict_many_agree_with_one_at_a_time(make):
    X, y = _classification_frame(80)
    one, many = make(), make()
    for x, label in zip(X.to_dict(orient="records"), y):
        one.learn_one(x, label)
    for s in range(0, 80, 25):
        many.learn_many(X.iloc[s:s + 25], y.iloc[s:s + 25])
    Xq, _ = _classification_frame(30, seed=1)
    rows = Xq.to_dict(orient="records")
    assert list(many.predict_many(Xq)) == [one.predict_one(x) for x in rows]
    proba = many.predict_proba_many(Xq)
    for i, x in enumerate(rows):
        p = one.predict_proba_one(x)
        for label, v in p.items():
            assert proba[label].iloc[i] == pytest.approx(v, rel=1e-9, abs=1e-12)
    # a bad label or value in the batch: rejected before anything is learnt
    before = many._get_state()
    with pytest.raises((TypeError, ValueError)):
        many.learn_many(pd.DataFrame({"a": [0.1, np.nan]}), pd.Series(["yes", "no"]))
    with pytest.raises((TypeError, ValueError)):
        many.learn_many(pd.DataFrame({"a": [0.1, 0.2]}), pd.Series(["yes", [1, 2]], dtype=object))
    after = many._get_state()
    assert after[0] == before[0]
    for k in before[1]:
        np.testing.assert_array_equal(after[1][k], before[1][k])
