"""The command line never guesses silently, and the package's metadata.

Covered: the task inferred and printed, feature names
checked at prediction, the default target printed, errors naming options, ``--version`` and
``python -m onlinemkl``, ``--plot`` on a short source, ``--proba``'s class order,
``onlinemkl.save`` of a pipeline, and the licence, classifiers and ``py.typed``.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from river import preprocessing

import onlinemkl
from onlinemkl import cli
from onlinemkl.persist import load
from onlinemkl.river import OBSCUREClassifier, ProximalMKLRegressor

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_rows(path, header, rows):
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("guesses")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 2))
    price = 3 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=240)
    return {
        "dir": d,
        # a house-price-like target: numbers with fractions, every value distinct
        "reg": write_rows(d / "reg.csv", ["a", "b", "price"],
                          [(f"{a:.4f}", f"{b:.4f}", f"{p:.3f}") for (a, b), p in zip(X, price)]),
        # integer class codes 0..2
        "codes": write_rows(d / "codes.csv", ["a", "b", "kind"],
                            [(f"{a:.4f}", f"{b:.4f}", int(a > 0) + int(b > 0)) for a, b in X]),
        # 40 distinct whole numbers (an age, a count): a quantity
        "ages": write_rows(d / "ages.csv", ["a", "b", "age"],
                           [(f"{a:.4f}", f"{b:.4f}", 20 + (i * 7) % 45) for i, (a, b) in enumerate(X)]),
        "cls": write_rows(d / "cls.csv", ["a", "b", "label"],
                          [(f"{a:.4f}", f"{b:.4f}", "pos" if a * b > 0 else "neg") for a, b in X]),
    }


# -- the task: inferred, printed with the reason, or given ----------------------------------


def test_numeric_target_with_many_values_is_regression_and_says_why(capsys, files, tmp_path):
    out = tmp_path / "m.omkl"
    code, stdout, err = run(capsys, "train", files["reg"], "--save", out, "--no-progress")
    assert code == 0, err
    assert "ProximalMKLRegressor" in stdout
    assert "task: regression, learner proximal-regressor" in err
    assert re.search(r"2[34]\d distinct numbers in the first 240 labels, with fractional parts", err)
    assert "--task classification to override" in err
    model = load(out)
    assert isinstance(model["ProximalMKLRegressor"], ProximalMKLRegressor)
    x = {"a": 0.5, "b": -0.2}
    assert isinstance(model.predict_one(x), float)  # learnt float labels, not 240 classes


def test_task_given_or_small_integer_codes_stay_classification(capsys, files, tmp_path):
    code, stdout, err = run(capsys, "train", files["codes"], "--no-progress")
    assert code == 0, err
    assert "OBSCUREClassifier" in stdout
    assert "task: classification" in err and "3 distinct whole numbers" in err and "(0, 1, 2)" in err
    code, stdout, err = run(capsys, "train", files["ages"], "--no-progress")
    assert code == 0 and "task: regression" in err and "more than 20" in err
    code, stdout, err = run(capsys, "train", files["reg"], "--task", "classification", "--no-progress")
    assert code == 0 and "OBSCUREClassifier" in stdout and "task: classification, learner obscure (--task" in err
    code, stdout, err = run(capsys, "evaluate", files["cls"], "--no-progress")
    assert code == 0 and "accuracy" in stdout and "the labels are text, e.g." in err



@pytest.mark.parametrize("fmt", ["jsonl", "jsonl-text", "libsvm"])
def test_numeric_labels_of_every_format_are_regression(capsys, tmp_path, fmt):
    rng = np.random.default_rng(5)
    rows = [(a, b, 2 * a - b + 0.01 * i) for i, (a, b) in enumerate(rng.normal(size=(60, 2)))]
    if fmt == "libsvm":
        path = tmp_path / "r.libsvm"
        path.write_text("".join(f"{y:.4f} 1:{a:.4f} 2:{b:.4f}\n" for a, b, y in rows))
    else:
        path = tmp_path / "r.jsonl"
        label = (lambda y: f"{y:.4f}") if fmt == "jsonl-text" else (lambda y: round(y, 4))
        path.write_text("".join(json.dumps({"a": a, "b": b, "y": label(y)}) + "\n" for a, b, y in rows))
    code, stdout, err = run(capsys, "train", path, "--no-progress")
    assert code == 0, err
    assert "task: regression" in err and "ProximalMKLRegressor" in stdout and "examples learnt  : 60" in stdout

def test_task_contradictions_and_sockets_are_errors(capsys, files):
    code, _, err = run(capsys, "train", files["reg"], "--task", "regression", "--learner", "obscure")
    assert code == 2 and "--task regression contradicts --learner obscure" in err
    code, _, err = run(capsys, "train", files["reg"], "--task", "regression", "--target-type", "str")
    assert code == 2 and "--target-type str" in err
    code, _, err = run(capsys, "train", "tcp://127.0.0.1:9", "--format", "csv")
    assert code == 2 and "pass --task classification or --task regression" in err


def test_a_saved_regressor_reads_csv_labels_as_numbers(capsys, files, tmp_path):
    out = tmp_path / "r.omkl"
    assert run(capsys, "train", files["reg"], "--learner", "proximal-regressor", "--save", out,
               "--no-progress")[0] == 0
    code, stdout, err = run(capsys, "train", files["reg"], "--model", out, "--save", out, "--no-progress")
    assert code == 0, err
    assert "examples learnt  : 240" in stdout


# -- the target column ------------------------------------------------------------------------


def test_default_target_is_printed_and_documented(capsys, files):
    code, _, err = run(capsys, "train", files["cls"], "--no-progress")
    assert code == 0 and "target: 'label', the last column of" in err and "--target NAME" in err
    code, _, err = run(capsys, "train", files["cls"], "--target", "label", "--no-progress")
    assert code == 0 and "target:" not in err  # given: nothing to say
    helptext = cli.build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert "LAST csv column" in helptext


# -- feature names at prediction ----------------------------------------------------------------


@pytest.fixture(scope="module")
def cls_model(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("fm") / "cls.omkl"
    assert cli.main(["train", str(files["cls"]), "--save", str(out), "--no-progress"]) == 0
    return out


def test_predict_reports_unknown_and_missing_features(capsys, cls_model, tmp_path):
    renamed = write_rows(tmp_path / "renamed.csv", ["a", "bb"], [("0.5", "0.2"), ("-1", "2")])
    code, out, err = run(capsys, "predict", cls_model, renamed)
    assert code == 2 and out == ""
    assert "unknown feature 'bb'" in err and "missing feature 'b'" in err and "renamed.csv example 1" in err
    assert "--allow-feature-mismatch" in err
    code, out, err = run(capsys, "predict", cls_model, renamed, "--allow-feature-mismatch")
    assert code == 0 and len(out.split()) == 2
    code, out, err = run(capsys, "predict", cls_model, renamed, "--on-error", "skip")
    assert code == 0 and out == "\n\n" and "skipped 2 examples" in err
    good = write_rows(tmp_path / "good.csv", ["b", "a"], [("0.5", "0.2")])  # column order does not matter
    assert run(capsys, "predict", cls_model, good)[0] == 0


def test_missing_feature_rule_follows_the_training_stream():
    from onlinemkl._feature_check import FeatureCheck

    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=20)
    for i in range(30):
        x = {"a": float(i % 3), "b": float(i % 5)}
        if i % 2:
            x["sometimes"] = 1.0  # present in half the examples: may be absent
        model.learn_one(x, "p" if i % 3 else "n")
    check = FeatureCheck(model)
    assert check.problems({"a": 1.0, "b": 2.0}) == ([], [])
    assert check.problems({"a": 1.0}) == ([], ["b"])
    assert check.problems({"a": 1.0, "b": 1.0, "new": 2.0}) == (["new"], [])
    numbered = OBSCUREClassifier(budget=20)
    for i in range(10):
        numbered.learn_one({0: float(i), 3: 1.0}, i % 2 == 0)
    assert FeatureCheck(numbered).problems({0: 1.0}) == ([], [])  # LIBSVM-style: zeros are left out
    assert FeatureCheck(numbered).problems({7: 1.0}) == ([7], [])
    assert FeatureCheck(OBSCUREClassifier()).problems({"x": 1.0}) == ([], [])  # knows nothing yet


def test_server_reports_feature_mismatch_on_predictions_and_labelled_lines(cls_model):
    from onlinemkl.serve import ModelServer

    srv = ModelServer(load(cls_model), port=0, log=None)
    try:
        reply = srv.handle_line(b'{"x": {"a": 0.3, "bb": 1.0}}')
        assert "unknown feature 'bb'" in reply["error"] and "missing feature 'b'" in reply["error"]
        assert "--allow-feature-mismatch" in reply["error"]
        assert "prediction" in srv.handle_line(b'{"x": {"a": 0.3, "b": 1.0}}')
        reply = srv.handle_line(b'{"x": {"a": 0.3, "c": 1.0}, "y": "pos"}')
        assert "unknown feature 'c'" in reply["error"] and "not learnt" in reply["error"] and srv.n_learned == 0
        srv.feature_check = None  # what --allow-feature-mismatch sets
        assert "prediction" in srv.handle_line(b'{"x": {"zz": 0.3}}')
        assert srv.handle_line(b'{"x": {"a": 0.3, "c": 1.0}, "y": "pos"}')["learned"]  # learning adds features
    finally:
        srv.shutdown(timeout=5)


# -- errors name the options ---------------------------------------------------------------------


@pytest.mark.parametrize("argv, msg", [
    (["train", "{cls}", "-p", "lam=-1"], "--param lam=-1: must be > 0"),
    (["train", "{reg}", "--learner", "polymkl", "-p", "seed=abc"], "--param seed='abc'"),
    (["train", "{cls}", "--learner", "proximal", "-p", "group_weights=1"], "--param group_weights must hold"),
    (["train", "{cls}", "--drop", "zz"], "--drop column 'zz' is not in the header"),
    (["train", "{cls}", "--drop", "label"], "also given to --drop"),
    (["train", "{cls}", "--timeout", "0"], "--timeout 0: must be > 0"),
    (["serve", "--max-clients", "0", "--port", "0"], "--max-clients 0: must be at least 1"),
    (["serve", "--idle-timeout", "0", "--port", "0"], "--idle-timeout 0.0: must be > 0"),
    (["serve", "--max-line-bytes", "3", "--port", "0"], "--max-line-bytes 3: must be at least 16"),
    (["serve", "--port", "99999"], "--port 99999: must be 0..65535"),
    (["serve", "--task", "regression", "--learner", "obscure"], "--task regression contradicts"),
    (["demo", "--budget", "-2"], "--budget -2: must be >= 1"),
])
def test_errors_name_the_option_not_the_python_argument(capsys, files, argv, msg):
    code, _, err = run(capsys, *[a.format(**{k: str(v) for k, v in files.items()}) for a in argv])
    assert code == 2, err
    assert msg in err and err.count("\n") == 1 and err.startswith(f"onlinemkl {argv[0]}: error: ")
    for python_name in ("lam=-1:", "random_state", "max_clients", "idle_timeout", "max_line_bytes", "drop=",
                        "budget=-2", "OverflowError", "ValueError"):
        assert python_name not in err.replace("--param lam=-1", "")


def test_bad_line_message_names_the_on_error_option(capsys, tmp_path):
    bad = write_rows(tmp_path / "bad.csv", ["a", "label"], [("1", "x"), ("oops", "y")])
    code, _, err = run(capsys, "train", bad, "--task", "classification")
    assert code == 2 and "--on-error skip" in err and "on_error=" not in err


# -- --version, python -m onlinemkl --------------------------------------------------------------


def test_version_and_python_dash_m(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"onlinemkl {onlinemkl.__version__}"
    proc = subprocess.run([sys.executable, "-m", "onlinemkl", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"onlinemkl {onlinemkl.__version__}", proc.stderr
    proc = subprocess.run([sys.executable, "-m", "onlinemkl", "info", "/nonexistent.omkl"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("onlinemkl info: error:")


# -- --plot on a short source, --proba's columns ----------------------------------------------------


def test_plot_of_a_source_too_short_for_a_curve_says_so(capsys, files, tmp_path):
    pytest.importorskip("matplotlib")
    short = write_rows(tmp_path / "short.csv", ["a", "b", "label"],
                       [(i, i % 2, "pos" if i % 3 else "neg") for i in range(30)])
    png = tmp_path / "c.png"
    code, out, err = run(capsys, "evaluate", short, "--plot", png, "--no-progress")
    assert code == 0 and png.exists()
    assert "only 30 examples, so the curve has 1 point" in err and "--every 3" in err
    assert "(one point, no curve)" in out
    code, out, err = run(capsys, "evaluate", short, "--plot", png, "--every", "5", "--no-progress")
    assert code == 0 and "warning" not in err
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b,label\n")
    code, out, err = run(capsys, "evaluate", empty, "--plot", tmp_path / "e.png", "--task", "classification",
                         "--no-progress")
    assert code == 0 and "nothing to plot" in err and not (tmp_path / "e.png").exists()


def test_proba_columns_are_documented_and_fixed(capsys, cls_model, files, tmp_path):
    helptext = cli.build_parser()._subparsers._group_actions[0].choices["predict"].format_help()
    assert "proba[i] is" in helptext and "classes[i]" in helptext and "first met them in training" in helptext
    code, out, _ = run(capsys, "predict", cls_model, files["cls"], "--proba")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    info = run(capsys, "info", cls_model, "--json")[1]
    classes = json.loads(info)["classes"]
    assert all(r["classes"] == classes for r in lines)  # one order, the model's
    first_seen = list(dict.fromkeys(line.rsplit(",", 1)[1] for line in Path(files["cls"]).read_text().split()[1:]))
    assert classes == first_seen


# -- a river pipeline saves with one call ----------------------------------------------------------


def test_pipeline_saves_and_loads_with_one_call(tmp_path):
    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=30)
    rng = np.random.default_rng(0)
    xs = [{"a": float(a), "b": float(b)} for a, b in rng.normal(size=(80, 2))]
    for x in xs:
        model.learn_one(x, x["a"] * x["b"] > 0)
    path = onlinemkl.save(model, tmp_path / "pipe.omkl")
    back = onlinemkl.load(path)
    assert [back.predict_one(x) for x in xs] == [model.predict_one(x) for x in xs]
    assert [back.predict_proba_one(x) for x in xs] == [model.predict_proba_one(x) for x in xs]
    assert "save" in onlinemkl.__all__


# -- package metadata ---------------------------------------------------------------------------------


def test_package_metadata_licence_classifiers_and_py_typed():
    tomllib = pytest.importorskip("tomllib")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    assert "Typing :: Typed" in project["classifiers"]
    assert any(c.startswith("Topic :: Scientific/Engineering") for c in project["classifiers"])
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # the SPDX expression says it
    assert "version" in project["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "onlinemkl.__version__"}
    # py.typed, and the bundled OCR words with their provenance (onlinemkl.datasets.load_ocr_words)
    assert meta["tool"]["setuptools"]["package-data"]["onlinemkl"] == ["py.typed", "data/*.npz", "data/README.md"]
    assert (ROOT / "onlinemkl" / "py.typed").exists() and (ROOT / "streams" / "py.typed").exists()
    assert int(meta["build-system"]["requires"][0].split(">=")[1]) >= 77  # SPDX license expressions
