"""The JSON-lines server, driven over real loopback sockets (in-process, and one real subprocess)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from river import preprocessing

from onlinemkl.persist import load, save
from onlinemkl.river import OBSCUREClassifier
from onlinemkl.serve import ModelServer

from test_persist import assert_same_state, stream


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=40, switch_after=100)
    for x, y in stream(150, seed=11):
        pipe.learn_one(x, y)
    return save(pipe, tmp_path_factory.mktemp("serve") / "model.omkl")


@pytest.fixture
def server(model_file):
    servers = []

    def make(check_features=False, **kw):
        s = ModelServer(load(model_file), port=0, log=None, **kw)
        if not check_features:  # these tests send partial examples on purpose
            s.feature_check = None
        s.start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.shutdown(timeout=5)


class Client:
    def __init__(self, address, timeout=10.0):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.rfile = self.sock.makefile("rb")

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def recv(self):
        line = self.rfile.readline()
        return json.loads(line) if line else None

    def ask(self, obj):
        self.send_raw((obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n")
        return self.recv()

    def close(self):
        self.rfile.close()
        self.sock.close()


def test_predictions_match_the_same_model_in_process(server, model_file):
    srv = server()
    ref = load(model_file)
    c = Client(srv.address)
    for x, _ in stream(40, seed=12):
        r = c.ask({"x": x, "proba": True, "id": "q"})
        assert r["prediction"] == ref.predict_one(x)
        proba = ref.predict_proba_one(x)
        assert r["classes"] == list(proba) and r["proba"] == list(proba.values())  # bit for bit via JSON
        assert r["id"] == "q"
    c.close()


def test_learning_over_the_socket_equals_learning_in_process(server, model_file):
    srv = server()
    ref = load(model_file)
    c = Client(srv.address)
    for x, y in stream(80, seed=13):
        r = c.ask({"x": x, "y": y})
        assert r == {"prediction": ref.predict_one(x), "learned": True}
        ref.learn_one(x, y)
    c.close()
    with srv.lock:
        assert_same_state(srv.model, ref)


def test_concurrent_clients_see_serialised_updates(server, model_file):
    srv = server()
    order = []  # every model call, in the order the server made them (under its lock)

    def recording(name):
        method = getattr(srv.model, name)

        def call(*args):
            order.append((name, args))
            return method(*args)

        return call

    for name in ("learn_one", "predict_one", "predict_proba_one"):
        setattr(srv.model, name, recording(name))
    data = list(stream(240, seed=14))
    errors = []

    def client(part):
        try:
            c = Client(srv.address)
            for i, (x, y) in enumerate(part):
                r = c.ask({"x": x, "y": y} if i % 2 == 0 else {"x": x, "proba": True})
                assert "error" not in r and "prediction" in r
            c.close()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(data[k::6],)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sum(name == "learn_one" for name, _ in order) == 120 == srv.n_learned
    for name in ("learn_one", "predict_one", "predict_proba_one"):
        delattr(srv.model, name)
    ref = load(model_file)
    for name, args in order:  # the same calls in the same order, in process
        getattr(ref, name)(*args)
    assert_same_state(srv.model, ref)


BAD_LINES = [
    ("not json", "malformed JSON"),
    ("[1, 2]", "a request is a JSON object"),
    ('{"y": "a"}', '"x" must be a JSON object'),
    ('{"x": {"f0": "high"}}', "not a finite number"),
    ('{"x": {"f0": NaN}}', "not a finite number"),
    ('{"x": {"f0": 1}, "y": null}', "a label is a JSON string, number or boolean"),
    ('{"x": {"f0": 1}, "y": [1]}', "a label is a JSON string, number or boolean"),
    ('{"x": {"f0": 1}, "proba": "yes"}', '"proba" must be true or false'),
    ('{"x": {"f0": 1}, "why": 1}', "unknown keys"),
]


def test_malformed_lines_get_errors_and_change_nothing(server, model_file):
    srv = server()
    ref = load(model_file)
    c = Client(srv.address)
    for i, (line, msg) in enumerate(BAD_LINES, start=1):
        r = c.ask(line)
        assert msg in r["error"] and r["line"] == i
    c.send_raw(b"\xff\xfe{\n")
    assert "not UTF-8" in c.recv()["error"]
    x, _ = next(stream(1, seed=15))
    assert c.ask({"x": x})["prediction"] == ref.predict_one(x)  # the connection still works
    with srv.lock:
        assert_same_state(srv.model, ref)
    assert srv.n_errors == len(BAD_LINES) + 1
    c.close()


def test_a_label_the_learner_rejects_leaves_the_scaler_unchanged(tmp_path):
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(loss="hinge", budget=20)
    for x, y in stream(30, seed=16, labels=(True, False)):
        pipe.learn_one(x, y)
    path = save(pipe, tmp_path / "bin.omkl")
    srv = ModelServer(load(path), port=0, log=None)
    srv.feature_check = None  # the line reaches the learner, past the scaler
    srv.start()
    try:
        c = Client(srv.address)
        r = c.ask({"x": {"f0": 100.0, "new": 3.0}, "y": "cat"})
        assert "binary classifier" in r["error"]
        assert c.ask({"x": {"f0": 1.0}, "y": True})["learned"] is True
        c.close()
        ref = load(path)
        ref.learn_one({"f0": 1.0}, True)  # the server's predictions leave no 0-entries in the scaler
        with srv.lock:
            assert_same_state(srv.model, ref)
    finally:
        srv.shutdown(timeout=5)


def test_over_long_lines_are_skipped_and_the_connection_survives(server, model_file):
    srv = server(max_line_bytes=200)
    ref = load(model_file)
    c = Client(srv.address)
    long = json.dumps({"x": {f"f{i}": 1.0 for i in range(100)}})
    r = c.ask(long)
    assert "longer than 200 bytes" in r["error"] and r["line"] == 1
    # An over-long line arriving in pieces, the newline much later.
    c.send_raw(b'{"x": {' + b" " * 300)
    time.sleep(0.2)
    c.send_raw(b" " * 5000)
    time.sleep(0.2)
    c.send_raw(b'"f0": 1}}\n')
    r = c.recv()
    assert "longer than 200 bytes" in r["error"] and r["line"] == 2
    x = {"f0": 0.5}
    assert c.ask({"x": x}) == {"prediction": ref.predict_one(x)}
    c.close()


def test_client_disconnecting_mid_line(server, model_file):
    srv = server()
    ref = load(model_file)
    c = Client(srv.address)
    c.send_raw(b'{"x": {"f0": 1.0}, "y": "a"')  # no newline: never a complete request
    c.close()
    time.sleep(0.3)
    c2 = Client(srv.address)
    x = {"f0": 1.0}
    assert c2.ask({"x": x}) == {"prediction": ref.predict_one(x)}
    c2.close()
    with srv.lock:
        assert_same_state(srv.model, ref)
    assert srv.n_learned == 0


def test_token_is_required_on_connect(server):
    srv = server(token="s3cret")
    c = Client(srv.address)
    assert "authentication failed" in c.ask({"x": {"f0": 1.0}})["error"]
    assert c.recv() is None  # closed
    c = Client(srv.address)
    assert "authentication failed" in c.ask({"token": "wrong"})["error"]
    assert c.recv() is None
    c = Client(srv.address)
    assert c.ask({"token": "s3cret"}) == {"ok": True}
    assert "prediction" in c.ask({"x": {"f0": 1.0}})
    c.close()


def test_max_clients_and_idle_timeout(server):
    srv = server(max_clients=2, idle_timeout=0.6)
    a, b = Client(srv.address), Client(srv.address)
    assert "prediction" in a.ask({"x": {"f0": 1.0}})
    assert "prediction" in b.ask({"x": {"f0": 1.0}})
    c = Client(srv.address)
    assert "server busy" in c.recv()["error"]
    assert c.recv() is None
    t0 = time.monotonic()
    assert "idle" in a.recv()["error"]  # a and b are idle: closed after ~0.6 s
    assert a.recv() is None and time.monotonic() - t0 < 5
    for cl in (a, b, c):
        cl.close()
    time.sleep(0.3)
    d = Client(srv.address)  # the slots are free again
    assert "prediction" in d.ask({"x": {"f0": 1.0}})
    d.close()


def test_checkpoints_and_final_save(model_file, tmp_path):
    out = tmp_path / "served.omkl"
    srv = ModelServer(load(model_file), port=0, log=None, save_path=out, checkpoint_every=10).start()
    ref = load(model_file)
    c = Client(srv.address)
    data = list(stream(25, seed=17))
    for x, y in data[:10]:
        c.ask({"x": x, "y": y})
        ref.learn_one(x, y)
    assert_same_state(load(out), ref)  # the checkpoint after 10 examples
    for x, y in data[10:]:
        c.ask({"x": x, "y": y})
        ref.learn_one(x, y)
    srv.shutdown(timeout=5)
    c.close()
    assert_same_state(load(out), ref)


def test_numbered_features_from_json_keys(tmp_path):
    """A model trained on numbered features (LIBSVM) is queried with JSON's string keys."""
    model = OBSCUREClassifier(budget=20)
    for x, y in stream(60, seed=19):
        model.learn_one({i: v for i, v in enumerate(x.values())}, y)
    srv = ModelServer(load(model.save(tmp_path / "num.omkl")), port=0, log=None).start()
    try:
        c = Client(srv.address)
        r = c.ask({"x": {"0": 1.0, "1": -0.5, "2": 2.0}, "proba": True})
        proba = model.predict_proba_one({0: 1.0, 1: -0.5, 2: 2.0})
        assert r["proba"] == list(proba.values()) and len(set(r["proba"])) > 1
        c.close()
    finally:
        srv.shutdown(timeout=5)


def test_server_rejects_bad_limits():
    with pytest.raises(ValueError, match="max_clients"):
        ModelServer(OBSCUREClassifier(), port=0, max_clients=0, log=None)
    with pytest.raises(ValueError, match="idle_timeout"):
        ModelServer(OBSCUREClassifier(), port=0, idle_timeout=0, log=None)


def test_serve_command_stops_cleanly_on_sigterm(model_file, tmp_path):
    out = tmp_path / "final.omkl"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "onlinemkl.cli", "serve", "--model", str(model_file), "--port", "0",
         "--save", str(out), "--token", "tok"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        first = json.loads(proc.stdout.readline())
        assert first["host"] == "127.0.0.1"
        address = ("127.0.0.1", first["port"])
        ref = load(model_file)
        c = Client(address)
        assert c.ask({"token": "tok"}) == {"ok": True}
        for x, y in stream(30, seed=18):
            r = c.ask({"x": x, "y": y, "proba": True})
            assert r["prediction"] == ref.predict_one(x) and r["proba"] == list(ref.predict_proba_one(x).values())
            ref.learn_one(x, y)
        idle = Client(address)  # a second client, connected and silent, must not block the shutdown
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert c.recv() is None  # the server closed the connection
        c.close()
        idle.close()
        assert_same_state(load(out), ref)
        assert "30 learnt" in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- what a labelled line may teach -----------------------------------------------------------------


def test_a_labelled_line_gets_the_feature_check_of_a_prediction(server, model_file):
    """The README's example line, sent to a model that knows other features, is refused, not learnt."""
    srv = server(check_features=True)
    ref = load(model_file)
    c = Client(srv.address)
    r = c.ask({"x": {"f1": 0.1}, "y": "spam"})
    assert "unknown feature" not in r["error"]  # f1 is known here: the missing ones are named
    assert "missing features 'f0', 'f3'" in r["error"] and "not learnt" in r["error"]
    assert "--allow-feature-mismatch" in r["error"] and r["line"] == 1
    r = c.ask({"x": {"f0": 0.1, "f1": 0.2, "f3": 0.3, "colour": 1.0}, "y": "spam"})
    assert "unknown feature 'colour'" in r["error"] and "not learnt" in r["error"]
    x, y = next(stream(1, seed=20))
    assert c.ask({"x": x, "y": y})["learned"] is True  # the model's own features are learnt
    ref.learn_one(x, y)
    c.close()
    with srv.lock:
        assert_same_state(srv.model, ref)  # nothing of the refused lines: no class 'spam', no 'colour'
        assert srv.model["OBSCUREClassifier"]._labels.labels == ref["OBSCUREClassifier"]._labels.labels
    assert srv.n_learned == 1


def test_allowing_a_feature_mismatch_learns_the_line(server, model_file):
    srv = server(check_features=True)
    srv.feature_check = None  # what --allow-feature-mismatch sets
    c = Client(srv.address)
    assert c.ask({"x": {"f1": 0.1}, "y": "spam"})["learned"] is True
    c.close()
    with srv.lock:
        assert "spam" in srv.model["OBSCUREClassifier"]._labels.labels


@pytest.fixture(scope="module")
def text_label_model(tmp_path_factory):
    """A model whose classes are the text '0', '1', '2', as a CSV file's label column gives them."""
    import io

    from streams import read_csv

    lines = ["f0,f1,f2,f3,label"] + [",".join(f"{v:.4f}" for v in x.values()) + f",{'abc'.index(y)}"
                                     for x, y in stream(90, seed=21, late_feature=False) if len(x) == 4]
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=30)
    for x, y in read_csv(io.StringIO("\n".join(lines))):
        pipe.learn_one(x, y)
    assert sorted(pipe["OBSCUREClassifier"]._labels.labels) == ["0", "1", "2"]
    return save(pipe, tmp_path_factory.mktemp("labels") / "text_labels.omkl")


@pytest.mark.parametrize("label", [1, 1.0, "1", "1.0", "+1", True])
def test_a_number_label_is_the_class_of_its_text(text_label_model, label):
    srv = ModelServer(load(text_label_model), port=0, log=None)
    ref = load(text_label_model)
    x = {"f0": 0.5, "f1": -0.2, "f2": 0.1, "f3": 1.0}
    try:
        r = srv.handle_line(json.dumps({"x": x, "y": label, "proba": True}).encode())
        assert r["learned"] is True and sorted(r["classes"]) == ["0", "1", "2"]
        ref.learn_one(x, "1")  # the same step as the text label '1'
        assert_same_state(srv.model, ref)
    finally:
        srv.shutdown(timeout=5)


def test_a_label_of_a_kind_the_classes_lack_is_an_error_not_a_class(text_label_model, model_file):
    x = {"f0": 0.5, "f1": -0.2, "f2": 0.1, "f3": 1.0}
    srv = ModelServer(load(text_label_model), port=0, log=None)
    try:
        for label in (5, 2.5, -1):  # numbers matching none of the text classes
            r = srv.handle_line(json.dumps({"x": x, "y": label}).encode())
            assert f"label {label!r} is a number, but this model's classes are text" in r["error"]
            assert f'the new class as text ("{label}")' in r["error"]
        ref = load(text_label_model)
        ref.predict_one(x)  # the server predicted before the learner refused the label
        assert_same_state(srv.model, ref)
        assert srv.handle_line(json.dumps({"x": x, "y": "5"}).encode())["learned"]  # text: a new class
        assert srv.handle_line(json.dumps({"x": x, "y": "spam"}).encode())["learned"]
        assert srv.model["OBSCUREClassifier"]._labels.labels[3:] == ["5", "spam"]
    finally:
        srv.shutdown(timeout=5)
    numbers = OBSCUREClassifier(budget=20)
    for x, y in stream(30, seed=22, labels=(0, 1, 2)):
        numbers.learn_one(x, y)
    srv = ModelServer(numbers, port=0, log=None)
    srv.feature_check = None
    try:
        r = srv.handle_line(b'{"x": {"f0": 1.0}, "y": "spam"}')
        assert "label 'spam' is text, but this model's classes are numbers (" in r["error"]
        assert srv.handle_line(b'{"x": {"f0": 1.0}, "y": "3"}')["learned"]  # the text of a number: a number
        assert sorted(numbers._labels.labels) == [0, 1, 2, 3]
    finally:
        srv.shutdown(timeout=5)


def test_error_replies_carry_the_request_id_and_a_regressor_pipeline_has_no_proba():
    from onlinemkl.river import ProximalMKLRegressor

    srv = ModelServer(preprocessing.StandardScaler() | ProximalMKLRegressor(budget=10), port=0, log=None)
    try:
        r = srv.handle_line(b'{"x": {"a": 1.0}, "proba": true, "id": "q1"}')
        assert r == {"error": '"proba": this model is a regressor and has no class probabilities', "id": "q1"}
        r = srv.handle_line(b'{"x": {"a": 1.0}, "y": "spam", "id": 7}')
        assert "regression target must be a finite number" in r["error"] and r["id"] == 7
        assert "id" not in srv.handle_line(b'{"x": {"a": "high"}, "id": 8}')  # not a valid request: no id read
        assert srv.handle_line(b'{"x": {"a": 1.0}, "y": 2.5, "id": 9}') == {"prediction": 0.0, "learned": True,
                                                                             "id": 9}
    finally:
        srv.shutdown(timeout=5)
