"""The cost of the reliability guards: what do the lock, ``Guard`` and the server's feature check add?

The question: onlinemkl guards its users by default (RELIABILITY.md): every river method takes
the model's lock, ``onlinemkl.river.Guard`` can check every example at the head of a pipeline,
and the server checks each request's feature names against those the model learnt.  What does
each cost per example?  Each is compared against the same work without it, in the same run,
alternated so both see the same machine load:

* ``model lock``: river ``learn_one`` / ``predict_one`` with the model lock (what users get)
  against the same method's ``__wrapped__`` body on the same model (no lock).  The buffer is
  held at its budget, so every example costs the same;
* ``river Guard``: one prequential pass (``predict_proba_one`` then ``learn_one``) over river's
  Phishing stream through ``StandardScaler() | OBSCUREClassifier(budget=200)``, with and without
  ``Guard()`` in front (CPU seconds); ``alone_us`` is the Guard's own checks per example;
* ``feature check``: prediction requests (JSON lines) through ``ModelServer.handle_line`` (parse,
  check, predict, reply; no socket) with the check on (the default) and off
  (``--allow-feature-mismatch``), a ``StandardScaler | OBSCUREClassifier(budget=500)`` that
  learnt 2000 examples of ``d`` features; ``alone_us`` is ``FeatureCheck.message`` alone.

How to read the report: ``with_us`` / ``without_us`` are microseconds per call, best of the
alternated blocks; ``ratio`` = with / without (1.0 = free).  On a shared machine a ratio moves
between runs by more than a cheap guard costs; ``alone_us`` is then the better measure.

The cost of hostile input itself (zip bombs, floods, oversized lines) is ``bench_abuse.py``'s.

Run time on a shared 2-core machine: about 2 minutes; ``--quick`` about 30 seconds.

Usage::

    python benchmarks/bench_reliability.py [--quick]   # -> benchmarks/results/reliability.{json,md} (.quick.*)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import quick_args, time_per_call, write_report  # noqa: E402


def stream(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return [({f"f{j}": float(v) for j, v in enumerate(row)}, int(t)) for row, t in zip(X, y)]


def alternate(fn_a, fn_b, rows, block, rounds):
    """Best per-call seconds of ``fn_a`` and ``fn_b`` over alternating blocks of ``block`` rows."""
    best = [np.inf, np.inf]
    pos = 0
    for _ in range(rounds):
        for k, fn in enumerate((fn_a, fn_b)):
            part = [rows[(pos + i) % len(rows)] for i in range(block)]
            pos += block
            t0 = time.perf_counter()
            for x, y in part:
                fn(x, y)
            best[k] = min(best[k], (time.perf_counter() - t0) / block)
    return best


def bench_lock(quick):
    """The model lock: each river method through its public, locked entry against its
    ``__wrapped__`` body on the same model, blocks alternated."""
    from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier

    import timeit

    from onlinemkl._sync import synchronized

    class Plain:
        def call(self, x, y):
            return None

    class Locked:
        call = synchronized(Plain.call)

    n = 20_000 if quick else 200_000
    p, lk = Plain(), Locked()
    t_plain = min(timeit.repeat(lambda: p.call(1, 2), number=n, repeat=7)) / n
    t_lock = min(timeit.repeat(lambda: lk.call(1, 2), number=n, repeat=7)) / n
    rows = [{"guard": "model lock", "case": "an empty method (the lock alone)", "with_us": t_lock * 1e6,
             "without_us": t_plain * 1e6, "ratio": t_lock / t_plain}]
    block, rounds = (200, 3) if quick else (1000, 9)
    for name, make in (("OBSCUREClassifier", OBSCUREClassifier), ("ProximalMKLClassifier", ProximalMKLClassifier)):
        for d, budget in ((4, 50), (16, 200)):
            data = stream(4000, d, seed=d)
            m = make(budget=budget)
            for x, y in data[: budget * 3]:  # fill the buffer past the budget
                m.learn_one(x, y)
            raw_learn = type(m).learn_one.__wrapped__
            raw_predict = type(m).predict_one.__wrapped__
            lk, un = alternate(lambda x, y: m.learn_one(x, y), lambda x, y: raw_learn(m, x, y), data, block, rounds)
            rows.append({"guard": "model lock", "case": f"{name}.learn_one, d={d}, budget={budget}",
                         "with_us": lk * 1e6, "without_us": un * 1e6, "ratio": lk / un})
            lk, un = alternate(lambda x, y: m.predict_one(x), lambda x, y: raw_predict(m, x), data, block, rounds)
            rows.append({"guard": "model lock", "case": f"{name}.predict_one, d={d}, budget={budget}",
                         "with_us": lk * 1e6, "without_us": un * 1e6, "ratio": lk / un})
    return rows


def bench_guard(quick):
    """``Guard()`` at the head of the default pipeline over Phishing, alternated passes (CPU time)."""
    from river import datasets, preprocessing

    from onlinemkl.river import Guard, OBSCUREClassifier

    def one_pass(data, guard):
        model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=200)
        if guard:
            model = Guard() | model
        t = time.process_time()
        for x, y in data:
            model.predict_proba_one(x)
            model.learn_one(x, y)
        return time.process_time() - t

    data = list(datasets.Phishing())
    one_pass(data, False), one_pass(data, True)  # compile, warm caches
    plain = guarded = np.inf
    for _ in range(3 if quick else 7):
        plain = min(plain, one_pass(data, False))
        guarded = min(guarded, one_pass(data, True))
    g = Guard()
    reps = 5 if quick else 20
    t = time.process_time()
    for _ in range(reps):
        for x, _ in data:
            g.transform_one(x)
            g.learn_one(x)
            g.transform_one(x)
    alone = (time.process_time() - t) / (reps * len(data))
    n = len(data)
    return [{"guard": "river Guard", "case": f"Phishing pass ({n} examples), StandardScaler | OBSCURE(budget=200)",
             "with_us": guarded / n * 1e6, "without_us": plain / n * 1e6, "ratio": guarded / plain,
             "alone_us": alone * 1e6}]


def bench_feature_check(quick):
    """The server's feature-name check on prediction requests, on and off, interleaved trials."""
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier
    from onlinemkl.serve import ModelServer

    repeat = 5 if quick else 21
    rows = []
    for d in (10, 100) if quick else (10, 100, 1000):
        rng = np.random.default_rng(d)
        names = [f"f{i}" for i in range(d)]
        model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=500)
        for _ in range(2000):
            v = rng.normal(size=d)
            model.learn_one(dict(zip(names, v.tolist())), "a" if v[0] + v[1] > 0 else "b")
        lines = [json.dumps({"x": dict(zip(names, rng.normal(size=d).tolist()))}).encode() for _ in range(50)]
        srv = ModelServer(model, port=0, log=None)
        try:
            def answer_all():
                for line in lines:
                    srv.handle_line(line)

            check = srv.feature_check
            assert "prediction" in srv.handle_line(lines[0])
            t_on = t_off = np.inf
            for _ in range(repeat):  # interleaved, so that a busy spell of the machine hits both
                srv.feature_check = check
                t_on = min(t_on, time_per_call(answer_all, 1) / len(lines))
                srv.feature_check = None
                t_off = min(t_off, time_per_call(answer_all, 1) / len(lines))
            xs = [json.loads(line)["x"] for line in lines]
            t_check = time_per_call(lambda: [check.message(x) for x in xs], repeat) / len(lines)
        finally:
            srv.shutdown(timeout=5)
        rows.append({"guard": "feature check", "case": f"server prediction request, d={d}, 500 stored",
                     "with_us": t_on * 1e6, "without_us": t_off * 1e6, "ratio": t_on / t_off,
                     "alone_us": t_check * 1e6})
    return rows


def main(argv=None):
    args = quick_args(argv, __doc__, "fewer calls, rounds and feature counts (a smoke run)")
    rows = bench_lock(args.quick) + bench_guard(args.quick) + bench_feature_check(args.quick)
    write_report("reliability", rows, columns=["guard", "case", "with_us", "without_us", "ratio", "alone_us"],
                 title="The cost of the reliability guards per call", quick=args.quick,
                 notes="Microseconds per call with the guard (`with_us`, what users get) and without it "
                       "(`without_us`), best of blocks alternated in one run; `ratio` = with / without; "
                       "`alone_us`: the guard's own work measured alone.  Model lock: the public river method "
                       "against its `__wrapped__` body on the same model.  river Guard: `Guard() |` in front of "
                       "the pipeline, CPU time of a prequential pass.  Feature check: "
                       "`ModelServer.handle_line` with the check on and off (`--allow-feature-mismatch`).  "
                       "Command: `python benchmarks/bench_reliability.py`.")


if __name__ == "__main__":
    main()
