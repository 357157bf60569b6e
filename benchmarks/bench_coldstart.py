"""Cold start: import time, first-call compile time (empty cache), and time to first prediction
of a new process with a warm on-disk cache.

Every measurement runs in a fresh subprocess (the parent never imports onlinemkl):

* ``import``      -- the imports the entry point needs, measured inside the child:
                     ``from onlinemkl.river import OBSCUREClassifier`` (numba, numpy, river;
                     not scikit-learn), ``... import ProximalMKLClassifier`` (that adapter
                     wraps the scikit-learn estimator, so scikit-learn too), or
                     ``from onlinemkl import OBSCUREClassifier`` (scikit-learn, not river);
* ``first call``  -- with an EMPTY ``NUMBA_CACHE_DIR``: the first ``learn_one`` + ``predict_one``
                     (river adapter) and the first ``fit`` + ``predict`` (array API) on a tiny
                     data set: the one-off compile time;
* ``warm cache``  -- the same child again with the now warm cache: ``process_wall_s`` is the
                     parent's wall time from launching the interpreter to the child's exit right
                     after its first prediction (target < 2 s).

Usage::

    python benchmarks/bench_coldstart.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, time
what = sys.argv[1]
t0 = time.perf_counter()
import numpy as np
if what == "river_obscure":
    from onlinemkl.river import OBSCUREClassifier
elif what == "river_proximal":
    from onlinemkl.river import ProximalMKLClassifier
else:
    from onlinemkl import OBSCUREClassifier
t_import = time.perf_counter() - t0
x = {"a": 0.5, "b": -1.0, "c": 2.0}
t1 = time.perf_counter()
if what == "river_obscure":
    m = OBSCUREClassifier()
    m.learn_one(x, "u"); m.learn_one({"a": -0.5, "b": 1.0, "c": 0.0}, "v")
    m.predict_one(x)
elif what == "river_proximal":
    m = ProximalMKLClassifier()
    m.learn_one(x, "u"); m.learn_one({"a": -0.5, "b": 1.0, "c": 0.0}, "v")
    m.predict_one(x)
elif what == "sklearn_obscure":
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)); y = (X[:, 0] > 0).astype(int)
    OBSCUREClassifier(random_state=0).fit(X, y).predict(X[:5])
t_first = time.perf_counter() - t1
print(json.dumps({"import_s": t_import, "first_call_s": t_first, "sklearn_imported": "sklearn" in sys.modules}))
'''


def run_child(what: str, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("ONLINEMKL_NO_CACHE", None)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, what], env=env, cwd=str(ROOT), capture_output=True,
                         text=True, check=True)
    wall = time.perf_counter() - t0
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_wall_s"] = wall
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one warm-cache repetition instead of three")
    args = ap.parse_args(argv)
    reps = 1 if args.quick else 3
    rows = []
    for what in ("river_obscure", "river_proximal", "sklearn_obscure"):
        with tempfile.TemporaryDirectory(prefix="onlinemkl_nc_") as cache:
            cold = run_child(what, cache)
            warm = [run_child(what, cache) for _ in range(reps)]
        best = min(warm, key=lambda r: r["process_wall_s"])
        rows.append({
            "entry point": what,
            "import_s": best["import_s"],
            "first_call_empty_cache_s": cold["first_call_s"],
            "process_wall_empty_cache_s": cold["process_wall_s"],
            "first_call_warm_cache_s": best["first_call_s"],
            "process_wall_warm_cache_s": best["process_wall_s"],
            "warm_under_2s": best["process_wall_s"] < 2.0,
            "imports_sklearn": best["sklearn_imported"],
        })
        print(rows[-1], flush=True)
    notes = __doc__.split("\n\n")[1] + "\n\n" + __doc__.split("\n\n")[2]
    write_report("coldstart_quick" if args.quick else "coldstart", rows, title="Cold start", notes=notes)


if __name__ == "__main__":
    main()
