"""Buffer maintenance of the group-norm learners (online proximal MKL, the sequence labeller).

When the budget is full, a stored example leaves the model: chosen by :func:`choose_dense_evictee`,
its share of the norms and scores taken out (:func:`evict_norms`, :func:`add_row_to_scores`), or
projected onto a partner row with a parallel class vector (:func:`evict_scan` finds it,
:func:`evict_and_merge` moves the contribution).  A replayed step's update competes with the
stored rows (:data:`EVICT_LEAST_IMPACT_COMPETING`): when it is the least it is the one projected
(:func:`project_update`) and no row leaves.  The steps in :mod:`onlinemkl.proximal._step` and
:mod:`onlinemkl.sequence._step` run the kernel passes these need themselves and hand over the
values, so the functions here are arithmetic, except the scans over the buffer (:func:`evict_scan`,
:func:`project_update`).
"""

from __future__ import annotations

import numpy as np

from .._config import njit
from .._core.buffer import EVICT_OLDEST
from .._core.kernels import ROW_BLOCK, block_work, effective_diag, kernel_row_block
from .._core.scores import dense_kernel_scores
from .._core.state import Query, Rows

#: 'least_impact', with the incoming update competing for eviction: the proximal classifier's
#: replayed steps (:func:`~onlinemkl.proximal._step.fobos_step`, :func:`project_update`).
EVICT_LEAST_IMPACT_COMPETING = 2


@njit
def add_row_to_scores(sign, i, kx, coef, beta, n_out, g):
    """``g[k, c] += sign * coef[i, k] * K_k(x, S_i) * beta[i, c]``: stored row ``i``'s part of
    the raw scores of ``x`` (to correct scores after an insertion or an eviction).  ``kx[k, 0] =
    K_k(x, S_i)``, from the one-row blocked pass (:func:`kernel_row_block`) of the caller."""
    F = coef.shape[1]
    for k in range(F):
        v = sign * coef[i, k] * kx[k, 0]
        for c in range(n_out):
            g[k, c] += v * beta[i, c]


@njit
def evict_norms(e, ge, theta_sq, coef, beta, n_out, sdiag, params):
    """Take stored example ``e`` out of every implicit group's norm (its slot is then reused).

    ``||theta_k - c_ek v_e||^2 = ||theta_k||^2 - 2 c_ek theta_k.v_e + c_ek^2 ||beta_e||^2 K_k(x_e, x_e)``,
    with ``ge`` the raw scores of ``x_e`` (:func:`~onlinemkl._core.scores.dense_kernel_scores`: a second pass over the
    buffer, run by the caller).
    """
    F = coef.shape[1]
    bsq = 0.0
    for c in range(n_out):
        bsq += beta[e, c] * beta[e, c]
    for k in range(F):
        r = -coef[e, k]
        tu = 0.0
        for c in range(n_out):
            tu += beta[e, c] * ge[k, c]
        kee = effective_diag(sdiag[k, e], params[k, 3])
        v = theta_sq[k] + 2.0 * r * tu + r * r * bsq * kee
        theta_sq[k] = v if v > 0.0 else 0.0


@njit
def row_impact(i, coef, beta, n_out, sdiag, params, sigma):
    """``||Delta theta||^2 = sum_k (sigma_k coef_ik)^2 ||beta_i||^2 K_k(x_i, x_i)``: stored row ``i``'s size."""
    bsq = 0.0
    for c in range(n_out):
        bsq += beta[i, c] * beta[i, c]
    val = 0.0
    for k in range(coef.shape[1]):
        a = sigma[k] * coef[i, k]
        val += a * a * bsq * effective_diag(sdiag[k, i], params[k, 3])
    return val


@njit
def update_impact(u, steps, xdiag, params):
    """The same size for an update ``steps_k u (x) phi_k(x)`` not stored yet (``xdiag[k] = K_k(x, x)``)."""
    usq = 0.0
    for c in range(u.shape[0]):
        usq += u[c] * u[c]
    val = 0.0
    for k in range(xdiag.shape[0]):
        val += steps[k] * steps[k] * usq * effective_diag(xdiag[k], params[k, 3])
    return val


@njit
def choose_dense_evictee(policy, n, tstamp, coef, beta, n_out, sdiag, params, sigma):
    """Oldest, or least ``||Delta theta||^2`` (:func:`row_impact`)."""
    best = 0
    if policy == EVICT_OLDEST:
        for i in range(1, n):
            if tstamp[i] < tstamp[best]:
                best = i
        return best
    best_val = np.inf
    for i in range(n):
        val = row_impact(i, coef, beta, n_out, sdiag, params, sigma)
        if val < best_val:
            best_val = val
            best = i
    return best


@njit
def parallel_vectors(a, b, n_out):
    """``(rho, ||b||^2)`` if ``a = rho * b`` (first ``n_out`` entries parallel), else ``(0, 0)``."""
    aa = 0.0
    bb = 0.0
    ab = 0.0
    for c in range(n_out):
        aa += a[c] * a[c]
        bb += b[c] * b[c]
        ab += a[c] * b[c]
    if bb == 0.0 or ab == 0.0 or ab * ab < (1.0 - 1e-12) * aa * bb:
        return 0.0, 0.0
    return ab / bb, bb


@njit
def parallel_classes(beta, e, j, n_out):
    """``(rho, ||beta_j||^2)`` if ``beta[e] = rho * beta[j]`` (class vectors parallel), else ``(0, 0)``."""
    return parallel_vectors(beta[e], beta[j], n_out)


@njit
def partner_gain(v, w, kv, t, i, beta, n_out, sdiag, params):
    """How much of ``sum_k w_k v (x) phi_k(x)`` stored row ``i`` would keep if it were projected
    onto it: ``sum_k (w_k K_k(x, x_i))^2 / K_k(x_i, x_i)`` with ``kv[k, t] = K_k(x, x_i)``; 0 when
    the row's class vector is not parallel to ``v``.  The partner search of an eviction
    (:func:`evict_scan`) and of a projected update (:func:`project_update`)."""
    if parallel_vectors(v, beta[i], n_out)[1] == 0.0:
        return 0.0
    gain = 0.0
    for k in range(kv.shape[0]):  # the implicit groups (``w`` may go on with explicit ones)
        kii = effective_diag(sdiag[k, i], params[k, 3])
        if kii > 0.0:
            a = w[k] * kv[k, t]
            gain += a * a / kii
    return gain


@njit
def evict_scan(e, n, rows, spec, coef, beta, n_out, sigma, ge, kej):
    """One pass over the buffer for stored example ``e`` (about to be evicted).

    Fills ``ge[k, c]``, the raw scores of ``x_e`` (``theta_k . v_e = sum_c beta_ec ge[k, c]``), and
    returns the merge partner: the stored ``j != e`` whose class vector is parallel to ``e``'s
    and whose row captures the most of ``e``'s contribution, ``sum_k (sigma_k coef_ek)^2
    K_k(x_e, x_j)^2 / K_k(x_j, x_j)`` (the squared norm of its projection); ``kej[k] =
    K_k(x_e, x_j)``.  Returns -1 when no row qualifies.
    """
    G = spec.gptr.shape[0] - 1
    F = spec.codes.shape[0]
    params, sdiag = spec.params, rows.sdiag
    for k in range(F):
        for c in range(n_out):
            ge[k, c] = 0.0
    qe = Query(rows.S[e, :].copy(), rows.ssq[e, :].copy(), sdiag[:, e].copy())
    # The kernel values of x_e against a block of rows at once (the blocked pass of the scores),
    # then the scalar bookkeeping row by row, in order.
    work = block_work(G)
    kv = np.empty((F, ROW_BLOCK))
    w = np.empty(F)  # the evictee's weight in each group
    for k in range(F):
        w[k] = sigma[k] * coef[e, k]
    best = -1
    best_gain = 0.0
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(qe, rows, i0, m, spec, work, kv)
        for t in range(m):
            i = i0 + t
            for c in range(n_out):
                b = beta[i, c]
                if b != 0.0:
                    for k in range(F):
                        ge[k, c] += kv[k, t] * coef[i, k] * b
            if i == e:
                continue
            gain = partner_gain(beta[e], w, kv, t, i, beta, n_out, sdiag, params)
            if gain > best_gain:
                best_gain = gain
                best = i
                for k in range(F):
                    kej[k] = kv[k, t]
    return best


@njit
def evict_and_merge(e, j, passes, buf, params, st, n_out, g):
    """Take stored example ``e`` out of the model, projecting its contribution onto partner ``j``.

    Group ``k`` holds ``coef_ek v_e`` with ``v_e = phi_k(x_e) (x) beta_e``.  Where a stored ``j``
    has a parallel class vector (``beta_e = rho beta_j``: always for one output, i.e. binary
    classification and regression; the same class pair for the multiclass hinge), the part of
    ``coef_ek v_e`` along ``v_j`` is kept by ``coef_jk += a_k coef_ek`` with ``a_k = rho
    K_k(x_e, x_j) / K_k(x_j, x_j)`` (the orthogonal projection, per group); only the
    residual leaves the model.  The averaged model is treated alike: row ``e``'s accumulated
    average moves to row ``j`` with the same factors.  Without a partner (``j = -1``) ``e`` is
    simply removed (its share of the average with it).

    Updates the raw squared norms exactly (eq. 17 style) and the raw scores ``g`` of the
    incoming ``x`` (row ``e`` removed, row ``j`` changed), from what the caller's kernel passes
    computed first, ``passes`` (:class:`EvictionPasses`): ``ge``/``gj`` the raw scores of
    ``x_e``/``x_j`` and ``kej[k] = K_k(x_e, x_j)`` (:func:`evict_scan`,
    :func:`~onlinemkl._core.scores.dense_kernel_scores`), ``kxe[k, 0]``/``kxj[k, 0]`` the kernel values of ``x`` against
    rows ``e``/``j``.  Row ``e`` itself is left for the caller to overwrite.  ``buf``
    (:class:`~onlinemkl.proximal._step.ProxRows`) and ``st`` (:class:`~onlinemkl.proximal._step.GroupState`: ``theta_sq``, ``sigma_cum``) are
    updated in place; ``params`` are the kernels' parameter rows.
    """
    ge, gj, kej, kxe, kxj = passes
    coef, beta, sdiag = buf.coef, buf.beta, buf.sdiag
    avg_acc, avg_base = buf.avg_acc, buf.avg_base
    theta_sq, sigma_cum = st.theta_sq, st.sigma_cum
    F = coef.shape[1]
    add_row_to_scores(-1.0, e, kxe, coef, beta, n_out, g)
    bsq = 0.0
    for c in range(n_out):
        bsq += beta[e, c] * beta[e, c]
    if j < 0:
        for k in range(F):
            r = -coef[e, k]
            tu = 0.0
            for c in range(n_out):
                tu += beta[e, c] * ge[k, c]
            v = theta_sq[k] + 2.0 * r * tu + r * r * bsq * effective_diag(sdiag[k, e], params[k, 3])
            theta_sq[k] = v if v > 0.0 else 0.0
        return
    rho, bsq_j = parallel_classes(beta, e, j, n_out)
    for k in range(F):
        kee = effective_diag(sdiag[k, e], params[k, 3])
        kjj = effective_diag(sdiag[k, j], params[k, 3])
        a = rho * kej[k] / kjj if kjj > 0.0 else 0.0
        ce = coef[e, k]
        d = a * ce
        tu_e = 0.0
        tu_j = 0.0
        for c in range(n_out):
            tu_e += beta[e, c] * ge[k, c]
            tu_j += beta[j, c] * gj[k, c]
        # ||theta - ce v_e + d v_j||^2, with v_e . v_j = K_k(x_e, x_j) beta_e . beta_j = kej rho ||beta_j||^2
        v = (theta_sq[k] - 2.0 * ce * tu_e + 2.0 * d * tu_j + ce * ce * bsq * kee + d * d * bsq_j * kjj
             - 2.0 * ce * d * kej[k] * rho * bsq_j)
        theta_sq[k] = v if v > 0.0 else 0.0
        # the averaged model: fold row j's running average, then move row e's (projected) into it
        ae = avg_acc[e, k] + ce * (sigma_cum[k] - avg_base[e, k])
        avg_acc[j, k] += coef[j, k] * (sigma_cum[k] - avg_base[j, k]) + a * ae
        avg_base[j, k] = sigma_cum[k]
        coef[j, k] += d
        v = d * kxj[k, 0]
        for c in range(n_out):
            g[k, c] += v * beta[j, c]


@njit
def project_update(q, u, steps, n, buf, spec, st, n_out):
    """An update that lost the competition for a row (:data:`EVICT_LEAST_IMPACT_COMPETING`):
    ``steps_k u (x) phi_k(x)`` is projected, group by group, onto the stored row ``j`` whose
    class vector is parallel to ``u`` and which captures the most of it (as
    :func:`evict_and_merge` projects an evicted row: ``coef_jk += rho steps_k K_k(x, x_j) /
    (sigma_k K_k(x_j, x_j))``); the residual is dropped.  Without such a row nothing is kept.

    Budgeted SGD's merging (Wang et al. 2012) with the incoming update among the candidates:
    a small (late, replayed) update adjusts a kept row instead of evicting one.  Two passes
    over the buffer: the kernel values of ``x`` (the partner), then the raw scores of ``x_j``
    (its norm update, eq. 17 style).  The averaged model folds row ``j``'s running average
    first, as :func:`~onlinemkl.proximal._step.implicit_insert` does for a merge.  ``q`` is the
    query of ``x``; ``buf`` (:class:`~onlinemkl.proximal._step.ProxRows`), ``spec`` and ``st``
    (:class:`~onlinemkl.proximal._step.GroupState`) as the step holds them, updated in place.
    Returns ``j`` (-1: none).
    """
    F = spec.codes.shape[0]
    params = spec.params
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    coef, beta, sdiag = buf.coef, buf.beta, buf.sdiag
    theta_sq, sigma, sigma_cum = st.theta_sq, st.sigma, st.sigma_cum
    work = block_work(spec.gptr.shape[0] - 1)
    kv = np.empty((F, ROW_BLOCK))
    kxj = np.zeros(F)
    best = -1
    best_gain = 0.0
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(q, rows, i0, m, spec, work, kv)
        for t in range(m):
            i = i0 + t
            gain = partner_gain(u, steps, kv, t, i, beta, n_out, sdiag, params)
            if gain > best_gain:
                best_gain = gain
                best = i
                for k in range(F):
                    kxj[k] = kv[k, t]
    j = best
    if j < 0:
        return -1
    rho, bsq_j = parallel_vectors(u, beta[j], n_out)
    gj = np.empty((F, n_out))
    qj = Query(buf.S[j, :].copy(), buf.ssq[j, :].copy(), sdiag[:, j].copy())
    dense_kernel_scores(qj, rows, n, spec, coef, beta, n_out, gj)
    for k in range(F):
        kjj = effective_diag(sdiag[k, j], params[k, 3])
        d = rho * kxj[k] * steps[k] / (kjj * sigma[k]) if kjj > 0.0 else 0.0
        tu_j = 0.0
        for c in range(n_out):
            tu_j += beta[j, c] * gj[k, c]
        v = theta_sq[k] + 2.0 * d * tu_j + d * d * bsq_j * kjj
        theta_sq[k] = v if v > 0.0 else 0.0
        buf.avg_acc[j, k] += coef[j, k] * (sigma_cum[k] - buf.avg_base[j, k])
        buf.avg_base[j, k] = sigma_cum[k]
        coef[j, k] += d
    return j
