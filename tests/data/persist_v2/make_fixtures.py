"""Write the model files and pickles of this directory: one small trained model per per-example
learner, saved (``.omkl``) and pickled (``.pkl``) in the layout written while one float ``hyper``
array held every setting of the compiled step, the integer ones too (no ``settings`` array), each
with the inputs it was asked about and its answers (``meta["extra"]``, or beside the model in the
pickle).  ``tests/system/test_persist_defaults.py`` loads them and asks again, bit for bit.

They were made by the code at commit a1f206a (the last with that layout)::

    git worktree add --detach /tmp/old a1f206a
    PYTHONPATH=/tmp/old python tests/data/persist_v2/make_fixtures.py tests/data/persist_v2
"""

import pickle
import sys
from pathlib import Path

import numpy as np

from onlinemkl import OBSCUREClassifier, ProximalMKLRegressor, SequenceMKLLabeler
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


def write(out, name, model, extra):
    save(model, out / f"{name}.omkl", extra=extra)
    with open(out / f"{name}.pkl", "wb") as fh:
        pickle.dump({"model": model, "extra": extra}, fh)


def main(out):
    out = Path(out)
    queries = [x for x, _ in dict_stream(6, seed=5)]
    for name, model in (("river_obscure", omr.OBSCUREClassifier(budget=20, switch_after=30)),
                        ("river_proximal_clf", omr.ProximalMKLClassifier(budget=20))):
        for x, y in dict_stream(60):
            model.learn_one(x, y)
        write(out, name, model, {"inputs": ["dicts", queries], "regression": False,
                                 "predictions": [model.predict_proba_one(x) for x in queries]})
    Xq, _ = arrays(6, seed=6)
    for name, model, regression in (
        ("sk_obscure", OBSCUREClassifier(budget=20, stage1_epochs=1, stage2_epochs=1), False),
        ("sk_proximal_reg", ProximalMKLRegressor(budget=20, n_epochs=1), True),
    ):
        model.fit(*arrays(30, seed=1, regression=regression))
        f = model.predict if regression else model.decision_function
        write(out, name, model, {"inputs": ["arrays", Xq.tolist()], "regression": regression,
                                 "predictions": f(Xq).tolist()})
    rng = np.random.default_rng(2)
    xs = [np.round(rng.normal(size=(int(rng.integers(2, 4)), 3)), 3) for _ in range(8)]
    model = SequenceMKLLabeler(budget=5, random_state=0).fit(xs, [(x[:, 0] > 0).astype(int).tolist() for x in xs])
    write(out, "sequence", model, {"inputs": ["sequences", [x.tolist() for x in xs[:4]]], "regression": False,
                                   "predictions": [model.predict_one(x) for x in xs[:4]]})


if __name__ == "__main__":
    main(sys.argv[1])
