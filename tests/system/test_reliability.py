"""Abuse: one model shared by threads, extreme values, endless new features, NaN labels (docs/reliability.md).

A crash runs in a subprocess (the test sees its exit code, not a dead pytest); memory is read
with ``resource``; every loop is bounded.
"""

import math
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_script(code: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter over this checkout (foreground compilation, the suite's cache)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               ONLINEMKL_BACKGROUND_COMPILE="0")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


# ----------------------------------------------------------------------------------------
# 1. Shared models

THREADS = """
import pickle, random, sys, threading
import numpy as np

errors = []

def hammer(model, make_row, n_threads=4, n_rows=600, pickler=True):
    # threads learn and predict on one model (new features and labels keep appearing), one more pickles it
    def work(seed):
        rnd = random.Random(seed)
        try:
            for i in range(n_rows):
                make_row(model, rnd, i)
        except BaseException as exc:
            errors.append(repr(exc))

    def snap():
        try:
            for _ in range(20):
                copy = pickle.loads(pickle.dumps(model))
                state = copy._get_state()
        except BaseException as exc:
            errors.append("pickle: " + repr(exc))

    ts = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
    if pickler:
        ts.append(threading.Thread(target=snap))
    for t in ts:
        t.start()
    for t in ts:
        t.join()

def river_row(classify):
    def row(m, rnd, i):
        x = {f"f{rnd.randrange(30 + i // 20)}": rnd.gauss(0, 1) for _ in range(6)}
        y = rnd.choice("abcde"[: 2 + i % 4]) if classify else rnd.random()
        m.learn_one(x, y)
        m.predict_one(x)
    return row

from onlinemkl.river import (OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor, PolyMKLRegressor,
                             NonlinearKRRRegressor)
hammer(OBSCUREClassifier(budget=60), river_row(True))
hammer(ProximalMKLClassifier(budget=60), river_row(True))
hammer(ProximalMKLRegressor(budget=60), river_row(False))
hammer(PolyMKLRegressor(batch_size=16, n_iter=5, budget=40), river_row(False), n_rows=200)
hammer(NonlinearKRRRegressor(batch_size=16, budget=40), river_row(False), n_rows=200)

from onlinemkl import ProximalMKLClassifier as ArrayProximal, OBSCUREClassifier as ArrayObscure
def array_row(m, rnd, i):
    X = np.array([[rnd.gauss(0, 1) for _ in range(5)] for _ in range(4)])
    m.partial_fit(X, np.array([0, 1, 2, 1]), classes=[0, 1, 2])
    m.predict(X)
for make in (lambda: ArrayProximal(budget=50), lambda: ArrayObscure(budget=50)):
    m = make()
    m.partial_fit(np.zeros((3, 5)), np.array([0, 1, 2]), classes=[0, 1, 2])
    hammer(m, array_row, n_rows=150)

from onlinemkl import SequenceMKLLabeler
def seq_row(m, rnd, i):
    xs = [{f"w{rnd.randrange(20 + i)}": 1.0, "b": rnd.random()} for _ in range(4)]
    m.learn_one(xs, [rnd.choice("xyz") for _ in range(4)])
    m.predict_one(xs)
hammer(SequenceMKLLabeler(budget=40), seq_row, n_rows=150)

print("\\n".join(errors[:5]))
print(f"{len(errors)} errors in the threads of 8 models")
sys.exit(1 if errors else 0)
"""


def test_a_model_shared_by_threads_neither_crashes_nor_tears():
    """Four threads learning and predicting on one model, a fifth pickling it: every public model
    comes through with no crash (without the model's lock: SIGABRT/SIGSEGV) and no exception in any thread."""
    out = run_script(THREADS)
    assert out.returncode == 0, (out.returncode, out.stdout[-2000:], out.stderr[-2000:])


def test_the_lock_is_neither_a_parameter_nor_pickled():
    from sklearn.base import clone

    from onlinemkl import ProximalMKLClassifier as ArrayProximal
    from onlinemkl.river import OBSCUREClassifier

    m = OBSCUREClassifier(budget=20)
    m.learn_one({"a": 1.0}, "x")
    assert "_model_lock" in vars(m)
    assert "_model_lock" not in pickle.loads(pickle.dumps(m)).__dict__
    assert m.clone()._get_params() == m._get_params()
    est = ArrayProximal(budget=10).fit(np.eye(4), [0, 1, 0, 1])
    assert "_model_lock" not in vars(clone(est))
    assert "_model_lock" not in est.get_params()
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(np.eye(4)), est.predict(np.eye(4)))


# ----------------------------------------------------------------------------------------
# 2. Extreme values


def gauss_stream(n, seed=0, d=4):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        v = rng.normal(size=d)
        yield {f"f{j}": float(v[j]) for j in range(d)}, "a" if v[0] + v[1] > 0 else "b"


@pytest.mark.parametrize("big", [1e155, -1e200, pytest.param(10**400, id="int_10e400"), 2e50, 1e100])
def test_an_overflowing_value_is_rejected_by_the_adapter_and_the_stream_goes_on(big):
    from onlinemkl.river import OBSCUREClassifier

    from test_persist import assert_same_state

    m = OBSCUREClassifier(budget=30)
    for x, y in gauss_stream(50):
        m.learn_one(x, y)
    before = pickle.loads(pickle.dumps(m))
    with pytest.raises(ValueError, match=r"feature 'f2' = .* too large.*1e50"):
        m.learn_one({"f0": 0.1, "f2": big, "new": 1.0}, "c")
    assert_same_state(m, before)  # no column, no label, no stored example
    for x, y in gauss_stream(30, seed=1):
        m.learn_one(x, y)
        assert all(math.isfinite(p) for p in m.predict_proba_one(x).values())


def test_the_bound_is_checked_on_every_input_path():
    from onlinemkl import ProximalMKLRegressor
    from onlinemkl.river import PolyMKLRegressor, ProximalMKLRegressor as RiverRegressor

    X = np.ones((4, 3))
    X[2, 1] = 1e160
    with pytest.raises(ValueError, match=r"X\[2, 1\] = 1e\+160 is too large"):
        ProximalMKLRegressor().fit(X, np.ones(4))
    with pytest.raises(ValueError, match=r"y\[3\] = 1e\+200 is too large"):
        ProximalMKLRegressor().fit(np.ones((4, 3)), [1.0, 2.0, 3.0, 1e200])
    with pytest.raises(ValueError, match="too large"):
        RiverRegressor().learn_one({"a": 1.0}, 1e200)
    import pandas as pd

    with pytest.raises(ValueError, match=r"feature 'b' = 1e\+155 \(row 1\) is too large"):
        PolyMKLRegressor().learn_many(pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 1e155]}), pd.Series([1.0, 2.0]))
    # the bound itself is a value like any other
    RiverRegressor().learn_one({"a": 1e50, "b": -1e50}, 1e50)


def test_the_default_pipeline_survives_an_overflowing_value_over_the_server(tmp_path):
    """Checked before the pipeline: a scaler that learnt the value would hold an inf, then NaN, running
    variance, and every later request would fail."""
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier
    from onlinemkl.serve import ModelServer

    from test_serve import Client

    srv = ModelServer(preprocessing.StandardScaler() | OBSCUREClassifier(budget=40), port=0, log=None).start()
    try:
        c = Client(srv.address)
        data = list(gauss_stream(60, seed=3))
        for x, y in data[:30]:
            assert c.ask({"x": x, "y": y}).get("learned")
        r = c.ask({"x": {**data[30][0], "f1": 1e155}, "y": "a"})
        assert "error" in r and "'f1'" in r["error"] and "too large" in r["error"]
        r = c.ask({"x": {"f1": 10**400}, "y": "a"})
        assert "error" in r and "too large" in r["error"]
        for x, y in data[31:]:
            r = c.ask({"x": x, "y": y})
            assert r.get("learned"), r
        c.close()
        scaler = srv.model["StandardScaler"]
        assert all(math.isfinite(v) and v < 100 for v in scaler.vars.values())
    finally:
        srv.shutdown(timeout=5)


def test_the_command_line_skips_an_overflowing_value_and_goes_on(tmp_path, capsys):
    from onlinemkl import cli
    from onlinemkl.persist import load

    f = tmp_path / "big.csv"
    rows = ["f0,f1,label"] + [f"{a:.3f},{b:.3f},{'a' if a + b > 0 else 'b'}"
                              for a, b in np.random.default_rng(0).normal(size=(40, 2))]
    rows.insert(11, "1e155,0.5,a")
    f.write_text("\n".join(rows) + "\n")
    out = tmp_path / "m.omkl"
    code = cli.main(["train", str(f), "--on-error", "skip", "--save", str(out)])
    _, err = capsys.readouterr()
    assert code == 0 and "1 example the learner rejected" in err
    code = cli.main(["train", str(f)])
    _, err = capsys.readouterr()
    assert code == 2 and "'f0'" in err and "too large" in err
    scaler = load(out)["StandardScaler"]
    assert all(math.isfinite(v) and v < 100 for v in scaler.vars.values())
    assert scaler.counts["f0"] == 40


# ----------------------------------------------------------------------------------------
# 6. Labels


@pytest.mark.parametrize("make", ["OBSCUREClassifier", "ProximalMKLClassifier"])
def test_a_nan_label_is_rejected_and_changes_nothing(make):
    import onlinemkl.river as omr

    from test_persist import assert_same_state

    m = getattr(omr, make)(budget=20)
    for x, y in gauss_stream(20):
        m.learn_one(x, y)
    before = pickle.loads(pickle.dumps(m))
    for nan in (float("nan"), np.float64("nan"), np.nan):
        with pytest.raises(ValueError, match=r"label .*nan.* is NaN"):
            m.learn_one({"f0": 1.0, "brand_new": 2.0}, nan)
    assert_same_state(m, before)
    assert len(m._labels) == 2


def test_labels_compare_by_their_canonical_form():
    from test_persist import assert_same_state

    from onlinemkl.features import label_key
    from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier

    m = OBSCUREClassifier()
    for y in (True, 1, 1.0, np.int64(1), "1", "1.0", " +1 ", 0, "0"):
        m.learn_one({"a": float(label_key(y) == 1)}, y)
    assert m._labels.labels == [True, 0]  # one label each, named by the first form seen
    text = ProximalMKLClassifier()
    for y in ("0", "1", "01"):  # a CSV file's labels: text
        text.learn_one({"a": 1.0}, y)
    before = pickle.loads(pickle.dumps(text))
    with pytest.raises(ValueError, match=r"label 7 is a number, but this model's classes are text"):
        text.learn_one({"a": 1.0, "new": 2.0}, 7)
    assert_same_state(text, before)
    import pandas as pd

    with pytest.raises(ValueError, match="is a number"):  # a batch: checked before the first row is learnt
        text.learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series(["new", 8], dtype=object))
    assert_same_state(text, before)
    text.learn_one({"a": 1.0}, 1)
    assert text._labels.labels == ["0", "1", "01"]


# ----------------------------------------------------------------------------------------
# 3. New features without end

ENDLESS = """
import random, resource, sys, time
from onlinemkl.river import OBSCUREClassifier
kind = sys.argv[1]
try:
    m = OBSCUREClassifier(budget=100, **({"max_features": 50} if kind == "cap" else {"feature_hashing": 64}))
except TypeError:  # a library without the cap: the same stream, to show what it costs
    m = OBSCUREClassifier(budget=100)
rnd = random.Random(0)
def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0, rejected, peak0 = time.monotonic(), 0, None
for i in range(50_000):
    if i == 10_000:
        peak0 = rss_mib()
    x = {"a": rnd.random(), "b": rnd.random(), f"id{rnd.getrandbits(40)}": 1.0}
    try:
        m.learn_one(x, i % 3)
    except ValueError:
        rejected += 1
    if time.monotonic() - t0 > 120:
        print(f"too slow: {i} rows in 120 s"); sys.exit(3)
print(peak0, rss_mib(), rejected, len(m._features))
"""


@pytest.mark.parametrize("kind", ["cap", "hashing"])
def test_memory_is_flat_over_5e4_rows_of_random_feature_names(kind):
    """If every row's new name widened every stored example, memory and time per row would grow
    without bound."""
    out = run_script(ENDLESS.replace("sys.argv[1]", repr(kind)))
    assert out.returncode == 0, (out.returncode, out.stdout[-1000:], out.stderr[-2000:])
    peak_10k, peak_50k, rejected, n_features = out.stdout.split()
    assert float(peak_50k) - float(peak_10k) < 16.0  # MiB, over the last 40 000 rows
    if kind == "cap":
        assert int(n_features) == 50 and int(rejected) == 50_000 - 48  # 'a', 'b' + 48 ids fit
    else:
        assert int(n_features) == 64 and int(rejected) == 0


def test_past_the_cap_the_row_is_rejected_listing_the_new_names_and_nothing_changes():
    from onlinemkl.river import OBSCUREClassifier, PolyMKLRegressor, ProximalMKLRegressor

    from test_persist import assert_same_state

    for m, y in ((OBSCUREClassifier(max_features=4), "a"), (ProximalMKLRegressor(max_features=4), 1.0),
                 (PolyMKLRegressor(max_features=4, batch_size=2), 1.0)):
        m.learn_one({"a": 1.0, "b": 2.0, "c": 0.5}, y)
        before = pickle.loads(pickle.dumps(m))
        with pytest.raises(ValueError, match=r"2 new feature name\(s\) \('d', 'e'\) would take the model past "
                                             r"max_features=4 \(3 features known\)"):
            m.learn_one({"a": 1.0, "d": 1.0, "e": 1.0}, y)
        assert_same_state(m, before)
        m.learn_one({"a": 1.0, "d": 1.0}, y)  # one more fits
        assert len(m._features) == 4
    with pytest.raises(ValueError, match="max_features=0: must be >= 1"):
        OBSCUREClassifier(max_features=0)
    with pytest.raises(ValueError, match="feature_hashing=-2: must be >= 1"):
        ProximalMKLRegressor(feature_hashing=-2)


def test_a_hashed_model_saves_and_loads_bit_for_bit(tmp_path):
    import onlinemkl
    from onlinemkl.river import ProximalMKLClassifier

    m = ProximalMKLClassifier(budget=40, feature_hashing=32)
    rng = np.random.default_rng(0)
    for i in range(200):
        m.learn_one({f"w{int(rng.integers(1000))}": 1.0, "x": float(rng.normal())}, "ab"[i % 2])
    again = onlinemkl.load(m.save(tmp_path / "h.omkl"))
    assert again.feature_hashing == 32 and len(again._features) == 32
    for i in range(20):
        x = {f"w{i * 37}": 1.0, "x": i / 10}
        assert again.predict_proba_one(x) == m.predict_proba_one(x)


def test_the_server_enforces_the_cap_before_the_scaler_and_predictions_leave_no_trace():
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier
    from onlinemkl.serve import ModelServer

    from test_serve import Client

    try:
        learner = OBSCUREClassifier(budget=40, max_features=30)
    except TypeError:  # a learner without max_features
        learner = OBSCUREClassifier(budget=40)
    srv = ModelServer(preprocessing.StandardScaler() | learner, port=0, log=None)
    srv.feature_check = None  # as --allow-feature-mismatch: predictions on names the model has never seen
    srv.start()
    try:
        c = Client(srv.address)
        rng = np.random.default_rng(0)
        errors = 0
        for i in range(300):
            x = {"a": float(rng.normal()), f"id{i}": 1.0}
            r = c.ask({"x": x, "y": "ab"[i % 2]})
            if "error" in r:
                errors += 1
                assert "max_features=30" in r["error"] and f"'id{i}'" in r["error"]
            r = c.ask({"x": {"a": 0.5, f"other{i}": 1.0, f"more{i}": 2.0}})  # prediction only
            assert "prediction" in r
        c.close()
        assert errors == 300 - 29
        scaler = srv.model["StandardScaler"]
        assert len(scaler.counts) == len(scaler.means) == len(scaler.vars) == 30
    finally:
        srv.shutdown(timeout=5)


def test_the_sequence_labeller_caps_its_dict_features_all_positions_at_once():
    from onlinemkl import SequenceMKLLabeler

    m = SequenceMKLLabeler(max_features=3, budget=10)
    m.learn_one([{"a": 1.0}, {"b": 1.0}], ["x", "y"])
    with pytest.raises(ValueError, match=r"2 new feature name\(s\) \('c', 'd'\) would take the model past "
                                         r"max_features=3"):
        m.learn_one([{"a": 1.0, "c": 1.0}, {"d": 1.0}], ["x", "y"])
    assert m._features.names == ["a", "b"]  # the first position's 'c' was not recorded either


def test_a_server_learn_does_not_copy_the_whole_scaler(monkeypatch):
    """Undoing a rejected example restores only its names' scaler entries: a deep copy
    of the scaler per learn request would cost time in proportion to the names met, under the server's lock."""
    import copy

    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier
    from onlinemkl.serve import ModelServer

    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=20, loss="hinge")
    pipe["StandardScaler"].learn_one({f"id{j}": 1.0 for j in range(1000)})
    srv = ModelServer(pipe, port=0, log=None)
    srv.feature_check = None  # as --allow-feature-mismatch: the new name reaches the scaler
    try:
        calls = []
        real = copy.deepcopy
        monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: calls.append(1) or real(*a, **k))
        assert srv.handle_line(b'{"x": {"a": 0.5}, "y": true}')["learned"]
        r = srv.handle_line(b'{"x": {"a": 0.1, "new": 2.0}, "y": "cat"}')  # rejected by the binary learner
        assert "binary classifier" in r["error"]
    finally:
        srv._sock.close()
    assert calls == []
    assert "new" not in pipe["StandardScaler"].counts and pipe["StandardScaler"].counts["a"] == 1
