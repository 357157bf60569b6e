"""The proximal MKL regressor's prediction bounds: a prediction stays within the range of the targets
learnt so far widened by ``prediction_margin`` (1) times its width on each side, on both faces; the
bounds are a function of the state (saved and merged with it), and a state saved before the range was
kept predicts unbounded, as it did."""

import math

import numpy as np
import pytest
from _helpers import engine_of
from river import preprocessing

from onlinemkl import ProximalMKLRegressor
from onlinemkl.distributed import merge
from onlinemkl.persist import load, save
from onlinemkl.proximal.engine import PREDICTION_MARGIN
from onlinemkl.river import ProximalMKLRegressor as RiverRegressor

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * RNG.normal(size=120)
FAR = {"a": 800.0, "b": 0.0, "c": 0.0}  # what a scaler still learning a feature's new scale hands over


def _river(n=120, **kw):
    model = RiverRegressor(**kw)
    for x, y in zip(X[:n], Y[:n]):
        model.learn_one(dict(zip("abc", x)), float(y))
    return model


def _bounds(y):
    lo, hi = float(np.min(y)), float(np.max(y))
    return lo - PREDICTION_MARGIN * (hi - lo), hi + PREDICTION_MARGIN * (hi - lo)


def test_a_far_input_is_predicted_within_the_targets_range_widened_by_the_margin():
    model = _river()
    lo, hi = _bounds(Y)
    assert engine_of(model).target_bounds() == pytest.approx((lo, hi), rel=1e-12)
    assert model.predict_one(FAR) == pytest.approx(hi, rel=1e-12)  # unbounded: about 800
    far_low = {"a": -800.0, "b": 0.0, "c": 0.0}
    assert lo <= model.predict_one(far_low) <= hi
    import pandas as pd

    near = {"a": 0.1, "b": 0.2, "c": 0.0}
    many = model.predict_many(pd.DataFrame([FAR, far_low, near]))
    assert many.iloc[0] == pytest.approx(hi) and many.iloc[1] == pytest.approx(model.predict_one(far_low))
    assert many.iloc[2] == pytest.approx(model.predict_one(near), rel=1e-9)
    assert lo < many.iloc[2] < hi  # a prediction within the bounds is the model's own


def test_the_scikit_learn_face_predicts_within_the_bounds_too():
    model = ProximalMKLRegressor(random_state=0).fit(X, Y)
    lo, hi = _bounds(Y)
    far = np.array([[800.0, 0.0, 0.0], [-800.0, 0.0, 0.0], [0.1, 0.2, 0.0]])
    got = model.predict(far)
    assert got[0] == pytest.approx(hi) and lo <= got[1] <= hi and lo < got[2] < hi


def test_no_bounds_before_the_first_target_and_learning_uses_the_unbounded_scores():
    model = RiverRegressor()
    assert engine_of(model).target_bounds() == (-math.inf, math.inf)
    assert model.predict_one(FAR) == 0.0
    bounded, unbounded = _river(), _river()
    engine_of(unbounded).yrange[:] = (-math.inf, math.inf)  # the bounds off, the state otherwise the same
    for x, y in zip(X[:40], Y[:40]):  # a far input learnt: both models learn the same from it
        for m in (bounded, unbounded):
            m.learn_one({"a": 50.0 * x[0], "b": x[1], "c": x[2]}, float(y))
    np.testing.assert_array_equal(engine_of(bounded).buf.coef, engine_of(unbounded).buf.coef)


def test_the_bounds_are_saved_with_the_model(tmp_path):
    model = preprocessing.StandardScaler() | _river()
    loaded = load(save(model, tmp_path / "m.omkl"))
    assert loaded.predict_one(FAR) == model.predict_one(FAR)
    np.testing.assert_array_equal(engine_of(loaded[-1]).yrange, engine_of(model[-1]).yrange)
    assert engine_of(loaded[-1]).prediction_margin == PREDICTION_MARGIN


def test_a_state_saved_before_the_range_was_kept_stays_unbounded():
    model = _river()
    params, arrays = engine_of(model).get_state()
    row = model._row(FAR, grow=False)
    engine = engine_of(RiverRegressor())
    engine.set_state(params, {k: v for k, v in arrays.items() if k != "yrange"})
    assert engine.target_bounds() == (-math.inf, math.inf)
    mean, std = engine.target_scale()
    assert engine.predict_one(row) == mean + std * float(engine.scores_one(row)[0]) > 100.0
    engine.learn(row[::-1].copy(), 3.0)  # and after learning more
    assert engine.target_bounds() == (-math.inf, math.inf)


@pytest.mark.parametrize("bad", [(1.0, np.nan), (2.0, 1.0), (-np.inf, 1.0)])
def test_a_bad_saved_range_is_refused(bad):
    model = _river()
    params, arrays = engine_of(model).get_state()
    arrays = {**arrays, "yrange": np.array(bad)}
    with pytest.raises(ValueError, match="yrange"):
        engine_of(RiverRegressor()).set_state(params, arrays)


def test_a_bad_margin_is_refused():
    engine = engine_of(RiverRegressor())
    for bad in (-1.0, math.inf, "1"):
        with pytest.raises(ValueError, match="prediction_margin"):
            type(engine)(**{**engine._init_args, "prediction_margin": bad})


def test_a_merge_keeps_the_range_of_every_model():
    a, b = RiverRegressor(), RiverRegressor()
    for i, (x, y) in enumerate(zip(X[:60], Y[:60])):
        (a if i % 2 else b).learn_one(dict(zip("abc", x)), float(y) + (10.0 if i % 2 else 0.0))
    m = merge([a, b])
    lo = min(engine_of(a).yrange[0], engine_of(b).yrange[0])
    hi = max(engine_of(a).yrange[1], engine_of(b).yrange[1])
    np.testing.assert_array_equal(engine_of(m).yrange, [lo, hi])
