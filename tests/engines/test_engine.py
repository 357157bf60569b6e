"""The learner protocol (onlinemkl.engine): every engine has the same surface, and its state as
plain arrays is complete: a fresh engine given it predicts and continues learning bit for bit."""

import copy
import pickle

import numpy as np
import pytest

from onlinemkl import (NonlinearKRRRegressor, OBSCUREClassifier, PolyMKLRegressor, ProximalMKLClassifier,
                       ProximalMKLRegressor, SequenceMKLLabeler)
from onlinemkl.engine import Engine
from onlinemkl.features import FeatureMap, LabelMap
from onlinemkl.kernels import RBF, Linear
from _helpers import engine_of

KERNELS = (RBF(gamma=0.5), Linear())


def _data(n=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int), X[:, 0] * X[:, 1] + X[:, 2]


def _sequences(n=12, seed=0):
    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=(4, 2)) for _ in range(n)]
    return xs, [(x[:, 0] > 0).astype(int).tolist() for x in xs]


FACES = {
    "obscure": lambda: OBSCUREClassifier(kernels=KERNELS, budget=30, stage2_epochs=1, random_state=0),
    "proximal-classifier": lambda: ProximalMKLClassifier(kernels=KERNELS, budget=30, average=True, random_state=0),
    "proximal-regressor": lambda: ProximalMKLRegressor(kernels=KERNELS, budget=30, random_state=0),
    "sequence": lambda: SequenceMKLLabeler(kernels=KERNELS, random_state=0),
    "polymkl": lambda: PolyMKLRegressor(degree=2, n_iter=10, budget=40, random_state=0),
    "nonlinear": lambda: NonlinearKRRRegressor(degree=2, max_iter=5, budget=40),
}


def _fitted(name):
    X, yc, yr = _data()
    model = FACES[name]()
    if name == "sequence":
        xs, ys = _sequences()
        return model.fit(xs, ys), xs[0]
    y = yc if "classifier" in name or name == "obscure" else yr
    return model.fit(X[:60], y[:60]), X[60:]


def _outputs(engine, probe):
    """What the engine predicts for ``probe`` through each of its prediction methods."""
    if hasattr(engine, "scores_many"):
        out = [engine.scores_many(probe), np.array([engine.scores_one(np.ascontiguousarray(r)) for r in probe])]
        return out + ([engine.predict_many(probe)] if getattr(engine, "regression", False) else [])
    if hasattr(engine, "predict_many"):
        return [engine.predict_many(probe)]
    return [engine.predict(np.ascontiguousarray(probe))]


def _same_state(a, b):
    (pa, aa), (pb, ab) = a.get_state(), b.get_state()
    assert pa == pb and sorted(aa) == sorted(ab)
    for k in aa:
        np.testing.assert_array_equal(aa[k], ab[k], err_msg=k, strict=True)


@pytest.mark.parametrize("name", sorted(FACES))
def test_engine_state_is_complete(name):
    model, probe = _fitted(name)
    engine = engine_of(model)
    assert isinstance(engine, Engine)
    params, arrays = engine.get_state()
    assert all(isinstance(v, np.ndarray) for v in arrays.values())
    fresh = type(engine)(**engine._init_args)
    fresh.set_state(copy.deepcopy(params), {k: v.copy() for k, v in arrays.items()})
    _same_state(engine, fresh)
    for a, b in zip(_outputs(engine, probe), _outputs(fresh, probe)):
        np.testing.assert_array_equal(a, b)
    for twin in (pickle.loads(pickle.dumps(engine)), copy.deepcopy(engine)):
        _same_state(engine, twin)
        for a, b in zip(_outputs(engine, probe), _outputs(twin, probe)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(FACES))
def test_set_state_refuses_a_wrong_dtype_and_leaves_no_half_state(name):
    model, _ = _fitted(name)
    engine = engine_of(model)
    params, arrays = engine.get_state()
    key = sorted(arrays)[0]
    bad = dict(arrays, **{key: arrays[key].astype(np.complex128)})
    with pytest.raises(ValueError):
        type(engine)(**engine._init_args).set_state(params, bad)


def test_feature_map_encode_grows_in_one_pass_like_values_then_row():
    """``encode`` checks and writes each value in one pass and gives new names their columns after
    every value passed: the row is the one ``row(values(x))`` makes after the names are added, in
    any interleaving of known and new names and value types; a rejected example adds nothing."""
    fm = FeatureMap(max_features=6)
    fm.encode({"a": 1.0, "b": 2}, grow=True)
    x = {"c": np.float32(0.5), "a": -3, "d": True, "b": 2.5}  # new, known, new (bool), known
    got = fm.encode(x, grow=True)
    assert fm.names == ["a", "b", "c", "d"]
    assert got.tolist() == fm.row(FeatureMap.values(x)).tolist() == [-3.0, 2.5, 0.5, 1.0]
    assert fm.encode({"z": 7.0, "b": 1.0}, grow=False).tolist() == [0.0, 1.0, 0.0, 0.0]  # unknown: dropped
    with pytest.raises(ValueError, match="max_features=6"):
        fm.encode({"e": 1.0, "a": 0.0, "f": 1.0, "g": 2.0}, grow=True)
    with pytest.raises(TypeError, match="'h'"):
        fm.encode({"e": 1.0, "h": "red"}, grow=True)
    assert fm.names == ["a", "b", "c", "d"]  # the rejected examples added nothing


def test_feature_map_orders_and_label_map_encodes():
    fm = FeatureMap()
    assert fm.encode({"b": 1, "a": 2.0}, grow=True).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        fm.encode({"c": 1.0, "d": float("nan")}, grow=True)
    assert len(fm) == 2  # the rejected example added nothing
    sm = FeatureMap(ordered="sorted")
    assert sm.add(["b", 2]).tolist() == [] and sm.names == [2, "b"]
    assert sm.add(["a"]).tolist() == [0, 2] and sm.names == [2, "a", "b"]
    with pytest.raises(ValueError, match="sorted"):
        sm.restore(["b", "a"])
    lm = LabelMap.from_classes(np.array(["x", "y"]))
    assert lm.encode(np.array(["y", "x"]), binary=True).tolist() == [1, -1]
    with pytest.raises(ValueError, match="declare every label"):
        lm.encode(np.array(["z"]))
    with pytest.raises(ValueError, match="twice"):
        LabelMap(["a", "a"])


def test_the_obscure_engine_hands_its_records_to_compiled_code_as_plain_tuples_in_field_order():
    """Every engine passes state to compiled code as its records' fields in order (plain tuples,
    named back inside the entry point); OBSCURE builds the tuples directly for speed, so they are
    held here to the named records, array by array, through growth of the buffer and the classes."""
    import numpy as np

    from onlinemkl.engine import plain
    from onlinemkl.kernels import RBF, Linear
    from onlinemkl.obscure.engine import ObscureEngine

    e = ObscureEngine((RBF(gamma=0.5), Linear()), 1.5, None, None, 3, "least_impact", False, False)
    e.set_features(2)
    e.set_n_classes(3)
    rng = np.random.default_rng(0)
    for i in range(12):
        if i == 6:
            e.set_n_classes(5)  # reallocates the class-score arrays
        e.learn(rng.normal(size=2), i % 5 if i >= 6 else i % 3)
        buf, spec, st, eviction = e._arguments()
        for got, want in zip((buf, spec, st), plain(*e.records())):
            assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
        assert eviction is not None  # a budget: the variant with the eviction code


#: The integer settings of the per-example learners (codes, flags, counts): ``IH_*`` of their steps.
INTEGER_SETTINGS = {"STAGE", "PEGASOS", "BUDGET", "POLICY", "BINARY", "NCLASS", "LOSS", "PROX", "SCHEDULE", "NOUT",
                    "GROUP_STEPS", "NLABELS"}


@pytest.mark.parametrize("name", ["obscure", "proximal-classifier", "proximal-regressor", "sequence"])
def test_integer_settings_sit_in_an_int64_array_and_hyper_holds_only_real_values(name):
    """The compiled step's record holds the real-valued settings in the float64 ``hyper`` and the
    integer ones in the int64 ``ihyper`` beside it; the state saves both with their dtypes."""
    import importlib

    model, _ = _fitted(name)
    eng = engine_of(model)
    core = importlib.import_module(type(eng).__module__.rsplit(".", 1)[0] + "._step")
    floats = {n[2:] for n in dir(core) if n.startswith("H_")}
    ints = {n[3:] for n in dir(core) if n.startswith("IH_")}
    assert floats and not floats & INTEGER_SETTINGS and ints <= INTEGER_SETTINGS
    assert eng.hyper.dtype == np.float64 and eng.hyper.shape == (len(floats),) == (core.N_HYPER,)
    assert eng.ihyper.dtype == np.int64 and eng.ihyper.shape == (len(ints),) == (core.N_IHYPER,)
    record = eng.records()[2] if name == "obscure" else eng._group_state()
    assert record.hyper is eng.hyper and record.ihyper is eng.ihyper
    assert eng.ihyper[core.IH_BUDGET] == (30 if name != "sequence" else 0)
    _, arrays = eng.get_state()
    assert arrays["hyper"].dtype == np.float64 and arrays["ihyper"].dtype == np.int64


@pytest.mark.parametrize("name", ["obscure", "proximal-classifier", "proximal-regressor", "sequence"])
def test_budgeted_engines_count_their_steps_and_evictions(name):
    # a budget of 10 under 60 examples (60 sequences of 4 positions) must evict
    model = FACES[name]().set_params(budget=10)
    X, yc, yr = _data()
    if name == "sequence":
        model.fit(*_sequences(n=60))
    else:
        model.fit(X[:60], (yc if name != "proximal-regressor" else yr)[:60])
    engine = engine_of(model)
    assert engine.evictions > 0 and engine.n_support <= 10
    if name == "obscure":
        assert engine.clock >= 60  # stage 1 and stage 2 steps, replayed ones included
