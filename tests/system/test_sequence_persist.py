"""The sequence labeller's model files: round trips and inconsistent states refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from _sequence_data import _assert_same, _small_problem, _snapshot, _trained

from onlinemkl import load
from onlinemkl.kernels import RBF, Polynomial
from onlinemkl.sequence import SequenceMKLLabeler


@pytest.mark.parametrize("kind", ["arrays", "dicts", "crf_average_budget", "unfitted"])
def test_save_load_round_trip(tmp_path, kind):
    X, Ys = _small_problem(9, n_seq=40)
    params = dict(kernels=(RBF(gamma=0.3), Polynomial(degree=2, normalize=True)), random_state=0)
    if kind == "crf_average_budget":
        params.update(loss="crf", average=True, budget=25, eviction="least_impact")
    if kind == "dicts":
        X = [[{f"f{j}": v for j, v in enumerate(row) if v > -0.5} for row in xs] for xs in X]
    labels = [["ab"[0] * (c + 1) for c in ys] for ys in Ys]  # string labels
    model = SequenceMKLLabeler(**params)
    if kind != "unfitted":
        model.fit(X[:25], labels[:25])
    path = model.save(tmp_path / "seq.omkl")
    loaded = load(path)
    assert type(loaded) is SequenceMKLLabeler and loaded.get_params() == model.get_params()
    _assert_same(_snapshot(model), _snapshot(loaded))
    if kind == "unfitted":
        assert loaded.predict_one(np.zeros((2, 4))) == [None, None]
        return
    assert loaded.predict(X) == model.predict(X)
    for xs, ys in zip(X[25:], labels[25:]):  # continued learning is identical, bit for bit
        model.learn_one(xs, ys)
        loaded.learn_one(xs, ys)
    _assert_same(_snapshot(model), _snapshot(loaded))
    assert loaded.predict(X) == model.predict(X)


def test_load_rejects_an_inconsistent_state():
    model, X, Ys = _trained(n=10)
    state, arrays = model._get_state()
    for name, bad in (("beta", np.zeros((3, 3, 3))), ("T", np.zeros((1, 1))), ("buf.coef", np.zeros((2, 1))),
                      ("istate", np.array([10 ** 6, 0, 0, 0, 0]))):
        fresh = SequenceMKLLabeler(**model.get_params())
        with pytest.raises(ValueError, match="inconsistent|shape"):
            fresh._set_state(state, dict(arrays, **{name: bad}))
        assert not hasattr(fresh, "_engine")
    other = SequenceMKLLabeler(**dict(model.get_params(), lam=0.5))
    with pytest.raises(ValueError, match="differ from the parameters"):
        other._set_state(state, arrays)
    with pytest.raises(ValueError, match="labels"):
        SequenceMKLLabeler(**model.get_params())._set_state(dict(state, labels=[0, 1]), arrays)
