"""Does the streaming regressor's default hold on streams it was not chosen on?

``ProximalMKLRegressor``'s defaults (river face) were chosen on the 13 streams of
``bench_defaults_regression.py``.  This benchmark runs the default and the previous default
(every kernel the same step, ``group_steps='equal'``; the one before it, the normalised
quadratic kernel with ``eta0=0.2``, is in the git history of the results) over 12 other
streams, none of which was looked at while choosing: river's bundled AirlinePassengers and
WaterFlow (dates as ordinal day numbers), other seeds of river's Planes2D, Friedman and Mv
generators (Mv's categorical features dropped), river's FriedmanDrift (gradual drift at rows 1,000-2,000), and scikit-learn
generators with other seeds and shapes (``make_regression`` with 5 and 50 features,
``make_friedman1/2/3`` with ``random_state=1``).  Generated streams: first 3,000 rows (river)
or 2,000 (scikit-learn).

Every contestant runs behind ``river.preprocessing.StandardScaler()`` (the trees without it)
and makes one prequential pass (predict, then learn) over the whole stream; the figure is the
prequential MAE in the target's units.  ``new_vs_old`` is the default's MAE over the previous
default's (< 1: the new default is better).  river's ``LinearRegression`` and
``HoeffdingAdaptiveTreeRegressor(seed=0)`` (defaults) are reported for scale; kNN and ARF are
left out to keep the run short (they are in ``bench_defaults_regression.py``).  ``cpu_ex_per_s``:
examples per CPU second (``time.process_time``) of the default's pass, after a warm-up.

Usage::

    PYTHONPATH=. NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_defaults_regression_unseen.py [--quick]

``--quick`` runs three streams capped at 600 rows (-> ``results/defaults_regression_unseen_quick.*``).
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_args, single_thread_blas, write_report  # noqa: E402

QUICK = ("WaterFlow", "Planes2D seed 1", "friedman2 seed 1")
QUICK_CAP = 600


def _num(v):
    return float(v.toordinal()) if hasattr(v, "toordinal") else float(v)


def _river(rows):
    """river rows as float dicts (dates as day numbers; string features dropped)."""
    return [({str(k): _num(v) for k, v in x.items() if not isinstance(v, str)}, float(y)) for x, y in rows]


def _head(gen, n=3000):
    return _river(itertools.islice(gen, n))


def _sk(X, y):
    return [({f"x{j}": float(v) for j, v in enumerate(r)}, float(t)) for r, t in zip(X, y)]


def streams():
    from river import datasets
    from river.datasets import synth
    from sklearn import datasets as skd

    return {
        "AirlinePassengers": lambda: _river(datasets.AirlinePassengers()),
        "WaterFlow": lambda: _river(datasets.WaterFlow()),
        "Planes2D seed 1": lambda: _head(synth.Planes2D(seed=1)),
        "Planes2D seed 2": lambda: _head(synth.Planes2D(seed=2)),
        "Friedman seed 1": lambda: _head(synth.Friedman(seed=1)),
        "FriedmanDrift gra": lambda: _head(synth.FriedmanDrift(drift_type="gra", position=(1000, 2000), seed=0)),
        "Mv seed 1 (numeric)": lambda: _head(synth.Mv(seed=1)),
        "make_regression 5f": lambda: _sk(*skd.make_regression(2000, n_features=5, noise=5.0, random_state=1)),
        "make_regression 50f/10inf": lambda: _sk(*skd.make_regression(2000, n_features=50, n_informative=10,
                                                                      noise=10.0, random_state=1)),
        "friedman1 seed 1": lambda: _sk(*skd.make_friedman1(2000, noise=1.0, random_state=1)),
        "friedman2 seed 1": lambda: _sk(*skd.make_friedman2(2000, noise=10.0, random_state=1)),
        "friedman3 seed 1": lambda: _sk(*skd.make_friedman3(2000, noise=0.01, random_state=1)),
    }


def contestants():
    from river import linear_model, preprocessing, tree

    from onlinemkl.river import ProximalMKLRegressor

    return {
        "default": lambda: preprocessing.StandardScaler() | ProximalMKLRegressor(),
        "previous default": lambda: preprocessing.StandardScaler() | ProximalMKLRegressor(group_steps="equal"),
        "river LinearRegression": lambda: preprocessing.StandardScaler() | linear_model.LinearRegression(),
        "river HATRegressor": lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=0),
    }


def prequential(model, data):
    """``(MAE, CPU seconds)`` of one test-then-train pass."""
    err = 0.0
    c0 = time.process_time()
    for x, y in data:
        p = model.predict_one(x)
        err += abs((0.0 if p is None else float(p)) - y)
        model.learn_one(x, y)
    return err / len(data), time.process_time() - c0


def main(argv=None):
    args = quick_args(argv, __doc__, f"three streams ({', '.join(QUICK)}) capped at {QUICK_CAP} rows")
    makers = streams()
    names = QUICK if args.quick else tuple(makers)
    rows = []
    with single_thread_blas():
        for name in names:
            data = makers[name]()
            if args.quick:
                data = data[:QUICK_CAP]
            models = contestants()
            prequential(models["default"](), data[:30])  # compile / warm up
            res = {label: prequential(make(), data) for label, make in models.items()}
            new, old = res["default"][0], res["previous default"][0]
            rows.append({"stream": name, "rows": len(data), "features": len(data[0][0]),
                         "default_mae": new, "previous_default_mae": old, "new_vs_old": new / old,
                         "river_lr_mae": res["river LinearRegression"][0],
                         "river_hat_mae": res["river HATRegressor"][0],
                         "cpu_ex_per_s": len(data) / max(res["default"][1], 1e-9)})
            print(f"{name:26s} new={new:.4g} old={old:.4g} new/old={new / old:.3f}", flush=True)
    ratios = np.array([r["new_vs_old"] for r in rows])
    summary = {"streams": len(rows), "better": int(np.sum(ratios < 1)),
               "geomean_new_vs_old": float(np.exp(np.mean(np.log(ratios)))), "worst_new_vs_old": float(ratios.max())}
    notes = (__doc__.split("\n\n")[1] + "\n\n" + __doc__.split("\n\n")[2] + "\n\n"
             + f"Summary: the default's MAE is lower on {summary['better']} of {summary['streams']} streams; "
               f"new/old geometric mean {summary['geomean_new_vs_old']:.3f}, worst {summary['worst_new_vs_old']:.3f}.")
    write_report("defaults_regression_unseen" + ("_quick" if args.quick else ""), rows, notes=notes,
                 title="Streaming regressor default on streams it was not chosen on", extra={"summary": summary})


if __name__ == "__main__":
    main()
