"""Model files for scikit-learn pipelines: transformers and onlinemkl estimators, no pickle, bit for bit."""

import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (MaxAbsScaler, MinMaxScaler, Normalizer, PolynomialFeatures, RobustScaler,
                                   StandardScaler)

import onlinemkl
from onlinemkl import OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor
from onlinemkl.persist import ModelFileError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(80, 3)) * [1.0, 5.0, 0.1] + [0.0, 3.0, -1.0]
Y = (X[:, 0] * (X[:, 1] - 3) > 0).astype(int)


def _fast_obscure():
    return OBSCUREClassifier(random_state=0, stage1_epochs=1, stage2_epochs=1, budget=40)


@pytest.mark.parametrize("steps", [
    [StandardScaler()],
    [StandardScaler(with_mean=False)],
    [MinMaxScaler(feature_range=(-1, 1), clip=True), PolynomialFeatures(2)],
    [MaxAbsScaler(), RobustScaler(quantile_range=(10.0, 90.0)), Normalizer(norm="l1")],
    [PolynomialFeatures(degree=(1, 2), interaction_only=True, include_bias=False), StandardScaler()],
], ids=["standard", "standard-no-mean", "minmax-poly", "maxabs-robust-normalizer", "poly-interactions"])
def test_a_pipeline_round_trip_predicts_bit_for_bit(steps, tmp_path):
    pipe = make_pipeline(*steps, _fast_obscure()).fit(X, Y)
    path = onlinemkl.save(pipe, tmp_path / "p.omkl")
    with zipfile.ZipFile(path) as zf:  # no pickle anywhere: JSON and .npy entries only
        assert all(n == "meta.json" or n.endswith(".npy") for n in zf.namelist())
    loaded = onlinemkl.load(path)
    assert isinstance(loaded, Pipeline) and list(loaded.named_steps) == list(pipe.named_steps)
    for a, b in zip(loaded.steps, pipe.steps):
        assert type(a[1]) is type(b[1]) and a[1].get_params() == b[1].get_params()
    Xt = X * 1.3 + 0.2
    np.testing.assert_array_equal(loaded[:-1].transform(Xt), pipe[:-1].transform(Xt))
    np.testing.assert_array_equal(loaded.decision_function(Xt), pipe.decision_function(Xt))
    np.testing.assert_array_equal(loaded.predict_proba(Xt), pipe.predict_proba(Xt))
    np.testing.assert_array_equal(loaded.predict(Xt), pipe.predict(Xt))


@pytest.mark.parametrize("learner, target", [
    (ProximalMKLClassifier(random_state=0, budget=30), Y),
    (ProximalMKLRegressor(random_state=0, budget=30, n_epochs=1), X[:, 0] * X[:, 2]),
])
def test_proximal_pipelines_from_a_dataframe_round_trip(learner, target, tmp_path):
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    pipe = make_pipeline(StandardScaler(), learner).fit(frame, target)
    loaded = onlinemkl.load(onlinemkl.save(pipe, tmp_path / "p.omkl"))
    assert list(loaded[0].feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(loaded.predict(frame), pipe.predict(frame))
    # the learner goes on learning identically
    loaded[-1].partial_fit(loaded[0].transform(frame[:10]), target[:10])
    pipe[-1].partial_fit(pipe[0].transform(frame[:10]), target[:10])
    np.testing.assert_array_equal(loaded.predict(frame), pipe.predict(frame))


def test_a_step_the_format_cannot_hold_is_named(tmp_path):
    pipe = make_pipeline(StandardScaler(), PCA(2), _fast_obscure()).fit(X, Y)
    with pytest.raises(TypeError, match="Pipeline/pca: cannot save a sklearn.decomposition.*PCA"):
        onlinemkl.save(pipe, tmp_path / "p.omkl")
    passthrough = Pipeline([("scale", "passthrough"), ("clf", _fast_obscure())]).fit(X, Y)
    with pytest.raises(TypeError, match="step 'scale' is 'passthrough'"):
        onlinemkl.save(passthrough, tmp_path / "p.omkl")
    assert not (tmp_path / "p.omkl").exists()


def _edited(src, dst, edit):
    """A copy of a model file with its metadata edited (array entries and checksums left as they are)."""
    with zipfile.ZipFile(src) as zin:
        entries = {n: zin.read(n) for n in zin.namelist()}
    meta = json.loads(entries.pop("meta.json"))
    edit(meta["model"]["children"][0][1])  # the scaler's node
    with zipfile.ZipFile(dst, "w") as zout:
        for n, data in entries.items():
            zout.writestr(n, data)
        zout.writestr("meta.json", json.dumps(meta))
    return dst


@pytest.mark.parametrize("edit, message", [
    (lambda node: node["state"].update(__class__=1), "unknown fitted attribute '__class__'"),
    (lambda node: node["state"].update(n_features_in_=4), "expected a numeric array of 4 values"),
    (lambda node: node["state"].update(n_features_in_="3"), "n_features_in_ must be a positive int"),
    (lambda node: node["state"].update(mean_=[1, 2, 3]), "mean_: \\[1, 2, 3\\] is not a fitted value"),
])
def test_a_crafted_transformer_state_is_refused(edit, message, tmp_path):
    pipe = make_pipeline(StandardScaler(), _fast_obscure()).fit(X, Y)
    path = onlinemkl.save(pipe, tmp_path / "p.omkl")
    with pytest.raises(ModelFileError, match=message):
        onlinemkl.load(_edited(path, tmp_path / "bad.omkl", edit))
