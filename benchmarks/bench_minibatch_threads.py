"""BLAS threads in the mini-batch learners: the library's own limit against OPENBLAS_NUM_THREADS=1.

Two workloads: ``NonlinearKRRRegressor().fit`` on 500 x 10 (standard normal inputs, a
product target) and the README's ``PolyMKLRegressor`` example (1500 x 20, two mini-batches of
500, then predict).  Each runs in a fresh Python process (after one warm-up run, so Numba
compilation is not timed; best of 3) under four set-ups:

* ``code``: this checkout (``lib``) or the main branch before the change (``main``,
  ``--main PATH``), whose learners made their BLAS calls with every thread;
* ``env``: the process's environment as a user has it (``default``) or with
  ``OPENBLAS_NUM_THREADS=1``;

each idle and with one other busy process (a Python loop spinning on one core).  ``ratio`` is
the time over the same code's ``OPENBLAS_NUM_THREADS=1`` time in the same condition (the
target: <= 1.2).  The machine is shared, so "idle" means no extra load from this script.

Run ``python benchmarks/bench_minibatch_threads.py [--main /work/main]`` (a few minutes).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent.parent

WORK = {
    "nonlinear_fit_500x10": """
import numpy as np
from onlinemkl import NonlinearKRRRegressor
rng = np.random.default_rng(0)
X = rng.normal(size=(500, 10)); y = X[:, 0] * X[:, 1] + X[:, 2]
def run():
    NonlinearKRRRegressor().fit(X, y)
""",
    "readme_polymkl": """
import numpy as np
from onlinemkl import PolyMKLRegressor
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(1500, 20))
y = X[:, 0] * X[:, 1] * X[:, 2] + X[:, 3] * X[:, 4] + X[:, 5]
def run():
    model = PolyMKLRegressor(degree=3, lam=1e-4, n_iter=500, budget=500, random_state=0)
    for start in range(0, 1000, 500):
        model.partial_fit(X[start:start + 500], y[start:start + 500])
    model.predict(X[1000:])
""",
}

TIMER = """
import time
run()
best = float("inf")
for _ in range(3):
    t0 = time.perf_counter(); run(); best = min(best, time.perf_counter() - t0)
print(best)
"""


def measure(code_path, work, single):
    # compile in the warm-up run itself, in the foreground
    env = dict(os.environ, PYTHONPATH=str(code_path), NUMBA_CACHE_DIR=f"/tmp/numba-bench-{Path(code_path).name}",
               ONLINEMKL_BACKGROUND_COMPILE="0")
    env.pop("OPENBLAS_NUM_THREADS", None)
    if single:
        env["OPENBLAS_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", WORK[work] + TIMER], env=env, capture_output=True, text=True,
                         check=True, cwd="/tmp")
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--main", default=None, help="a checkout of the code before the change, measured alike")
    args = ap.parse_args(argv)
    codes = {"lib": HERE}
    if args.main:
        codes["main"] = Path(args.main)
    rows = []
    for busy in (False, True):
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            time.sleep(0.5 if busy else 0.0)
            for work in WORK:
                for name, path in codes.items():
                    t_env = measure(path, work, single=False)
                    t_one = measure(path, work, single=True)
                    row = {"work": work, "load": "one busy process" if busy else "idle", "code": name,
                           "default_s": t_env, "openblas1_s": t_one, "ratio": t_env / t_one}
                    print(row, flush=True)
                    rows.append(row)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    write_report("bench_minibatch_threads", rows, columns=["work", "load", "code", "default_s", "openblas1_s", "ratio"],
                 title="Mini-batch learners: BLAS threads", notes=__doc__.split("\n\n", 1)[1].rsplit("Run ", 1)[0])


if __name__ == "__main__":
    main()
