"""The cost of the feature-name check on a prediction request (issue 18, point 8).

A ``StandardScaler | OBSCUREClassifier(budget=500)`` pipeline learns 2000 examples of ``d``
features; then the server answers the same prediction requests (JSON lines, no ``"y"``)
through ``ModelServer.handle_line`` (parse, check, predict, reply; no socket) with the
check on (the default) and off (``--allow-feature-mismatch``, what a user would run
without it).  Reported: microseconds per request both ways and their ratio, best of
``repeat`` interleaved trials, and the check alone (``FeatureCheck.message``) for scale.

Usage::

    NUMBA_CACHE_DIR=/tmp/nc python benchmarks/bench_feature_check.py [--quick]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_args, time_per_call, write_report  # noqa: E402


def main(argv=None):
    args = quick_args(argv, __doc__)
    from river import preprocessing

    from onlinemkl._feature_check import FeatureCheck
    from onlinemkl.river import OBSCUREClassifier
    from onlinemkl.serve import ModelServer

    repeat = 5 if args.quick else 21
    rows = []
    for d in (10, 100) if args.quick else (10, 100, 1000):
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
        assert isinstance(check, FeatureCheck)
        rows.append({"d": d, "stored": model["OBSCUREClassifier"].n_support_, "us_check_on": t_on * 1e6,
                     "us_check_off": t_off * 1e6, "ratio_on_off": t_on / t_off, "us_check_alone": t_check * 1e6})
    write_report("feature_check", rows, title="Feature-name check on server prediction requests",
                 notes="Microseconds per prediction request through ModelServer.handle_line (no socket), "
                       "check on (default) vs off (--allow-feature-mismatch); best of interleaved trials, same run. "
                       "On a shared machine the on/off ratio moves between runs by more than the check "
                       "costs; us_check_alone (FeatureCheck.message on the same examples) is its own cost.")


if __name__ == "__main__":
    main()
