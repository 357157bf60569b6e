"""Losses and their derivatives with respect to the scores (the pipeline's third stage).

Each function takes the scores ``s[0:n_out]`` of one example and writes
``dl[c] = d loss / d s_c``; the learner's gradient step is then
``theta_k <- theta_k - eta * sum_c dl[c] phi_k(x, c)``.  Binary losses use one
output and ``y`` in {-1, +1}; regression losses one output and a real ``y``;
multiclass losses ``n_out`` outputs and ``y`` an output index.
"""

from __future__ import annotations

import numpy as np

from .._config import njit

HINGE = 0  # binary hinge max(0, 1 - y f)
MULTICLASS_HINGE = 1  # Crammer-Singer max(0, 1 - s_y + max_{c != y} s_c)
LOGISTIC = 2  # binary log(1 + exp(-y f))
MULTINOMIAL = 3  # -log softmax(s)_y
SQUARED = 4  # 0.5 (f - y)^2
EPSILON_INSENSITIVE = 5  # max(0, |f - y| - epsilon)


@njit
def log1pexp(z):
    """``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z))
    return np.log1p(np.exp(z))


@njit
def loss_and_derivative(code, scores, n_out, y_cls, y_val, epsilon, dl):
    """Loss of one example and ``dl = d loss / d scores``; returns ``(loss, yhat)``.

    ``yhat`` is the prediction (output index; for binary losses 0 means -1 and
    1 means +1; for regression 0).  Ties go to the lowest index; a binary score
    of exactly 0 predicts +1.
    """
    for c in range(n_out):
        dl[c] = 0.0
    if code == HINGE or code == LOGISTIC:
        f = scores[0]
        yl = 1.0 if y_cls > 0 else -1.0
        yhat = 1 if f >= 0.0 else 0
        if code == HINGE:
            m = 1.0 - yl * f
            if m > 0.0:
                dl[0] = -yl
                return m, yhat
            return 0.0, yhat
        # d/df log(1 + exp(-y f)) = -y / (1 + exp(y f))
        dl[0] = -yl / (1.0 + np.exp(yl * f)) if yl * f > -700.0 else -yl
        return log1pexp(-yl * f), yhat
    if code == SQUARED or code == EPSILON_INSENSITIVE:
        r = scores[0] - y_val
        if code == SQUARED:
            dl[0] = r
            return 0.5 * r * r, 0
        a = abs(r) - epsilon
        if a > 0.0:
            dl[0] = 1.0 if r > 0.0 else -1.0
            return a, 0
        return 0.0, 0
    best = 0
    for c in range(1, n_out):
        if scores[c] > scores[best]:
            best = c
    if n_out < 2:
        return 0.0, best
    if code == MULTICLASS_HINGE:
        rival = -1
        for c in range(n_out):
            if c != y_cls and (rival < 0 or scores[c] > scores[rival]):
                rival = c
        m = 1.0 - scores[y_cls] + scores[rival]
        if m > 0.0:
            dl[y_cls] = -1.0
            dl[rival] = 1.0
            return m, best
        return 0.0, best
    # MULTINOMIAL: softmax with the maximum shifted out
    mx = scores[best]
    z = 0.0
    for c in range(n_out):
        dl[c] = np.exp(scores[c] - mx)
        z += dl[c]
    for c in range(n_out):
        dl[c] /= z
    loss = -(scores[y_cls] - mx - np.log(z))
    dl[y_cls] -= 1.0
    return loss, best
