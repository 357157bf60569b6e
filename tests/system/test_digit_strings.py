"""The digit-strings data set (``onlinemkl.datasets``): deterministic, disjoint pools, its images
and transitions, bad arguments refused.
"""

from __future__ import annotations


import numpy as np
import pytest

from onlinemkl.datasets import digit_strings, digit_transition_matrix


def test_digit_strings_is_deterministic_with_disjoint_pools():
    a = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=4, return_info=True)
    b = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=4, return_info=True)
    for u, v in zip(a[0] + a[2], b[0] + b[2]):
        np.testing.assert_array_equal(u, v)
    assert a[1] == b[1] and a[3] == b[3]
    c = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=5)
    assert c[1] != a[1]
    X_train, y_train, X_test, y_test, info = a
    assert not set(info["train_pool"].tolist()) & set(info["test_pool"].tolist())
    assert len(info["train_pool"]) + len(info["test_pool"]) == 1797
    assert set(np.concatenate(info["train_images"]).tolist()) <= set(info["train_pool"].tolist())
    assert set(np.concatenate(info["test_images"]).tolist()) <= set(info["test_pool"].tolist())
    for X, Y in ((X_train, y_train), (X_test, y_test)):
        for x, y in zip(X, Y):
            assert x.shape == (len(y), 64) and 2 <= len(y) <= 7
            assert x.min() >= 0.0 and x.max() <= 1.0
            assert all(isinstance(c, int) and 0 <= c <= 9 for c in y)


def test_digit_strings_images_and_transitions():
    from sklearn.datasets import load_digits

    digits = load_digits()
    X, y, _, _, info = digit_strings(400, 1, length=(5, 5), noise=0.0, seed=1, return_info=True)
    for x, labels, idx in zip(X[:20], y[:20], info["train_images"][:20]):
        np.testing.assert_array_equal(x, digits.data[idx] / 16.0)
        assert labels == digits.target[idx].tolist()
    P = info["P"]
    counts = np.zeros((10, 10))
    for labels in y:
        for a, c in zip(labels[:-1], labels[1:]):
            counts[a, c] += 1
    freq = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(freq, P, atol=0.1)
    assert np.allclose(np.diag(P), 0.02) and P.max() == pytest.approx(0.82)
    P0, _ = digit_transition_matrix(0.0, seed=1)
    assert np.allclose(P0, 0.1)


@pytest.mark.parametrize("kwargs", [dict(length=(0, 3)), dict(length=(5, 3)), dict(length=3), dict(noise=-1.0),
                                    dict(transition_strength=1.5), dict(seed=None), dict(n_train=-1),
                                    dict(test_fraction=1.0)])
def test_digit_strings_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        digit_strings(**{"n_train": 2, "n_test": 2, **kwargs})
