"""A/B of two commits of onlinemkl in one run: the end-to-end figures a code change must keep.

The question: is commit B slower or faster than commit A on the standard figures (one learning
step and one prediction against a buffer of 10^4 stored examples, and the default river pipeline
on three of river's streams)?  ``--a`` and ``--b`` each take a checkout directory or a git
revision of this repository (exported with ``git archive`` into a temporary directory).

How to read the report: ``throughput_B_over_A`` per figure (> 1: B is faster; within about 0.1
of 1 is the noise of a shared machine), with the microseconds per example of each and the stored
rows each timed step reads.

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

``--no-replay`` builds OBSCURE with ``replay=0`` in the versions that have it: replay (a default
of recent versions) takes extra steps after a margin error, so with it the same 10^4 examples
leave ~1.5x more stored rows and a stream costs more work per example; without it both sides do
the same work when one of them predates replay.  The report gives the stored rows each timed
step reads (``n_support_*``).

Run time on a shared 2-core machine: about 10 minutes with ``--rounds 3``; ``--quick`` about 2.

Usage::

    python benchmarks/bench_ab.py --a main --b HEAD              # -> benchmarks/results/ab.{json,md}
    python benchmarks/bench_ab.py --a /path/to/old/checkout --b . --quick --figures learn_1e4x16
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_report  # noqa: E402

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


def checkout_of(spec: str, tmp: Path, side: str) -> Path:
    """The directory to put on ``PYTHONPATH`` for ``spec``: a checkout directory as it is, or a git
    revision of this repository exported (``git archive``) into ``tmp/<side>-src``."""
    path = Path(spec)
    if (path / "onlinemkl" / "__init__.py").is_file():
        return path.resolve()
    repo = Path(__file__).resolve().parents[1]
    rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
                         capture_output=True, text=True)
    if rev.returncode != 0:
        raise SystemExit(f"--{side.lower()} {spec!r}: neither a checkout of onlinemkl (a directory holding "
                         "onlinemkl/__init__.py) nor a git revision of this repository")
    dest = tmp / f"{side}-src"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev.stdout.strip()], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="A (before): a checkout directory or a git revision (e.g. main)")
    ap.add_argument("--b", required=True, help="B (after): a checkout directory or a git revision (e.g. HEAD)")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of A and B per figure")
    ap.add_argument("--figures", default=",".join(FIGURES), help="comma-separated subset (a partial run)")
    ap.add_argument("--quick", action="store_true", help="small buffers and streams (a smoke run)")
    ap.add_argument("--no-replay", action="store_true",
                    help="OBSCURE with replay=0 in versions that have replay (up to 5 extra steps after a "
                         "margin error, so more stored rows and more work per example): the same work on both "
                         "sides when one predates replay, to compare the engines' speed")
    args = ap.parse_args()
    figures = args.figures.split(",")
    unknown = [f for f in figures if f not in FIGURES]
    if unknown:
        ap.error(f"--figures: unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sides = {"A": checkout_of(args.a, tmp, "A"), "B": checkout_of(args.b, tmp, "B")}
        caches = {"A": tmp / "A", "B": tmp / "B"}
        for what in figures:
            best = {}
            extra = {}
            for side, path in sides.items():
                run_child(path, caches[side], what, True, args.no_replay)  # warm the cache
            for _ in range(args.rounds):
                for side, path in sides.items():
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
    write_report("ab", rows, title=f"A/B: {args.a} (A) vs {args.b} (B), best of {args.rounds} alternations",
                 notes=f"Throughput of B over A per figure (> 1: B is faster); microseconds per example, best of "
                       f"{args.rounds} alternations, CPU time of a fresh child process per run"
                       f"{'; OBSCURE with replay=0' if args.no_replay else ''}.  Command: `python "
                       f"benchmarks/bench_ab.py --a {args.a} --b {args.b}`.",
                 quick=args.quick or len(figures) < len(FIGURES),
                 extra={"a": str(args.a), "b": str(args.b), "rounds": args.rounds, "no_replay": args.no_replay})


if __name__ == "__main__":
    main()
