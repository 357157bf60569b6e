"""What the sequence test modules share: data, kernels and fixtures."""

from __future__ import annotations

import numpy as np

from onlinemkl.kernels import RBF, Linear
from onlinemkl.sequence import SequenceMKLLabeler


def _small_problem(seed, n_seq=36, d=4, Y=3):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(Y, d))
    X, Ys = [], []
    for _ in range(n_seq):
        L = int(rng.integers(1, 5))
        y = [int(rng.integers(Y))]
        for _ in range(L - 1):
            y.append((y[-1] + 1) % Y if rng.random() < 0.7 else int(rng.integers(Y)))
        X.append(centers[y] + 0.8 * rng.normal(size=(L, d)))
        Ys.append(y)
    return X, Ys


def _trained(n=30, **kw):
    X, Ys = _small_problem(7, n_seq=n)
    params = dict(kernels=(RBF(gamma=0.3), Linear()), random_state=0)
    params.update(kw)
    return SequenceMKLLabeler(**params).fit(X, Ys), X, Ys


def _snapshot(model):
    state, arrays = model._get_state()
    return state, {k: v.copy() for k, v in arrays.items()}


def _assert_same(snap_a, snap_b):
    assert snap_a[0] == snap_b[0]
    assert snap_a[1].keys() == snap_b[1].keys()
    for k in snap_a[1]:
        np.testing.assert_array_equal(snap_a[1][k], snap_b[1][k], err_msg=k)
