"""The command line of onlinemkl.distributed without Ray: --workers says how to install it, tune
runs its candidates one after another, bad --grid values are named."""

import csv
import sys

import pytest
from river import datasets

from onlinemkl import load
from onlinemkl.cli import main
from onlinemkl.cli._distributed import parse_grid
from onlinemkl.cli._errors import CommandError


@pytest.fixture(scope="module")
def phishing_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("dist") / "phishing.csv"
    rows = list(datasets.Phishing().take(300))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        keys = list(rows[0][0])
        w.writerow(keys + ["label"])
        for x, y in rows:
            w.writerow([x[k] for k in keys] + [int(y)])
    return str(path)


@pytest.fixture
def no_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError


def test_workers_without_ray_says_how_to_install(phishing_csv, no_ray, capsys, tmp_path):
    code = main(["train", phishing_csv, "--target", "label", "--workers", "2", "--save", str(tmp_path / "m.omkl")])
    assert code == 2
    assert "--workers needs Ray: python -m pip install 'onlinemkl[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "m.omkl").exists()


@pytest.mark.parametrize("extra, message", [(["--resume", "--save", "x.omkl"], "--resume cannot be combined"),
                                            (["--limit", "5"], "--limit cannot be combined"),
                                            (["--delta", "-1"], "delta=-1.0"),
                                            (["--sync-every", "0"], "period=0")])
def test_workers_option_errors(phishing_csv, capsys, extra, message):
    assert main(["train", phishing_csv, "--target", "label", "--workers", "2", *extra]) == 2
    assert message in capsys.readouterr().err


def test_tune_without_ray_runs_one_after_another(phishing_csv, no_ray, capsys, tmp_path):
    best = tmp_path / "best.omkl"
    code = main(["tune", phishing_csv, "--target", "label", "-p", "budget=50", "--learner", "proximal",
                 "--grid", "lam=1e-3,1e-4", "--grid", "eta0=0.5,1", "--save", str(best)])
    out = capsys.readouterr()
    assert code == 0
    assert "one after another" in out.err
    lines = out.out.splitlines()
    assert lines[0].split() == ["lam", "eta0", "Accuracy", "seconds"] or lines[0].split() == ["eta0", "lam",
                                                                                               "Accuracy", "seconds"]
    assert len([line for line in lines if line.strip().startswith(("0.", "1"))]) == 4
    assert any(line.startswith("best") for line in lines)
    model = load(best)
    assert list(model.steps.values())[-1].budget == 50


def test_grid_errors_are_named(phishing_csv, capsys):
    with pytest.raises(CommandError, match="expected KEY=V1,V2"):
        parse_grid(["lam"])
    with pytest.raises(CommandError, match="given twice"):
        parse_grid(["lam=1", "lam=2"])
    with pytest.raises(CommandError, match="at least one --grid"):
        parse_grid([])
    assert parse_grid(["lam=1e-3,1e-4", "loss=hinge,logistic"]) == {"lam": [1e-3, 1e-4], "loss": ["hinge", "logistic"]}
    assert main(["tune", phishing_csv, "--target", "label", "--grid", "eta0=1,2"]) == 2
    assert "OBSCUREClassifier has no parameter 'eta0'" in capsys.readouterr().err
