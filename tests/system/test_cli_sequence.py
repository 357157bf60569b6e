"""Sequences from files and sockets: ``--task sequence`` in train / evaluate / predict, and the server's
sequence requests."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import streams
from onlinemkl import SequenceMKLLabeler, cli
from onlinemkl.persist import load, load_with_meta, save
from onlinemkl.serve import ModelServer

from test_persist import assert_same_state
from test_serve import Client


def write_conll(path, n, seed=0, labelled=True):
    """``n`` sequences of 2-5 tokens: a word column, two numbers, the label (P when the first number is > 0)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        for t in range(rng.integers(2, 6)):
            a, b = rng.normal(size=2)
            lines.append(f"w{t} {a:.3f} {b:.3f}" + (f" {'P' if a > 0 else 'N'}" if labelled else ""))
        lines.append("")
    text = "\n".join(lines) + "\n"
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("seq")
    return {"dir": d, "train": write_conll(d / "train.conll.gz", 30), "new": write_conll(d / "new.txt", 6, seed=1)}


def reference(path, n=None):
    model = SequenceMKLLabeler()
    for i, (xs, ys) in enumerate(streams.read_conll(str(path), drop=[1])):
        if n is not None and i >= n:
            break
        model.learn_one(xs, ys)
    return model


def test_train_predict_evaluate_round_trip(capsys, data):
    out = data["dir"] / "m.omkl"
    code, stdout, err = run(capsys, "train", data["train"], "--drop", "1", "--save", out, "--no-progress")
    assert code == 0, err
    assert "task: sequence, learner sequence (" in err and "examples learnt  : 30" in stdout
    assert "transitions (label pairs)" in stdout
    model, meta = load_with_meta(out)
    assert isinstance(model, SequenceMKLLabeler)
    assert meta["extra"]["train"]["format"] == "conll" and meta["extra"]["train"]["drop"] == [1]
    assert_same_state(model, reference(data["train"]))

    # predict: one line per sequence, the labels joined by a space; --drop 1 comes from the model file
    pred = data["dir"] / "p.txt"
    code, _, err = run(capsys, "predict", out, data["new"], "--output", pred)  # a sequence model reads conll
    assert code == 0, err
    seqs = list(streams.read_conll(str(data["new"]), drop=[1]))
    assert pred.read_text().splitlines() == [" ".join(model.predict_one(xs)) for xs, _ in seqs]
    # unlabelled tokens: told apart by the model's number of features
    bare = write_conll(data["dir"] / "bare.conll", 3, seed=1, labelled=False)
    code, stdout, err = run(capsys, "predict", out, bare)
    assert code == 0, err
    assert stdout.splitlines() == [" ".join(model.predict_one(xs)) for xs, _ in seqs[:3]]

    code, stdout, err = run(capsys, "evaluate", data["train"], "--drop", "1", "--no-progress")
    assert code == 0, err
    ref, right, total = SequenceMKLLabeler(), 0, 0  # prequential per token: predict each sequence, then learn it
    for xs, ys in streams.read_conll(str(data["train"]), drop=[1]):
        p = ref.predict_one(xs)
        right += sum(a == b for a, b in zip(p, ys) if a is not None)
        total += sum(a is not None for a in p)
        ref.learn_one(xs, ys)
    assert f"accuracy         : {right / total:.4f}" in stdout and "(metrics per token)" in stdout
    assert "sequences        : 30" in stdout

    code, stdout, err = run(capsys, "info", out)
    assert code == 0 and "features         : 2" in stdout and "CoNLL-style sequences" in stdout


def test_a_crash_loses_at_most_the_last_checkpoint(capsys, data, monkeypatch):
    done = data["dir"] / "done.omkl"
    argv = ["train", data["train"], "--learner", "sequence", "--drop", "1", "--checkpoint-every", "5", "--resume",
            "--no-progress"]
    assert run(capsys, *argv, "--save", done)[0] == 0
    ck = data["dir"] / "ck.omkl"
    calls = []
    learn = SequenceMKLLabeler.learn_one

    def crashing(self, xs, ys):
        calls.append(ys[0] in ("P", "N"))  # the file's sequences, not those warmup compiles with
        if sum(calls) == 13:
            raise RuntimeError("power cut")
        return learn(self, xs, ys)

    monkeypatch.setattr(SequenceMKLLabeler, "learn_one", crashing)
    code, _, err = run(capsys, *argv, "--save", ck)
    assert code == 1 and "power cut" in err
    assert load_with_meta(ck)[1]["extra"]["train"]["examples_consumed"] == 10
    monkeypatch.setattr(SequenceMKLLabeler, "learn_one", learn)
    code, _, err = run(capsys, *argv, "--save", ck)
    assert code == 0 and "resuming from" in err and "10 examples already learnt" in err
    assert_same_state(load(ck), load(done))


@pytest.mark.parametrize("argv, msg", [
    (["train", "{train}", "--no-progress"], "column 1 = 'w0' is not a number; fix the value, or pass --drop 1 "
                                            "to ignore it"),
    (["train", "{train}", "--drop", "1", "--task", "classification"], "--task classification: a classification "
                                                                      "learner reads examples, not the sequences"),
    (["train", "{train}", "--drop", "1", "--format", "csv", "--task", "sequence"],
     "--task sequence: the sequence learner reads CoNLL-style files"),
    (["train", "{train}", "--drop", "x"], "--drop x: the columns of a CoNLL-style file are numbered from 1"),
    (["train", "{train}", "--drop", "9"], "--drop column 9 is past the last column (token lines have 4)"),
    (["train", "{train}", "--drop", "1", "--target", "y"], "--target y: a CoNLL-style file's label is the last"),
    (["train", "{train}", "--drop", "1", "--categorical", "a"], "--categorical applies to csv and jsonl sources"),
    (["train", "{train}", "--drop", "1", "--no-scale"], "-p scale=false turns that off"),
    (["train", "{train}", "--drop", "1", "--workers", "2"], "--workers: the sequence learner learns in one process"),
    (["evaluate", "{train}", "--drop", "1", "-m", "log_loss"], "the sequence learner predicts labels"),
])
def test_errors_name_the_option_and_the_fix(capsys, data, argv, msg):
    pytest.importorskip("ray") if "--workers" in argv else None
    code, _, err = run(capsys, *[a.format(**data) for a in argv])
    assert code == 2 and msg in err, err
    assert len(err.strip().splitlines()) <= 2  # the task note, then the one-line error


def test_bad_lines_skip_their_sequence_and_rejected_sequences_leave_the_model(capsys, data, tmp_path):
    src = tmp_path / "bad.conll"
    src.write_text("a 1 2 P\nb 3 4 N\n\nc 1 nan P\nd 1 1 N\n\ne 1 2 N\n\nf 1 2 3 N\n\ng 0 1 P\n")
    out = tmp_path / "m.omkl"
    code, stdout, err = run(capsys, "train", src, "--drop", "1", "--save", out, "--no-progress")
    assert code == 2 and "bad.conll line 4: column 3 = 'nan' is not a finite number" in err
    code, stdout, err = run(capsys, "train", src, "--drop", "1", "--save", out, "--on-error", "skip", "--no-progress")
    assert code == 0, err
    assert "examples learnt  : 3" in stdout and "2 bad lines skipped (first at line 4" in err
    # predict refuses a sequence of another width (the model is unchanged by predict anyway)
    code, _, err = run(capsys, "predict", out, src)
    assert code == 2 and "line 4: column 3 = 'nan'" in err


@pytest.fixture(scope="module")
def seq_model(data):
    return reference(data["train"])


def test_server_labels_and_learns_sequences(seq_model, tmp_path):
    path = tmp_path / "served.omkl"
    srv = ModelServer(load(save(seq_model, tmp_path / "m.omkl")), port=0, log=None, save_path=path,
                      checkpoint_every=1).start()
    ref = load(tmp_path / "m.omkl")
    try:
        c = Client(srv.address)
        xs = [[1.0, 2.0], [-1.5, 0.25]]
        assert c.ask({"xs": xs, "id": 1}) == {"prediction": ref.predict_one(np.array(xs)), "id": 1}
        r = c.ask({"xs": xs, "ys": ["P", "N"]})
        ref.learn_one(np.array(xs), ["P", "N"])
        assert r["learned"] is True
        assert_same_state(load(path), ref)  # the checkpoint after one learnt sequence
        before = srv.model.get_params(), srv.n_learned
        for bad, msg in [({"xs": [[1.0, 2.0, 3.0]], "ys": ["P"]}, "xs has 3 features, but the model is expecting 2"),
                         ({"xs": [[1.0, 2.0], [1.0]]}, "xs[1] has 1 numbers but xs[0] has 2"),
                         ({"xs": [[1.0, "a"]], "ys": ["P"]}, "xs[0][1] = 'a' is not a finite number"),
                         ({"xs": [[1e60, 1.0]], "ys": ["P"]}, "xs[0][0] = 1e+60 is too large"),
                         ({"xs": [[1.0, 2.0]], "ys": ["P", "N"]}, '"ys" must be a JSON array of one label per token'),
                         ({"xs": [[1.0, 2.0]], "ys": [3.5]}, "label 3.5 is a number"),
                         ({"x": {"a": 1.0}}, "this model labels sequences: a request has xs"),
                         ({"xs": [[1.0, 2.0]], "proba": True}, "unknown keys ['proba']")]:
            r = c.ask(bad)
            assert msg in r["error"] and r["line"] > 0, (bad, r)
        assert (srv.model.get_params(), srv.n_learned) == before
        assert_same_state(srv.model, ref)  # no rejected line changed the model
        c.close()
    finally:
        srv.shutdown(timeout=5)


def test_serve_command_builds_a_bare_labeller_and_compiles_it_first():
    from onlinemkl.cli._model import build_model
    from onlinemkl.cli._warmup import warmup_name

    args = cli.build_parser().parse_args(["serve", "--task", "sequence", "-p", "budget=50"])
    model = build_model(args)
    assert type(model) is SequenceMKLLabeler and model.budget == 50  # no scaler in front: it scales itself
    assert warmup_name(model) == "sequence"  # compiled before the first client, as the other learners


def test_server_bounds_a_sequence(seq_model):
    srv = ModelServer(seq_model, port=0, log=None, max_sequence_length=3)
    try:
        reply = srv.handle_line(json.dumps({"xs": [[0.0, 0.0]] * 4}).encode())
        assert "4 tokens, more than 3 (max_sequence_length)" in reply["error"]
    finally:
        srv.shutdown(timeout=5)
