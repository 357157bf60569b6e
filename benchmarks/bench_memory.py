"""Memory on an endless stream: does a learner with a budget stay flat in memory?

The question: can a user leave a learner running on an endless stream?  With ``budget=`` the
resident set should stop growing once the buffer is full; without one it grows with every stored
example (the comparison).  How to read the report: in ``Summary``, ``rss_change_after_10k_mib``
(resident-set growth after the first 10^4 examples) should be about 0 for every budgeted model,
and ``buffer_final_kib`` stays at the budget's size; ``Checkpoints`` gives the curve.

A synthetic stream (generated on the fly, never stored: 3 Gaussian classes in 8
dimensions with 10% label noise, so that margin errors -- and therefore insertions and
evictions -- never stop) is fed to river pipelines ``StandardScaler | model`` through
``learn_one`` (every 10th example also ``predict_one``).  At checkpoints the process RSS
(psutil) and the model's buffer bytes are recorded.  Models: OBSCURE stage 1 only and with
the automatic stage switch, and online proximal MKL, each with ``budget=BUDGET``; plus, for
contrast, OBSCURE without a budget on the first ``NO_BUDGET_N`` examples.

``--quick``: 10^5 examples instead of 10^6.  Run time on a shared 2-core machine: about
10 minutes; ``--quick`` about 1.

Usage::

    python benchmarks/bench_memory.py [--quick]   # -> benchmarks/results/memory.{json,md} (.quick.* with --quick)
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_args, single_thread_blas, write_report  # noqa: E402

BUDGET = 500
D = 8
NO_BUDGET_N = 20_000


def stream(n, seed=0, chunk=10_000):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=1.5, size=(3, D))
    names = [f"f{j}" for j in range(D)]
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        y = rng.integers(0, 3, size=m)
        X = means[y] + rng.normal(size=(m, D))
        noisy = rng.random(m) < 0.1
        y = np.where(noisy, rng.integers(0, 3, size=m), y)
        for i in range(m):
            yield dict(zip(names, X[i].tolist())), int(y[i])


def buffer_bytes(model):
    last = list(model.steps.values())[-1]
    return last._engine.buf.nbytes()


def run(label, make, n, checkpoints, proc):
    model = make()
    out = []
    gc.collect()
    rss0 = proc.memory_info().rss
    t0 = time.perf_counter()
    seen = 0
    for x, y in stream(n):
        if seen % 10 == 0:
            model.predict_one(x)
        model.learn_one(x, y)
        seen += 1
        if seen in checkpoints:
            last = list(model.steps.values())[-1]
            out.append({"model": label, "examples": seen, "rss_mib": proc.memory_info().rss / 2**20,
                        "rss_growth_mib": (proc.memory_info().rss - rss0) / 2**20,
                        "buffer_kib": buffer_bytes(model) / 1024, "stored": int(last.n_support_),
                        "elapsed_s": time.perf_counter() - t0})
            print(out[-1], flush=True)
    return out


def main(argv=None):
    import psutil
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier

    args = quick_args(argv, __doc__, "10^5 examples instead of 10^6")
    n = 100_000 if args.quick else 1_000_000
    checkpoints = sorted({1_000, 10_000} | set(range(n // 10, n + 1, n // 10)))
    proc = psutil.Process()
    models = {
        f"OBSCURE stage1 b={BUDGET}": lambda: preprocessing.StandardScaler() | OBSCUREClassifier(
            switch_after=None, budget=BUDGET),
        f"OBSCURE auto b={BUDGET}": lambda: preprocessing.StandardScaler() | OBSCUREClassifier(budget=BUDGET),
        f"ProximalMKL b={BUDGET}": lambda: preprocessing.StandardScaler() | ProximalMKLClassifier(budget=BUDGET),
    }
    rows = []
    with single_thread_blas():
        # Warm up (compile) every model first so that compilation is not counted as growth.
        for make in models.values():
            m = make()
            for x, y in stream(BUDGET + 200, seed=1):
                m.predict_one(x)
                m.learn_one(x, y)
        for label, make in models.items():
            rows += run(label, make, n, checkpoints, proc)
        rows += run("OBSCURE stage1, no budget", lambda: preprocessing.StandardScaler() | OBSCUREClassifier(
            switch_after=None), NO_BUDGET_N, {1_000, 5_000, 10_000, NO_BUDGET_N}, proc)
    summary = []
    for label in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == label]
        after = [r for r in rs if r["examples"] >= min(10_000, rs[-1]["examples"])]
        summary.append({"model": label, "examples": rs[-1]["examples"],
                        "rss_at_10k_mib": after[0]["rss_mib"], "rss_final_mib": rs[-1]["rss_mib"],
                        "rss_change_after_10k_mib": rs[-1]["rss_mib"] - after[0]["rss_mib"],
                        "buffer_final_kib": rs[-1]["buffer_kib"], "stored_final": rs[-1]["stored"],
                        "examples_per_s": rs[-1]["examples"] / rs[-1]["elapsed_s"]})
    from _common import markdown_table

    notes = (__doc__.split("\n\n")[2] + "\n\n" + __doc__.split("\n\n")[1] + "\n\n## Summary\n\n" + markdown_table(summary)
             + "\n## Checkpoints\n")
    write_report("memory", rows, title="Memory on an endless stream", notes=notes, extra={"summary": summary},
                 quick=args.quick)


if __name__ == "__main__":
    main()
