"""Prequential MAE of the mini-batch regressors' river faces (defaults, behind a StandardScaler) on river's
regression streams, beside the running mean's: TrumpApproval, ChickWeights and the Friedman,
FriedmanDrift, Mv (numeric features only) and Planes2D generators at seeds 1 and 2.

Run ``python benchmarks/bench_minibatch_streams.py [ROWS]`` (ROWS per generated stream, default 2000;
about a minute of CPU). Prints one line per stream.
"""

import sys
import time

import numpy as np
from river import datasets as rd, preprocessing, stats
from river.datasets import synth
import onlinemkl.river as omr
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
def num(x): return {k: v for k, v in x.items() if not isinstance(v, str)}
streams = [("TrumpApproval", lambda: list(rd.TrumpApproval())), ("ChickWeights", lambda: list(rd.ChickWeights()))]
for g in ["Friedman", "FriedmanDrift", "Mv", "Planes2D"]:
    for s in (1, 2):
        streams.append((f"{g}(seed={s})", lambda g=g, s=s: [(num(x), y) for x, y in getattr(synth, g)(seed=s).take(N)]))
for name, make in streams:
    data = make()
    m = stats.Mean(); e0 = []
    for x, y in data: e0.append(abs(y - m.get())); m.update(y)
    res = []
    for lname, L in [("poly", lambda: omr.PolyMKLRegressor(seed=0)), ("nonlinear", lambda: omr.NonlinearKRRRegressor())]:
        model = preprocessing.StandardScaler() | L(); err = []; t = time.process_time()
        for x, y in data:
            err.append(abs(model.predict_one(x) - y)); model.learn_one(x, y)
        res.append(f"{lname}={np.mean(err):.4g} ({time.process_time()-t:.0f}s cpu)")
    print(f"{name:22s} n={len(data)} mean={np.mean(e0):.4g} " + " ".join(res), flush=True)
