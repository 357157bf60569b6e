"""The onlinemkl command: every command in process, plus real processes for SIGKILL/SIGTERM crash safety."""

import argparse
import inspect
import io
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from river import metrics, preprocessing

import streams
from onlinemkl import cli
from onlinemkl.persist import load, load_with_meta
from onlinemkl.river import OBSCUREClassifier

from test_persist import assert_same_state


def write_csv(path, n, seed=0, header=True, label=True):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 4)) * 2.0
    with open(path, "w") as fh:
        if header:
            fh.write("id,f0,f1,f2,f3" + (",label" if label else "") + "\n")
        for i in range(n):
            k = int(rng.integers(3))
            v = centers[k] + rng.normal(size=4)
            fh.write(f"{i}," + ",".join(f"{a:.6f}" for a in v) + (f",c{k}" if label else "") + "\n")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    return {"dir": d, "csv": write_csv(d / "data.csv", 600), "csv2": write_csv(d / "more.csv", 200, seed=1)}


def reference(path, budget=40, start=None, **params):
    """The model `train` should build, trained in process from the same reader."""
    model = start or (preprocessing.StandardScaler() | OBSCUREClassifier(budget=budget, **params))
    for x, y in streams.read_csv(str(path), "label", drop=["id"]):
        model.learn_one(x, y)
    return model


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- help and parsing ---------------------------------------------------------------------


def test_every_option_of_every_command_states_its_default():
    parser = cli.build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) == {"demo", "train", "evaluate", "predict", "serve", "info", "warmup", "tune"}
    for name, sub in subs.choices.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = formatter._get_help_string(action) if action.option_strings else action.help
            assert text, (name, action.dest)
            if action.option_strings:
                assert "default" in text, (name, action.option_strings)
        sub.format_help()  # renders without errors


@pytest.mark.parametrize("command", ["", "demo", "train", "evaluate", "predict", "serve", "info", "warmup"])
def test_help_exits_zero(capsys, command):
    with pytest.raises(SystemExit) as exc:
        cli.main(([command] if command else []) + ["--help"])
    assert exc.value.code == 0
    assert "usage: onlinemkl" in capsys.readouterr().out


def test_learner_specs_list_exactly_the_constructor_parameters():
    for spec in cli.LEARNERS.values():
        sig = inspect.signature(spec.load().__init__)
        params = [p for p in sig.parameters if p not in ("self", "kernels")]
        assert list(spec.params) == params, spec.name


def test_learner_specs_show_the_constructor_defaults():
    """``--help``'s default of every parameter, parsed as ``--param`` parses it, is the class's
    own default (so a changed default cannot leave ``--help`` showing another)."""
    for spec in cli.LEARNERS.values():
        sig = inspect.signature(spec.load().__init__)
        for name, (default, _) in spec.params.items():
            assert cli.parse_params([f"{name}={default}"], spec)[name] == sig.parameters[name].default, \
                (spec.name, name, default)


def test_parse_values_params_and_kernels():
    spec = cli.LEARNERS["obscure"]
    assert cli.parse_params(["budget=5", "p=1.5", "switch_after=none", "pegasos=true"], spec) == {
        "budget": 5, "p": 1.5, "switch_after": None, "pegasos": True}
    for bad, msg in (("budget", "KEY=VALUE"), ("nope=1", "has no parameter 'nope'"), ("kernels=x", "--kernel")):
        with pytest.raises(cli.CommandError, match=msg):
            cli.parse_params([bad], spec)
    from onlinemkl.kernels import BSpline, Laplacian, Linear, Polynomial, RBF

    assert cli.parse_kernel("linear") == Linear()
    assert cli.parse_kernel("Gaussian:gamma_scale=2") == RBF(gamma_scale=2.0)
    assert cli.parse_kernel("laplacian:gamma=0.1,group=a|b") == Laplacian(gamma=0.1, group=("a", "b"))
    assert cli.parse_kernel("bspline:h=2") == BSpline(h=2.0)
    assert cli.parse_kernel("poly:degree=3,offset=0") == Polynomial(degree=3, offset=0.0)
    for bad, msg in (("cubic", "unknown kind"), ("rbf:gama=1", "not KEY=VALUE"), ("rbf:gamma=-1", "gamma"),
                     ("poly:degree=1.5", "degree")):
        with pytest.raises(cli.CommandError, match=msg):
            cli.parse_kernel(bad)


# -- train ----------------------------------------------------------------------------------


def test_train_csv_equals_training_in_process(capsys, data, tmp_path):
    out = tmp_path / "m.omkl"
    code, stdout, err = run(capsys, "train", data["csv"], "--target", "label", "--drop", "id",
                            "-p", "budget=40", "--save", out)
    assert code == 0, err
    assert "examples learnt  : 600" in stdout and "kernel weights" in stdout
    model, meta = load_with_meta(out)
    assert_same_state(model, reference(data["csv"]))
    assert meta["extra"]["train"] == {"examples_consumed": 600, "source": str(data["csv"]), "format": "csv",
                                      "target": "label", "complete": True}


def test_train_with_kernels_and_no_scaler(capsys, data, tmp_path):
    out = tmp_path / "k.omkl"
    code, _, err = run(capsys, "train", data["csv"], "--drop", "id", "--no-scale", "-k", "rbf:gamma=0.2",
                       "-k", "linear:group=f0|f1", "-p", "budget=30", "-p", "p=1.2", "--save", out)
    assert code == 0, err
    from onlinemkl.kernels import RBF, Linear

    ref = OBSCUREClassifier(kernels=(RBF(gamma=0.2), Linear(group=("f0", "f1"))), budget=30, p=1.2)
    for x, y in streams.read_csv(str(data["csv"]), drop=["id"]):  # the last column is the label
        ref.learn_one(x, y)
    assert_same_state(load(out), ref)


def test_train_from_standard_input(capsys, data, tmp_path, monkeypatch):
    out = tmp_path / "stdin.omkl"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data["csv"].read_bytes())))
    code, _, err = run(capsys, "train", "-", "--format", "csv", "--drop", "id", "-p", "budget=40", "--save", out)
    assert code == 0, err
    assert_same_state(load(out), reference(data["csv"]))


def test_train_from_a_socket(capsys, tmp_path):
    rng = np.random.default_rng(3)
    lines = []
    for _ in range(300):
        x = {f"a{i}": float(v) for i, v in enumerate(rng.normal(size=3))}
        lines.append(json.dumps({"x": x, "y": "pos" if x["a0"] + x["a1"] > 0 else "neg"}))
    payload = ("\n".join(lines) + "\n").encode()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def sender():  # the data source: accepts the trainer's connection, sends the lines in pieces, closes
        conn, _ = listener.accept()
        for i in range(0, len(payload), 997):
            conn.sendall(payload[i:i + 997])
        conn.close()
        listener.close()

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    out = tmp_path / "tcp.omkl"
    code, stdout, err = run(capsys, "train", f"tcp://127.0.0.1:{port}", "--format", "jsonl", "-p", "budget=50",
                            "--task", "classification", "--save", out, "--timeout", "10")
    t.join(5)
    assert code == 0, err
    assert "examples learnt  : 300" in stdout
    ref = preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
    for line in lines:
        rec = json.loads(line)
        ref.learn_one(rec["x"], rec["y"])
    assert_same_state(load(out), ref)


def test_train_libsvm_with_numbered_kernel_groups(capsys, tmp_path):
    f = tmp_path / "d.svm"
    rng = np.random.default_rng(4)
    rows = []
    for _ in range(200):
        v = rng.normal(size=3)
        rows.append(f"{1 if v[0] + v[2] > 0 else -1} 1:{v[0]:.5f} 2:{v[1]:.5f}  3:{v[2]:.5f}")
    f.write_text("# a comment\n" + "\n".join(rows) + "\n")
    out = tmp_path / "svm.omkl"
    code, _, err = run(capsys, "train", f, "-k", "rbf:group=0|2", "-k", "linear", "-p", "budget=30", "--save", out)
    assert code == 0, err
    from onlinemkl.kernels import RBF, Linear

    ref = preprocessing.StandardScaler() | OBSCUREClassifier(kernels=(RBF(group=(0, 2)), Linear()), budget=30)
    for x, y in streams.read_libsvm(str(f)):
        ref.learn_one(x, y)
    assert_same_state(load(out), ref)
    code, _, err = run(capsys, "train", f, "-k", "rbf:group=a|b")
    assert code == 2 and "LIBSVM features are numbers" in err


def test_incremental_retraining_from_a_saved_model(capsys, data, tmp_path):
    first, second = tmp_path / "day1.omkl", tmp_path / "day2.omkl"
    assert run(capsys, "train", data["csv"], "--drop", "id", "-p", "budget=40", "--save", first)[0] == 0
    code, _, err = run(capsys, "train", data["csv2"], "--model", first, "--drop", "id", "--save", second)
    assert code == 0, err
    assert_same_state(load(second), reference(data["csv2"], start=reference(data["csv"])))
    code, _, err = run(capsys, "train", data["csv2"], "--model", first, "-p", "budget=3")
    assert code == 2 and "cannot be combined with --model" in err
    # Crash-safe retraining in place: --model M --save M --resume (M starts the run, then is its checkpoint).
    argv = ["train", data["csv2"], "--model", first, "--save", first, "--resume", "--checkpoint-every", "50",
            "--drop", "id"]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert_same_state(load(first), load(second))
    assert first.read_bytes() == second.read_bytes()  # metadata included: same source, same count
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "nothing to resume" in out
    # A checkpoint of another source is not resumed silently.
    code, _, err = run(capsys, "train", data["csv"], "--save", first, "--resume", "--drop", "id")
    assert code == 2 and "is a checkpoint of training on" in err and "--model" in err


def test_bad_lines_raise_skip_and_warn(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("f0,f1,label\n1,2,a\n1,oops,b\n3,4\n2,2,b\n1,1,a\n")
    code, out, err = run(capsys, "train", bad)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "bad.csv line 3" in err and "'oops' is not a number" in err
    code, out, err = run(capsys, "train", bad, "--on-error", "skip")
    assert code == 0 and "examples learnt  : 3" in out
    assert "2 bad lines skipped" in err and "lines 3, 4" in err
    code, out, err = run(capsys, "train", bad, "--on-error", "warn")
    assert code == 0 and "warning: " in err and "line 4: has 2 fields" in err and "Traceback" not in err


def test_rejected_examples_leave_the_model_unchanged(capsys, tmp_path):
    f = tmp_path / "labels.csv"
    f.write_text("f0,f1,label\n1,2,1\n0.5,2,0\n3,1,7\n2,2,1\n")  # 7 is not a binary label
    out = tmp_path / "bin.omkl"
    code, _, err = run(capsys, "train", f, "--target-type", "int", "-p", "loss=hinge")
    assert code == 2 and "example 3" in err and "binary classifier" in err
    code, stdout, err = run(capsys, "train", f, "--target-type", "int", "-p", "loss=hinge", "--on-error", "skip",
                            "--save", out)
    assert code == 0 and "examples learnt  : 3" in stdout and "1 example the learner rejected" in err
    ref = preprocessing.StandardScaler() | OBSCUREClassifier(loss="hinge")
    for x, y in [({"f0": 1.0, "f1": 2.0}, 1), ({"f0": 0.5, "f1": 2.0}, 0), ({"f0": 2.0, "f1": 2.0}, 1)]:
        ref.learn_one(x, y)
    assert_same_state(load(out), ref)  # the scaler did not keep the rejected example


@pytest.mark.parametrize("argv, msg", [
    (["train", "missing.csv"], "cannot open missing.csv"),
    (["train", "{csv}", "-p", "budget=0"], "budget=0: must be >= 1"),
    (["train", "{csv}", "-p", "colour=red"], "has no parameter 'colour'"),
    (["train", "{csv}", "-k", "rbf:gamma=x"], "gamma"),
    (["train", "-"], "pass --format"),
    (["train", "{csv}", "--resume"], "need --save"),
    (["train", "{csv}", "--drop", "nope"], "'nope' is not in the header"),
    (["train", "tcp://127.0.0.1:1", "--format", "csv", "--timeout", "2"], "tcp://127.0.0.1:1"),
    (["info", "{csv}"], "not an onlinemkl model file"),
    (["info", "missing.omkl"], "no such file"),
    (["predict", "{csv}", "{csv}"], "not an onlinemkl model file"),
    (["evaluate", "{csv}", "--every", "0"], "--every 0"),
    (["serve", "--checkpoint-every", "5"], "--save"),
])
def test_errors_are_one_line_and_a_non_zero_exit(capsys, data, argv, msg):
    code, out, err = run(capsys, *[a.replace("{csv}", str(data["csv"])) for a in argv])
    assert code == 2
    assert msg in err and err.count("\n") == 1 and err.startswith(f"onlinemkl {argv[0]}: error: ")


def test_corrupted_model_file_is_one_line(capsys, data, tmp_path):
    out = tmp_path / "m.omkl"
    assert run(capsys, "train", data["csv"], "--drop", "id", "-p", "budget=10", "--save", out)[0] == 0
    raw = bytearray(out.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    out.write_bytes(bytes(raw))
    code, _, err = run(capsys, "info", out)
    assert code == 2 and "m.omkl" in err and err.count("\n") == 1


# -- evaluate, predict, info ------------------------------------------------------------------


def test_evaluate_is_prequential_with_plot(capsys, data, tmp_path):
    png = tmp_path / "curve.png"
    code, out, err = run(capsys, "evaluate", data["csv"], "--drop", "id", "-p", "budget=40", "-m", "accuracy",
                         "-m", "log_loss", "--plot", png, "--every", "50", "--save", tmp_path / "ev.omkl")
    assert code == 0, err
    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=40)
    acc, ll = metrics.Accuracy(), metrics.CrossEntropy()
    for x, y in streams.read_csv(str(data["csv"]), "label", drop=["id"]):
        y_pred = model.predict_one(x)
        if y_pred is not None:  # river's progressive_val_score convention
            acc.update(y, y_pred)
            ll.update(y, model.predict_proba_one(x))
        model.learn_one(x, y)
    assert f"accuracy         : {acc.get():.4f}" in out
    assert f"log_loss         : {ll.get():.4f}" in out
    assert "examples/s" in out and "examples         : 600" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_same_state(load(tmp_path / "ev.omkl"), model)


def test_predict_matches_the_model(capsys, data, tmp_path):
    m = tmp_path / "m.omkl"
    assert run(capsys, "train", data["csv"], "--drop", "id", "-p", "budget=40", "--save", m)[0] == 0
    model = load(m)
    rows = list(streams.read_csv(str(data["csv2"]), "label", drop=["id"]))
    code, out, err = run(capsys, "predict", m, data["csv2"], "--drop", "id")
    assert code == 0, err
    assert out.splitlines() == [str(model.predict_one(x)) for x, _ in rows]
    # JSON lines with probabilities, to a file; the data need not have a label column.
    nolabel = write_csv(tmp_path / "new.csv", 30, seed=9, label=False)
    pred = tmp_path / "pred.jsonl"
    code, out, err = run(capsys, "predict", m, nolabel, "--drop", "id", "--proba", "--output", pred)
    assert code == 0 and out == "" and "30 predictions" in err
    recs = [json.loads(line) for line in pred.read_text().splitlines()]
    for rec, (x, _) in zip(recs, streams.read_csv(str(nolabel), has_target=False, drop=["id"])):
        proba = model.predict_proba_one(x)
        assert rec == {"prediction": model.predict_one(x), "classes": list(proba), "proba": list(proba.values())}
    assert len(recs) == 30


def test_info_text_and_json(capsys, data, tmp_path):
    m = tmp_path / "m.omkl"
    assert run(capsys, "train", data["csv"], "--drop", "id", "-p", "budget=40", "-k", "rbf", "-k", "linear",
               "--save", m)[0] == 0
    code, out, err = run(capsys, "info", m)
    assert code == 0, err
    for text in ("StandardScaler | OBSCUREClassifier", "onlinemkl.river.OBSCUREClassifier", "budget=40",
                 "classes          : 3", "features         : 4: f0, f1, f2, f3", "stored examples  : 40",
                 "RBF()", "Linear()", "600 examples of", "complete"):
        assert text in out
    code, out, _ = run(capsys, "info", m, "--json")
    info = json.loads(out)
    assert sorted(info["classes"]) == ["c0", "c1", "c2"]
    assert info["stored_examples"] == 40 and info["parameters"]["budget"] == 40
    assert [k for k, _ in info["kernel_weights"]] == ["RBF()", "Linear()"]
    assert abs(sum(w for _, w in info["kernel_weights"]) - 1) < 1e-12
    assert info["training"]["examples_consumed"] == 600


def test_demo_still_runs(capsys):
    code, out, _ = run(capsys, "demo", "--budget", "100", "--no-progress")
    assert code == 0 and "prequential accuracy" in out and "kernel weights" in out


# -- crash safety ---------------------------------------------------------------------------


def _train_argv(src, ck):
    return ["train", str(src), "--drop", "id", "-p", "budget=60", "--save", str(ck), "--checkpoint-every", "50",
            "--resume", "--no-progress"]


def _consumed(path):
    try:
        return load_with_meta(path)[1]["extra"]["train"]["examples_consumed"]
    except Exception:
        return None


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash")
    src = write_csv(d / "stream.csv", 6000, seed=5)
    done = d / "uninterrupted.omkl"
    assert cli.main(_train_argv(src, done)) == 0  # the same command, never interrupted
    return src, done


def _start(argv):
    return subprocess.Popen([sys.executable, "-m", "onlinemkl.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_sigkill_mid_stream_then_resume_gives_the_uninterrupted_model(capsys, big, tmp_path):
    src, done = big
    ck = tmp_path / "ck.omkl"
    proc = _start(_train_argv(src, ck))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            n = _consumed(ck)
            if n is not None and n >= 500:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    killed_at = _consumed(ck)
    assert killed_at is not None and 500 <= killed_at < 6000 and killed_at % 50 == 0
    assert not load_with_meta(ck)[1]["extra"]["train"]["complete"]
    code, out, err = run(capsys, *_train_argv(src, ck))  # the same command again
    assert code == 0, err
    assert f"resuming from {ck}: {killed_at} examples already learnt" in err
    assert f"examples learnt  : {6000 - killed_at}" in out
    assert_same_state(load(ck), load(done))
    assert ck.read_bytes() == done.read_bytes()  # byte for byte, metadata included
    code, out, _ = run(capsys, *_train_argv(src, ck))  # and once more: nothing left to do
    assert code == 0 and "nothing to resume" in out


def test_sigterm_writes_a_checkpoint_and_resume_finishes(capsys, big, tmp_path):
    src, done = big
    ck = tmp_path / "ck.omkl"
    argv = _train_argv(src, ck)
    argv[argv.index("--checkpoint-every") + 1] = "100000"  # only the signal writes a checkpoint
    proc = _start(argv)
    lines = []
    reader = threading.Thread(target=lambda: [lines.append(line) for line in proc.stderr], daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        # The task is printed once the model exists (the source's first labels sampled): from then
        # on a signal writes a checkpoint.
        while not any(b"task:" in line for line in lines) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        reader.join(10)
        assert code == 128 + signal.SIGTERM, b"".join(lines).decode()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    err = b"".join(lines).decode()
    assert "SIGTERM: stopped after" in err and "checkpoint written" in err and "Traceback" not in err
    stopped_at = _consumed(ck)
    assert stopped_at is not None and stopped_at < 6000
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert_same_state(load(ck), load(done))


# -- every learner through the command ------------------------------------------------------

LEARNER_CASES = [
    ("proximal", "label", "str", ["-p", "budget=60", "-p", "explicit_groups=all"], "ProximalMKLClassifier"),
    ("proximal-regressor", "f3", "float", ["-p", "budget=60"], "ProximalMKLRegressor"),
    ("polymkl", "f3", "float", ["-p", "degree=2", "-p", "n_iter=10", "-p", "seed=0", "-p", "batch_size=50"],
     "PolyMKLRegressor"),
    ("nonlinear", "f3", "float", ["-p", "degree=2", "-p", "batch_size=50"], "NonlinearKRRRegressor"),
]


@pytest.mark.parametrize("learner,target,ttype,params,cls", LEARNER_CASES, ids=[c[0] for c in LEARNER_CASES])
def test_every_learner_trains_saves_predicts_and_describes(capsys, data, tmp_path, learner, target, ttype, params,
                                                           cls):
    import onlinemkl.river as omr

    drop = ["--drop", "id"] + (["--drop", "label"] if target != "label" else [])
    out = tmp_path / f"{learner}.omkl"
    code, stdout, err = run(capsys, "train", data["csv"], "--target", target, "--target-type", ttype, *drop,
                            "--learner", learner, *params, "--save", out, "--no-progress")
    assert code == 0, err
    # the same model trained in process from the same reader
    kw = cli.parse_params([p for p in params if p != "-p"], cli.LEARNERS[learner])
    ref = preprocessing.StandardScaler() | getattr(omr, cls)(**kw)
    convert = float if ttype == "float" else str
    rows = list(streams.read_csv(str(data["csv"]), target, drop=drop[1::2]))
    for x, y in rows:
        ref.learn_one(x, convert(y))
    model = load(out)
    assert [model.predict_one(x) for x, _ in rows[:50]] == [ref.predict_one(x) for x, _ in rows[:50]]
    code, stdout, err = run(capsys, "info", out)
    assert code == 0 and cls in stdout, err
    pred = tmp_path / "p.txt"
    code, _, err = run(capsys, "predict", out, data["csv"], "--target", target, *drop, "--output", pred)
    assert code == 0, err
    got = pred.read_text().split("\n")[:50]
    assert got == [str(ref.predict_one(x)) for x, _ in rows[:50]]
    code, stdout, err = run(capsys, "evaluate", data["csv"], "--target", target, "--target-type", ttype, *drop,
                            "--learner", learner, *params, "--no-progress")
    assert code == 0, err
    assert ("r2" in stdout) == (ttype == "float") and ("accuracy" in stdout) == (ttype == "str")


def test_regressor_rejects_classification_metric_and_proba(capsys, data, tmp_path):
    code, _, err = run(capsys, "evaluate", data["csv"], "--target", "f3", "--target-type", "float", "--drop", "id",
                       "--drop", "label", "--learner", "proximal-regressor", "-m", "accuracy")
    assert code != 0 and "not a regression metric" in err and len(err.strip().splitlines()) == 1


# -- the files people have: delimiters, zero-based libsvm, text columns, empty cells ---------


def test_semicolon_csv_is_sniffed_and_a_wrong_delimiter_refused(capsys, tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("a;b;y\n" + "".join(f"{i % 5};{i % 3};{'p' if i % 2 else 'q'}\n" for i in range(30)))
    code, out, err = run(capsys, "train", path, "--no-progress", "--save", tmp_path / "m.omkl")
    assert code == 0, err
    assert "delimiter: ';', sniffed" in err and "examples learnt  : 30" in out
    assert load(tmp_path / "m.omkl")["StandardScaler"].counts == {"a": 30, "b": 30}
    code, out, err = run(capsys, "predict", tmp_path / "m.omkl", path)
    assert code == 0, err
    assert out.split() and set(out.split()) <= {"p", "q"}
    code, _, err = run(capsys, "train", path, "--no-progress", "--delimiter", ",")
    assert code == 2 and "semi.csv line 1: the header is one column, 'a;b;y'" in err
    assert "pass --delimiter ';'" in err and "delimiter=" not in err
    tsv = tmp_path / "t.csv"
    tsv.write_text("a\tb\ty\n1\t2\tp\n")
    code, _, err = run(capsys, "evaluate", tsv, "--no-progress", "--delimiter", ",")
    assert code == 2 and "pass --delimiter tab" in err
    assert run(capsys, "evaluate", tsv, "--no-progress", "--delimiter", "tab")[0] == 0


def test_zero_based_libsvm_is_detected_saved_with_the_model_and_flagged(capsys, tmp_path):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    path = tmp_path / "sk.svm"
    dump_svmlight_file(X, (X[:, 0] > 0).astype(int), str(path))  # features numbered from 0
    m = tmp_path / "m.omkl"
    code, out, err = run(capsys, "train", path, "--no-progress", "--save", m)
    assert code == 0, err
    assert "examples learnt  : 40" in out
    assert sorted(load(m)["StandardScaler"].counts) == [0, 1, 2]
    assert load_with_meta(m)[1]["extra"]["train"]["zero_based"] is True
    # predict reads the index base the model was trained with, even from a file without an index 0
    one = tmp_path / "few.svm"
    one.write_text("1 1:0.5 2:0.1\n")
    code, out, err = run(capsys, "predict", m, one, "--allow-feature-mismatch")
    assert code == 0, err
    code, _, err = run(capsys, "train", path, "--no-progress", "--one-based")
    assert code == 2 and "pass --zero-based if the file numbers features from 0" in err and "zero_based=" not in err
    assert run(capsys, "train", path, "--no-progress", "--zero-based")[0] == 0
    code, _, err = run(capsys, "train", tmp_path / "sk.svm", "--format", "csv", "--zero-based")
    assert code == 2 and "--zero-based applies to libsvm sources only" in err


def test_a_classifier_given_a_numeric_target_with_many_values_warns(capsys, tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "price.csv"
    path.write_text("a,b,price\n" + "".join(f"{a:.3f},{b:.3f},{int(100 + 40 * a) + int(rng.integers(200))}\n"
                                           for a, b in rng.normal(size=(120, 2))))
    for option in (["--learner", "obscure"], ["--task", "classification"]):
        code, _, err = run(capsys, "train", path, "--no-progress", *option)
        assert code == 0, err
        warning = [line for line in err.splitlines() if "warning" in line]
        assert len(warning) == 1 and "the labels look like a quantity" in warning[0]
        assert re.search(r"\d+ distinct numbers in the first 120 labels", warning[0])
        assert "--learner proximal-regressor" in warning[0] and "--task regression" in warning[0]
    codes = tmp_path / "codes.csv"
    codes.write_text("a,kind\n" + "".join(f"{i / 7:.3f},{i % 4}\n" for i in range(120)))
    code, _, err = run(capsys, "evaluate", codes, "--no-progress", "--learner", "obscure")
    assert code == 0 and "warning" not in err


def _colours(path, n=150, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a, colour = rng.normal(), ("red", "green", "blue")[i % 3]
        rows.append(f"{a:.3f},{colour},{'p' if (a > 0) != (colour == 'red') else 'q'}\n")
    path.write_text("a,colour,y\n" + "".join(rows))
    return path


def test_categorical_columns_from_the_command_line(capsys, tmp_path):
    path = _colours(tmp_path / "c.csv")
    code, _, err = run(capsys, "train", path, "--no-progress")
    assert code == 2 and "column 'colour' = 'red' is not a number" in err
    assert "pass --categorical colour to read it as categories" in err and "--drop colour" in err
    assert "categorical=" not in err and "drop=" not in err
    m = tmp_path / "m.omkl"
    code, out, err = run(capsys, "train", path, "--no-progress", "--categorical", "colour", "--save", m)
    assert code == 0, err
    assert "examples learnt  : 150" in out
    assert set(load(m)["StandardScaler"].counts) == {"a", "colour=red", "colour=green", "colour=blue"}
    assert load_with_meta(m)[1]["extra"]["train"]["categorical"] == ["colour"]
    # predict reads the model's categorical columns; a colour never learnt has every indicator 0
    new = tmp_path / "new.csv"
    new.write_text("a,colour\n1.0,red\n-1.0,purple\n")
    code, out, err = run(capsys, "predict", m, new)
    assert code == 0, err
    assert len(out.split()) == 2 and "1 value of categorical columns not seen in training" in err
    # comma-separated, jsonl keys too, and a learner's complaint about text names the flag
    code, _, err = run(capsys, "evaluate", path, "--no-progress", "--categorical", "colour,a")
    assert code == 0, err
    js = tmp_path / "c.jsonl"
    js.write_text("".join(json.dumps({"a": i / 10, "shop": "s%d" % (i % 2), "y": "pq"[i % 2]}) + "\n"
                          for i in range(40)))
    code, _, err = run(capsys, "train", js, "--no-progress", "--task", "classification")
    assert code == 2 and "feature 'shop' = 's0' is not a number; pass --categorical shop" in err
    assert "OneHotEncoder" not in err
    assert run(capsys, "train", js, "--no-progress", "--task", "classification", "--categorical", "shop")[0] == 0
    code, _, err = run(capsys, "train", path, "--no-progress", "--categorical", "nope")
    assert code == 2 and "--categorical column 'nope' is not in the header" in err


def test_empty_cells_are_missing_values_in_train_evaluate_and_predict(capsys, tmp_path):
    full = tmp_path / "full.csv"
    full.write_text("a,ash,y\n" + "".join(f"{i % 7 / 3:.3f},{i % 5 / 2:.3f},{'pq'[i % 2]}\n" for i in range(60)))
    holes = tmp_path / "holes.csv"
    holes.write_text("a,ash,y\n" + "".join(f"{i % 7 / 3:.3f},{'' if i % 4 == 0 else i % 5 / 2},{'pq'[i % 2]}\n"
                                         for i in range(60)))
    m = tmp_path / "m.omkl"
    assert run(capsys, "train", full, "--no-progress", "--save", m)[0] == 0
    report = "15 examples with missing values (empty cells or null) {} without those features"
    for argv, verb in ((["train", holes], "learnt"), (["evaluate", holes], "learnt"),
                       (["predict", m, holes], "predicted")):
        code, out, err = run(capsys, *argv, *([] if argv[0] == "predict" else ["--no-progress"]))
        assert code == 0, err
        assert report.format(verb) in err and "'ash' in 15" in err
    assert len(out.split()) == 60
    # a column absent from the header is still an error naming it
    gone = tmp_path / "gone.csv"
    gone.write_text("a,y\n1,p\n")
    code, _, err = run(capsys, "predict", m, gone)
    assert code == 2 and "missing feature 'ash'" in err
