"""Chain inference (Viterbi, loss-augmented Viterbi, forward-backward) against brute force."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from onlinemkl.sequence._chain import forward_backward, viterbi, viterbi_loss_augmented


def _score(y, U, T, S0, S1):
    s = S0[y[0]] + S1[y[-1]] + sum(U[i, c] for i, c in enumerate(y))
    return s + sum(T[a, c] for a, c in zip(y[:-1], y[1:]))


def _problem(rng, L, Y):
    return (rng.normal(size=(L, Y)), rng.normal(size=(Y, Y)),
            rng.normal(size=Y), rng.normal(size=Y))


CASES = [(L, Y, seed) for L in (1, 2, 3, 5) for Y in (1, 2, 3, 4) for seed in range(3)]


@pytest.mark.parametrize("L,Y,seed", CASES)
def test_viterbi_matches_enumeration(L, Y, seed):
    U, T, S0, S1 = _problem(np.random.default_rng(seed), L, Y)
    labellings = list(itertools.product(range(Y), repeat=L))
    scores = [_score(y, U, T, S0, S1) for y in labellings]
    path = np.empty(L, dtype=np.int64)
    best = viterbi(U, T, S0, S1, path)
    assert best == pytest.approx(max(scores), abs=1e-12)
    assert _score(tuple(path), U, T, S0, S1) == pytest.approx(max(scores), abs=1e-12)


@pytest.mark.parametrize("L,Y,seed", CASES)
def test_loss_augmented_matches_enumeration(L, Y, seed):
    rng = np.random.default_rng(100 + seed)
    U, T, S0, S1 = _problem(rng, L, Y)
    y_true = rng.integers(0, Y, size=L)
    cost = 0.7
    labellings = list(itertools.product(range(Y), repeat=L))
    aug = [_score(y, U, T, S0, S1) + cost * np.sum(np.array(y) != y_true) for y in labellings]
    path = np.empty(L, dtype=np.int64)
    value = viterbi_loss_augmented(U, T, S0, S1, y_true, cost, path)
    assert value == pytest.approx(max(aug), abs=1e-12)
    got = _score(tuple(path), U, T, S0, S1) + cost * np.sum(path != y_true)
    assert got == pytest.approx(max(aug), abs=1e-12)


@pytest.mark.parametrize("L,Y,seed", CASES)
def test_forward_backward_matches_enumeration(L, Y, seed):
    U, T, S0, S1 = _problem(np.random.default_rng(200 + seed), L, Y)
    labellings = list(itertools.product(range(Y), repeat=L))
    scores = np.array([_score(y, U, T, S0, S1) for y in labellings])
    logz = logsumexp(scores)
    p = np.exp(scores - logz)
    marg_ref = np.zeros((L, Y))
    pair_ref = np.zeros((Y, Y))
    for prob, y in zip(p, labellings):
        for i, c in enumerate(y):
            marg_ref[i, c] += prob
        for a, c in zip(y[:-1], y[1:]):
            pair_ref[a, c] += prob
    marg = np.empty((L, Y))
    pair = np.full((Y, Y), 123.0)
    got = forward_backward(U, T, S0, S1, marg, pair)
    assert got == pytest.approx(logz, abs=1e-10)
    np.testing.assert_allclose(marg, marg_ref, atol=1e-10)
    np.testing.assert_allclose(pair, pair_ref, atol=1e-10)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-12)


def test_empty_sequence():
    U = np.zeros((0, 3))
    T = np.ones((3, 3))
    S = np.ones(3)
    path = np.empty(0, dtype=np.int64)
    assert viterbi(U, T, S, S, path) == 0.0
    pair = np.ones((3, 3))
    assert forward_backward(U, T, S, S, np.empty((0, 3)), pair) == 0.0
    assert not pair.any()


def test_forward_backward_is_stable_for_huge_scores():
    U = np.array([[1000.0, -1000.0], [800.0, 900.0]])
    T = np.zeros((2, 2))
    S = np.zeros(2)
    marg = np.empty((2, 2))
    pair = np.empty((2, 2))
    logz = forward_backward(U, T, S, S, marg, pair)
    assert np.isfinite(logz) and np.all(np.isfinite(marg))
    np.testing.assert_allclose(marg, [[1.0, 0.0], [0.0, 1.0]], atol=1e-12)
