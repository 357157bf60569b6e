"""The mini-batch regressors' defaults against a cross-validated RBF kernel ridge regression.

Data sets (all bundled or generated, no download): scikit-learn's diabetes; river's
TrumpApproval and ChickWeights; river's Friedman #1 generator (1000 examples, seed 0); and the
paper's section 5.2 synthetic data at r = 5 (``bench_polymkl.synthetic``).  Each is split
at random 70 / 30 (three splits, seeds 0..2); the learners see the training part as batches
through ``fit`` (mini-batches of ``budget`` rows) and are scored by R^2 on the test part.

* ``poly``: ``PolyMKLRegressor(random_state=0)`` with every default (degree 3, lam='auto',
  standardised inside); ``poly_old``: the former lam=0.1 without the inside standardisation,
  behind a ``StandardScaler`` fitted on the training part (with the new default solver);
* ``cortes``: ``NonlinearKRRRegressor()`` with every default (degree 2); ``cortes_old``: as poly_old;
* ``rbf_cv``: ``StandardScaler`` + ``KernelRidge(kernel='rbf')`` with alpha and gamma chosen
  by 5-fold ``GridSearchCV`` (what a user tuning a kernel method would do).

The table gives the mean R^2 over the splits and ``ratio`` = R^2 / rbf_cv's R^2.
Run ``python benchmarks/bench_minibatch_defaults.py`` (a few minutes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_report  # noqa: E402
from bench_polymkl import synthetic  # noqa: E402

from onlinemkl import NonlinearKRRRegressor, PolyMKLRegressor  # noqa: E402


def datasets():
    from river import datasets as rd
    from river.datasets import synth
    from sklearn.datasets import load_diabetes

    out = {}
    X, y = load_diabetes(return_X_y=True)
    out["diabetes"] = (X, y)
    for name, ds in (("TrumpApproval", rd.TrumpApproval()), ("ChickWeights", rd.ChickWeights()),
                     ("Friedman", synth.Friedman(seed=0).take(1000))):
        rows = list(ds)
        keys = sorted(rows[0][0])
        out[name] = (np.array([[float(x[k]) for k in keys] for x, _ in rows]), np.array([float(y) for _, y in rows]))
    (Xa, ya), (Xb, yb), _, _ = synthetic(5, 5)
    out["sec5.2_r5"] = (np.vstack([Xa, Xb]), np.concatenate([ya, yb]))
    return out


def r2(model, X, y):
    return 1.0 - float(np.mean((model.predict(X) - y) ** 2)) / float(np.var(y))


def methods():
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    grid = {"kernelridge__alpha": np.logspace(-4, 1, 6), "kernelridge__gamma": np.logspace(-3, 0, 7)}
    return {
        "poly": lambda: PolyMKLRegressor(random_state=0),
        "poly_old": lambda: make_pipeline(StandardScaler(), PolyMKLRegressor(lam=0.1, standardize=False,
                                                                             random_state=0)),
        "cortes": lambda: NonlinearKRRRegressor(),
        "cortes_old": lambda: make_pipeline(StandardScaler(), NonlinearKRRRegressor(lam=0.1, standardize=False)),
        "rbf_cv": lambda: GridSearchCV(make_pipeline(StandardScaler(), KernelRidge(kernel="rbf")), grid, cv=5),
    }


def main():
    rows = []
    for name, (X, y) in datasets().items():
        scores = {m: [] for m in methods()}
        for seed in range(3):
            idx = np.random.default_rng(seed).permutation(len(y))
            cut = int(0.7 * len(y))
            tr, te = idx[:cut], idx[cut:]
            for m, make in methods().items():
                scores[m].append(r2(make().fit(X[tr], y[tr]), X[te], y[te]))
        row = {"data": name, "n": len(y), "d": X.shape[1]}
        ref = float(np.mean(scores["rbf_cv"]))
        for m, v in scores.items():
            row[f"{m}_r2"] = float(np.mean(v))
            if m != "rbf_cv":
                row[f"{m}_ratio"] = float(np.mean(v)) / ref
        print(row, flush=True)
        rows.append(row)
    cols = ["data", "n", "d", "poly_r2", "poly_ratio", "poly_old_r2", "cortes_r2", "cortes_ratio", "cortes_old_r2",
            "rbf_cv_r2"]
    write_report("bench_minibatch_defaults", rows, columns=cols,
                 title="Mini-batch regressors: defaults against a CV-tuned RBF kernel ridge regression",
                 notes=__doc__.split("\n\n", 1)[1].rsplit("Run ", 1)[0])


if __name__ == "__main__":
    main()
