"""Support-buffer maintenance (last stage of the pipeline).

The buffer is struct-of-arrays with a capacity (owned and grown by the Python
layer, :class:`onlinemkl._buffer.SupportBuffer`):

``S[cap, d_cap]``   stored example rows (missing / later features are 0)
``ssq[cap, G]``     squared norm of each row on each feature group
``sdiag[F, cap]``   ``K_j(s, s)`` of each row in the stored form (``kernels.stored_diag``: raw,
                    or ``1 / sqrt(K_j(s, s))`` for a normalised kernel)
``ypos[cap]``       the output each stored example adds to
``yneg[cap]``       the output it subtracts from (-1: none)
``coef[cap, A]``    its raw coefficient (A = 1: shared by all kernels; A = F: per kernel)
``tstamp[cap]``     the example counter when it was stored (for "oldest" eviction)

The model is ``theta^j = scale_j * sum_s coef[s, j] (phi_j(x_s, ypos_s) - phi_j(x_s, yneg_s))``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._config import njit
from .kernels import ROW_BLOCK, block_work, effective_diag, kernel_row_block
from .scores import add_block_scores, dense_accumulation
from .state import Query, Rows

EVICT_OLDEST = 0
EVICT_LEAST_IMPACT = 1

#: Relative difference under which two rows' impacts count as tied (:func:`choose_evictee`).
TIE = 1e-12


@njit
def put_column(dst, i, src):
    """``dst[k, i] = src[k]`` for every ``k`` (a stored row's diagonals, kernel by kernel)."""
    for k in range(src.shape[0]):
        dst[k, i] = src[k]


@njit
def close_row_gap(a, e, n):
    """Rows ``e+1 .. n-1`` of the 2-D ``a`` moved up by one, element by element (no slice stored
    into a slice: see :func:`put_row`)."""
    for i in range(e, n - 1):
        for k in range(a.shape[1]):
            a[i, k] = a[i + 1, k]


@njit
def close_gap(a, e, n):
    """Entries ``e+1 .. n-1`` of the 1-D ``a`` moved up by one."""
    for i in range(e, n - 1):
        a[i] = a[i + 1]


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
    put_column(buf.sdiag, slot, q.xdiag)
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
    factor between ``theta^j`` and ``w^j``, scale included); the newest of rows tied
    within a relative :data:`TIE`.
    """
    best = 0
    if policy == EVICT_OLDEST:
        oldest = tstamp[0]
        for i in range(1, n):
            if tstamp[i] < oldest:
                oldest = tstamp[i]
                best = i
        return best
    F = sdiag.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    best_val = np.inf
    for i in range(n):
        mult = 2.0 if yneg[i] >= 0 else 1.0
        val = 0.0
        for j in range(F):
            cij = coef[i, j * per_kernel]
            val += weight_sq[j] * cij * cij * mult * effective_diag(sdiag[j, i], params[j, 3])
        # ties (within rounding) go to the newer row: in stage 1 every row has the same
        # |coefficient|, and at equal impact the newest is the row the model has leaned on least
        # (its contribution is projected onto a partner first)
        if val < best_val * (1.0 - TIE) or (val <= best_val * (1.0 + TIE) and tstamp[i] > tstamp[best]):
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
    update_norms_add(theta_sq, ge, cp, cn, ce, sdiag[:, e].copy(), params)
    for j in range(F):
        v = ce[j * per_kernel] * kx[j, 0]
        g[j, cp] += v
        if cn >= 0:
            g[j, cn] -= v


class Projection(NamedTuple):
    """What :func:`project_onto` needs of the evicted row ``e`` and its partner ``p``: the kernels'
    squared weights ``wsq[F]``, the raw scores ``ge``/``gp`` of ``x_e``/``x_p`` (``[F, C]``), and
    ``kep[F] = K_j(x_e, x_p)``, ``kxp[F, 1] = K_j(x, x_p)`` for the query ``x``."""

    wsq: np.ndarray
    ge: np.ndarray
    gp: np.ndarray
    kep: np.ndarray
    kxp: np.ndarray


@njit
def partner_scan(e, d, n, buf, spec, wsq, ge, kep):
    """One pass over the buffer for stored row ``e`` (about to be evicted; one shared coefficient).

    Fills ``ge[j, c]``, the raw scores of ``x_e`` (what :func:`evict` needs), and returns the
    projection partner: the stored ``p != e`` with the same class pair and coefficient sign (the
    same label) whose row keeps the most of ``e``'s contribution to ``w``, i.e. the largest
    ``(sum_j wsq_j K_j(x_e, x_p))^2 / sum_j wsq_j K_j(x_p, x_p)`` (the squared norm of the
    projection of ``coef_e u_e`` onto ``u_p`` in the weighted sum of the kernels' spaces) among
    those with ``sum_j wsq_j K_j(x_e, x_p) > 0``, so that the projection never flips a row's sign
    (a binary row's label is its coefficient's sign); ``kep[j] = K_j(x_e, x_p)``.  ``d``: the
    row's features in use; ``buf`` the :class:`~onlinemkl._core.state.LabelledRows`.  Returns -1
    when no row qualifies.
    """
    F = spec.codes.shape[0]
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    coef, ypos, yneg = buf.coef, buf.ypos, buf.yneg
    params, sdiag = spec.params, rows.sdiag
    ge[:, :] = 0.0
    qe = Query(rows.S[e, :d].copy(), rows.ssq[e, :].copy(), sdiag[:, e].copy())
    work = block_work(spec.gptr.shape[0] - 1)
    kv = np.empty((F, ROW_BLOCK))
    ws = np.empty(ROW_BLOCK)
    dense = dense_accumulation(coef, ge)
    best = -1
    best_gain = 0.0
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(qe, rows, i0, m, spec, work, kv)
        add_block_scores(dense, kv, m, coef, i0, ypos, yneg, ws, ge)
        for t in range(m):
            i = i0 + t
            if i == e or ypos[i] != ypos[e] or yneg[i] != yneg[e] or coef[i, 0] * coef[e, 0] <= 0.0:
                continue
            num = 0.0
            den = 0.0
            for j in range(F):
                num += wsq[j] * kv[j, t]
                den += wsq[j] * effective_diag(sdiag[j, i], params[j, 3])
            # a gain within rounding of the best (copies of one example: fit stores repeats under
            # a budget) keeps the earlier row, whatever the rounding of the blocked kernel values
            if num > 0.0 and den > 0.0 and num * num / den > best_gain * (1.0 + TIE):
                best_gain = num * num / den
                best = i
                for j in range(F):
                    kep[j] = kv[j, t]
    return best


@njit
def project_onto(e, p, buf, params, theta_sq, g, pr):
    """Move the part of stored row ``e``'s contribution along partner ``p`` (same class pair) onto it.

    Before :func:`evict` takes ``e`` out: ``coef_p += delta`` with ``delta = coef_e sum_j wsq_j
    K_j(x_e, x_p) / sum_j wsq_j K_j(x_p, x_p)``, the least-squares fit of ``coef_e u_e`` by a
    multiple of ``u_p`` in the weighted kernel spaces (``wsq_j``: the squared factor between
    ``theta^j`` and ``w^j``), so that only the residual leaves the model: with one coefficient
    shared by all kernels, one number fits them all.  Exact updates of the norms (``gp`` the raw
    scores of ``x_p``, ``ge`` those of ``x_e``, before any change) and of the query's scores
    ``g`` (``kxp[j, 0] = K_j(x, x_p)``); ``ge`` is brought up to date for :func:`evict`.  ``buf``:
    the :class:`~onlinemkl._core.state.LabelledRows`; ``pr``: the :class:`Projection` of ``e``
    onto ``p`` (``wsq``, ``ge``, ``gp``, ``kep``, ``kxp``).
    """
    wsq, ge, gp, kep, kxp = pr
    ypos, yneg, coef, sdiag = buf.ypos, buf.yneg, buf.coef, buf.sdiag
    F = theta_sq.shape[0]
    num = 0.0
    den = 0.0
    for j in range(F):
        num += wsq[j] * kep[j]
        den += wsq[j] * effective_diag(sdiag[j, p], params[j, 3])
    delta = coef[e, 0] * num / den
    cp = ypos[p]
    cn = yneg[p]
    r = np.empty(1)
    r[0] = delta
    update_norms_add(theta_sq, gp, cp, cn, r, sdiag[:, p].copy(), params)
    for j in range(F):
        v = delta * kxp[j, 0]
        g[j, cp] += v
        ve = delta * kep[j]
        ge[j, cp] += ve
        if cn >= 0:
            g[j, cn] -= v
            ge[j, cn] -= ve
    coef[p, 0] += delta
