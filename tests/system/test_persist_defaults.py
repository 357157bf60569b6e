"""A model file outlives a change of any default: it records the settings the model was built with.

Every learner, on both faces (and in a river pipeline), is saved with its defaults, then every
default a release could change is patched (the default kernel sets, ``p=None``'s and ``eta=None``'s
rules, ``eta0='auto'``'s steps and class threshold, ``replay='auto'``'s steps, the replay seed,
``switch_after='auto'``'s clean run, ``gamma='auto'``'s radius, PolyMKL's ``rho=None``, the
proximal regressor's and the mini-batch learners' prediction margins, ridge grids and near-copy tolerance); the loaded
model must predict bit for bit as the saved one, and go on learning identically.  Files written before the settings were
recorded (``tests/data/persist_v1/``) load as they did.
"""

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _helpers import engine_of
from river import preprocessing
from _helpers import rewrite_meta

import onlinemkl._replay as replay_module
import onlinemkl._window as engines_window
import onlinemkl.kernels as kernels_module
import onlinemkl.obscure.engine as engines_obscure
import onlinemkl.obscure.river as river_obscure
import onlinemkl.obscure.sklearn as obscure_face
import onlinemkl.polymkl.engine as engines_polymkl
import onlinemkl.proximal._setup as engines_proximal
import onlinemkl.proximal.engine as engines_proximal_engine
from onlinemkl import NonlinearKRRRegressor as SkKRR
from onlinemkl import OBSCUREClassifier as SkOBSCURE
from onlinemkl import PolyMKLRegressor as SkPoly
from onlinemkl import ProximalMKLClassifier as SkProxClf
from onlinemkl import ProximalMKLRegressor as SkProxReg
from onlinemkl import SequenceMKLLabeler
from onlinemkl import river as omr
from onlinemkl.kernels import RBF, Linear
from onlinemkl.persist import ModelFileError, load, load_with_meta, save

FIXTURES = Path(__file__).parents[1] / "data" / "persist_v1"

OTHER = (RBF(gamma_scale=0.3), Linear())


def patch_every_default(mp):
    """Change every default and 'auto' rule the learners resolve at run time."""
    mp.setattr(kernels_module, "default_kernels", lambda: OTHER)
    mp.setattr(engines_proximal, "default_regression_kernels", lambda: OTHER)
    mp.setattr(omr.ProximalMKLRegressor, "_default_kernels", staticmethod(lambda: OTHER))
    mp.setattr(engines_obscure, "default_p", lambda F: 1.3)
    mp.setattr(engines_obscure, "default_eta", lambda F, q: 0.123)
    mp.setattr(engines_obscure, "AUTO_SWITCH_CLEAN_RUN", 3)
    mp.setattr(engines_proximal, "AUTO_ETA0", 0.25)
    mp.setattr(engines_proximal, "AUTO_ETA0_MANY", 0.5)
    mp.setattr(replay_module, "FEW_CLASSES", 1)
    mp.setattr(replay_module, "DEFAULT_STEPS", 2)
    mp.setattr(replay_module, "MANY_CLASSES_STEPS", 3)
    for module in (engines_proximal, obscure_face):
        mp.setattr(module, "replay_seed", lambda random_state: 987)
    for module in (engines_proximal, river_obscure):
        mp.setattr(module, "river_seed", lambda seed: 987)
    mp.setattr(engines_proximal, "auto_gamma", lambda loss_at_zero, modulus: 7.0)
    mp.setattr(engines_proximal_engine, "PREDICTION_MARGIN", 0.01)
    mp.setattr(engines_polymkl, "check_rho", lambda rho, degree: np.full(degree + 1, 0.5))
    mp.setattr(engines_window, "default_rules", lambda: {"prediction_margin": 0.01, "ridge_grid": [-1.0, 1.0, 3],
                                                         "local_ridge_grid": [-0.5, 0.5, 3], "near_copy": 0.0})


# -- data -------------------------------------------------------------------------------------


def dict_stream(n, seed=0, regression=False, classes="abcde"):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(len(classes), 4)) * 2.0
    for _ in range(n):
        k = int(rng.integers(len(classes)))
        v = centers[k] + rng.normal(size=4)
        yield {f"f{i}": float(v[i]) for i in range(4)}, (float(v[0] * v[1] + v[2]) if regression else classes[k])


def arrays_data(n=60, seed=1, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] * X[:, 1] + X[:, 2] if regression else (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int) * 2
    return X, y


def sequences(n=10, seed=2):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for _ in range(n):
        x = rng.normal(size=(int(rng.integers(2, 5)), 3))
        xs.append(x)
        ys.append((x[:, 0] > 0).astype(int).tolist())
    return xs, ys


# -- the learners: (build and train, predict, learn more) -------------------------------------


def river_case(factory, regression=False, pipeline=False, n=80):
    def build():
        m = factory()
        if pipeline:
            m = preprocessing.StandardScaler() | m
        for x, y in dict_stream(n, regression=regression):
            m.learn_one(x, y)
        return m

    def predict(m):
        f = m.predict_one if regression else m.predict_proba_one
        return [f(x) for x, _ in dict_stream(25, seed=5, regression=regression)]

    def more(m):
        for x, y in dict_stream(n // 2, seed=9, regression=regression):
            m.learn_one(x, y)

    return build, predict, more


def sk_case(factory, regression=False):
    def build():
        return factory().fit(*arrays_data(regression=regression))

    def predict(m):
        X, _ = arrays_data(30, seed=6)
        f = getattr(m, "decision_function", m.predict)
        return f(X).tolist()

    def more(m):
        X, y = arrays_data(20, seed=7, regression=regression)
        if regression:
            m.partial_fit(X, y)
        else:
            m.partial_fit(X, y, classes=m.classes_)

    return build, predict, more


def sequence_case():
    def build():
        return SequenceMKLLabeler(random_state=0).fit(*sequences())

    def predict(m):
        xs, _ = sequences(6, seed=7)
        return [m.predict_one(x) for x in xs] + engine_of(m).theta_sq.tolist()

    def more(m):
        for xs, ys in zip(*sequences(5, seed=8)):
            m.learn_one(xs, ys)

    return build, predict, more


CASES = {
    "river-obscure": river_case(lambda: omr.OBSCUREClassifier(budget=40)),
    "river-obscure-pipeline": river_case(lambda: omr.OBSCUREClassifier(), pipeline=True),
    "river-proximal-clf": river_case(lambda: omr.ProximalMKLClassifier(budget=40)),
    "river-proximal-reg-pipeline": river_case(lambda: omr.ProximalMKLRegressor(budget=40), True, True),
    "river-polymkl": river_case(lambda: omr.PolyMKLRegressor(batch_size=12, n_iter=5, budget=30), True, n=40),
    "river-krr-pipeline": river_case(lambda: omr.NonlinearKRRRegressor(batch_size=12, max_iter=3, budget=30),
                                     True, True, n=40),
    "sk-obscure": sk_case(lambda: SkOBSCURE(budget=50, stage1_epochs=2, stage2_epochs=1)),
    "sk-proximal-clf": sk_case(lambda: SkProxClf(eta0="auto", replay="auto")),
    "sk-proximal-reg": sk_case(lambda: SkProxReg(n_epochs=1), regression=True),
    "sk-polymkl": sk_case(lambda: SkPoly(n_iter=5, budget=30, random_state=0), regression=True),
    "sk-krr": sk_case(lambda: SkKRR(max_iter=3, budget=30), regression=True),
    "sequence": sequence_case(),
}


def learner(model):
    return model.steps[next(reversed(model.steps))] if hasattr(model, "steps") else model


def assert_same_state(a, b):
    (s1, a1), (s2, a2) = learner(a)._get_state(), learner(b)._get_state()
    assert s1 == s2 and sorted(a1) == sorted(a2)
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k], strict=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_saved_model_predicts_and_learns_alike_after_every_default_changes(case, tmp_path, monkeypatch):
    build, predict, more = CASES[case]
    model = build()
    path = save(model, tmp_path / "m.omkl")
    expected = predict(model)
    with monkeypatch.context() as mp:
        patch_every_default(mp)
        loaded = load(path)
        assert predict(loaded) == expected  # bit for bit
        more(model)
        more(loaded)
        assert predict(loaded) == predict(model)
        assert_same_state(loaded, model)
        again = load(save(loaded, tmp_path / "again.omkl"))  # saved again under today's defaults
        assert predict(again) == predict(model)


def test_the_patches_change_what_a_new_model_resolves(monkeypatch):
    """The defaults patched above are the ones the learners read (else the test above proves nothing)."""
    before = {name: engine_of(learner(CASES[name][0]()))._init_args
              for name in ("river-obscure", "river-proximal-clf", "sk-polymkl")}
    patch_every_default(monkeypatch)
    after = {name: engine_of(learner(CASES[name][0]()))._init_args for name in before}
    ob, ob2 = before["river-obscure"], after["river-obscure"]
    assert ob["kernels"] != ob2["kernels"] == OTHER and ob["p"] != ob2["p"] == 1.3 and ob2["eta"] == 0.123
    assert (ob2["clean_run"], ob2["few_classes"], ob2["replay"], ob2["replay_many"]) == (3, 1, 2, 3)
    assert (ob["clean_run"], ob["few_classes"], ob["replay"], ob["replay_many"]) != (3, 1, 2, 3)
    px, px2 = before["river-proximal-clf"], after["river-proximal-clf"]
    assert (px2["eta0"], px2["eta0_many"], px2["few_classes"], px2["seed"]) == (0.25, 0.5, 1, 987)
    assert (px["eta0"], px["eta0_many"], px["few_classes"], px["seed"]) != (0.25, 0.5, 1, 987)
    assert px["gamma"] != px2["gamma"] == 7.0
    assert px["prediction_margin"] != px2["prediction_margin"] == 0.01
    assert not np.array_equal(before["sk-polymkl"]["rho"], after["sk-polymkl"]["rho"])


def test_a_file_records_the_resolved_settings(tmp_path):
    model = CASES["river-proximal-clf"][0]()
    path = save(model, tmp_path / "m.omkl")
    with zipfile.ZipFile(path) as zf:
        settings = json.loads(zf.read("meta.json"))["model"]["state"]["engine"]["settings"]
    assert settings["eta0"] == 1.0 and settings["eta0_many"] == 4.0 and settings["few_classes"] == 3
    assert [k["kind"] for k in settings["kernels"]["items"]] == ["RBF", "RBF", "RBF", "Linear", "Polynomial"]
    assert settings["replay"] == 5 and settings["seed"] == 0


# -- files without the settings (written before they were recorded) -----------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.omkl")))
def test_files_written_before_the_settings_load_as_before(name):
    model, meta = load_with_meta(FIXTURES / name)
    kind, inputs = meta["extra"]["inputs"]
    if kind == "dicts":
        f = model.predict_one if meta["extra"]["regression"] else model.predict_proba_one
        got = [f(x) for x in inputs]
    elif kind == "sequences":
        got = [model.predict_one(np.array(x)) for x in inputs]
    else:
        X = np.array(inputs)
        got = (model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)).tolist()
    want = meta["extra"]["predictions"]
    bounds = getattr(getattr(model, "_engine", None), "target_bounds", None)
    if bounds is not None and all(isinstance(w, float) for w in want):
        # a mini-batch regressor predicts within its window's bounds, old files too (the proximal
        # learners' bounds are unbounded for a file written before they kept the targets' range)
        want = np.clip(np.asarray(want, dtype=float), *bounds()).tolist()
    # the same arrays; the files were written while some functions still ran as Python (which agrees
    # with the compiled code within rounding), so within rounding
    assert_close(got, want)


FIXTURES_ONE_HYPER = Path(__file__).parents[1] / "data" / "persist_v2"


def _answers(model, extra):
    """What ``model`` answers to the inputs a fixture recorded (``extra["inputs"]``)."""
    kind, inputs = extra["inputs"]
    if kind == "dicts":
        return [model.predict_proba_one(x) for x in inputs]
    if kind == "sequences":
        return [model.predict_one(np.array(x)) for x in inputs]
    X = np.array(inputs)
    return (model.predict(X) if extra["regression"] else model.decision_function(X)).tolist()


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES_ONE_HYPER.glob("*.omkl")))
def test_files_and_pickles_with_every_setting_in_hyper_predict_bit_for_bit(name):
    """Model files and pickles written while one float ``hyper`` held the integer settings too
    (``tests/data/persist_v2/``) load into ``hyper`` and ``ihyper`` and answer exactly as when saved."""
    import pickle

    model, meta = load_with_meta(FIXTURES_ONE_HYPER / f"{name}.omkl")
    assert _answers(model, meta["extra"]) == meta["extra"]["predictions"]
    with open(FIXTURES_ONE_HYPER / f"{name}.pkl", "rb") as fh:
        saved = pickle.load(fh)
    assert _answers(saved["model"], saved["extra"]) == saved["extra"]["predictions"]
    eng = engine_of(model)
    assert eng.hyper.dtype == np.float64 and eng.ihyper.dtype == np.int64


def assert_close(got, want):
    """Equal structures, floats within 1e-9 relative (dicts and lists walked)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want)
        for k in want:
            assert_close(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    else:
        assert got == want


def rewrite(src, dst, edit):
    """Copy a model file with its engine settings edited by ``edit(settings)``."""
    return rewrite_meta(src, dst, lambda meta: edit(meta["model"]["state"]["engine"]["settings"]))


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(replay_window=None), r"settings differ from the parameters: replay_window=None"),
    (lambda s: s.update(eta0=-1.0), r"setting eta0=-1.0 is negative where the parameters give 1.0"),
    (lambda s: s.update(seed=0.5), r"setting seed=0.5 is not an integer"),
    (lambda s: s.update(eviction="oldest"), r"settings differ from the parameters: eviction=oldest was saved"),
    (lambda s: s.update(n_outputs=10 ** 9), r"setting n_outputs=1000000000 differs from the 3 the file's"),
    (lambda s: s.update(budget=41), r"settings differ from the parameters: budget=41 was saved, the parameter gives "
                                    r"budget=40"),
    (lambda s: s.update(bogus=1), r"records settings \['bogus'\] that a ProximalEngine does not take.*upgrade"),
    (lambda s: s.update(kernels={"$type": "tuple", "items": []}), r"setting kernels holds no kernels"),
    (lambda s: s.update(kernels={"$type": "tuple", "items": [1.0]}), r"setting kernels\[0\]=1.0 is not a kernel"),
])
def test_crafted_settings_are_refused_with_the_setting_named(tmp_path, edit, message):
    model = CASES["river-proximal-clf"][0]()
    path = save(model, tmp_path / "m.omkl")
    with pytest.raises(ModelFileError, match=message):
        load(rewrite(path, tmp_path / "bad.omkl", edit))


def test_a_river_regressor_saved_before_the_kernels_were_recorded_loads_after_the_default_changed(tmp_path,
                                                                                                  monkeypatch):
    """A file written while the stream regressor's default set had a normalised quadratic kernel,
    before kernels were recorded, holds only the kernels' codes and resolved parameters."""
    with monkeypatch.context() as mp:
        old_default = staticmethod(kernels_module.default_regression_kernels)  # with a normalised quadratic kernel
        mp.setattr(omr.ProximalMKLRegressor, "_default_kernels", old_default)
        model = CASES["river-proximal-reg-pipeline"][0]()
    assert engine_of(learner(model)).ck.kernels != kernels_module.default_stream_regression_kernels()
    path = save(model, tmp_path / "m.omkl")

    def strip(meta):
        engine = meta["model"]["children"][1][1]["state"]["engine"]
        engine.pop("kernels")
        engine.pop("settings", None)  # (files written before settings were recorded have none)

    old = rewrite_meta(path, tmp_path / "old.omkl", strip)
    loaded = load(old)
    predict, more = CASES["river-proximal-reg-pipeline"][1:]
    assert predict(loaded) == predict(model)
    more(model)
    more(loaded)
    assert predict(loaded) == predict(model)
    assert learner(loaded).kernels is None


@pytest.mark.parametrize("name", ["river_obscure.omkl", "sk_obscure.omkl", "river_proximal_clf.omkl",
                                  "sk_proximal_clf.omkl"])
def test_a_file_keeps_the_replay_window_it_was_saved_with(name):
    """The parameters are saved beside the state: a classifier saved with a reservoir of 1000 rows
    keeps it when the default window is another."""
    model = load(FIXTURES / name)
    assert model.replay_window == 1000 and engine_of(model).replay.window == 1000
