"""How the streaming regressor's step is split and scheduled: the alternatives behind ``group_steps``.

The river ``ProximalMKLRegressor`` learnt river's Planes2D (a target linear in products
``x_1 x_j``) slowly in one pass: 1.08x the prequential MAE of river's Hoeffding adaptive tree,
the gap all in the first ~1,500 rows.  This benchmark runs the alternatives that were measured
to close it, each as one prequential pass (predict, then learn; ``StandardScaler`` in front)
over the 13 streams of ``bench_defaults_regression.py`` (their train part) and the 12 of
``bench_defaults_regression_unseen.py``:

* ``equal``: the previous default (``group_steps='equal'``: every kernel the same step);
* ``norms``: the default (``group_steps='norms'``: the step split by the group norms,
  :mod:`onlinemkl._core.group_steps`), and with other ``SHARE_FLOOR``/``SHARE_POWER``
  constants (``--floor``/``--power``: the module's constants are set before anything is
  compiled, in a fresh Numba cache directory);
* step-size schedules on top of either split: ``eta_t = e0 / sqrt(t) * (1 + a tau / (tau + t))``
  (large early steps decaying to ``e0 / sqrt(t)``), set through the engine's ``hyper`` entries
  before every step (the compiled step reads them at every call).

Figures: ``ratio`` = prequential MAE / river best's on that stream, river best as recorded in
``results/defaults_regression.json`` (river's kNN passes are not repeatable, so a re-run of
that benchmark moves some of these references by a few per cent; Planes2D's, the Hoeffding
tree, is repeatable); ``unseen_ratio`` = MAE / the ``equal`` variant's MAE on that stream, same run
(``unseen_geomean``: their geometric mean; ``equal`` always runs first).  ``cpu_ex_per_s``:
examples per CPU second over the 13 streams (the first includes compilation when the cache
is cold).

Usage::

    PYTHONPATH=. python benchmarks/bench_regression_steps.py                 # -> results/defaults_regression_steps.*
    PYTHONPATH=. python benchmarks/bench_regression_steps.py --sweep 0.1:1,0.1:1.5,0.2:2  # -> results/defaults_regression_steps_sweep.*

``--sweep floor:power,...`` runs ``equal`` and ``norms`` once per pair of constants, each in its own
process (``--floor``/``--power``), and writes one report of them all.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"

#: name -> (group_steps, schedule (e0, a, tau) or None for the default eta0=0.3 / sqrt(t))
VARIANTS = {
    "equal": ("equal", None),
    "norms": ("norms", None),
    "equal, schedule e0=0.2 a=2 tau=1000": ("equal", (0.2, 2.0, 1000.0)),
    "equal, schedule e0=0.3 a=2 tau=300": ("equal", (0.3, 2.0, 300.0)),
    "equal, schedule e0=0.1 a=9 tau=300": ("equal", (0.1, 9.0, 300.0)),
    "norms, schedule e0=0.2 a=2 tau=1000": ("norms", (0.2, 2.0, 1000.0)),
}


def _json_rows(name, key, value):
    import json

    payload = json.loads((RESULTS / f"{name}.json").read_text())
    out = {}

    def walk(o):
        if isinstance(o, dict):
            if key in o and value in o:
                out[o[key]] = o[value]
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(payload)
    return out


def _hook(schedule):
    """A function of ``(engine, t)`` that sets the step size ``eta_t`` of the next step."""
    from onlinemkl._core import fobos as cf

    e0, a, tau = schedule

    def set_eta(engine, t):
        engine.hyper[cf.H_SCHEDULE] = cf.SCHEDULE_CONSTANT
        engine.hyper[cf.H_ETA0] = e0 / math.sqrt(t) * (1.0 + a * tau / (tau + t))

    return set_eta


def prequential(make, data, hook=None):
    """``(MAE, CPU seconds)`` of one test-then-train pass."""
    model = make()
    engine = model[-1]._engine
    err = 0.0
    c0 = time.process_time()
    for t, (x, y) in enumerate(data, 1):
        p = model.predict_one(x)
        err += abs((0.0 if p is None else float(p)) - y)
        if hook is not None:
            hook(engine, t)
        model.learn_one(x, y)
    return err / len(data), time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floor", type=float, default=None, help="group_steps.SHARE_FLOOR for this run")
    ap.add_argument("--power", type=float, default=None, help="group_steps.SHARE_POWER for this run")
    ap.add_argument("--variants", default=None, help="comma-separated subset of the variants")
    ap.add_argument("--name", default="defaults_regression_steps")
    ap.add_argument("--sweep", default=None, help="floor:power pairs, comma-separated (one process each)")
    ap.add_argument("--print-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sweep:
        return sweep(args.sweep, args.name if args.name != "defaults_regression_steps" else
                     "defaults_regression_steps_sweep")
    if args.floor is not None or args.power is not None:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="onlinemkl-steps-")
        import onlinemkl._core.group_steps as gs

        gs.SHARE_FLOOR = gs.SHARE_FLOOR if args.floor is None else args.floor
        gs.SHARE_POWER = gs.SHARE_POWER if args.power is None else args.power
    import numpy as np
    from river import preprocessing

    from _common import single_thread_blas, write_report
    from bench_defaults_regression import DATASETS, split
    from bench_defaults_regression_unseen import streams
    from onlinemkl._core import group_steps as gs
    from onlinemkl.river import ProximalMKLRegressor

    river_best = _json_rows("defaults_regression", "dataset", "river_preq_mae")
    seen = {n: split(f(), None)[1] for n, f in DATASETS.items()}
    unseen = {n: f() for n, f in streams().items()}
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    names = ["equal"] + [n for n in names if n != "equal"]
    unseen_ref = {}
    rows, summary = [], []
    with single_thread_blas():
        for label in names:
            group_steps, schedule = VARIANTS[label]
            hook = None if schedule is None else _hook(schedule)

            def make(group_steps=group_steps):
                return preprocessing.StandardScaler() | ProximalMKLRegressor(group_steps=group_steps)

            ratios, cpu, n = [], 0.0, 0
            for dname, train in seen.items():
                mae, c = prequential(make, train, hook)
                ratios.append(mae / river_best[dname])
                cpu, n = cpu + c, n + len(train)
                rows.append({"variant": label, "stream": dname, "suite": "13", "mae": mae,
                             "ratio": mae / river_best[dname]})
            unseen_ratios = []
            for sname, data in unseen.items():
                mae, _ = prequential(make, data, hook)
                unseen_ref.setdefault(sname, mae)  # the equal split's, the first variant run
                unseen_ratios.append(mae / unseen_ref[sname])
                rows.append({"variant": label, "stream": sname, "suite": "unseen 12", "mae": mae,
                             "unseen_ratio": mae / unseen_ref[sname]})
            r = np.array(ratios)
            planes = ratios[list(seen).index("Planes2D")]
            summary.append({"variant": label, "floor": gs.SHARE_FLOOR, "power": gs.SHARE_POWER,
                            "wins": int(np.sum(r <= 1.0)), "mean_ratio": float(r.mean()), "worst_ratio": float(r.max()),
                            "planes2d_ratio": planes,
                            "unseen_geomean": float(np.exp(np.mean(np.log(unseen_ratios)))),
                            "unseen_worst": float(max(unseen_ratios)), "cpu_ex_per_s": n / max(cpu, 1e-9)})
            print(summary[-1], flush=True)
    if args.print_json:
        import json

        print("JSON " + json.dumps([r for r in summary if r["variant"] == "norms"]))
        return
    notes = __doc__.split("\n\n", 1)[1].rsplit("Usage::", 1)[0]
    write_report(args.name, summary, title="Streaming regressor: how the step is split and scheduled",
                 notes=notes + f"Constants of this run: SHARE_FLOOR={gs.SHARE_FLOOR}, SHARE_POWER={gs.SHARE_POWER} "
                               "(they matter for the 'norms' variants only).  Per stream: the JSON's `per_stream`.",
                 extra={"per_stream": rows})


def sweep(pairs, name):
    """``norms`` with each ``floor:power`` pair of constants (one process each), one report."""
    import json
    import subprocess

    from _common import write_report

    rows = []
    for pair in pairs.split(","):
        floor, power = pair.split(":")
        out = subprocess.run([sys.executable, __file__, "--floor", floor, "--power", power, "--variants", "norms",
                              "--print-json"], capture_output=True, text=True, check=True).stdout
        rows += json.loads([line for line in out.splitlines() if line.startswith("JSON ")][-1][5:])
        print(rows[-1], flush=True)
    notes = __doc__.split("\n\n", 1)[1].rsplit("Usage::", 1)[0]
    write_report(name, rows, title="Streaming regressor: the constants of group_steps='norms'",
                 notes=notes + "One row per (SHARE_FLOOR, SHARE_POWER) pair, each run in its own process "
                               "(`cpu_ex_per_s` includes compilation there).")


if __name__ == "__main__":
    main()
