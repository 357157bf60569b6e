"""Online proximal MKL: per-example cost against the memory floor, and river streams.

Two tables, ratios measured in the same run (DESIGN.md, performance model):

1. ``proximal_floor``: for ``n`` stored examples of ``d`` features, 3 outputs (Crammer-Singer
   hinge, squared l2,1) and the 5-kernel default set (3 RBF + normalised linear + normalised
   quadratic, all on one feature group), the time of

   * ``scores``     -- ``fobos_scores`` (the prediction pass, no update),
   * ``learn``      -- ``ProximalEngine.learn`` with an update appended (no budget; the buffer
     is reset to ``n`` rows before each call),
   * ``learn_evict``-- ``ProximalEngine.learn`` at a full budget of ``n`` (update + eviction;
     taking the evicted example out of the group norms needs a second pass over the buffer),

   each divided by ``memory_floor(S[:n, :d])``, the time to stream the stored rows once.
   Every timed call updates (scores are tiny, so the margin is always violated): the
   worst case per example.
2. ``proximal_streams``: prequential (predict, then learn) accuracy and throughput of
   ``StandardScaler() | onlinemkl.river.ProximalMKLClassifier(...)`` on river's bundled
   streams Phishing, Bananas, ImageSegments and Shuttle (Shuttle capped at 20,000 of its
   49,097 examples; all streams capped at 2,000 with ``--quick``), without a budget and with
   budgets of 500 and 100 (oldest-first eviction).

Usage::

    NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_proximal.py [--quick]
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import calls_for, fill_rows, memory_floor, quick_args, time_per_call, write_report  # noqa: E402

from onlinemkl._core import fobos as cf  # noqa: E402
from onlinemkl.kernels import default_kernels  # noqa: E402
from onlinemkl.proximal import ProximalMKLClassifier  # noqa: E402

N_OUT = 3


def build_engine(n, d, budget=None, seed=0):
    """A multiclass engine whose buffer already holds ``n`` random stored examples (filled directly)."""
    est = ProximalMKLClassifier(kernels=default_kernels(), regularizer="sq_l21", lam=1e-4, budget=budget)
    eng = est._new_engine(np.arange(N_OUT))
    eng.set_features(d)
    eng._ensure_rows(n + 1)
    rng = np.random.default_rng(seed)
    b = fill_rows(eng, n, d, rng)
    F = eng.n_kernels
    b.coef[:n] = 1e-4 * rng.random((n, F))
    eng.beta[:n, :N_OUT] = rng.normal(size=(n, N_OUT))
    b.tstamp[:n] = np.arange(n)
    eng.istate[cf.I_N] = n
    eng.istate[cf.I_T] = n
    eng.theta_sq[:F] = eng.recompute_theta_sq()[:F] if n <= 2000 else 1.0
    return eng


def time_evicting_learn(ev, x, n, repeat):
    """Best mean time of ``learn`` at a full budget; the label is the lowest-scoring class (chosen
    outside the timed region), so that every call is a margin error (update + eviction)."""
    reps = None
    best = np.inf
    for _ in range(repeat + 1):
        total, count = 0.0, 0
        while count < (reps or 3):
            label = int(np.argmin(ev.scores_one(x)))
            t0 = time.perf_counter()
            out = ev.learn(x, label)
            total += time.perf_counter() - t0
            count += 1
            assert out[2] and ev.n_support == n
        if reps is None:
            reps = calls_for(total / count)
            continue
        best = min(best, total / count)
    return best


def floor_table(sizes, dims, repeat):
    rows = []
    for d in dims:
        for n in sizes:
            rng = np.random.default_rng(1)
            x = rng.normal(size=d)
            eng = build_engine(n, d)
            floor = memory_floor(eng.buf.S[:n, :d], repeat=repeat)
            buf, spec, xg, _, scratch = eng._build_records()

            def scores():
                cf.fobos_scores(x, buf, spec, xg, eng.sigma, n, N_OUT, scratch)

            def learn():
                eng.istate[cf.I_N] = n
                out = eng.learn(x, 0)
                assert out[2]

            t_scores = time_per_call(scores, repeat)
            t_learn = time_per_call(learn, repeat)
            ev = build_engine(n, d, budget=n)
            t_evict = time_evicting_learn(ev, x, n, repeat)
            rows.append({"n": n, "d": d, "floor_us": floor * 1e6, "scores_us": t_scores * 1e6,
                         "learn_us": t_learn * 1e6, "learn_evict_us": t_evict * 1e6,
                         "scores_x_floor": t_scores / floor, "learn_x_floor": t_learn / floor,
                         "learn_evict_x_floor": t_evict / floor})
            print(rows[-1], flush=True)
    return rows


def stream_table(cap, budgets):
    from river import datasets, metrics, preprocessing

    from onlinemkl.river import ProximalMKLClassifier as RiverProximal

    rows = []
    for name, limit in (("Phishing", None), ("Bananas", None), ("ImageSegments", None), ("Shuttle", 20000)):
        ds = getattr(datasets, name)()
        n_max = ds.n_samples if limit is None else min(limit, ds.n_samples)
        if cap is not None:
            n_max = min(n_max, cap)
        data = list(itertools.islice(ds, n_max))
        for b in budgets:
            model = preprocessing.StandardScaler() | RiverProximal(budget=b)
            metric = metrics.Accuracy()
            t0 = time.perf_counter()
            for x, y in data:
                yp = model.predict_one(x)
                if yp is not None:  # river's convention: no score before the first label
                    metric.update(y, yp)
                model.learn_one(x, y)
            dt = time.perf_counter() - t0
            learner = model.steps[list(model.steps)[-1]]
            rows.append({"stream": name, "examples": n_max, "budget": "none" if b is None else b,
                         "accuracy": metric.get(), "examples_per_s": n_max / dt, "seconds": dt,
                         "n_support": learner.n_support_})
            print(rows[-1], flush=True)
    return rows


def main(argv=None):
    args = quick_args(argv, __doc__, "n up to 1e4, streams capped at 2,000 examples")
    sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
    repeat = 3 if args.quick else 5
    suffix = "_quick" if args.quick else ""
    # warm up the compiled functions
    eng = build_engine(50, 16)
    eng.learn(np.zeros(16), 0)
    rows = floor_table(sizes, [16, 128], repeat)
    write_report(f"proximal_floor{suffix}", rows, title="Online proximal MKL: per-example cost vs the memory floor",
                 notes="5 kernels (default set) on one feature group, 3 outputs, squared l2,1; times in "
                       "microseconds per example; `*_x_floor` = time / time to read the n x d buffer once.")
    srows = stream_table(2000 if args.quick else None, budgets=(None, 500, 100))
    write_report(f"proximal_streams{suffix}", srows, title="Online proximal MKL on river streams",
                 notes="StandardScaler() | onlinemkl.river.ProximalMKLClassifier(budget=...), default parameters "
                       "(hinge, squared l2,1, lam=1e-4, eta0/sqrt(t)); prequential accuracy (predict then "
                       "learn); Shuttle capped at 20,000 of 49,097 examples"
                       + ("; --quick: every stream capped at 2,000" if args.quick else "") + ".")


if __name__ == "__main__":
    main()
