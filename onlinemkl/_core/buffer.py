"""Support-buffer maintenance (last stage of the pipeline).

The buffer is struct-of-arrays with a capacity (owned and grown by the Python
layer, :class:`onlinemkl._buffer.SupportBuffer`):

``S[cap, d_cap]``   stored example rows (missing / later features are 0)
``ssq[cap, G]``     squared norm of each row on each feature group
``sdiag[cap, F]``   ``K_j(s, s)`` of each row in the stored form (``kernels.stored_diag``: raw,
                    or ``1 / sqrt(K_j(s, s))`` for a normalised kernel)
``ypos[cap]``       the output each stored example adds to
``yneg[cap]``       the output it subtracts from (-1: none)
``coef[cap, A]``    its raw coefficient (A = 1: shared by all kernels; A = F: per kernel)
``tstamp[cap]``     the example counter when it was stored (for "oldest" eviction)

The model is ``theta^j = scale_j * sum_s coef[s, j] (phi_j(x_s, ypos_s) - phi_j(x_s, yneg_s))``.
"""

from __future__ import annotations

import numpy as np

from .._config import njit
from .kernels import effective_diag

EVICT_OLDEST = 0
EVICT_LEAST_IMPACT = 1


@njit
def put_row(dst, i, src):
    """``dst[i, :len(src)] = src`` and zeros after it, element by element: a slice assignment
    between arrays compiles a shape check with a formatted error message, seconds of first-run
    compile time for a copy whose shapes the caller guarantees."""
    d = src.shape[0]
    for k in range(d):
        dst[i, k] = src[k]
    for k in range(d, dst.shape[1]):
        dst[i, k] = 0.0


@njit
def store(slot, q, cpos, cneg, c, stamp, buf):
    """Write the query ``q`` (:class:`~onlinemkl._core.state.Query`) into ``slot`` of the buffer
    ``buf`` (:class:`~onlinemkl._core.state.LabelledRows`): an append, or the slot of an evicted
    example.  ``c`` is a length-A array of raw coefficients.
    """
    put_row(buf.S, slot, q.x)
    put_row(buf.ssq, slot, q.xsq)
    put_row(buf.sdiag, slot, q.xdiag)
    buf.ypos[slot] = cpos
    buf.yneg[slot] = cneg
    put_row(buf.coef, slot, c)
    buf.tstamp[slot] = stamp


@njit
def choose_evictee(policy, n, tstamp, coef, yneg, sdiag, params, weight_sq):
    """The stored example to drop when the buffer is at its budget.

    ``EVICT_OLDEST``: the smallest time stamp (a sliding window).
    ``EVICT_LEAST_IMPACT``: the example whose removal changes the predictor
    least, measured by ``||Delta w||^2 = sum_j weight_sq[j] coef_sj^2 ||u_s^j||^2``,
    its contribution to the group norms (``weight_sq[j]`` is the squared
    factor between ``theta^j`` and ``w^j``, scale included).
    """
    best = 0
    if policy == EVICT_OLDEST:
        oldest = tstamp[0]
        for i in range(1, n):
            if tstamp[i] < oldest:
                oldest = tstamp[i]
                best = i
        return best
    F = sdiag.shape[1]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    best_val = np.inf
    for i in range(n):
        mult = 2.0 if yneg[i] >= 0 else 1.0
        val = 0.0
        for j in range(F):
            cij = coef[i, j * per_kernel]
            val += weight_sq[j] * cij * cij * mult * effective_diag(sdiag[i, j], params[j, 3])
        if val < best_val:
            best_val = val
            best = i
    return best


@njit
def fold_scales(n, coef, scales, theta_sq):
    """Fold lazy scale factors into the coefficients: ``coef *= scale``, norms likewise, scale = 1.

    ``scales`` has one entry (a global scale) or one per kernel (per-group scales).
    """
    A = coef.shape[1]
    F = theta_sq.shape[0]
    if scales.shape[0] == 1:
        sc = scales[0]
        for i in range(n):
            for a in range(A):
                coef[i, a] *= sc
        for j in range(F):
            theta_sq[j] *= sc * sc
        scales[0] = 1.0
    else:
        for i in range(n):
            for a in range(A):
                coef[i, a] *= scales[a]
        for j in range(F):
            theta_sq[j] *= scales[j] * scales[j]
            scales[j] = 1.0


@njit
def update_norms_add(theta_sq, g, cpos, cneg, r, xdiag, params):
    """``||theta^j + r_j u^j||^2`` for ``u^j = phi_j(x, cpos) - phi_j(x, cneg)`` (raw space).

    ``= ||theta^j||^2 + 2 r_j theta^j.u^j + r_j^2 ||u^j||^2`` with
    ``theta^j.u^j = g[j, cpos] - g[j, cneg]`` and ``||u^j||^2 = mult K_j(x, x)``
    (``mult`` = 2 for a pair of distinct outputs, 1 for one output).
    ``r`` has one entry (shared) or one per kernel.
    """
    F = theta_sq.shape[0]
    per_kernel = 1 if r.shape[0] > 1 else 0
    mult = 2.0 if cneg >= 0 else 1.0
    for j in range(F):
        dot = g[j, cpos]
        if cneg >= 0:
            dot -= g[j, cneg]
        kxx = effective_diag(xdiag[j], params[j, 3])
        rj = r[j * per_kernel]
        v = theta_sq[j] + 2.0 * rj * dot + rj * rj * mult * kxx
        theta_sq[j] = v if v > 0.0 else 0.0


@njit
def evict(e, theta_sq, g, ge, kx, ypos, yneg, coef, sdiag, params):
    """Take stored example ``e`` out of theta: exact norm and score updates.

    ``ge[j, c]`` are the raw scores of ``x_e`` under theta (``theta^j . phi_j(x_e, c)``: a second
    pass over the buffer) and ``kx[j, 0] = K_j(x, x_e)``, with which the query's scores ``g``
    are corrected; the caller computes both with the passes it already runs, so this step is
    arithmetic only.  The slot itself is overwritten by the caller.
    """
    F = theta_sq.shape[0]
    ce = -coef[e, :]
    cp = ypos[e]
    cn = yneg[e]
    per_kernel = 1 if ce.shape[0] > 1 else 0
    # ||theta + ce u_e||^2 = ||theta||^2 + 2 ce theta.u_e + ce^2 ||u_e||^2, with ce = -coef_e
    update_norms_add(theta_sq, ge, cp, cn, ce, sdiag[e], params)
    for j in range(F):
        v = ce[j * per_kernel] * kx[j, 0]
        g[j, cp] += v
        if cn >= 0:
            g[j, cn] -= v
