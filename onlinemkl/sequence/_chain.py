"""Exact inference on a first-order chain (nopython).

A labelling ``y`` of a length-``L`` sequence over ``Y`` labels scores

    score(y) = S0[y_0] + sum_i U[i, y_i] + sum_{i>=1} T[y_{i-1}, y_i] + S1[y_{L-1}]

with unary scores ``U`` (``L x Y``), transitions ``T`` (``Y x Y``) and start/stop scores
``S0``/``S1``.  ``viterbi`` finds the best labelling, ``viterbi_loss_augmented`` the best
labelling of ``score(y) + cost * Hamming(y, y_true)`` (the structured hinge's most violating
labelling) and ``forward_backward`` the log-partition function with the unary and pairwise
marginals of the CRF ``p(y) ∝ exp(score(y))``, all in ``O(L Y^2)`` and in log space.

The empty sequence has exactly one labelling (the empty one) with score 0, so ``viterbi``
returns 0 and ``forward_backward`` returns ``log Z = 0``.
"""

import numpy as np

from .._config import njit


@njit
def viterbi(U, T, S0, S1, out_path):
    """Write the best labelling into ``out_path[:L]`` and return its score."""
    L, Y = U.shape
    if L == 0:
        return 0.0
    delta = np.empty((L, Y))
    back = np.zeros((L, Y), dtype=np.int64)
    for c in range(Y):
        delta[0, c] = U[0, c] + S0[c]
    for i in range(1, L):
        for c in range(Y):
            best = -np.inf
            arg = 0
            for a in range(Y):
                v = delta[i - 1, a] + T[a, c]
                if v > best:
                    best = v
                    arg = a
            delta[i, c] = best + U[i, c]
            back[i, c] = arg
    best = -np.inf
    arg = 0
    for c in range(Y):
        v = delta[L - 1, c] + S1[c]
        if v > best:
            best = v
            arg = c
    out_path[L - 1] = arg
    for i in range(L - 1, 0, -1):
        out_path[i - 1] = back[i, out_path[i]]
    return best


@njit
def viterbi_loss_augmented(U, T, S0, S1, y_true, cost, out_path):
    """Best labelling of ``score(y) + cost * #{i : y_i != y_true[i]}``; returns that value.

    The Hamming cost decomposes over positions, so it is added to the unary scores of every
    wrong label and ordinary Viterbi does the rest.
    """
    V = U.copy()
    for i in range(U.shape[0]):
        for c in range(U.shape[1]):
            if c != y_true[i]:
                V[i, c] += cost
    return viterbi(V, T, S0, S1, out_path)


@njit
def _logsumexp_row(v):
    m = -np.inf
    for j in range(v.shape[0]):
        if v[j] > m:
            m = v[j]
    if m == -np.inf:
        return m
    s = 0.0
    for j in range(v.shape[0]):
        s += np.exp(v[j] - m)
    return m + np.log(s)


@njit
def forward_backward(U, T, S0, S1, marg, pair):
    """CRF marginals: ``marg[i, c] = p(y_i = c)``, ``pair[a, c] = sum_i p(y_{i-1}=a, y_i=c)``.

    Returns ``log Z``.  ``marg`` must have ``L`` rows; ``pair`` is overwritten.
    """
    L, Y = U.shape
    pair[:, :] = 0.0
    if L == 0:
        return 0.0
    alpha = np.empty((L, Y))
    beta = np.empty((L, Y))
    tmp = np.empty(Y)
    for c in range(Y):
        alpha[0, c] = U[0, c] + S0[c]
    for i in range(1, L):
        for c in range(Y):
            for a in range(Y):
                tmp[a] = alpha[i - 1, a] + T[a, c]
            alpha[i, c] = _logsumexp_row(tmp) + U[i, c]
    for c in range(Y):
        beta[L - 1, c] = S1[c]
    for i in range(L - 2, -1, -1):
        for a in range(Y):
            for c in range(Y):
                tmp[c] = T[a, c] + U[i + 1, c] + beta[i + 1, c]
            beta[i, a] = _logsumexp_row(tmp)
    for c in range(Y):
        tmp[c] = alpha[L - 1, c] + S1[c]
    logz = _logsumexp_row(tmp)
    for i in range(L):
        for c in range(Y):
            marg[i, c] = np.exp(alpha[i, c] + beta[i, c] - logz)
    for i in range(1, L):
        for a in range(Y):
            for c in range(Y):
                pair[a, c] += np.exp(alpha[i - 1, a] + T[a, c] + U[i, c] + beta[i, c] - logz)
    return logz
