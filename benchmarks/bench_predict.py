"""Prediction throughput: how many examples per second does a trained model score?

The question: how fast does a model holding ``10^4`` stored examples predict, one example at a
time (``predict_one``) and in batches (``predict_many`` / ``decision_function``), and from how
many stored examples does the multi-threaded kernel pass pay off?  Compared against the
per-example compiled loop (for the batch path) and the serial pass (for the threaded one).
How to read the report: ``Batch vs per-example`` gives microseconds per example both ways and
the speed-up (target >= 5x); ``Serial vs parallel kernel row`` gives, per ``n`` stored rows and
``d`` features, the serial over parallel time (> 1: threads win); the crossover line under the
title says where the library's ``PARALLEL_MIN_ROWS`` sits against it.

1. ``batch``: an OBSCURE engine holding ``n = 10^4`` stored examples (5 default kernels,
   3 classes) scores ``Q`` queries (a) one at a time through the compiled per-example pass
   (``ObscureEngine.scores_one``, what ``predict_one`` runs) and (b) at once through the BLAS
   path (``scores_many``: what ``decision_function`` / ``predict_many`` run).  Also at the
   river level: ``predict_one`` in a loop vs ``predict_many`` on a DataFrame.  Reported:
   microseconds per example and the speed-up (target >= 5x).
2. ``parallel``: ``kernel_row`` (serial, blocked) vs ``kernel_row_parallel`` (prange over
   blocks) and, as ``learn`` uses them, the fused serial score pass ``kernel_scores`` vs the
   same over threads, ``kernel_scores_parallel`` (``learn``'s parallel path for up to
   ``DENSE_OUTPUTS`` classes), and vs ``kernel_row_parallel + accumulate_scores`` (its path
   past that, and the only one before: ``krow_speedup``), over ``n``, best and median of
   ``repeat`` calls.  ``PARALLEL_MIN_ROWS`` in ``onlinemkl/_config.py`` is set from this table run
   twice, on an idle machine and on a busy one (the crossover moves from ~300 rows to
   ~10^5 rows, because waking a worker thread costs milliseconds when the other core is
   busy): the threshold is where the loss on a busy machine stays small (see _config.py).

Single-thread BLAS for (1); Numba threads = all cores for (2).

Run time on a shared 2-core machine: about 5 minutes; ``--quick`` about 1.

Usage::

    python benchmarks/bench_predict.py [--quick]   # -> benchmarks/results/predict.{json,md} (.quick.* with --quick)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_time, crossover, obscure_engine, prepared_query, markdown_table, quick_args, single_thread_blas, write_report  # noqa: E402

from onlinemkl import _config  # noqa: E402
from onlinemkl._core import kernels as ck  # noqa: E402
from onlinemkl._core import scores as cs  # noqa: E402
from onlinemkl._core.state import Rows  # noqa: E402
from onlinemkl.kernels import default_kernels  # noqa: E402

N_CLASSES = 3


def filled_engine(n, d, seed=0):
    """An engine whose buffer holds ``n`` random stored examples (filled directly)."""
    ks = default_kernels()
    rng = np.random.default_rng(seed)
    eng = obscure_engine(ks, N_CLASSES, n, d, None, rng)
    b = eng.buf
    b.coef[:n, 0] = rng.normal(size=n) * 0.01
    b.ypos[:n] = rng.integers(0, N_CLASSES, size=n)
    b.yneg[:n] = (b.ypos[:n] + 1 + rng.integers(0, N_CLASSES - 1, size=n)) % N_CLASSES
    eng.istate[0] = n
    eng.theta_sq[:] = rng.random(len(ks)) + 0.5
    return eng


def batch_rows(n, dims, Q):
    rows = []
    for d in dims:
        eng = filled_engine(n, d)
        X = np.random.default_rng(1).normal(size=(Q, d))
        eng.scores_one(X[0].copy())
        eng.scores_many(X[:4])
        t_loop = best_time(lambda: [eng.scores_one(X[a]) for a in range(Q)], repeat=3) / Q
        t_batch = best_time(lambda: eng.scores_many(X), repeat=3) / Q
        loop = np.array([eng.scores_one(X[a]) for a in range(Q)])
        err = float(np.max(np.abs(loop - eng.scores_many(X))) / max(1e-300, np.max(np.abs(loop))))
        rows.append({"level": "engine", "n": n, "d": d, "queries": Q, "loop_us": t_loop * 1e6,
                     "batch_us": t_batch * 1e6, "speedup": t_loop / t_batch, "max_rel_diff": err})
        print(rows[-1], flush=True)
        # river level: same buffer behind the adapter
        import pandas as pd

        from onlinemkl.river import OBSCUREClassifier

        m = OBSCUREClassifier()
        names = [f"f{j}" for j in range(d)]
        for lab in range(N_CLASSES):
            m.learn_one(dict(zip(names, X[lab].tolist())), lab)
        m._engine = eng
        dicts = [dict(zip(names, X[a].tolist())) for a in range(Q)]
        df = pd.DataFrame(dicts)
        t_loop = best_time(lambda: [m.predict_one(x) for x in dicts], repeat=3) / Q
        t_batch = best_time(lambda: m.predict_many(df), repeat=3) / Q
        same = float(np.mean(np.array(list(m.predict_many(df))) == np.array([m.predict_one(x) for x in dicts])))
        rows.append({"level": "river", "n": n, "d": d, "queries": Q, "loop_us": t_loop * 1e6,
                     "batch_us": t_batch * 1e6, "speedup": t_loop / t_batch, "max_rel_diff": 1.0 - same})
        print(rows[-1], flush=True)
    return rows


def _timings(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), float(np.median(ts))


def parallel_rows(ns, dims, repeat):
    rows = []
    for d in dims:
        for n in ns:
            eng = filled_engine(n, d)
            b = eng.buf
            x = np.random.default_rng(2).normal(size=d)
            spec, q = prepared_query(eng, x)
            F = eng.ck.n_kernels
            out = np.empty((F, n))
            g = np.zeros((F, N_CLASSES))
            args = (q, Rows(b.S, b.ssq, b.sdiag_t), n, spec)

            def row_s():
                ck.kernel_row(*args, out)

            def row_p():
                ck.kernel_row_parallel(*args, out)

            def learn_s():
                cs.kernel_scores(*args, b.coef, b.ypos, b.yneg, g)

            def learn_p():
                cs.kernel_scores_parallel(*args, b.coef, b.ypos, b.yneg, g)

            def learn_k():
                ck.kernel_row_parallel(*args, out)
                cs.accumulate_scores(out, n, b.coef, b.ypos, b.yneg, g)

            for f in (row_s, row_p, learn_s, learn_p, learn_k):
                f()
            rs_min, rs_med = _timings(row_s, repeat)
            rp_min, rp_med = _timings(row_p, repeat)
            ls_min, ls_med = _timings(learn_s, repeat)
            lp_min, lp_med = _timings(learn_p, repeat)
            lk_min, lk_med = _timings(learn_k, repeat)
            rows.append({"n": n, "d": d, "threads": numba.get_num_threads(), "row_serial_us": rs_min * 1e6,
                         "row_speedup_min": rs_min / rp_min, "row_speedup_med": rs_med / rp_med,
                         "scores_serial_us": ls_min * 1e6, "learn_speedup_min": ls_min / lp_min,
                         "learn_speedup_med": ls_med / lp_med, "krow_speedup_med": ls_med / lk_med})
            print(rows[-1], flush=True)
    return rows


def main(argv=None):
    args = quick_args(argv, __doc__)
    n_batch = 10_000
    Q = 500 if args.quick else 2000
    ns = [3_000, 10_000, 30_000, 100_000] if args.quick else [3_000, 10_000, 30_000, 100_000, 300_000]
    repeat = 7 if args.quick else 15
    with single_thread_blas():
        brows = batch_rows(n_batch, (16, 128), Q)
    prows = parallel_rows(ns, (16, 128), repeat)
    cross = {"row_med": crossover(prows, "row_speedup_med"), "learn_med": crossover(prows, "learn_speedup_med"),
             "learn_min": crossover(prows, "learn_speedup_min")}
    notes = (__doc__.split("\n\n")[1] + "\n\n" + __doc__.split("\n\n")[2] + "\n\n" + __doc__.split("\n\n")[3] + "\n\n"
             f"Library threshold now: PARALLEL_MIN_ROWS = {_config.PARALLEL_MIN_ROWS}.  Measured crossovers "
             f"(smallest n from which parallel wins at every larger n; None = serial wins at the largest n): {cross}.\n\n"
             "## Batch vs per-example (n = 10^4 stored examples)\n\n" + markdown_table(brows)
             + "\n## Serial vs parallel kernel row\n")
    write_report("predict", prows, title="Prediction throughput: batch against per-example, serial against parallel",
                 notes=notes, extra={"batch": brows, "crossover": cross}, quick=args.quick)


if __name__ == "__main__":
    main()
