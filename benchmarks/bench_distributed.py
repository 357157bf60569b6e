"""Distributed learning on this machine: 2 Ray workers against one learner, and a grid of 8 on Ray.

1. A stream of 10^5 examples from river's RandomRBF generator (3 classes, 10 features),
   generated once in this process.  One ProximalMKLClassifier(budget=300) learns it
   prequentially (test-then-train) in this process; then ``fit_ray`` with 2 workers (each
   learning every other example, shipped to its actor) under dynamic averaging for several
   ``delta`` (0 = periodic averaging, inf = none), checks every ``period`` examples per worker.
   Reported: wall time (shipping the shards, learning, merges; the first call also starts the
   actors, later ones reuse them), prequential
   accuracy (each example predicted by its worker's model before learning it), accuracy of the
   final model on the next 5,000 examples, models sent and bytes.  ``ray.init`` is timed apart.
2. A grid of 8 candidates (lam x eta0 x budget) through ``tune_ray`` (twice: the first call starts
   Ray's worker processes) against ``tune_local`` (the same candidates one after another in this
   process) on 2*10^4 examples.

The machine has 2 cores shared with other jobs: the load average at the start and the end is
in the report.  ``--quick``: 2*10^4 examples, a grid on 5,000.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_args, write_report  # noqa: E402


def stream(n, offset=0):
    from river.datasets import synth

    gen = synth.RandomRBF(seed_model=7, seed_sample=7, n_classes=3, n_features=10)
    return list(itertools.islice(gen, offset, offset + n))


def prequential(model, data):
    from river import metrics

    acc = metrics.Accuracy()
    for x, y in data:
        acc.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return acc.get()


def held_out(model, data):
    return sum(model.predict_one(x) == y for x, y in data) / len(data)


def spin(n):
    """Pure-Python work (the machine's parallelism, without onlinemkl in it)."""
    acc = 0
    for i in range(n):
        acc += i % 7
    return acc


def calibration(ray, n=10_000_000):
    """Seconds of two ``spin(n)`` one after another, and as two Ray tasks at once."""
    t0 = time.perf_counter()
    spin(n), spin(n)
    seq = time.perf_counter() - t0
    task = ray.remote(num_cpus=1)(spin)
    ray.get([task.remote(1000), task.remote(1000)])  # the task processes up
    t0 = time.perf_counter()
    ray.get([task.remote(n), task.remote(n)])
    return seq, time.perf_counter() - t0


def main(argv=None):
    args = quick_args(argv, __doc__, "2*10^4 examples, a grid on 5,000")
    from river import metrics

    from onlinemkl.distributed import DynamicAveraging, fit_ray
    from onlinemkl.distributed.ray import ray_init, tune_local, tune_ray
    from onlinemkl.river import ProximalMKLClassifier

    n = 20_000 if args.quick else 100_000
    n_grid = 5_000 if args.quick else 20_000
    period = 1000
    budget = 300
    load_start = os.getloadavg()
    data = stream(n + 5000)
    train, test = data[:n], data[n:]
    learner = ProximalMKLClassifier(budget=budget)
    prequential(learner.clone(), train[:200])  # compile (or load the cache) before the clock

    rows = []
    t0 = time.perf_counter()
    single = learner.clone()
    acc = prequential(single, train)
    t_single = time.perf_counter() - t0
    rows.append({"run": "one learner, this process", "workers": 1, "delta": None, "seconds": t_single,
                 "speed-up": 1.0, "prequential acc": acc, "held-out acc": held_out(single, test),
                 "checks": 0, "violations": 0, "syncs": 0, "models sent": 0, "MB sent": 0.0})

    t0 = time.perf_counter()
    ray = ray_init(num_cpus=2)
    t_init = time.perf_counter() - t0
    cal_seq, cal_par = calibration(ray)
    shards = [train[0::2], train[1::2]]
    for first, delta in ((True, 0.0), (False, 0.0), (False, 1.0), (False, 3.0), (False, math.inf)):
        t0 = time.perf_counter()
        model, log = fit_ray(learner, shards, sync=DynamicAveraging(delta, period), metric=metrics.Accuracy(),
                             keep_workers=True)
        secs = time.perf_counter() - t0
        kind = " (periodic)" if delta == 0 else " (no sync)" if math.isinf(delta) else ""
        rows.append({"run": ("fit_ray, actors start" if first else "fit_ray, actors kept") + kind,
                     "workers": 2, "delta": "inf" if math.isinf(delta) else delta, "seconds": secs,
                     "speed-up": t_single / secs, "prequential acc": log.metric,
                     "held-out acc": held_out(model, test), "checks": log.checks, "violations": log.violations,
                     "syncs": log.syncs, "models sent": log.messages, "MB sent": log.bytes / 1e6})

    grid = {"lam": [1e-3, 1e-4], "eta0": [0.5, 1.0], "budget": [100, 300]}
    gdata = train[:n_grid]
    t0 = time.perf_counter()
    seq = tune_local(learner, grid, gdata, metric=metrics.Accuracy())
    t_seq = time.perf_counter() - t0
    t0 = time.perf_counter()
    par = tune_ray(learner, grid, gdata, metric=metrics.Accuracy())  # releases the kept actors first
    t_par = time.perf_counter() - t0
    t0 = time.perf_counter()
    par2 = tune_ray(learner, grid, gdata, metric=metrics.Accuracy())  # Ray reuses the task processes
    t_par2 = time.perf_counter() - t0
    same = [r["Accuracy"] for r in seq.table] == [r["Accuracy"] for r in par.table] == [
        r["Accuracy"] for r in par2.table]
    grid_rows = [{"run": "tune_local (one after another)", "candidates": 8, "examples": n_grid, "seconds": t_seq,
                  "speed-up": 1.0, "best": str(seq.best_params), "best acc": seq.best_score},
                 {"run": "tune_ray (2 CPUs), first call", "candidates": 8, "examples": n_grid, "seconds": t_par,
                  "speed-up": t_seq / t_par, "best": str(par.best_params), "best acc": par.best_score},
                 {"run": "tune_ray (2 CPUs), second call", "candidates": 8, "examples": n_grid, "seconds": t_par2,
                  "speed-up": t_seq / t_par2, "best": str(par2.best_params), "best acc": par2.best_score}]
    ray.shutdown()
    load_end = os.getloadavg()

    from _common import markdown_table

    notes = (f"Stream: river RandomRBF(seed_model=7, seed_sample=7, n_classes=3, n_features=10), {n} examples "
             f"for training, the next 5000 held out; ProximalMKLClassifier(budget={budget}); fit_ray checks "
             f"every {period} examples per worker.  ray.init(num_cpus=2): {t_init:.1f} s (not in the rows).  "
             f"Load average (1, 5, 15 min) at the start {tuple(round(v, 1) for v in load_start)}, at the end "
             f"{tuple(round(v, 1) for v in load_end)} on {os.cpu_count()} cores: other jobs shared them, so "
             "wall times and speed-ups are noisy.  What the machine offered: two runs of a pure-Python loop "
             f"took {cal_seq:.2f} s one after another and {cal_par:.2f} s as two Ray tasks at once "
             f"({cal_seq / cal_par:.2f}x, 2x on two free cores).\n\n"
             "fit_ray's seconds include shipping the shards, the synchronisations and the final merge; the "
             "first call also starts the 2 actors (a Python process each, importing onlinemkl and loading the "
             "compiled code from the cache); later calls reuse them (keep_workers=True).  A tune_ray call's "
             "first tasks start Ray's worker processes likewise; a second call reuses them.")
    name = "distributed_quick" if args.quick else "distributed"
    _, md = write_report(name, rows, title="Distributed learning: 2 Ray workers vs one learner; a grid on Ray",
                         notes=notes, extra={"ray_init_seconds": t_init, "calibration_seconds": [cal_seq, cal_par], "grid": grid_rows, "load_start": load_start,
                                             "load_end": load_end, "grid_tables_equal": same})
    section = (f"\n## Grid of 8 (lam x eta0 x budget), prequential on the first {n_grid} examples\n\n"
               f"The same table both ways: {same}.\n\n" + markdown_table(grid_rows))
    md.write_text(md.read_text() + section)
    print(section)


if __name__ == "__main__":
    main()
