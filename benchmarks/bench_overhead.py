"""The fixed per-example cost of the river pipeline: two checkouts of onlinemkl in one run.

Issue 16 goal 1 asks the default pipeline to outrun river's best model on small streams,
where a step's compiled pass over a few hundred stored examples costs less than the Python
around it.  This benchmark measures that cost for checkout A (before) and B (after), each in
fresh child processes (``PYTHONPATH`` set to the checkout, a Numba cache of its own warmed by a
first, discarded child), alternating ``--rounds`` times; CPU time of the child
(``time.process_time``), best of the rounds.

Figures (all with the default parameters of ``onlinemkl.river.OBSCUREClassifier`` /
``ProximalMKLClassifier``, replay on):

* ``<model> predict n=<N>``: ``predict_one`` of a 10-feature dict on a model holding N stored
  examples (3 classes, random labels), no scaler: one compiled pass over N rows and the
  Python around it.
* ``<model> predict+learn n=<N>``: ``predict_one`` then ``learn_one`` of a new example with a
  random label (a margin error: an update, then replay's extra steps), each on its own copy
  of the same model of N stored examples (the copies are made outside the clock), so every
  timed example starts from the same state.
* ``<model> stream <name>``: ``StandardScaler() | <model>()``, one prequential pass over the
  first 70% of the stream (as ``bench_defaults.py``; the pass is deterministic, so its
  accuracy must be the same for A and B), in microseconds per example.

Usage::

    python benchmarks/bench_overhead.py --a /work/main --b . [--rounds 3] [--name overhead]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ab_arguments, write_report  # noqa: E402

CHILD = r'''
import copy, json, os, sys, time
os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"
import numpy as np
what, model_name, checkout, bench_dir = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
import onlinemkl as _om
assert os.path.realpath(_om.__file__).startswith(os.path.realpath(checkout)), _om.__file__
from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier
make = {"OBSCURE": OBSCUREClassifier, "ProximalMKL": ProximalMKLClassifier}[model_name]

def best(fn, reps):
    b = float("inf")
    for _ in range(reps):
        b = min(b, fn())
    return b

if what.startswith("stream "):
    sys.path.insert(0, bench_dir)
    from bench_defaults import DATASETS, TRAIN_FRACTION
    from river import preprocessing
    data = DATASETS[what[len("stream "):]]()
    data = data[: int(round(TRAIN_FRACTION * len(data)))]
    m = preprocessing.StandardScaler() | make()
    for x, y in data[:30]:  # compile outside the clock
        m.predict_one(x); m.learn_one(x, y)
    def one():
        m = preprocessing.StandardScaler() | make()
        hits = 0
        t0 = time.process_time()
        for x, y in data:
            hits += m.predict_one(x) == y
            m.learn_one(x, y)
        one.hits = hits
        return (time.process_time() - t0) / len(data)
    t = best(one, 3)
    print(json.dumps({"us": t * 1e6, "accuracy": one.hits / len(data)}))
    sys.exit()

kind, n = what.split(" n=")
n = int(n)
d = 10
rng = np.random.default_rng(0)
def ex():
    return {f"x{j}": float(v) for j, v in enumerate(rng.normal(size=d))}, int(rng.integers(3))
clf = make()
while clf.n_support_ < n:
    x, y = ex()
    clf.learn_one(x, y)
nsv = clf.n_support_
probe = [ex() for _ in range(50)]
if kind == "predict":
    def one():
        t0 = time.process_time()
        for _ in range(20):
            for x, _y in probe:
                clf.predict_one(x)
        return (time.process_time() - t0) / (20 * len(probe))
else:
    def one():
        copies = [copy.deepcopy(clf) for _ in probe]
        t0 = time.process_time()
        for c, (x, y) in zip(copies, probe):
            c.predict_one(x)
            c.learn_one(x, y)
        return (time.process_time() - t0) / len(probe)
t = best(one, 5)
print(json.dumps({"us": t * 1e6, "n_support": int(nsv)}))
'''

FIGURES = ("predict n=100", "predict+learn n=100", "predict n=2000", "predict+learn n=2000",
           "stream wine", "stream Phishing", "stream Bananas")
MODELS = ("OBSCURE", "ProximalMKL")


def run_child(checkout: Path, cache: Path, what: str, model: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), NUMBA_CACHE_DIR=str(cache), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    bench_dir = str(Path(__file__).resolve().parent)
    # cwd outside both checkouts: ``python -c`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", CHILD, what, model, str(checkout), bench_dir], env=env,
                         check=True, capture_output=True, text=True, timeout=1800, cwd=cache.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = ab_arguments(__doc__, FIGURES, "overhead")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    ap.add_argument("--cache", type=Path, default=None,
                    help="parent of the two Numba caches (default: a new temporary directory, compiled cold)")
    args = ap.parse_args()
    a, b = args.a.resolve(), args.b.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = args.cache or tmp
        caches = {"A": Path(tmp) / "A", "B": Path(tmp) / "B"}
        for side, path in (("A", a), ("B", b)):  # warm each cache (compilation outside every clock)
            for model in args.models.split(","):
                run_child(path, caches[side], "predict+learn n=100", model)
        for model in args.models.split(","):
            for what in args.figures.split(","):
                best, extra = {}, {}
                for _ in range(args.rounds):
                    for side, path in (("A", a), ("B", b)):
                        r = run_child(path, caches[side], what, model)
                        best[side] = min(best.get(side, float("inf")), r["us"])
                        extra[side] = r
                row = {"model": model, "figure": what, "A_us": round(best["A"], 2), "B_us": round(best["B"], 2),
                       "B_over_A_throughput": round(best["A"] / best["B"], 3)}
                for key in ("accuracy", "n_support"):  # every row has the columns (the table's header)
                    row[f"{key}_A"], row[f"{key}_B"] = extra["A"].get(key), extra["B"].get(key)
                print(row, flush=True)
                rows.append(row)
    write_report(args.name, rows, title=f"Per-example overhead: {a} (A) vs {b} (B), best of {args.rounds} rounds",
                 notes="CPU microseconds per example (`time.process_time` of the child). See the docstring of "
                       "`benchmarks/bench_overhead.py` for the figures.",
                 extra={"a": str(a), "b": str(b), "rounds": args.rounds})


if __name__ == "__main__":
    main()
