"""What a budget of 500 costs against no budget, per data set, over several replay seeds.

``bench_defaults.py`` runs each candidate once, with replay's generator at seed 0; the distance
between ``budget500`` and the default moves by tenths of a point in the 20-set mean, and by
whole points on a small set, when only that seed changes.  This benchmark takes the same 20
data sets, the same split (one prequential pass over the first 70%, held-out accuracy on the
last 30%) and the same river faces (``StandardScaler() | OBSCUREClassifier()`` and
``ProximalMKLClassifier()``, with and without ``budget=500``) and repeats every pass with the
replay generator seeded ``0 .. --seeds - 1``.  The river faces take no ``random_state``, so the
seed is set on the engine's replay memory right after the model is built (what
``ObscureEngine(seed=...)`` would do).  No timing: one untimed pass each.

Reported per candidate pair and seed: the mean over the 20 sets of (no budget - budget) in
accuracy points, prequential and held-out, and the named sets of issue 16 (river's Phishing,
Bananas, ImageSegments, Shuttle; scikit-learn's digits, wine, breast cancer) whose loss is
above one point; the per-set rows are in the JSON.

Usage::

    PYTHONPATH=. python benchmarks/bench_budget_seeds.py [--seeds 5] [--name budget_seeds]
    PYTHONPATH=/work/main python benchmarks/bench_budget_seeds.py --name budget_seeds_main   # another checkout
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import single_thread_blas, write_report  # noqa: E402
from bench_defaults import DATASETS, split  # noqa: E402

NAMED = ("Phishing", "Bananas", "ImageSegments", "Shuttle[:5000]", "digits", "wine", "breast_cancer")
PAIRS = {"OBSCURE": "OBSCUREClassifier", "ProximalMKL": "ProximalMKLClassifier"}


def seeded_model(cls_name, budget, seed):
    """``StandardScaler() | <cls>(budget=budget)`` with the replay generator seeded ``seed``."""
    import onlinemkl.river as omr
    from onlinemkl.engines._replay import _splitmix64
    from river import preprocessing

    clf = getattr(omr, cls_name)(budget=budget)
    clf._engine.replay.counters[1] = _splitmix64(int(seed))[1]  # as ReplayMemory(seed=seed)
    return preprocessing.StandardScaler() | clf


def one_pass(model, train, test):
    """``(prequential accuracy, held-out accuracy)`` of one test-then-train pass."""
    import pandas as pd

    correct = 0
    for x, y in train:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    yp = list(model.predict_many(pd.DataFrame([x for x, _ in test])))
    return correct / len(train), float(np.mean([a == y for a, (_, y) in zip(yp, test)]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--datasets", default=None, help="comma-separated names from bench_defaults.DATASETS")
    ap.add_argument("--name", default="budget_seeds")
    args = ap.parse_args(argv)
    names = args.datasets.split(",") if args.datasets else list(DATASETS)
    rows = []
    t0 = time.process_time()
    with single_thread_blas():
        for dname in names:
            _, train, test = split(DATASETS[dname](), None)
            for seed in range(args.seeds):
                for learner, cls_name in PAIRS.items():
                    p0, h0 = one_pass(seeded_model(cls_name, None, seed), train, test)
                    p1, h1 = one_pass(seeded_model(cls_name, 500, seed), train, test)
                    rows.append({"dataset": dname, "learner": learner, "seed": seed, "preq_default": p0,
                                 "preq_budget500": p1, "heldout_default": h0, "heldout_budget500": h1,
                                 "preq_loss_points": 100 * (p0 - p1), "heldout_loss_points": 100 * (h0 - h1)})
            print(f"{dname}: {time.process_time() - t0:.0f} s CPU", flush=True)
    summary = []
    for learner in PAIRS:
        for seed in range(args.seeds):
            rs = [r for r in rows if r["learner"] == learner and r["seed"] == seed]
            over = [f"{r['dataset']} {r['preq_loss_points']:.2f}/{r['heldout_loss_points']:.2f}" for r in rs
                    if r["dataset"] in NAMED and max(r["preq_loss_points"], r["heldout_loss_points"]) > 1.0]
            summary.append({"learner": learner, "seed": seed, "datasets": len(rs),
                            "mean_preq_loss": float(np.mean([r["preq_loss_points"] for r in rs])),
                            "mean_heldout_loss": float(np.mean([r["heldout_loss_points"] for r in rs])),
                            "named_over_1": len(over), "named_over_1_sets": "; ".join(over)})
    notes = (__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1] + "\n\nLoss = no budget - budget 500, "
             "accuracy points (positive: the budget is worse); `named_over_1_sets`: named set prequential/held-out "
             f"loss.  Data sets: {len(names)}.  CPU time {time.process_time() - t0:.0f} s.\n\n"
             "## Per data set: mean loss over the seeds (prequential / held-out)\n\n")
    per_set = []
    for dname in names:
        row = {"dataset": dname}
        for learner in PAIRS:
            rs = [r for r in rows if r["learner"] == learner and r["dataset"] == dname]
            row[learner] = (f"{np.mean([r['preq_loss_points'] for r in rs]):.2f} / "
                            f"{np.mean([r['heldout_loss_points'] for r in rs]):.2f}")
        per_set.append(row)
    from _common import markdown_table

    notes += markdown_table(per_set) + "\n## Per learner and seed: the 20-set mean loss\n"
    write_report(args.name, summary, columns=list(summary[0]), title="Budget 500 against no budget, per replay seed",
                 notes=notes, extra={"per_dataset": rows, "seeds": args.seeds})


if __name__ == "__main__":
    main()
