"""Abuse: one model shared by threads, extreme values, endless new features, NaN labels (RELIABILITY.md).

A crash runs in a subprocess (the test sees its exit code, not a dead pytest); memory is read
with ``resource``; every loop is bounded.
"""

import math
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(code: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter over this checkout (foreground compilation, the suite's cache)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               ONLINEMKL_BACKGROUND_COMPILE="0")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


# ----------------------------------------------------------------------------------------
# 1. Shared models

THREADS = """
import pickle, random, sys, threading
import numpy as np

errors = []

def hammer(model, make_row, n_threads=4, n_rows=600, pickler=True):
    # threads learn and predict on one model (new features and labels keep appearing), one more pickles it
    def work(seed):
        rnd = random.Random(seed)
        try:
            for i in range(n_rows):
                make_row(model, rnd, i)
        except BaseException as exc:
            errors.append(repr(exc))

    def snap():
        try:
            for _ in range(20):
                copy = pickle.loads(pickle.dumps(model))
                state = copy._get_state()
        except BaseException as exc:
            errors.append("pickle: " + repr(exc))

    ts = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
    if pickler:
        ts.append(threading.Thread(target=snap))
    for t in ts:
        t.start()
    for t in ts:
        t.join()

def river_row(classify):
    def row(m, rnd, i):
        x = {f"f{rnd.randrange(30 + i // 20)}": rnd.gauss(0, 1) for _ in range(6)}
        y = rnd.choice("abcde"[: 2 + i % 4]) if classify else rnd.random()
        m.learn_one(x, y)
        m.predict_one(x)
    return row

from onlinemkl.river import (OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor, PolyMKLRegressor,
                             NonlinearKRRRegressor)
hammer(OBSCUREClassifier(budget=60), river_row(True))
hammer(ProximalMKLClassifier(budget=60), river_row(True))
hammer(ProximalMKLRegressor(budget=60), river_row(False))
hammer(PolyMKLRegressor(batch_size=16, n_iter=5, budget=40), river_row(False), n_rows=200)
hammer(NonlinearKRRRegressor(batch_size=16, budget=40), river_row(False), n_rows=200)

from onlinemkl import ProximalMKLClassifier as ArrayProximal, OBSCUREClassifier as ArrayObscure
def array_row(m, rnd, i):
    X = np.array([[rnd.gauss(0, 1) for _ in range(5)] for _ in range(4)])
    m.partial_fit(X, np.array([0, 1, 2, 1]), classes=[0, 1, 2])
    m.predict(X)
for make in (lambda: ArrayProximal(budget=50), lambda: ArrayObscure(budget=50)):
    m = make()
    m.partial_fit(np.zeros((3, 5)), np.array([0, 1, 2]), classes=[0, 1, 2])
    hammer(m, array_row, n_rows=150)

from onlinemkl import SequenceMKLLabeler
def seq_row(m, rnd, i):
    xs = [{f"w{rnd.randrange(20 + i)}": 1.0, "b": rnd.random()} for _ in range(4)]
    m.learn_one(xs, [rnd.choice("xyz") for _ in range(4)])
    m.predict_one(xs)
hammer(SequenceMKLLabeler(budget=40), seq_row, n_rows=150)

print("\\n".join(errors[:5]))
sys.exit(1 if errors else 0)
"""


def test_a_model_shared_by_threads_neither_crashes_nor_tears():
    """Four threads learning and predicting on one model, a fifth pickling it: every public model
    comes through with no crash (on main: SIGABRT/SIGSEGV) and no exception in any thread."""
    out = run_script(THREADS)
    assert out.returncode == 0, (out.returncode, out.stdout[-2000:], out.stderr[-2000:])


def test_the_lock_is_neither_a_parameter_nor_pickled():
    from sklearn.base import clone

    from onlinemkl import ProximalMKLClassifier as ArrayProximal
    from onlinemkl.river import OBSCUREClassifier

    m = OBSCUREClassifier(budget=20)
    m.learn_one({"a": 1.0}, "x")
    assert "_model_lock" in vars(m)
    assert "_model_lock" not in pickle.loads(pickle.dumps(m)).__dict__
    assert m.clone()._get_params() == m._get_params()
    est = ArrayProximal(budget=10).fit(np.eye(4), [0, 1, 0, 1])
    assert "_model_lock" not in vars(clone(est))
    assert "_model_lock" not in est.get_params()
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(np.eye(4)), est.predict(np.eye(4)))
