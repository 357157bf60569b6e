"""The per-example learners' own input standardisation (``scale``, :mod:`onlinemkl._scaling`).

Raw inputs of large magnitude are standardised by the learner ('auto'), standardised inputs reach
it bit for bit as they come, the statistics are saved with the model, and a file written before
the parameter loads as ``scale=False``.
"""

import itertools
from pathlib import Path

import numpy as np
import pytest
from river import datasets, preprocessing
from river.datasets import synth
from sklearn.preprocessing import StandardScaler

import onlinemkl
import onlinemkl.river as omr
from onlinemkl._scaling import WARMUP, InputScaling
from onlinemkl.persist import load

FIXTURES = Path(__file__).parents[1] / "data" / "persist_v1"
RIVER = (omr.OBSCUREClassifier, omr.ProximalMKLClassifier)


def prequential(model, rows):
    """(accuracy, the majority class's accuracy at the same positions) of one river pass."""
    hits = base = 0
    seen: dict = {}
    for x, y in rows:
        hits += model.predict_one(x) == y
        base += bool(seen) and max(seen, key=seen.get) == y
        model.learn_one(x, y)
        seen[y] = seen.get(y, 0) + 1
    return hits / len(rows), base / len(rows)


@pytest.mark.accuracy
@pytest.mark.parametrize("cls", RIVER)
def test_raw_agrawal_age_only_beats_the_majority(cls):
    """Agrawal's function 0 depends on the age alone (20-80) beside salaries of 1e5: with its
    defaults (scale='auto') the learner beats the majority class clearly; with scale=False it
    does not (every RBF value between distinct examples is 0)."""
    rows = list(itertools.islice(synth.Agrawal(classification_function=0, seed=0), 600))
    acc, base = prequential(cls(), rows)
    off, _ = prequential(cls(scale=False), rows)
    assert acc > base + 0.03, (acc, base)
    assert off < base + 0.01 < acc, (off, base, acc)


@pytest.mark.parametrize("cls", [onlinemkl.OBSCUREClassifier, onlinemkl.ProximalMKLClassifier])
def test_sklearn_fit_on_raw_agrawal(cls):
    """``fit`` standardises with the whole set's statistics: held-out accuracy above the majority's."""
    rows = list(itertools.islice(synth.Agrawal(classification_function=0, seed=1), 700))
    X = np.array([list(x.values()) for x, _ in rows])
    y = np.array([y for _, y in rows])
    clf = cls(random_state=0).fit(X[:500], y[:500])
    assert clf._scaling.live and np.all(clf._scaling.count == 500)
    majority = max(np.mean(y[500:] == c) for c in (0, 1))
    assert clf.score(X[500:], y[500:]) > majority + 0.03


@pytest.mark.parametrize("cls", RIVER)
def test_a_standardised_stream_passes_bit_for_bit(cls):
    """Behind river's StandardScaler, 'auto' never switches on and every probability and the saved
    state equal scale=False's.  ImageSegments' scaled values reach 19.5 by row 411: a fixed
    trigger of 10 would fire there; ``2 sqrt(n)`` does not."""
    data = list(datasets.ImageSegments().take(450))
    auto = preprocessing.StandardScaler() | cls(budget=100)
    off = preprocessing.StandardScaler() | cls(budget=100, scale=False)
    for x, y in data:
        assert auto.predict_proba_one(x) == off.predict_proba_one(x)
        auto.learn_one(x, y)
        off.learn_one(x, y)
    assert not auto[-1]._scaling.live and auto[-1]._scaling.seen == len(data)
    aa, ao = auto[-1]._get_state()[1], off[-1]._get_state()[1]
    for name, arr in ao.items():
        assert np.array_equal(arr, aa[name]), name


def test_sklearn_partial_fit_behind_a_scaler_passes_bit_for_bit():
    rows = list(datasets.ImageSegments().take(320))
    X = np.array([[x[k] for k in sorted(x)] for x, _ in rows])
    y = np.array([y for _, y in rows])
    classes = np.unique(y)
    auto, off = onlinemkl.ProximalMKLClassifier(), onlinemkl.ProximalMKLClassifier(scale=False)
    scaler = StandardScaler()
    for start in range(0, len(X), 32):
        Xb = scaler.partial_fit(X[start:start + 32]).transform(X[start:start + 32])
        if start:
            assert np.array_equal(auto.decision_function(Xb), off.decision_function(Xb))
        auto.partial_fit(Xb, y[start:start + 32], classes=classes)
        off.partial_fit(Xb, y[start:start + 32], classes=classes)
    assert not auto._scaling.live


def test_statistics_are_frozen_after_the_warm_up_and_restart_on_a_change_of_units():
    rng = np.random.default_rng(0)
    sc = InputScaling("auto")
    assert sc.learn_row(np.array([3.0, -2.0]), large=False) is not None and not sc.live  # looks standardised
    X = np.column_stack([rng.normal(5e4, 1e4, 200), rng.normal(0, 1, 200)])
    seen = [sc.learn_row(X[i]) for i in range(200)]
    assert sc.live and np.all(sc.count == WARMUP)
    np.testing.assert_allclose(sc.shift, X[:WARMUP].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sc.scale, X[:WARMUP].std(axis=0), rtol=1e-12)
    assert np.max(np.abs(seen)) <= 10.0
    np.testing.assert_array_equal(sc.rows(np.array([1e9, 0.0])), [10.0, sc.rows(np.array([1e9, 0.0]))[1]])
    sc.learn_row(np.array([5e7, 0.0]))  # the first feature changed units: its estimate starts again
    assert sc.count.tolist() == [1, WARMUP] and sc.shift[0] == 5e7


def test_a_raw_model_saves_and_loads_exactly(tmp_path, monkeypatch):
    """Saved in its warm-up and loaded under another default warm-up: the file's statistics and
    warm-up go on, prediction and learning bit for bit."""
    rows = list(itertools.islice(synth.Agrawal(classification_function=2, seed=3), 120))
    model = omr.ProximalMKLClassifier(budget=60)
    for x, y in rows[:30]:
        model.learn_one(x, y)
    assert model._scaling.live and np.all(model._scaling.count < WARMUP)
    path = model.save(tmp_path / "m.omkl")
    monkeypatch.setattr("onlinemkl._scaling.WARMUP", 5)
    loaded = load(path)
    for name in ("count", "mean", "m2"):
        assert np.array_equal(getattr(loaded._scaling, name), getattr(model._scaling, name))
    for x, y in rows[30:]:
        assert loaded.predict_proba_one(x) == model.predict_proba_one(x)
        loaded.learn_one(x, y)
        model.learn_one(x, y)
    X = np.array([list(x.values()) for x, _ in rows])
    y = np.array([y for _, y in rows])
    assert np.array_equal(loaded._scaling.count, model._scaling.count) and model._scaling.count[0] == WARMUP
    sk = onlinemkl.OBSCUREClassifier(random_state=0).partial_fit(X[:60], y[:60], classes=[0, 1])
    again = load(sk.save(tmp_path / "s.omkl"))
    assert np.array_equal(again.decision_function(X[60:]), sk.decision_function(X[60:]))


@pytest.mark.parametrize("name", ["river_obscure", "river_proximal_clf", "sk_obscure", "sk_proximal_clf",
                                  "sk_proximal_reg"])
def test_a_file_written_before_the_parameter_loads_as_scale_false(name):
    model = load(FIXTURES / f"{name}.omkl")
    assert model.scale is False and model._scaling is None


@pytest.mark.parametrize("make", [lambda: omr.OBSCUREClassifier(scale="yes"),
                                  lambda: omr.ProximalMKLRegressor(scale=1),
                                  lambda: onlinemkl.ProximalMKLRegressor(scale="on").fit(np.ones((3, 1)), [1, 2, 3])])
def test_a_bad_scale_is_named(make):
    with pytest.raises(ValueError, match=r"scale=.*choose 'auto'.*True.*False"):
        make()


def _raw_sequences(rng, n):
    """Sequences of positions (a feature in 0..1e4 that decides the label, one in 0..1e3 that does not)."""
    X, Y = [], []
    for _ in range(n):
        length = int(rng.integers(3, 8))
        x = np.column_stack([rng.uniform(0, 1e4, length), rng.uniform(0, 1e3, length)])
        X.append(x)
        Y.append(["hi" if v > 5000 else "lo" for v in x[:, 0]])
    return X, Y


def test_the_sequence_labeller_standardises_raw_positions(tmp_path):
    rng = np.random.default_rng(0)
    (Xtr, Ytr), (Xte, Yte) = _raw_sequences(rng, 60), _raw_sequences(rng, 40)
    model = onlinemkl.SequenceMKLLabeler(random_state=0).fit(Xtr, Ytr)
    off = onlinemkl.SequenceMKLLabeler(random_state=0, scale=False).fit(Xtr, Ytr)
    assert model.score(Xte, Yte) > 0.9 > off.score(Xte, Yte) + 0.1
    loaded = load(model.save(tmp_path / "s.omkl"))
    assert loaded.predict(Xte) == model.predict(Xte)
    assert np.array_equal(loaded._scaling.mean, model._scaling.mean)
    assert load(FIXTURES / "sequence.omkl").scale is False
