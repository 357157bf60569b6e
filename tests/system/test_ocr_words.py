"""The bundled OCR words (``onlinemkl.datasets.load_ocr_words``) and a small accuracy floor of
the sequence labeller on them."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import engine_of

from onlinemkl.datasets import load_ocr_words
from onlinemkl.kernels import Linear, Polynomial
from onlinemkl.sequence import SequenceMKLLabeler


def test_load_all_words():
    X, y, folds = load_ocr_words()
    assert len(X) == len(y) == folds.shape[0] == 6877
    assert sum(len(w) for w in y) == 52152
    assert all(x.shape == (len(w), 128) and x.dtype == np.float64 for x, w in zip(X, y))
    pixels = np.concatenate(X)
    assert set(np.unique(pixels)) <= {0.0, 1.0}
    assert set("".join(y)) <= set("abcdefghijklmnopqrstuvwxyz")
    assert np.bincount(folds).tolist() == [626, 704, 684, 698, 693, 651, 739, 717, 690, 675]
    assert not X[0].flags.writeable  # views of one array: a caller's edit cannot leak into another word


def test_load_folds():
    X0, y0, f0 = load_ocr_words(fold=0)
    assert len(X0) == 626 and set(f0.tolist()) == {0}
    Xr, yr, fr = load_ocr_words(fold=range(1, 10))
    assert len(Xr) == 6877 - 626 and 0 not in set(fr.tolist())
    X, y, _ = load_ocr_words(fold=[0])
    assert y == y0 and all(np.array_equal(a, b) for a, b in zip(X, X0))


@pytest.mark.parametrize("bad", [10, -1, True, "0", [], 1.5, [[0]]])
def test_bad_fold(bad):
    with pytest.raises(ValueError, match="fold=.*0..9"):
        load_ocr_words(fold=bad)


def test_accuracy_floor_on_a_slice():
    """A chain over linear and quadratic kernels, trained on 150 words of fold 0 for 2 epochs,
    labels 300 words of fold 1 well above chance (1/26) and above a per-letter majority."""
    X, y, _ = load_ocr_words(fold=0)
    Xt, yt, _ = load_ocr_words(fold=1)
    model = SequenceMKLLabeler(kernels=(Linear(normalize=True), Polynomial(degree=2, normalize=True)),
                               n_epochs=2, random_state=0).fit(X[:150], y[:150])
    assert model.score(Xt[:300], yt[:300]) >= 0.60  # 0.646 measured


def test_objective_falls_along_the_epochs_and_bounds_the_errors():
    """``objective`` = lam R(theta) + the mean structured hinge; the hinge of a word is at least
    its number of Viterbi errors (Hamming cost 1), and training lowers the objective."""
    X, y, _ = load_ocr_words(fold=0)
    X, y = X[:40], y[:40]
    model = SequenceMKLLabeler(kernels=(Linear(normalize=True),), random_state=0)
    seen = []
    for _ in range(3):
        for xs, ys in zip(X, y):
            model.learn_one(xs, ys)
        seen.append(model.objective(X, y))
    assert seen[2] < seen[0]
    errors = np.mean([sum(p != c for p, c in zip(model.predict_one(xs), ys)) for xs, ys in zip(X, y)])
    assert seen[2] >= errors
    reg = model.lam * engine_of(model).regularizer_value()
    assert reg > 0 and seen[2] > reg
    with pytest.raises(ValueError, match="never seen in training"):
        model.objective([X[0]], [["?"] * len(y[0])])
    with pytest.raises(ValueError, match="has not learnt"):
        SequenceMKLLabeler().objective(X, y)


def test_objective_takes_the_model_lock():
    """``objective`` reads the whole model, so it runs under the model's lock as ``score`` does."""
    assert getattr(SequenceMKLLabeler.objective, "__wrapped__", None) is not None
