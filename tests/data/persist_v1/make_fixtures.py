"""Write the model files of this directory: one small trained model per learner and face, in the
layout written before model files recorded the engine settings (format version 1, kernels
recorded, no ``settings``), each with the inputs it was asked about and its answers in
``meta["extra"]``.  ``tests/system/test_persist_defaults.py`` loads them and asks again.

They were made by the code at commit 29d98c3 (the last before the settings were recorded)::

    mkdir /tmp/old && git archive 29d98c3 | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/persist_v1/make_fixtures.py tests/data/persist_v1
"""

import sys
from pathlib import Path

import numpy as np
from river import preprocessing

from onlinemkl import NonlinearKRRRegressor, OBSCUREClassifier, PolyMKLRegressor, ProximalMKLClassifier
from onlinemkl import ProximalMKLRegressor, SequenceMKLLabeler
from onlinemkl import river as omr
from onlinemkl.persist import save


def dict_stream(n, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(5, 3)) * 2.0
    for _ in range(n):
        k = int(rng.integers(5))
        v = centers[k] + rng.normal(size=3)
        x = {f"f{i}": round(float(v[i]), 3) for i in range(3)}
        yield x, (float(v[0] * v[1] + v[2]) if regression else "abcde"[k])


def arrays(n, seed, regression=False):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 3)
    return X, (X[:, 0] * X[:, 1] + X[:, 2] if regression else (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.5))


def main(out):
    out = Path(out)
    queries = [x for x, _ in dict_stream(6, seed=5)]
    for name, model, regression in (
        ("river_obscure", omr.OBSCUREClassifier(budget=20), False),
        ("river_proximal_clf", omr.ProximalMKLClassifier(budget=20), False),
        ("river_proximal_reg_pipeline", preprocessing.StandardScaler() | omr.ProximalMKLRegressor(budget=20), True),
        ("river_polymkl", omr.PolyMKLRegressor(batch_size=10, n_iter=3, budget=20, seed=0), True),
        ("river_krr", omr.NonlinearKRRRegressor(batch_size=10, max_iter=2, budget=20), True),
    ):
        for x, y in dict_stream(40, regression=regression):
            model.learn_one(x, y)
        f = model.predict_one if regression else model.predict_proba_one
        save(model, out / f"{name}.omkl",
             extra={"inputs": ["dicts", queries], "regression": regression, "predictions": [f(x) for x in queries]})
    Xq, _ = arrays(6, seed=6)
    for name, model, regression in (
        ("sk_obscure", OBSCUREClassifier(budget=20, stage1_epochs=1, stage2_epochs=1), False),
        ("sk_proximal_clf", ProximalMKLClassifier(budget=20), False),
        ("sk_proximal_reg", ProximalMKLRegressor(budget=20, n_epochs=1), True),
        ("sk_polymkl", PolyMKLRegressor(n_iter=3, budget=20, random_state=0), True),
        ("sk_krr", NonlinearKRRRegressor(max_iter=2, budget=20), True),
    ):
        model.fit(*arrays(30, seed=1, regression=regression))
        f = model.predict if regression else model.decision_function
        save(model, out / f"{name}.omkl",
             extra={"inputs": ["arrays", Xq.tolist()], "regression": regression, "predictions": f(Xq).tolist()})
    rng = np.random.default_rng(2)
    xs = [np.round(rng.normal(size=(int(rng.integers(2, 4)), 3)), 3) for _ in range(8)]
    model = SequenceMKLLabeler(budget=20, random_state=0).fit(xs, [(x[:, 0] > 0).astype(int).tolist() for x in xs])
    save(model, out / "sequence.omkl", extra={"inputs": ["sequences", [x.tolist() for x in xs[:4]]],
                                              "regression": False,
                                              "predictions": [model.predict_one(x) for x in xs[:4]]})


if __name__ == "__main__":
    main(sys.argv[1])
