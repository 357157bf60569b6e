"""A model saved with ``kernels=None`` loads with the kernels it learnt with, whatever the default set.

A model file records the kernels in use (the engine state's ``kernels``); loading builds the
engine from them, so a change of a default kernel set between releases does not break older
files.  ``get_params()['kernels']`` stays None.  Files without the record (written before it
existed) load as before; files whose record does not fit their arrays are refused.
"""


import numpy as np
import pytest

import onlinemkl.proximal._setup as engines_proximal
import onlinemkl.kernels as kernels_module
import onlinemkl.obscure.sklearn as sk_obscure_module
from onlinemkl import OBSCUREClassifier as SkOBSCURE
from onlinemkl import ProximalMKLClassifier as SkProxClf
from onlinemkl import ProximalMKLRegressor as SkProxReg
from onlinemkl import SequenceMKLLabeler
from onlinemkl.kernels import RBF, Laplacian, Linear
from onlinemkl.persist import ModelFileError, load
from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor
from _helpers import engine_of, rewrite_meta

#: What the default sets are patched to after saving: another count, kinds and bandwidths.
OTHER = (RBF(gamma_scale=0.3), Linear())


def other_kernels():
    return OTHER


def dict_stream(n, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 4)) * 2.0
    for _ in range(n):
        k = int(rng.integers(3))
        v = centers[k] + rng.normal(size=4)
        x = {f"f{i}": float(v[i]) for i in range(4)}
        yield x, (float(v[0] * v[1] + v[2]) if regression else "abc"[k])


def arrays_data(n=80, seed=1, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] * X[:, 1] + X[:, 2] if regression else (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    return X, y


def sequences(n=12, seed=2):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for _ in range(n):
        L = int(rng.integers(2, 6))
        x = rng.normal(size=(L, 3))
        xs.append(x)
        ys.append((x[:, 0] > 0).astype(int).tolist())
    return xs, ys


# Each case: (build and train a model, its predictions, the default to patch after saving).

def river_obscure():
    m = OBSCUREClassifier(budget=40, switch_after=60)
    for x, y in dict_stream(120):
        m.learn_one(x, y)
    return m


def river_proximal_clf():
    m = ProximalMKLClassifier(budget=40)
    for x, y in dict_stream(100):
        m.learn_one(x, y)
    return m


def river_proximal_reg():
    m = ProximalMKLRegressor(budget=40)
    for x, y in dict_stream(100, regression=True):
        m.learn_one(x, y)
    return m


def river_predictions(model):
    out = []
    for x, _ in dict_stream(30, seed=5):
        out.append(model.predict_proba_one(x) if hasattr(model, "predict_proba_one") else model.predict_one(x))
    return out


def sk_obscure():
    X, y = arrays_data()
    return SkOBSCURE(budget=50, random_state=0, stage1_epochs=2, stage2_epochs=1).fit(X, y)


def sk_proximal_clf():
    X, y = arrays_data()
    return SkProxClf(random_state=0).fit(X, y)


def sk_proximal_reg():
    X, y = arrays_data(regression=True)
    return SkProxReg(random_state=0, n_epochs=1).fit(X, y)


def sk_predictions(model):
    X, _ = arrays_data(40, seed=6)
    f = model.decision_function if hasattr(model, "decision_function") else model.predict
    return f(X).tolist()


def sequence_labeler():
    return SequenceMKLLabeler(random_state=0).fit(*sequences())


def sequence_predictions(model):
    xs, _ = sequences(8, seed=7)
    return [model.predict_one(x) for x in xs] + engine_of(model).theta_sq.tolist()


CASES = {
    "river-obscure": (river_obscure, river_predictions, (kernels_module, "default_kernels")),
    "river-proximal-clf": (river_proximal_clf, river_predictions, (kernels_module, "default_kernels")),
    "river-proximal-reg": (river_proximal_reg, river_predictions, (ProximalMKLRegressor, "_default_kernels")),
    "sk-obscure": (sk_obscure, sk_predictions, (sk_obscure_module, "default_fit_kernels")),
    "sk-proximal-clf": (sk_proximal_clf, sk_predictions, (kernels_module, "default_kernels")),
    "sk-proximal-reg": (sk_proximal_reg, sk_predictions, (engines_proximal, "default_regression_kernels")),
    "sequence": (sequence_labeler, sequence_predictions, (kernels_module, "default_kernels")),
}


def patch_default(monkeypatch, where):
    owner, name = where
    monkeypatch.setattr(owner, name, staticmethod(other_kernels) if isinstance(owner, type) else other_kernels)


def the_kernels(model):
    return engine_of(model).ck.kernels


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_model_saved_with_default_kernels_loads_after_the_default_changes(case, tmp_path, monkeypatch):
    build, predictions, where = CASES[case]
    model = build()
    saved_with = the_kernels(model)
    assert saved_with != OTHER
    path = model.save(tmp_path / "m.omkl")
    expected = predictions(model)
    patch_default(monkeypatch, where)
    assert the_kernels(build()) == OTHER  # the patch took
    loaded = load(path)
    assert the_kernels(loaded) == saved_with
    assert loaded.kernels is None
    get_params = getattr(loaded, "get_params", None) or loaded._get_params  # scikit-learn's, else river's
    assert get_params()["kernels"] is None
    assert predictions(loaded) == expected  # bit for bit


def test_loaded_river_model_continues_learning_alike(tmp_path, monkeypatch):
    model = river_obscure()
    path = model.save(tmp_path / "m.omkl")
    monkeypatch.setattr(kernels_module, "default_kernels", other_kernels)
    loaded = load(path)
    for x, y in dict_stream(60, seed=9):
        assert loaded.predict_proba_one(x) == model.predict_proba_one(x)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    s1, a1 = model._get_state()
    s2, a2 = loaded._get_state()
    assert s1 == s2 and sorted(a1) == sorted(a2)
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k], strict=True)
    # river's clone is an unfitted model of the parameters: today's defaults
    assert the_kernels(loaded.clone()) == OTHER


def test_a_loaded_sklearn_model_refits_with_its_kernels_and_clones_with_todays(tmp_path, monkeypatch):
    from sklearn.base import clone

    model = sk_proximal_clf()
    saved_with = the_kernels(model)
    path = model.save(tmp_path / "m.omkl")
    monkeypatch.setattr(kernels_module, "default_kernels", other_kernels)
    loaded = load(path)
    assert the_kernels(loaded.fit(*arrays_data())) == saved_with
    assert the_kernels(clone(loaded).fit(*arrays_data())) == OTHER
    loaded.partial_fit(*arrays_data(10, seed=3))
    assert the_kernels(loaded) == saved_with


# -- files without the record, and files whose record is wrong ---------------------------------


def engine_params(meta):
    return meta["model"]["state"]["engine"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = river_obscure()
    return model, model.save(tmp_path_factory.mktemp("k") / "m.omkl")


def test_a_file_without_the_record_loads_with_the_parameter_s_kernels(saved, tmp_path, monkeypatch):
    model, path = saved
    def strip(meta):  # as files written before either record existed
        engine_params(meta).pop("kernels")
        engine_params(meta).pop("settings")

    old = rewrite_meta(path, tmp_path / "old.omkl", strip)
    loaded = load(old)
    assert river_predictions(loaded) == river_predictions(model)
    assert the_kernels(loaded) == the_kernels(model)  # today's kernels fit its arrays: used as always
    monkeypatch.setattr(kernels_module, "default_kernels", other_kernels)
    loaded = load(old)  # today's do not: the kernels its arrays describe (absolute bandwidths)
    assert river_predictions(loaded) == river_predictions(model)
    assert [type(k) for k in the_kernels(loaded)] == [type(k) for k in the_kernels(model)]
    assert loaded.kernels is None


def recorded(meta):
    """The two records of the kernels in a file: the state's and the engine settings'."""
    return engine_params(meta)["kernels"], engine_params(meta)["settings"]["kernels"]["items"]


def test_a_record_that_does_not_fit_the_arrays_is_refused(saved, tmp_path):
    _, path = saved

    def kind(meta):
        for kernels in recorded(meta):
            kernels[0]["kind"] = "Laplacian"  # the file's codes say RBF

    with pytest.raises(ModelFileError, match="kernel codes and groups do not match"):
        load(rewrite_meta(path, tmp_path / "kind.omkl", kind))

    def count(meta):
        for kernels in recorded(meta):
            kernels.pop()  # one kernel fewer than the arrays hold

    with pytest.raises(ModelFileError, match=r"count\.omkl.*inconsistent"):
        load(rewrite_meta(path, tmp_path / "count.omkl", count))


@pytest.mark.parametrize("value, message", [([1, 2], "state's kernels"), ([], "non-empty list"),
                                            ("RBF", "non-empty list")])
def test_a_record_that_is_not_kernels_is_refused(saved, tmp_path, value, message):
    _, path = saved
    bad = rewrite_meta(path, tmp_path / "bad.omkl", lambda m: engine_params(m).update(kernels=value))
    with pytest.raises(ModelFileError, match=message):
        load(bad)


def test_a_record_that_differs_from_a_given_kernels_parameter_is_refused(tmp_path):
    kernels = (RBF(gamma_scale=1.0), Laplacian())
    model = OBSCUREClassifier(kernels=kernels, budget=30)
    for x, y in dict_stream(40):
        model.learn_one(x, y)
    path = model.save(tmp_path / "m.omkl")
    assert engine_of(load(path)).ck.kernels == kernels

    def edit(meta):
        engine_params(meta)["kernels"][0]["gamma_scale"] = 2.0

    with pytest.raises(ModelFileError, match="records the kernels .*RBF.*gamma_scale=2.0.* but the learner was built"):
        load(rewrite_meta(path, tmp_path / "other.omkl", edit))
