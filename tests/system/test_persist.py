"""Model files (onlinemkl.persist): exact round trips, continued learning, damaged files, limits."""

import copy
import json
import pickle
import zipfile

import numpy as np
import pytest
from river import preprocessing

import onlinemkl.persist as persist
from onlinemkl import OBSCUREClassifier as SkOBSCURE
from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial
from onlinemkl.persist import ModelFileError, load, load_with_meta, save
from onlinemkl.river import OBSCUREClassifier
from _helpers import engine_of


def stream(n, seed=0, labels=("a", "b", "c"), late_feature=True):
    """Three noisy classes in 4 features; a fifth feature appears halfway through."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(len(labels), 4)) * 2.0
    for t in range(n):
        k = int(rng.integers(len(labels)))
        v = centers[k] + rng.normal(size=4)
        x = {f"f{i}": float(v[i]) for i in range(4)}
        if late_feature and t > n // 2:
            x["late"] = float(rng.normal())
        if t % 7 == 3:
            del x["f2"]  # a missing feature
        yield x, labels[k]


def components(model):
    """Every persisted component of a model: (registry name, state, arrays)."""
    out = []
    steps = model.steps.values() if hasattr(model, "steps") else [model]
    for step in steps:
        if isinstance(step, preprocessing.StandardScaler):
            out.append(("scaler", {k: dict(getattr(step, k)) for k in ("counts", "means", "vars")}, {}))
        else:
            state, arrays = step._get_state()
            out.append((type(step).__name__, state, arrays))
    return out


def assert_same_state(m1, m2):
    c1, c2 = components(m1), components(m2)
    assert len(c1) == len(c2)
    for (n1, s1, a1), (n2, s2, a2) in zip(c1, c2):
        assert n1 == n2
        assert s1 == s2
        assert sorted(a1) == sorted(a2)
        for k in a1:
            assert a1[k].dtype == a2[k].dtype, k
            np.testing.assert_array_equal(a1[k], a2[k], err_msg=k, strict=True)


def assert_learn_alike(model, loaded, data):
    """``loaded`` predicts the probabilities of ``model`` bit for bit while both learn ``data``,
    and ends in the same state."""
    for x, y in data:
        assert loaded.predict_proba_one(x) == model.predict_proba_one(x)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert_same_state(model, loaded)


RIVER_CONFIGS = [
    dict(budget=60, switch_after=150),
    dict(budget=40, eviction="least_impact", switch_after=100, p=1.2),
    dict(kernels=(RBF(gamma=None, gamma_scale=1.0, group=("f0", "f1", "late")), Linear(normalize=True),
                  Polynomial(degree=3, normalize=True), Laplacian(gamma=0.3, group=("f2", "f3")),
                  BSpline(h=None)), budget=None, switch_after="auto", pegasos=True, C=2.0),
]


@pytest.mark.parametrize("params", RIVER_CONFIGS)
def test_river_save_mid_stream_then_learn_identically(tmp_path, params):
    model = OBSCUREClassifier(**params)
    data = list(stream(500, seed=1))
    for x, y in data[:250]:
        model.learn_one(x, y)
    path = model.save(tmp_path / "m.omkl")
    loaded = load(path)
    assert type(loaded) is OBSCUREClassifier and loaded._get_params() == model._get_params()
    assert_same_state(model, loaded)
    for x, y in data[250:]:
        assert loaded.predict_one(x) == model.predict_one(x)
        assert loaded.predict_proba_one(x) == model.predict_proba_one(x)  # bit for bit
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert_same_state(model, loaded)
    assert model.stage_ == loaded.stage_
    np.testing.assert_array_equal(model.kernel_weights_, loaded.kernel_weights_)


@pytest.mark.parametrize("learner", ["obscure", "proximal"])
def test_river_group_without_features_yet_round_trip(tmp_path, learner):
    """Saved while a named group has no feature yet: relative bandwidths stay frozen per group.

    RBF() and BSpline() on all features resolve on the first example and keep their values when
    'late' appears (the file's single "resolved" flag is False: the per-group state comes back from
    the restored group columns).  The file, a pickle and a deep copy all continue exactly like the
    model itself.
    """
    from onlinemkl.river import ProximalMKLClassifier

    kernels = (RBF(), RBF(gamma_scale=2.0, group=("late",)), BSpline(), Linear(normalize=True))
    if learner == "obscure":
        model = OBSCUREClassifier(kernels=kernels, budget=80, switch_after=None)
    else:
        model = ProximalMKLClassifier(kernels=kernels, budget=80)
    data = list(stream(500, seed=8))  # 'late' from t = 251 on
    for x, y in data[:250]:
        model.learn_one(x, y)
    ck = engine_of(model).ck
    assert ck.gfrozen.tolist() == [True, False] and not ck._resolved
    before = ck.params[:, 0].copy()
    copies = [load(model.save(tmp_path / "g.omkl")), pickle.loads(pickle.dumps(model)), copy.deepcopy(model)]
    for other in copies:
        assert_same_state(model, other)
        assert engine_of(other).ck.gfrozen.tolist() == [True, False]
    for x, y in data[250:]:
        p = model.predict_proba_one(x)
        for other in copies:
            assert other.predict_proba_one(x) == p  # bit for bit
            other.learn_one(x, y)
        model.learn_one(x, y)
    for other in copies:
        assert_same_state(model, other)
    assert ck._resolved
    np.testing.assert_array_equal(ck.params[[0, 2, 3], 0], before[[0, 2, 3]])  # gamma 1/4, h sqrt(8), linear
    assert before[0] == 0.25 and ck.params[1, 0] == 2.0  # 2 / |('late',)|
    rec = engine_of(model).recompute_theta_sq()
    np.testing.assert_allclose(engine_of(model).theta_sq, rec, rtol=1e-9, atol=1e-12)


def test_river_binary_hinge_round_trip(tmp_path):
    model = OBSCUREClassifier(loss="hinge", budget=30, switch_after=40)
    data = [(x, y == "a") for x, y in stream(200, seed=2, labels=("a", "b"))]
    for x, y in data[:100]:
        model.learn_one(x, y)
    loaded = load(model.save(tmp_path / "b.omkl"))
    assert_learn_alike(model, loaded, data[100:])


def test_untrained_river_model_round_trip(tmp_path):
    model = OBSCUREClassifier()
    loaded = load(model.save(tmp_path / "u.omkl"))
    assert loaded.predict_one({"a": 1.0}) is None
    x, y = next(stream(1))
    model.learn_one(x, y)
    loaded.learn_one(x, y)
    assert_same_state(model, loaded)


def test_pipeline_with_scaler_round_trip(tmp_path):
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=50, switch_after=120)
    data = list(stream(400, seed=3))
    for x, y in data[:200]:
        pipe.learn_one(x, y)
    pipe.predict_one({"never_seen": 1.0})  # transform_one adds means/vars keys without counts
    loaded = load(save(pipe, tmp_path / "p.omkl"))
    assert list(loaded.steps) == list(pipe.steps)
    assert_same_state(pipe, loaded)
    assert_learn_alike(pipe, loaded, data[200:])


def test_named_pipeline_steps_and_scaler_without_std(tmp_path):
    pipe = preprocessing.StandardScaler(with_std=False) | ("clf", OBSCUREClassifier(budget=20))
    for x, y in stream(50, seed=4):
        pipe.learn_one(x, y)
    loaded = load(save(pipe, tmp_path / "p.omkl"))
    assert list(loaded.steps) == ["StandardScaler", "clf"]
    assert loaded["StandardScaler"].with_std is False
    assert_same_state(pipe, loaded)


def test_labels_and_feature_names_keep_their_types(tmp_path):
    model = OBSCUREClassifier(budget=30)
    labels = [7, 2.5, ("t", 1), True, (None, 1.5)]  # numbers and tuples (text and numbers do not mix)
    rng = np.random.default_rng(5)
    for t in range(120):
        y = labels[t % len(labels)]
        model.learn_one({"name": float(rng.normal()), 3: float(rng.normal()), ("a", 1): float(t % 3)}, y)
    loaded = load(model.save(tmp_path / "t.omkl"))
    assert loaded._labels.labels == labels
    assert [type(v) for v in loaded._labels.labels] == [type(v) for v in labels]
    assert list(loaded._features.columns) == ["name", 3, ("a", 1)]
    x = {"name": 0.3, 3: -1.0, ("a", 1): 2.0}
    assert loaded.predict_proba_one(x) == model.predict_proba_one(x)


def test_sklearn_fit_round_trip_and_partial_fit_continues(tmp_path):
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = SkOBSCURE(kernels=[RBF(gamma=0.5), Linear()], random_state=0, budget=80, switch_after=50).fit(X, y)
    loaded = load(clf.save(tmp_path / "s.omkl"))
    assert loaded.get_params() == clf.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X), strict=True)
    np.testing.assert_array_equal(loaded.classes_, clf.classes_, strict=True)
    assert loaded.stage1_updates_ == clf.stage1_updates_
    rng = np.random.default_rng(0)
    for _ in range(5):
        idx = rng.integers(0, len(X), 20)
        clf.partial_fit(X[idx], y[idx])
        loaded.partial_fit(X[idx], y[idx])
    assert_same_state(clf, loaded)
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))


def test_sklearn_string_labels_binary_and_unfitted(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, "pos", "neg").astype(object)  # an object array of str
    clf = SkOBSCURE(random_state=0).partial_fit(X[:30], y[:30], classes=np.array(["neg", "pos"], dtype=object))
    loaded = load(clf.save(tmp_path / "s.omkl"))
    assert loaded.classes_.dtype == object and loaded.classes_.tolist() == ["neg", "pos"]
    clf.partial_fit(X[30:], y[30:])
    loaded.partial_fit(X[30:], y[30:])
    assert_same_state(clf, loaded)
    fresh = load(SkOBSCURE(p=1.5, budget=9).save(tmp_path / "unfitted.omkl"))
    assert fresh.get_params()["budget"] == 9 and not hasattr(fresh, "_engine")


def test_pickle_and_deepcopy_still_work(tmp_path):
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=20)
    for x, y in stream(60, seed=6):
        pipe.learn_one(x, y)
    loaded = load(save(pipe, tmp_path / "p.omkl"))
    for m in (pipe, loaded):
        assert_same_state(m, pickle.loads(pickle.dumps(m)))
        assert_same_state(m, copy.deepcopy(m))


def test_files_are_deterministic_and_writes_atomic(tmp_path):
    model = OBSCUREClassifier(budget=20)
    for x, y in stream(40, seed=7):
        model.learn_one(x, y)
    a, b = tmp_path / "a.omkl", tmp_path / "b.omkl"
    model.save(a)
    model.save(b)
    assert a.read_bytes() == b.read_bytes()
    before = a.read_bytes()
    bad = OBSCUREClassifier(budget=20)
    bad._labels.labels.append(object())  # not representable: the save fails before replacing the file
    with pytest.raises(TypeError, match="cannot be stored"):
        bad.save(a)
    assert a.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.omkl", "b.omkl"]  # no temporary left over
    meta = json.loads(zipfile.ZipFile(a).read("meta.json"))
    assert meta["format"] == "onlinemkl-model" and meta["format_version"] == 1
    assert all(len(e["sha256"]) == 64 for e in meta["entries"].values())
    assert meta["model"]["params"]["kernels"] is None


def test_extra_metadata_round_trip(tmp_path):
    path = save(OBSCUREClassifier(), tmp_path / "e.omkl", extra={"train": {"examples_consumed": 12, "t": (1, 2)}})
    _, meta = load_with_meta(path)
    assert meta["extra"] == {"train": {"examples_consumed": 12, "t": (1, 2)}}


def test_what_cannot_be_saved():
    with pytest.raises(TypeError, match="random_state"):
        save(SkOBSCURE(random_state=np.random.RandomState(0)), "/nonexistent/x.omkl")
    with pytest.raises(TypeError, match="window_size"):
        save(preprocessing.StandardScaler(window_size=5), "/nonexistent/x.omkl")
    with pytest.raises(TypeError, match="not a registered model class"):
        save(preprocessing.MinMaxScaler(), "/nonexistent/x.omkl")


# -- damaged files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=15)
    for x, y in stream(60, seed=8):
        pipe.learn_one(x, y)
    path = save(pipe, tmp_path_factory.mktemp("m") / "good.omkl")
    return pipe, path


def rewrite(src, dst, edit_meta=None, edit_entries=None):
    """Copy a model file with its meta.json (and entries) edited; checksums left as edited."""
    with zipfile.ZipFile(src) as zin:
        entries = {n: zin.read(n) for n in zin.namelist()}
    meta = json.loads(entries.pop("meta.json"))
    if edit_meta:
        edit_meta(meta)
    if edit_entries:
        edit_entries(entries, meta)
    with zipfile.ZipFile(dst, "w") as zout:
        for n, data in entries.items():
            zout.writestr(n, data)
        zout.writestr("meta.json", json.dumps(meta))
    return dst


def get_array(entries, name):
    """An array entry of a model file being rewritten (:func:`rewrite`)."""
    import io

    return np.load(io.BytesIO(entries[name]))


def put_array(entries, meta, name, arr):
    """Replace an array entry, with the checksum and size a valid file would have (a crafted file)."""
    import hashlib
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr))
    entries[name] = buf.getvalue()
    meta["entries"][name] = {"sha256": hashlib.sha256(buf.getvalue()).hexdigest(), "size": len(buf.getvalue())}


def test_truncated_files_are_refused(saved, tmp_path):
    _, path = saved
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1):
        p = tmp_path / f"cut{cut}.omkl"
        p.write_bytes(data[:cut])
        with pytest.raises(ModelFileError, match=r"cut\d+\.omkl.*(truncated|corrupted|damaged)"):
            load(p)


def test_flipped_bytes_never_load_silently(saved, tmp_path):
    """Flip bytes all over the file: either a clear ModelFileError, or (a byte the format
    does not use, e.g. a zip header time stamp) a model identical to the saved one."""
    pipe, path = saved
    data = path.read_bytes()
    p = tmp_path / "flip.omkl"
    rng = np.random.default_rng(0)
    positions = sorted(set(rng.integers(0, len(data), 300).tolist()) | {len(data) - 5, 40, 100})
    refused = 0
    for pos in positions:
        d = bytearray(data)
        d[pos] ^= 0x5A
        p.write_bytes(bytes(d))
        try:
            loaded = load(p)
        except ModelFileError as exc:
            assert "flip.omkl" in str(exc)
            refused += 1
            continue
        assert_same_state(pipe, loaded)
    assert refused > 0.8 * len(positions)


def test_flipped_byte_in_an_array_names_the_entry(saved, tmp_path):
    _, path = saved
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("arrays/2/buf.S.npy")
    data[info.header_offset + 30 + len(info.filename) + info.file_size - 3] ^= 1  # inside the array data
    p = tmp_path / "flip.omkl"
    p.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"flip\.omkl.*arrays/2/buf\.S\.npy.*(CRC|corrupted|checksum)"):
        load(p)


def test_checksum_mismatch_is_refused(saved, tmp_path):
    _, path = saved

    def edit(entries, meta):
        arr = np.load(__import__("io").BytesIO(entries["arrays/2/hyper.npy"]))
        arr[1] += 1e-9
        buf = __import__("io").BytesIO()
        np.save(buf, arr)
        entries["arrays/2/hyper.npy"] = buf.getvalue()

    p = rewrite(path, tmp_path / "sum.omkl", edit_entries=edit)
    with pytest.raises(ModelFileError, match=r"sum\.omkl.*hyper\.npy.*SHA-256"):
        load(p)


def test_future_and_foreign_formats_are_refused(saved, tmp_path):
    _, path = saved
    p = rewrite(path, tmp_path / "future.omkl", edit_meta=lambda m: m.update(format_version=2, library_version="9.0"))
    with pytest.raises(ModelFileError, match=r"future\.omkl.*format version 2 by onlinemkl 9\.0.*upgrade"):
        load(p)
    p = rewrite(path, tmp_path / "other.omkl", edit_meta=lambda m: m.update(format="something-else"))
    with pytest.raises(ModelFileError, match="not an onlinemkl model file"):
        load(p)
    p = rewrite(path, tmp_path / "missing.omkl", edit_entries=lambda e, m: e.pop("arrays/1/counts.npy"))
    with pytest.raises(ModelFileError, match="missing from the archive"):
        load(p)
    p = rewrite(path, tmp_path / "more.omkl", edit_entries=lambda e, m: e.update({"evil.py": b"print(1)"}))
    with pytest.raises(ModelFileError, match="unexpected entries"):
        load(p)
    p = rewrite(path, tmp_path / "cls.omkl", edit_meta=lambda m: m["model"].update({"class": "os.system"}))
    with pytest.raises(ModelFileError, match="unknown model class 'os.system'"):
        load(p)
    with zipfile.ZipFile(tmp_path / "nometa.omkl", "w") as zf:
        zf.writestr("x", b"")
    with pytest.raises(ModelFileError, match="no meta.json"):
        load(tmp_path / "nometa.omkl")
    with pytest.raises(ModelFileError, match="no such file"):
        load(tmp_path / "absent.omkl")
    with pytest.raises(ModelFileError, match="directory"):
        load(tmp_path)


def test_object_arrays_are_refused(saved, tmp_path):
    _, path = saved

    def edit(entries, meta):
        buf = __import__("io").BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        entries["arrays/1/counts.npy"] = buf.getvalue()
        meta["entries"]["arrays/1/counts.npy"] = {
            "sha256": __import__("hashlib").sha256(buf.getvalue()).hexdigest(), "size": len(buf.getvalue())}

    p = rewrite(path, tmp_path / "obj.omkl", edit_entries=edit)
    with pytest.raises(ModelFileError, match=r"obj\.omkl.*counts\.npy"):
        load(p)


@pytest.mark.parametrize("array, index, value, rule", [
    ("istate", 0, 10_000, "stored examples"),
    ("buf.ypos", 0, 99, "class is out of range"),
    ("ck.granges", (0, 1), 10_000, "columns are out of range"),
    ("ck.codes", 0, 77, "kernel codes"),
    ("ihyper", 2, 3, "budget"),
])
def test_inconsistent_state_is_refused(saved, tmp_path, array, index, value, rule):
    """A file with valid checksums but an impossible state (crafted) never reaches the compiled code."""
    _, path = saved

    def edit(entries, meta):
        name = f"arrays/2/{array}.npy"
        arr = get_array(entries, name)
        arr[index] = value
        put_array(entries, meta, name, arr)

    p = rewrite(path, tmp_path / "crafted.omkl", edit_entries=edit)
    with pytest.raises(ModelFileError, match=f"crafted.omkl.*inconsistent.*{rule}"):
        load(p)


def test_value_encoding_round_trips():
    values = [None, True, 0, -3, 2.5, float("inf"), float("-inf"), "s", "$x", (1, ("a", None)), [1, [2]],
              {"a": 1, "$b": 2}, {1: "x", (2, 3): [True]}, RBF(gamma=0.2, group=("a", "b")), Polynomial(degree=3)]
    for v in values:
        enc = persist.encode_value(v)
        json.dumps(enc, allow_nan=False)
        assert persist.decode_value(json.loads(json.dumps(enc))) == v
    nan = persist.decode_value(persist.encode_value(float("nan")))
    assert nan != nan
    assert type(persist.decode_value(persist.encode_value(np.int64(3)))) is int


def test_files_with_parameter_rows_of_another_width_are_refused(saved, tmp_path):
    """Format 1 has one layout of kernel parameter rows (with the RBF ladder columns): a file whose
    rows are narrower is inconsistent, not an older layout to widen."""
    pipe, path = saved

    def edit(entries, meta):
        name = "arrays/2/ck.params.npy"
        arr = get_array(entries, name)
        assert arr.shape[1] == 8
        put_array(entries, meta, name, np.ascontiguousarray(arr[:, :4]))

    with pytest.raises(ModelFileError, match="inconsistent.*ck.params has shape"):
        load(rewrite(path, tmp_path / "narrow.omkl", edit_entries=edit))


def _raw_diagonals(sdiag, params):
    """Raw diagonals ``K(x, x)`` in place of the stored reciprocal roots of normalised kernels."""
    raw = sdiag.copy()
    norm = params[:, 3] != 0.0
    with np.errstate(divide="ignore"):
        raw[:, norm] = np.where(sdiag[:, norm] > 0.0, 1.0 / sdiag[:, norm] ** 2, 0.0)
    return raw


def test_row_caches_in_a_file_are_recomputed_not_trusted(saved, tmp_path):
    """The buffer's per-row caches (diagonals, group norms) are derived data: a restored buffer
    recomputes them from its rows, so a file with other values there predicts as the original."""
    pipe, path = saved

    def edit(entries, meta):
        params = get_array(entries, "arrays/2/ck.params.npy")
        name = "arrays/2/buf.sdiag.npy"
        sdiag = get_array(entries, name)
        raw = _raw_diagonals(sdiag, params)
        assert np.any(params[:, 3] != 0) and not np.array_equal(raw, sdiag)  # the default set normalises
        put_array(entries, meta, name, raw)

    old = load(rewrite(path, tmp_path / "old.omkl", edit_entries=edit))
    new = load(path)
    xs = [x for x, _ in stream(30, seed=22)]
    assert [old.predict_proba_one(x) for x in xs] == [new.predict_proba_one(x) for x in xs]
    assert [pipe.predict_proba_one(x) for x in xs] == [new.predict_proba_one(x) for x in xs]


def test_unpickled_engines_recompute_their_row_caches():
    """Pickles go through the engine's state: its row caches are recomputed from the rows, so an
    engine whose caches were overwritten predicts as the original once unpickled, and a pickle
    round-trips to the same bits."""
    X = np.random.default_rng(3).normal(size=(200, 6))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    clf = SkOBSCURE(random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    eng = engine_of(clf)
    n = eng.n_support
    assert n > 0
    same = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(engine_of(same).buf.sdiag[:n], eng.buf.sdiag[:n])
    assert np.array_equal(same.decision_function(X), clf.decision_function(X))
    old = copy.deepcopy(clf)
    engine_of(old).buf.sdiag[:n] = _raw_diagonals(eng.buf.sdiag[:n], eng.ck.params)
    assert not np.array_equal(engine_of(old).buf.sdiag[:n], eng.buf.sdiag[:n])
    back = pickle.loads(pickle.dumps(old))
    assert np.array_equal(back.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("budget", [None, 40])
def test_diagonals_are_held_kernel_by_kernel_and_saved_row_by_row(budget):
    """The buffer holds the stored diagonals as ``sdiag_t[F, cap]`` (contiguous per kernel, which the
    kernel pass reads a block at a time); the state, files and pickles keep the row-major
    ``(cap, F)`` layout of earlier versions, so their files load, and a state restored from it
    predicts bit for bit as the model it came from (growth and eviction keep the two in step)."""
    from onlinemkl._core import kernels as ck

    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.7)
    clf = SkOBSCURE(budget=budget, random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    eng = engine_of(clf)
    b, n, F = eng.buf, eng.n_support, eng.ck.n_kernels
    assert n > 20 and b.sdiag_t.shape == (F, b.capacity) and b.sdiag_t.flags.c_contiguous
    assert b.sdiag.shape == (b.capacity, F) and np.shares_memory(b.sdiag, b.sdiag_t)
    rows = np.empty((n, F))
    for i in range(n):  # the stored form of each stored row's diagonals, row by row
        ck.prepare_query(b.S[i, :eng.n_features].copy(), eng.ck.spec(), np.empty(eng.ck.n_groups), rows[i])
    np.testing.assert_array_equal(b.sdiag_t[:, :n].T, rows)
    params, arrays = eng.get_state()
    assert arrays["buf.sdiag"].shape == (b.capacity, F)
    np.testing.assert_array_equal(arrays["buf.sdiag"][:n], rows)
    back = copy.deepcopy(clf)
    engine_of(back).set_state(params, {k: np.array(v) for k, v in arrays.items()})
    assert engine_of(back).buf.sdiag_t.shape == (F, b.capacity)
    assert np.array_equal(back.decision_function(X), clf.decision_function(X))
