"""Would online-to-batch averaging lift the default's held-out accuracy?  (A what-if, not a feature.)

Issue 16 lists "online-to-batch averaging" among the directions worth measuring.  OBSCURE's
stage-1 weights are a non-linear (p-norm) map of its dual sum, so an exact running average of
the predictors needs a second coefficient array per kernel; before building that, this
benchmark measures what averaging would buy with snapshots: the default pipeline
``StandardScaler() | OBSCUREClassifier()`` makes one prequential pass over each
``bench_defaults.py`` train part, a deep copy of the whole pipeline is kept at 50, 60, 70, 80
and 90% of the pass, and the held-out part is predicted with

- ``last``: the final model (what the default does);
- ``avg``: the mean of the decision scores of the five snapshots and the final model (a
  coarse uniform average over the second half of the pass);
- ``avg_late``: the mean of the last three (80%, 90% and final: suffix averaging).

Each snapshot standardises with its own scaler, as its predictor was learnt.  Ratios are
differences in held-out accuracy against ``last``.

Usage::

    PYTHONPATH=. NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_snapshot_average.py  # -> results/snapshot_average.*
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import copy  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import single_thread_blas, write_report  # noqa: E402

FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.9)


def _scores(pipe, classes):
    """Decision scores of ``pipe`` on a raw row, indexed like ``classes`` (0 for a class it lacks)."""
    scaler, clf = list(pipe.steps.values())

    def f(x):
        s = clf._scores(scaler.transform_one(x))
        if clf._engine.binary:
            return np.array([-s[0], s[0]])
        out = np.zeros(len(classes))
        for k, label in enumerate(clf._labels.labels):
            out[classes.index(label)] = s[k]
        return out
    return f


def run(name):
    import bench_defaults as bd
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier

    _, train, test = bd.split(bd.DATASETS[name](), None)
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier()
    marks = {int(f * len(train)) for f in FRACTIONS}
    snaps = []
    for i, (x, y) in enumerate(train):
        if i in marks:
            snaps.append(copy.deepcopy(pipe))
        pipe.learn_one(x, y)
    snaps.append(pipe)
    clf = list(pipe.steps.values())[-1]
    classes = [False, True] if clf._engine.binary else list(clf._labels.labels)
    fs = [_scores(p, classes) for p in snaps]
    right = {"last": 0, "avg": 0, "avg_late": 0}
    for x, y in test:
        s = [f(x) for f in fs]
        for key, value in (("last", s[-1]), ("avg", np.mean(s, axis=0)), ("avg_late", np.mean(s[-3:], axis=0))):
            right[key] += classes[int(np.argmax(value))] == y
    n = len(test)
    row = {"dataset": name, "n_test": n, **{f"{k}_heldout": v / n for k, v in right.items()}}
    row["avg_minus_last"] = row["avg_heldout"] - row["last_heldout"]
    row["avg_late_minus_last"] = row["avg_late_heldout"] - row["last_heldout"]
    print(row, flush=True)
    return row


def main():
    single_thread_blas()
    import bench_defaults as bd

    rows = [run(name) for name in bd.DATASETS]
    mean = {k: float(np.mean([r[k] for r in rows])) for k in ("avg_minus_last", "avg_late_minus_last")}
    rows.append({"dataset": "mean", "n_test": "", "last_heldout": float(np.mean([r["last_heldout"] for r in rows])),
                 "avg_heldout": float(np.mean([r["avg_heldout"] for r in rows])),
                 "avg_late_heldout": float(np.mean([r["avg_late_heldout"] for r in rows])), **mean})
    write_report("snapshot_average", rows, title="Snapshot averaging of the default OBSCURE pipeline (held-out)",
                 notes=__doc__.split("Usage::")[0], extra={"fractions": FRACTIONS})


if __name__ == "__main__":
    main()
