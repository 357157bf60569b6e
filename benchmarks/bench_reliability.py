"""What the reliability guards cost on the hot path (docs/reliability.md).

* ``lock``: river ``learn_one`` / ``predict_one`` with the model lock (what users get) against
  the same method unwrapped (``__wrapped__``: no lock), on one model in one run, blocks of
  examples alternated so both see the same buffer and the same machine load.  The buffer is
  held at its budget, so every example costs the same.
* ``guards``: the same for the value guard of ``FeatureMap.encode`` (|x| <= MAX_ABS_VALUE and
  the ``max_features`` cap) against a copy of the encoder without them.

* ``attacks`` (``--attacks [--before PATH]``): each attack of issue 18's points 1, 2, 3 and 6 in
  a fresh interpreter over this checkout, and over the checkout at ``PATH`` (e.g. the main
  branch) for the "before" column: what happened (crash, rows lost), memory and time.

Run: ``python benchmarks/bench_reliability.py`` (``--quick`` for a smoke run);
``python benchmarks/bench_reliability.py --attacks --before /path/to/main``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_report  # noqa: E402


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
    rows = [{"op": "empty method (the lock alone)", "model": "-", "d": 0, "budget": 0, "locked_us": t_lock * 1e6,
             "unlocked_us": t_plain * 1e6, "ratio": t_lock / t_plain}]
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
            rows.append({"op": "learn_one", "model": name, "d": d, "budget": budget, "locked_us": lk * 1e6,
                         "unlocked_us": un * 1e6, "ratio": lk / un})
            lk, un = alternate(lambda x, y: m.predict_one(x), lambda x, y: raw_predict(m, x), data, block, rounds)
            rows.append({"op": "predict_one", "model": name, "d": d, "budget": budget, "locked_us": lk * 1e6,
                         "unlocked_us": un * 1e6, "ratio": lk / un})
    return rows


FEATURES = """
import random, resource, time
from onlinemkl.river import OBSCUREClassifier
try:
    m = OBSCUREClassifier(budget=100, PARAMS)
except TypeError:  # before: no such parameter
    m = OBSCUREClassifier(budget=100)
rnd = random.Random(0); t0 = time.monotonic(); n = 0; rej = 0
rss0 = None
while n < 100_000 and time.monotonic() - t0 < 60:
    if n == 1000:  # after the first calls have loaded the compiled code
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    x = {"a": rnd.random(), **{f"id{rnd.getrandbits(40)}": 1.0 for _ in range(3)}}
    t1 = time.perf_counter()
    try:
        m.learn_one(x, n % 3)
    except ValueError:
        rej += 1
    last = time.perf_counter() - t1
    n += 1
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{n} rows in {time.monotonic() - t0:.0f} s, {m._engine.n_features} features, "
      f"peak RSS after row 1000 +{rss - rss0:.0f} MiB, "
      f"last row {last * 1e3:.2f} ms, {rej} rejected")
"""

ATTACKS = {
    "threads": None,  # tests/test_reliability.py's THREADS: every public model, 4 threads and a pickler
    "extreme": """
import random
from river import preprocessing
from onlinemkl.river import OBSCUREClassifier
m = preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
rnd = random.Random(0); bad = 0
for i in range(400):
    x = {"f0": rnd.gauss(0, 1), "f1": 1e155 if i == 100 else rnd.gauss(0, 1)}
    try:
        from onlinemkl._validation import check_example  # the server's and command line's boundary
        check_example(x)
    except ImportError:  # before: no such check
        pass
    except ValueError:
        continue  # rejected at the boundary: the stream goes on
    try:
        m.learn_one(x, x["f0"] > 0)
    except ValueError:
        bad += 1
print(f"{bad} of the 299 rows after the huge value rejected")
""",
    "features max_features=1000": FEATURES.replace("PARAMS", "max_features=1000"),
    "features feature_hashing=1024": FEATURES.replace("PARAMS", "feature_hashing=1024"),
    "server learn, scaler of 1e5 names": """
import random, statistics, time
from river import preprocessing
from onlinemkl.river import OBSCUREClassifier
from onlinemkl.serve import ModelServer
pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=50)
scaler = pipe["StandardScaler"]
for i in range(100):  # the scaler has met 10^5 names (e.g. a feature cap reached); the learner a few
    scaler.learn_one({f"id{j}": 1.0 for j in range(i * 1000, i * 1000 + 1000)})
srv = ModelServer(pipe, port=0, log=None)
rnd = random.Random(0); times = []
for i in range(30):
    t = time.perf_counter()
    srv.handle({"x": {"a": rnd.random(), "b": rnd.random()}, "y": i % 2})
    times.append(time.perf_counter() - t)
srv._sock.close()
print(f"median learn request {statistics.median(times[5:]) * 1e3:.2f} ms")
""",
    "nan_label": """
from onlinemkl.river import OBSCUREClassifier
m = OBSCUREClassifier(); rej = 0
m.learn_one({"a": 1.0}, "x")
for i in range(100):
    try:
        m.learn_one({"a": float(i)}, float("nan"))
    except ValueError:
        rej += 1
print(f"{len(m._labels)} classes after 100 NaN labels ({rej} rejected)")
""",
}


def run_attacks(paths: dict, only=None) -> list[dict]:
    import os
    import subprocess

    rows = []
    for name, code in ATTACKS.items():
        if only and name not in only:
            continue
        if code is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from test_reliability import THREADS as code
        row = {"attack": name}
        for label, path in paths.items():
            env = dict(os.environ, PYTHONPATH=path, ONLINEMKL_BACKGROUND_COMPILE="0")
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", code], env=env, cwd=path, capture_output=True, text=True,
                                 timeout=900)
            took = time.perf_counter() - t0
            what = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            if out.returncode < 0:
                what = f"crash (signal {-out.returncode}) {what}".strip()
            elif out.returncode:
                what = f"exit {out.returncode}: {(out.stderr.strip().splitlines() or [''])[-1][:120]}"
            row[label] = f"{what} [{took:.0f} s]"
        rows.append(row)
    return rows


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--attacks", action="store_true", help="run the attacks instead of the lock timing")
    ap.add_argument("--before", help="a checkout of the library before the fixes (the 'before' column)")
    ap.add_argument("--only", nargs="*", help="run only these attacks (their rows replace those in the report)")
    args = ap.parse_args(argv)
    if args.attacks:
        here = str(Path(__file__).resolve().parent.parent)
        paths = ({"before": args.before} if args.before else {}) | {"after": here}
        rows = run_attacks(paths, args.only)
        if args.only:
            import json

            from _common import RESULTS

            old = json.loads((RESULTS / "reliability_attacks.json").read_text())["rows"]
            new = {r["attack"]: r for r in rows}
            rows = [new.pop(r["attack"], r) for r in old] + list(new.values())
        write_report("reliability_attacks", rows, title="Issue 18 attacks, before and after",
                     notes="Each attack in a fresh interpreter (foreground compilation); wall time in brackets "
                           "includes start-up and compilation.")
        return
    rows = bench_lock(args.quick)
    write_report("reliability_lock" + ("_quick" if args.quick else ""), rows,
                 title="The model lock's cost per example (river adapters)",
                 notes="locked: the public method (takes the model's RLock); unlocked: the same method's "
                       "`__wrapped__` on the same model, blocks alternated in one run; best block per op. "
                       "ratio = locked / unlocked.")


if __name__ == "__main__":
    main()
