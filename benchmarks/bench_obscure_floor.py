"""OBSCURE per-example cost against the memory floor, the serial/parallel crossover, river overhead.

Three tables, all ratios measured in the same run (DESIGN.md, performance model):

1. ``floor``: for ``n`` stored examples of ``d`` features and the 5-kernel default set
   (3 RBF + linear + quadratic, all on one feature group), the time of

   * ``row``        -- the pure kernel-row pass (``kernel_row``, serial, F x n values written),
   * ``scores``     -- the fused score pass (``ObscureEngine.scores_one``: prediction, no update),
   * ``learn``      -- ``ObscureEngine.learn`` with an update appended (no budget),
   * ``learn_evict``-- ``ObscureEngine.learn`` at a full budget of ``n`` (update + eviction),
   * ``partial_fit``-- ``OBSCUREClassifier.partial_fit`` on one row (validation + learn),

   each divided by ``memory_floor(S[:n, :d])``, the time to stream the stored rows once.
   Every timed call is made to update (the label is the lowest-scoring class), so the
   numbers are the worst case per example.
2. ``crossover``: serial ``kernel_row`` vs ``kernel_row_parallel`` and, at the engine
   level, ``learn`` through the fused serial pass vs through the parallel row
   (``PARALLEL_MIN_ROWS`` forced to 0 / infinity), over ``n``.
3. ``river``: microseconds per example of the river adapter (dict in) over the array
   engine (``ObscureEngine.learn`` / ``scores_one``) on the same stream.

Usage::

    NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_obscure_floor.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import crossover, obscure_engine, prepared_query, memory_floor, quick_args, time_per_call, write_report  # noqa: E402

from onlinemkl import OBSCUREClassifier, _config  # noqa: E402
from onlinemkl._core import kernels as ck  # noqa: E402
from onlinemkl._core import obscure as co  # noqa: E402
from onlinemkl._core.state import Query, Rows  # noqa: E402
from onlinemkl.kernels import RBF, Linear, Polynomial  # noqa: E402
from onlinemkl.engines.obscure import ObscureEngine, default_p  # noqa: E402

KERNELS = (RBF(gamma_scale=0.1), RBF(gamma_scale=1.0), RBF(gamma_scale=10.0), Linear(), Polynomial(degree=2))
N_CLASSES = 3


def build_engine(n, d, budget=None, seed=0):
    """An engine whose buffer already holds ``n`` random stored examples (filled directly)."""
    rng = np.random.default_rng(seed)
    eng = obscure_engine(KERNELS, N_CLASSES, n, d, budget, rng)
    b = eng.buf
    b.ypos[:n] = rng.integers(0, N_CLASSES, n)
    b.yneg[:n] = (b.ypos[:n] + 1 + rng.integers(0, N_CLASSES - 1, n)) % N_CLASSES
    b.coef[:n, 0] = 1e-2 * rng.normal(size=n)
    b.tstamp[:n] = np.arange(n)
    eng.istate[co.I_N] = n
    eng.istate[co.I_CLOCK] = n
    eng.theta_sq[:] = 1.0 + rng.random(len(KERNELS))
    return eng


def learn_timer(eng, x, n, reset):
    """A call of ``eng.learn`` that always updates; ``reset`` puts the buffer back to ``n`` rows."""
    y = int(np.argmin(eng.scores_one(x)))

    def fn():
        eng.learn(x, y)
        if reset:
            eng.istate[co.I_N] = n

    return fn


def floor_table(ns, ds, repeat):
    rows = []
    for d in ds:
        for n in ns:
            eng = build_engine(n, d)
            b = eng.buf
            x = np.random.default_rng(1).normal(size=d)
            floor = memory_floor(b.S[:n, :d], repeat=repeat)
            # The whole stored buffer (rows, group norms, diagonals, coefficients, classes, time
            # stamps), and the part of it this pass reads (the diagonals only for normalised
            # kernels; none here), each as one streaming read of as many bytes.
            def nbytes(arrays):
                return sum(a[:n].nbytes if a.ndim == 1 else a[:n, :(d if a is b.S else a.shape[1])].nbytes
                           for a in arrays)

            normalised = bool(np.any(eng.ck.params[:, 3] != 0.0))
            floor_buf = memory_floor(np.ones(nbytes((b.S, b.ssq, b.sdiag_t, b.coef, b.ypos, b.yneg, b.tstamp)) // 8),
                                     repeat=repeat)
            read = (b.S, b.ssq, b.coef, b.ypos, b.yneg) + ((b.sdiag_t,) if normalised else ())
            floor_pass = memory_floor(np.ones(nbytes(read) // 8), repeat=repeat)
            spec = eng.ck.spec()
            q = Query(x, np.empty(eng.ck.n_groups), np.empty(eng.ck.n_kernels))
            rows_ = Rows(b.S, b.ssq, b.sdiag_t)
            out = np.empty((eng.ck.n_kernels, n))

            def row():
                ck.prepare_query(x, spec, q.xsq, q.xdiag)
                ck.kernel_row(q, rows_, n, spec, out)

            _config.PARALLEL_MIN_ROWS, saved = 10**12, _config.PARALLEL_MIN_ROWS
            try:
                t_row = time_per_call(row, repeat)
                t_scores = time_per_call(lambda: eng.scores_one(x), repeat)
                t_learn = time_per_call(learn_timer(eng, x, n, reset=True), repeat)
                ev = build_engine(n, d, budget=n)
                t_evict = time_per_call(learn_timer(ev, x, n, reset=False), repeat)
                del ev
                clf = OBSCUREClassifier(kernels=KERNELS, switch_after=None)
                clf.partial_fit(np.zeros((1, d)), [0], classes=list(range(N_CLASSES)))
                clf._engine = eng
                X1 = x[None, :].copy()
                y1 = [int(np.argmin(eng.scores_one(x)))]

                def pf():
                    clf.partial_fit(X1, y1)
                    eng.istate[co.I_N] = n

                t_pf = time_per_call(pf, repeat)
            finally:
                _config.PARALLEL_MIN_ROWS = saved
            rows.append({
                "n": n, "d": d, "F": len(KERNELS), "floor_us": floor * 1e6,
                "row_us": t_row * 1e6, "row/floor": t_row / floor,
                "scores/floor": t_scores / floor,
                "learn_us": t_learn * 1e6, "learn/floor": t_learn / floor,
                "buffer_floor_us": floor_buf * 1e6, "learn/buffer_floor": t_learn / floor_buf,
                "pass_floor_us": floor_pass * 1e6, "learn/pass_floor": t_learn / floor_pass,
                "learn_evict/floor": t_evict / floor,
                "partial_fit/floor": t_pf / floor,
            })
            print(rows[-1], flush=True)
    return rows


def per_call_samples(fn, k):
    """Wall time of ``k`` single calls (min shows the uncontended speed, median the typical one)."""
    fn()
    ts = np.empty(k)
    for r in range(k):
        t0 = time.perf_counter()
        fn()
        ts[r] = time.perf_counter() - t0
    return ts


def crossover_table(ns, ds, repeat):
    rows = []
    k = 5 * repeat
    for d in ds:
        for n in ns:
            eng = build_engine(n, d)
            b = eng.buf
            x = np.random.default_rng(2).normal(size=d)
            spec, q = prepared_query(eng, x)
            out = np.empty((eng.ck.n_kernels, n))
            args = (q, Rows(b.S, b.ssq, b.sdiag_t), n, spec, out)
            t_ser = per_call_samples(lambda: ck.kernel_row(*args), k)
            ref = out.copy()
            t_par = per_call_samples(lambda: ck.kernel_row_parallel(*args), k)
            np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
            saved = _config.PARALLEL_MIN_ROWS
            try:
                _config.PARALLEL_MIN_ROWS = 10**12
                t_lser = per_call_samples(learn_timer(eng, x, n, reset=True), k)
                _config.PARALLEL_MIN_ROWS = 0
                t_lpar = per_call_samples(learn_timer(eng, x, n, reset=True), k)
            finally:
                _config.PARALLEL_MIN_ROWS = saved
            mn, md = np.min, np.median
            rows.append({"n": n, "d": d, "threads": numba.get_num_threads(),
                         "row_serial_us": mn(t_ser) * 1e6,
                         "row_par_min_us": mn(t_par) * 1e6, "row_par_med_us": md(t_par) * 1e6,
                         "row_speedup_min": mn(t_ser) / mn(t_par), "row_speedup_med": md(t_ser) / md(t_par),
                         "learn_serial_us": mn(t_lser) * 1e6,
                         "learn_speedup_min": mn(t_lser) / mn(t_lpar), "learn_speedup_med": md(t_lser) / md(t_lpar)})
            print(rows[-1], flush=True)
    return rows


def river_table(n_examples, d, budget, repeat):
    import onlinemkl.river

    rng = np.random.default_rng(3)
    X = rng.normal(size=(n_examples, d))
    y = (np.floor(X[:, 0] * 2 + rng.normal(size=n_examples)) % N_CLASSES).astype(int)
    names = [f"f{j}" for j in range(d)]
    dicts = [dict(zip(names, row.tolist())) for row in X]
    rows = []

    def warm_models():
        rm = onlinemkl.river.OBSCUREClassifier(kernels=KERNELS, budget=budget, switch_after=None)
        eng = ObscureEngine(KERNELS, default_p(len(KERNELS)), None, None, budget, "oldest", False, False)
        eng.set_features(d)
        eng.set_n_classes(N_CLASSES)
        for i in range(budget * 2):  # fill the buffer: both run at the budget from here on
            rm.learn_one(dicts[i], int(y[i]))
            eng.learn(X[i], int(y[i]))
        return rm, eng

    start = budget * 2
    idx = range(start, n_examples)

    def learn_river():
        rm, _ = warm_models()
        t0 = time.perf_counter()
        for i in idx:
            rm.learn_one(dicts[i], int(y[i]))
        return (time.perf_counter() - t0) / len(idx)

    def learn_engine():
        _, eng = warm_models()
        t0 = time.perf_counter()
        for i in idx:
            eng.learn(X[i], int(y[i]))
        return (time.perf_counter() - t0) / len(idx)

    rm, eng = warm_models()

    def predict_river():
        t0 = time.perf_counter()
        for i in idx:
            rm.predict_one(dicts[i])
        return (time.perf_counter() - t0) / len(idx)

    def predict_engine():
        t0 = time.perf_counter()
        for i in idx:
            eng.scores_one(X[i])
        return (time.perf_counter() - t0) / len(idx)

    t_lr = min(learn_river() for _ in range(repeat))
    t_le = min(learn_engine() for _ in range(repeat))
    t_pr = min(predict_river() for _ in range(repeat))
    t_pe = min(predict_engine() for _ in range(repeat))
    rows.append({"op": "learn_one", "d": d, "budget": budget, "river_us": t_lr * 1e6, "engine_us": t_le * 1e6,
                 "overhead_us": (t_lr - t_le) * 1e6, "ratio": t_lr / t_le})
    rows.append({"op": "predict_one", "d": d, "budget": budget, "river_us": t_pr * 1e6, "engine_us": t_pe * 1e6,
                 "overhead_us": (t_pr - t_pe) * 1e6, "ratio": t_pr / t_pe})
    for r in rows:
        print(r, flush=True)
    return rows


def main(argv=None):
    args = quick_args(argv, __doc__, "small sizes, few repeats (a smoke run)")
    if args.quick:
        ns, ds, repeat = [1_000, 10_000], [16], 3
        cross_ns = [1_000, 10_000, 30_000]
        river = (1500, 16, 100)
    else:
        ns, ds, repeat = [1_000, 10_000, 100_000], [16, 128], 5
        cross_ns = [300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000]
        river = (4000, 16, 200)
    # warm up every compiled path once
    build_engine(50, 4).scores_one(np.zeros(4))
    # Limit BLAS only: threadpoolctl's default also limits the OpenMP runtime that Numba's
    # 'omp' threading layer uses, which serialises (and slows) every prange loop.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        floor_rows = floor_table(ns, ds, repeat)
        cross_rows = crossover_table(cross_ns, ds, repeat)
        river_rows = river_table(*river, repeat=3)
    suffix = "_quick" if args.quick else ""
    row_cross = crossover(cross_rows, "row_speedup_med")
    learn_cross = crossover(cross_rows, "learn_speedup_med")
    learn_cross_min = crossover(cross_rows, "learn_speedup_min")
    write_report(
        "obscure_floor" + suffix, floor_rows,
        title="OBSCURE per-example time / memory floor (5 kernels on one group, every call updates)",
        notes=("floor = memory_floor(S[:n, :d]): one streaming read of the stored rows. "
               "buffer_floor: one streaming read of as many bytes as the whole stored buffer (rows, group "
               "norms, diagonals, coefficients, classes, time stamps); pass_floor: as many bytes as the arrays "
               "this pass reads (the same without the diagonals, which only normalised kernels read, "
               "and the time stamps). "
               "row: kernel_row (serial); scores: ObscureEngine.scores_one; learn: ObscureEngine.learn with an append; "
               "learn_evict: learn at a full budget (update + eviction); partial_fit: one row through the "
               "sklearn API. Serial path forced (PARALLEL_MIN_ROWS = inf)."),
        extra={"wall_seconds": time.perf_counter() - t0})
    write_report(
        "obscure_parallel_crossover" + suffix, cross_rows,
        title="Serial vs parallel kernel row, and learn through each path",
        notes=(f"library threshold PARALLEL_MIN_ROWS = {_config.PARALLEL_MIN_ROWS}. "
               f"Measured crossover (smallest n from which parallel wins at every larger n): "
               f"median times: kernel row {row_cross}, learn {learn_cross}; best-case (min) times: learn "
               f"{learn_cross_min} (per d; None: serial wins somewhere at the largest n). "
               "min = uncontended speed, med = typical."),
        columns=["n", "d", "threads", "row_serial_us", "row_par_min_us", "row_par_med_us", "row_speedup_min",
                 "row_speedup_med", "learn_serial_us",
                 "learn_speedup_min", "learn_speedup_med"],
        extra={"crossover_row_median": row_cross, "crossover_learn_median": learn_cross,
               "crossover_learn_min": learn_cross_min})
    write_report(
        "obscure_river_overhead" + suffix, river_rows,
        title="river adapter overhead per example over the array engine",
        notes="Same stream, buffer held at the budget; overhead = river - engine (microseconds per example).")


if __name__ == "__main__":
    main()
