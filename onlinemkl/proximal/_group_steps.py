"""How one proximal gradient step is split among the groups, and how long it may be.

A gradient step of online proximal MKL adds ``eta u phi_k(x)`` to every group ``k``: each
group's part of the prediction at ``x`` moves by ``eta K_k(x, x)`` times the residual, so the
groups share the step in proportion to their ``K_k(x, x)`` whatever they have learnt
(``GROUP_STEPS_EQUAL``).  ``GROUP_STEPS_NORMS`` gives group ``k`` the step ``eta m_k`` with
``m_k`` growing with the group's norm ``b_k = ||theta_k||``::

    m_k = floor + (1 - floor) * P * b_k ** power / sum_l b_l ** power

rescaled so that ``sum_k m_k K_k(x, x) = sum_k K_k(x, x)``: the step moves the prediction at
``x`` as far as the equal split does; only its split changes.  Why: with the squared l2,1
regulariser the model is a kernel machine on the combined kernel ``sum_k mu_k K_k`` with
``mu_k`` proportional to ``b_k`` (the variational form of ``(sum_k b_k) ** 2``), and a
gradient step on the function in that kernel's norm moves group ``k`` by ``eta mu_k``
(``power = 1``).  In one pass this turns the step towards the kernels the stream needs:
on a target made of pairwise products the quadratic kernel, whose product directions get a
small part of ``K(x, x)`` and are learnt slowly under the equal split, takes the larger
share; on a linear target, the linear kernel.  ``power = 1.5`` sharpens the weights beyond
the variational ones and ``floor = 0.1`` keeps every group learning (a group whose norm is
zero still gets a tenth of an equal share); both were chosen on 13 regression streams, where
the optimum is flat (1.25 to 1.75 and 0.05 to 0.2 give the same results).  Before any group
has a norm, the split is equal.

Regression steps are then capped at ``1 / sum_k m_k K_k(x, x)`` (:func:`normalised_step`).
"""

from __future__ import annotations

import numpy as np

from .._config import njit
from .._core.kernels import P_NORMALIZE, effective_diag

GROUP_STEPS_EQUAL = 0
GROUP_STEPS_NORMS = 1

SHARE_FLOOR = 0.1
SHARE_POWER = 1.5


@njit
def group_diagonals(x, xdiag, params, xgranges, xgptr, out):
    """``out[k] = K_k(x, x)``: the implicit groups' kernel diagonals, then each explicit
    group's ``||x_e||^2`` (its linear kernel)."""
    F = xdiag.shape[0]
    for j in range(F):
        out[j] = effective_diag(xdiag[j], params[j, P_NORMALIZE])
    for e in range(xgptr.shape[0] - 1):
        acc = 0.0
        for rr in range(xgptr[e], xgptr[e + 1]):
            for col in range(xgranges[rr, 0], xgranges[rr, 1]):
                acc += x[col] * x[col]
        out[F + e] = acc


@njit
def step_shares(code, theta_sq, sigma, kdiag, m):
    """``m[k]``, group ``k``'s multiplier of the step (module docstring): all ones for
    ``GROUP_STEPS_EQUAL`` or while every group is zero; for ``GROUP_STEPS_NORMS`` from the
    group norms ``sigma_k sqrt(theta_sq_k)`` and the diagonals ``kdiag`` (:func:`group_diagonals`)."""
    P = m.shape[0]
    for k in range(P):
        m[k] = 1.0
    if code != GROUP_STEPS_NORMS:
        return
    tot = 0.0
    for k in range(P):
        if theta_sq[k] > 0.0:
            tot += (sigma[k] * np.sqrt(theta_sq[k])) ** SHARE_POWER
    if tot <= 0.0:
        return
    before = 0.0
    after = 0.0
    for k in range(P):
        bp = (sigma[k] * np.sqrt(theta_sq[k])) ** SHARE_POWER if theta_sq[k] > 0.0 else 0.0
        m[k] = SHARE_FLOOR + (1.0 - SHARE_FLOOR) * P * bp / tot
        before += kdiag[k]
        after += m[k] * kdiag[k]
    if after > 0.0 and before > 0.0:
        for k in range(P):
            m[k] *= before / after


@njit
def normalised_step(eta, kdiag, m):
    """``min(eta, 1 / sum_k m_k K_k(x, x))`` (a regression step; ``kdiag`` from
    :func:`group_diagonals`, ``m`` from :func:`step_shares`).

    A squared-loss step moves the prediction at ``x`` by ``eta sum_k m_k K_k(x, x)`` times the
    residual, so past ``2`` it overshoots and the iterates diverge.  An unnormalised linear
    kernel has ``K(x, x) ~ d`` on standardised inputs: uncapped, the default regressor diverges from
    about 100 features.  Capping the step (normalised LMS) never lets one squared-loss step move the
    prediction past the target (an epsilon-insensitive step moves it by at most one
    standardised unit); for a few features it binds only in the first steps.
    """
    kxx = 0.0
    for k in range(kdiag.shape[0]):
        kxx += m[k] * kdiag[k]
    if kxx * eta > 1.0:
        return 1.0 / kxx
    return eta
