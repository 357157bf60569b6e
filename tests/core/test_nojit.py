"""The whole library runs as plain Python with ``NUMBA_DISABLE_JIT=1`` (the intrinsics of
``_core/simd.py`` replaced by their plain twins).

That is what lets the compiled code be stepped through in a debugger and measured by line
coverage.  A fresh interpreter is needed: Numba reads the variable when it is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import numpy as np
from onlinemkl import (NonlinearKRRRegressor, OBSCUREClassifier, PolyMKLRegressor, ProximalMKLClassifier,
                       ProximalMKLRegressor, SequenceMKLLabeler)
from onlinemkl.river import OBSCUREClassifier as RiverOBSCURE
import numba
assert numba.config.DISABLE_JIT
from onlinemkl._core import simd
assert simd.dots_block is simd.dots_block_plain  # the intrinsic's plain twin
rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
y = (X[:, 0] > 0).astype(int)
yr = X[:, 0] + 0.1 * rng.normal(size=60)
for est, t, floor in ((OBSCUREClassifier(stage1_epochs=1, stage2_epochs=1, budget=30), y, 0.9),
                      (ProximalMKLClassifier(n_epochs=1, budget=30), y, 0.9),
                      (ProximalMKLRegressor(n_epochs=1), yr, 0.5),
                      (PolyMKLRegressor(), yr, 0.5),
                      (NonlinearKRRRegressor(), yr, 0.5)):
    score = est.fit(X, t).score(X, t)
    assert score >= floor, (type(est).__name__, score)
m = RiverOBSCURE(budget=10)
for i in range(40):
    m.learn_one({"a": X[i, 0], "b": X[i, 1]}, bool(y[i]))
assert m.n_support_ <= 10
s = SequenceMKLLabeler()
xs = [rng.normal(size=3) for _ in range(5)]
ys = [int(v[0] > 0) for v in xs]
for _ in range(3):
    s.learn_one(xs, ys)
assert len(s.predict_one(xs)) == 5
print("ok")
"""


def test_every_learner_runs_with_the_jit_disabled():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
