"""A/B of two checkouts of onlinemkl in one run: the end-to-end figures a code change must keep.

Each figure is measured in a fresh child process per checkout (``PYTHONPATH`` set to the
checkout, a Numba cache of its own, warmed by a first, discarded child), the two checkouts
alternating ``--rounds`` times, timed in CPU seconds of the child (``time.process_time``: the
machine is shared, and wall time counts other processes' slices); the report gives the best time of each and the ratio B / A of
the throughputs (> 1: B is faster).  Only public classes are used, so any two versions of the
library compare.

Figures:

* ``learn_1e4x16``   -- one OBSCURE step (the engine's ``learn`` where it has one, else
                        ``OBSCUREClassifier.partial_fit`` on one row), buffer of ~10^4 stored
                        examples of 16 features, 3 classes, the 5-kernel default set (nearly
                        always an update: random labels);
* ``predict_1e4x16`` -- the engine's scores of one row (else ``decision_function``) against the
                        same buffer;
* ``prox_learn_1e4x16`` -- ``ProximalMKLClassifier.partial_fit`` on one row, same buffer size;
* ``river_<stream>`` -- ``StandardScaler() | onlinemkl.river.OBSCUREClassifier()`` (defaults),
                        one prequential pass over river's bundled stream (examples per second,
                        the peers benchmark's workload).

``--no-replay`` builds OBSCURE with ``replay=0`` in the versions that have it: replay (the default
since 6ed2143) takes extra steps after a margin error, so with it the same 10^4 examples leave
~1.5x more stored rows and a stream costs more work per example; without it both sides do the
old engine's work.  The report gives the stored rows each timed step reads (``n_support_*``).

Usage::

    python benchmarks/bench_ab.py --a /path/to/old/checkout --b /path/to/new/checkout [--quick]
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
import json, sys, time
import numpy as np
what, quick = sys.argv[1], sys.argv[2] == "1"
import onlinemkl as _om, os as _os, inspect as _inspect
assert _os.path.realpath(_om.__file__).startswith(_os.path.realpath(sys.argv[3])), _om.__file__
no_replay = sys.argv[4] == "1"

def obscure_kw(cls):
    """replay=0 where the version has replay and --no-replay asks for the old engine's work per example."""
    return {"replay": 0} if no_replay and "replay" in _inspect.signature(cls).parameters else {}

def best(fn, reps, number):
    b = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        b = min(b, (time.process_time() - t0) / number)
    return b

if what.startswith("river_"):
    from river import datasets, preprocessing
    from onlinemkl.river import OBSCUREClassifier
    ds = {"river_phishing": datasets.Phishing, "river_imagesegments": datasets.ImageSegments,
          "river_bananas": datasets.Bananas}[what]()
    model = preprocessing.StandardScaler() | OBSCUREClassifier(**obscure_kw(OBSCUREClassifier))
    data = list(ds)[: 400 if quick else None]
    for x, y in data[:5]:  # compile outside the clock
        model.predict_one(x); model.learn_one(x, y)
    model = preprocessing.StandardScaler() | OBSCUREClassifier(**obscure_kw(OBSCUREClassifier))
    hits = 0
    t0 = time.process_time()
    for x, y in data:
        hits += model.predict_one(x) == y
        model.learn_one(x, y)
    dt = time.process_time() - t0
    print(json.dumps({"seconds_per_example": dt / len(data), "accuracy": hits / len(data)}))
    sys.exit()

from onlinemkl import OBSCUREClassifier, ProximalMKLClassifier
from onlinemkl.kernels import RBF, Linear, Polynomial
K = (RBF(gamma_scale=0.1), RBF(gamma_scale=1.0), RBF(gamma_scale=10.0), Linear(), Polynomial(degree=2))
n = 2000 if quick else 10000
d = 16
rng = np.random.default_rng(0)
X = rng.normal(size=(n + 200, d))
y = rng.integers(0, 3, n + 200)
if what == "prox_learn_1e4x16":
    clf = ProximalMKLClassifier(kernels=K)
else:
    clf = OBSCUREClassifier(kernels=K, switch_after=None, **obscure_kw(OBSCUREClassifier))
clf.partial_fit(X[:1], y[:1], classes=[0, 1, 2])
for i in range(1, n):
    clf.partial_fit(X[i:i + 1], y[i:i + 1])
nsv = int(clf.n_support_)
rows = [X[i:i + 1] for i in range(n, n + 200)]
# the engine itself (no input validation), where the version has one: what the per-example cost is
eng = getattr(clf, "_engine", None)
k = iter(range(10**9))
if what == "predict_1e4x16":
    score = getattr(eng, "scores_one", None) or getattr(eng, "scores", None)
    if score is not None:
        t = best(lambda: score(rows[next(k) % 200][0]), 5, 40)
    else:
        t = best(lambda: clf.decision_function(rows[next(k) % 200]), 5, 40)
elif eng is not None and what == "learn_1e4x16":
    def step():
        i = next(k) % 200
        eng.learn(rows[i][0], int(y[n + i]))
    t = best(step, 5, 20)
else:
    def step():
        i = next(k) % 200
        clf.partial_fit(rows[i], y[n + i:n + i + 1])
    t = best(step, 5, 20)
print(json.dumps({"seconds_per_example": t, "n_support": nsv}))
'''

FIGURES = ("learn_1e4x16", "predict_1e4x16", "prox_learn_1e4x16", "river_phishing", "river_imagesegments",
           "river_bananas")


def run_child(checkout: Path, cache: Path, what: str, quick: bool, no_replay: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), NUMBA_CACHE_DIR=str(cache))
    # cwd outside both checkouts: ``python -c`` puts the working directory first on sys.path,
    # which would shadow PYTHONPATH with whatever onlinemkl sits there
    out = subprocess.run([sys.executable, "-c", CHILD, what, "1" if quick else "0", str(checkout),
                          "1" if no_replay else "0"], env=env,
                         check=True, capture_output=True, text=True, timeout=1800, cwd=cache.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = ab_arguments(__doc__, FIGURES, "ab")
    ap.add_argument("--quick", action="store_true", help="small buffers and streams (a smoke run)")
    ap.add_argument("--no-replay", action="store_true",
                    help="OBSCURE with replay=0 in versions that have replay (a default since 6ed2143: up to 5 "
                         "extra steps after a margin error, so more stored rows and more work per example): "
                         "the old engine's work per example, to compare the engines' speed")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        caches = {"A": Path(tmp) / "A", "B": Path(tmp) / "B"}
        for what in args.figures.split(","):
            best = {}
            extra = {}
            for side, path in (("A", args.a), ("B", args.b)):
                run_child(path, caches[side], what, True, args.no_replay)  # warm the cache
            for _ in range(args.rounds):
                for side, path in (("A", args.a), ("B", args.b)):
                    r = run_child(path, caches[side], what, args.quick, args.no_replay)
                    best[side] = min(best.get(side, float("inf")), r["seconds_per_example"])
                    extra[side] = r
            row = {"figure": what, "A_us": round(best["A"] * 1e6, 2), "B_us": round(best["B"] * 1e6, 2),
                   "throughput_B_over_A": round(best["A"] / best["B"], 3)}
            if "n_support" in extra["A"]:  # the buffer each timed step reads
                row["n_support_A"] = extra["A"]["n_support"]
                row["n_support_B"] = extra["B"]["n_support"]
            if "accuracy" in extra["A"]:
                row["accuracy_A"] = round(extra["A"]["accuracy"], 4)
                row["accuracy_B"] = round(extra["B"]["accuracy"], 4)
            print(row, flush=True)
            rows.append(row)
    write_report(args.name + ("_quick" if args.quick else ""), rows,
                 title=f"A/B: {args.a} (A) vs {args.b} (B), best of {args.rounds} alternations",
                 extra={"a": str(args.a), "b": str(args.b), "rounds": args.rounds, "quick": args.quick,
                        "no_replay": args.no_replay})


if __name__ == "__main__":
    main()
