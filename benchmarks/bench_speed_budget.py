"""Where one example's time goes, against the time that "3x river's best model" leaves.

Issue 16 asks the default river pipeline ``StandardScaler() | OBSCUREClassifier()`` for at least
three times the throughput of river's most accurate model on each of its named streams.  This
diagnostic splits the default pipeline's per-example CPU time into its parts and sets them
against that allowance (river best's per-example time / 3), to show which parts a faster
learner could still win back and which it cannot.

What is measured (CPU time, ``time.process_time``, best of ``REPEAT`` passes; one BLAS thread)
    - ``river_best_us``: one prequential pass (``predict_one`` then ``learn_one``) of river's
      best model on the set (as ``bench_defaults.py`` names it), per example;
    - ``allowance_us`` = ``river_best_us / 3``: what the whole default pipeline may spend;
    - ``pipeline_us``: one prequential pass of ``StandardScaler() | OBSCUREClassifier()``;
    - ``scaler_us``: river's ``StandardScaler`` alone (``learn_one`` + ``transform_one`` twice,
      as the pipeline calls it: once in ``predict_one``, once in ``learn_one``);
    - ``predict_us``, ``learn_us``: the bare learner's ``predict_one`` / ``learn_one`` on the
      already standardised rows (``learn_us`` includes replay), and ``learn_noreplay_us`` with
      ``replay=0``;
    - ``glue_us`` = ``pipeline_us - scaler_us - predict_us - learn_us``: river's ``Pipeline``
      dispatch between the steps;
    - ``rows``: stored examples at the end; ``left_for_learner_us`` = allowance minus scaler
      and glue: what OBSCURE's predict + learn would have to fit in.

Data: ``bench_defaults.py``'s train parts (first 70%) of wine and Bananas (where the clause is
not met) and Phishing and ImageSegments (where it is), in their benchmark order.

Usage::

    PYTHONPATH=. NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_speed_budget.py   # -> results/speed_budget.*
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import single_thread_blas, write_report  # noqa: E402

REPEAT = 5
SETS = {  # data set -> river's best model on it in results/defaults.md
    "wine": "river kNN (exact, window)",
    "Bananas": "river kNN (exact, window)",
    "Phishing": "river ARF",
    "ImageSegments": "river kNN (exact, window)",
}


def best_cpu(fn, repeat=REPEAT):
    """The least CPU seconds of ``repeat`` calls of ``fn`` (each on fresh state)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def measure(name, river_name):
    import bench_defaults as bd
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier

    _, train, _ = bd.split(bd.DATASETS[name](), None)
    n = len(train)
    labels = {y for _, y in train}
    make_best = bd.all_river_models(len(labels) > 2)[river_name]

    def prequential(make):
        def run():
            model = make()
            for x, y in train:
                model.predict_one(x)
                model.learn_one(x, y)
        return run

    def pipeline():
        return preprocessing.StandardScaler() | OBSCUREClassifier()

    def scaler():
        s = preprocessing.StandardScaler()
        for x, _ in train:
            s.transform_one(x)
            s.learn_one(x)
            s.transform_one(x)

    s = preprocessing.StandardScaler()
    rows = []
    for x, _ in train:
        s.learn_one(x)
        rows.append(s.transform_one(x))

    def bare(**kw):
        learnt = {}

        def run():
            m = OBSCUREClassifier(**kw)
            tp = 0.0
            for xs, (_, y) in zip(rows, train):
                t = time.process_time()
                m.predict_one(xs)
                tp += time.process_time() - t
                m.learn_one(xs, y)
            learnt["predict"] = min(learnt.get("predict", float("inf")), tp)
            learnt["model"] = m
        return run, learnt

    prequential(pipeline)()  # compile and warm outside the timing
    us = 1e6 / n
    out = {"dataset": name, "river_best": river_name, "n": n}
    out["river_best_us"] = best_cpu(prequential(make_best)) * us
    out["allowance_us"] = out["river_best_us"] / 3.0
    out["pipeline_us"] = best_cpu(prequential(pipeline)) * us
    out["scaler_us"] = best_cpu(scaler) * us
    run, learnt = bare()
    total = best_cpu(run)
    out["predict_us"] = learnt["predict"] * us
    out["learn_us"] = total * us - out["predict_us"]
    out["rows"] = learnt["model"].n_support_
    run0, learnt0 = bare(replay=0)
    out["learn_noreplay_us"] = best_cpu(run0) * us - learnt0["predict"] * us
    out["glue_us"] = out["pipeline_us"] - out["scaler_us"] - out["predict_us"] - out["learn_us"]
    out["left_for_learner_us"] = out["allowance_us"] - out["scaler_us"] - max(out["glue_us"], 0.0)
    out["speed_vs_river"] = out["river_best_us"] / out["pipeline_us"]
    return out


def main(argv=None):
    single_thread_blas()
    import onlinemkl

    onlinemkl.warmup(["obscure"])
    rows = [measure(name, river) for name, river in SETS.items()]
    notes = (__doc__.split("Usage::")[0]
             + "\nAll times are CPU microseconds per example on a shared 2-core machine.\n")
    cols = ["dataset", "river_best", "n", "river_best_us", "allowance_us", "pipeline_us", "speed_vs_river",
            "scaler_us", "glue_us", "predict_us", "learn_us", "learn_noreplay_us", "left_for_learner_us", "rows"]
    write_report("speed_budget", rows, columns=cols,
                 title="Default pipeline: where an example's time goes, against 3x river's best", notes=notes)


if __name__ == "__main__":
    main(sys.argv[1:])
