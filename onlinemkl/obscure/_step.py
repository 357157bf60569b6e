"""OBSCURE (Orabona, Jie & Caputo 2012), one compiled step per example.

Stage 1 is Algorithm 1 (online p-norm mirror descent with a constant step),
stage 2 is Algorithm 2 (stochastic, adaptive step ``eta_t = q / (lambda t + s_t)``,
shrink ``(1 - lambda eta_t / q)`` and projection onto the ball of radius
``q R``); ``pegasos`` sets ``s_t = 0`` (the paper's Pegasos-MKL baseline).

The dual vector is kept in kernelised form (section 3.1)::

    theta^j = scale * sum_s coef_s (phi_j(x_s, ypos_s) - phi_j(x_s, yneg_s))

with one coefficient per stored example shared by all kernels (every step
moves all kernels' dual vectors by the same subgradient) and one global lazy
``scale`` (the stage-2 shrink and projection multiply every kernel by the same
number: "cumulate the scalings").  ``theta_sq[j] = ||raw theta^j||^2`` is
kept up to date in O(F) per step from the kernel row.

The mirror map (Lemma 1, B = infinity) gives ``w^j = a_j theta^j`` with
``a_j = (1/q) (||theta^j|| / ||theta||_{2,q})^(q-2)``.

Binary problems use one output (``ypos = 0``, ``yneg = -1``, the coefficient
carries the label's sign: ``z = -y phi(x)``); multiclass problems use the
Crammer-Singer joint feature map with ``C`` outputs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._config import njit, njit_inline
from .._core.buffer import (Projection, choose_evictee, evict, fold_scales, partner_scan, project_onto, store,
                            update_norms_add)
from .._core.kernels import block_values, block_work, effective_diag, kernel_row_block, prepare_query
from .._core.scores import accumulate_block, kernel_scores, scatter_block
from .._core.state import KernelSpec, LabelledRows, Query, Rows

# Indices into the float64 ``hyper`` array (the real-valued settings).
H_Q = 0  # dual exponent q = p / (p - 1)
H_ETA = 1  # stage-1 step size
H_LAM = 2  # regularisation lambda
H_R = 3  # stage-2 radius R (ball of radius q R on theta)
N_HYPER = 4

# Indices into the int64 ``ihyper`` array (the integer settings: codes, flags, counts).
IH_STAGE = 0  # 1 or 2
IH_PEGASOS = 1  # 1: s_t = 0
IH_BUDGET = 2  # maximum stored examples (0: unbounded)
IH_POLICY = 3  # eviction policy code
IH_BINARY = 4  # 1: binary hinge with one output
IH_NCLASS = 5  # number of outputs in use (classes seen)
N_IHYPER = 6

# Indices into the mutable ``istate`` array.
I_N = 0  # stored examples
I_T = 1  # stage-2 step counter t
I_UPDATES = 2  # steps with a non-zero subgradient
I_CLOCK = 3  # examples seen (time stamps)
I_EVICTIONS = 4
I_CLEAN_RUN = 5  # consecutive examples without a margin error
N_ISTATE = 6

# Indices into the mutable ``fstate`` array.
F_SCALE = 0  # global lazy scale of theta
F_S = 1  # stage-2 s_t
F_LOSS_SUM = 2  # sum of online losses (for the running estimate of R)
F_LOSS_N = 3
N_FSTATE = 4

class ObscureState(NamedTuple):
    """An OBSCURE model's state beside its buffer: ``theta_sq[F]`` (``||raw theta^j||^2``), the
    integer and float counters ``istate``/``fstate`` (``I_*``, ``F_*``), the real-valued
    settings ``hyper`` (``H_*``) and the integer ones ``ihyper`` (``IH_*``; the stage and the
    outputs in use change as the model learns), and scratch for the raw per-kernel scores
    ``g[F, C]`` and the output scores ``scores[C]``."""

    theta_sq: np.ndarray
    istate: np.ndarray
    fstate: np.ndarray
    hyper: np.ndarray
    ihyper: np.ndarray
    g: np.ndarray
    scores: np.ndarray


# Where obscure_step's raw scores come from (its ``mode``).
FUSED = 0
SCORES_GIVEN = 2
PREDICT = 3
REPLAY = 5  # obscure_run only: FUSED steps on rows of X, with a merge hint per row of X
SCORES_MIXED = 6  # _fit.obscure_fit_run with many outputs: the caller filled ``scores``
REPLAY_BOUND = 7  # obscure_run only: REPLAY with binding hints (replay of stored rows under a budget)

# Fold the lazy scale into the coefficients when it drifts this far from 1.
SCALE_FOLD_LOW = 1e-100
SCALE_FOLD_HIGH = 1e100


@njit
def group_qnorm(theta_sq, q):
    """``(sum_j ||theta^j||^q)^(1/q)`` from squared norms, overflow-safe for large q."""
    F = theta_sq.shape[0]
    m = 0.0
    for j in range(F):
        v = np.sqrt(theta_sq[j]) if theta_sq[j] > 0.0 else 0.0
        if v > m:
            m = v
    if m == 0.0:
        return 0.0
    acc = 0.0
    for j in range(F):
        v = np.sqrt(theta_sq[j]) if theta_sq[j] > 0.0 else 0.0
        acc += (v / m) ** q
    return m * acc ** (1.0 / q)


@njit
def mirror_weights(theta_sq, q, out):
    """``a_j = (1/q) (||theta^j|| / ||theta||_{2,q})^(q-2)`` (Lemma 1); ``w^j = a_j theta^j``.

    Scale-free: the raw norms give the same ratios as the scaled ones.  When
    ``theta = 0`` the weights are irrelevant (w = 0); they are set to 1/q.
    """
    F = theta_sq.shape[0]
    nq = group_qnorm(theta_sq, q)
    for j in range(F):
        if nq == 0.0 or q == 2.0:
            out[j] = 1.0 / q
        else:
            v = np.sqrt(theta_sq[j]) if theta_sq[j] > 0.0 else 0.0
            out[j] = (1.0 / q) * (v / nq) ** (q - 2.0)


@njit
def class_scores(g, a, scale, n_out, out):
    """``s_c = scale * sum_j a_j g[j, c]`` for the outputs in use."""
    F = g.shape[0]
    for c in range(n_out):
        acc = 0.0
        for j in range(F):
            acc += a[j] * g[j, c]
        out[c] = scale * acc


@njit
def hinge_step_direction(scores, y, n_out, binary):
    """Loss and the update's outputs for binary hinge / Crammer-Singer hinge.

    Returns ``(loss, margin_error, cpos, cneg, sign, yhat)``: the subgradient is
    ``-sign * (phi(x, cpos) - phi(x, cneg))``; ``yhat`` is the prediction
    (binary: +1/-1, multiclass: argmax class, lowest index on ties).
    A margin error is ``s_y <= max_{c != y} s_c + 1`` (the authors' toolbox).
    """
    if binary:
        f = scores[0]
        yl = 1.0 if y > 0 else -1.0
        m = 1.0 - yl * f
        loss = m if m > 0.0 else 0.0
        yhat = 1 if f > 0.0 else (-1 if f < 0.0 else 1)
        return loss, m >= 0.0, 0, -1, yl, yhat
    best = 0
    for c in range(1, n_out):
        if scores[c] > scores[best]:
            best = c
    if n_out < 2:
        return 0.0, False, y, -1, 0.0, best
    rival = -1
    for c in range(n_out):
        if c != y and (rival < 0 or scores[c] > scores[rival]):
            rival = c
    m = 1.0 - (scores[y] - scores[rival])
    loss = m if m > 0.0 else 0.0
    return loss, m >= 0.0, y, rival, 1.0, best


@njit
def obscure_run(order, X, Yi, buf, spec, st, mode, merge, eviction):
    """Steps (or predictions) on the rows ``X[order]`` with labels ``Yi``: the streaming entry point.

    Learning one example, predicting one and replay's steps all come through here.  ``mode``
    as :func:`obscure_step`'s, or :data:`REPLAY`: :data:`FUSED` steps on ``X[order]`` (replay's
    draws from its reservoir, in one call instead of one per step) with a merge hint per row
    of ``X``.  ``merge`` (int64): ``[slot, stamp]`` where the last example is already stored,
    or ``[-1, -1]``, or ``[slot, stamp, 1]`` (the same hint made binding, see
    :func:`obscure_step`'s ``merge_only``); with :data:`REPLAY`, either that or ``2 len(X)``
    entries, ``[slot, stamp]`` of the row last stored for each row of ``X`` (kept up to date
    here), so that an example updated again with the same class pair adds to its row instead
    of storing a copy: the same predictor, fewer rows.  :data:`REPLAY_BOUND`: :data:`REPLAY`
    with every hint binding (replay of stored rows under a budget: each step adds to the row
    its hint names, or makes no update).  ``eviction``: see :func:`obscure_step`
    (None compiles a variant without the eviction code).

    Returns ``(n_updates, loss, yhat, updated, slot)``, the last four of the last example.
    The caller guarantees capacity for ``len(order)`` more rows.  ``buf``, ``spec``, ``st``:
    the fields of :class:`~onlinemkl._core.state.LabelledRows`,
    :class:`~onlinemkl._core.state.KernelSpec` and :class:`ObscureState`, as those records or
    as plain tuples in the same order.
    """
    # The Python layer passes plain tuples (Numba dispatches them in C, a NamedTuple through
    # Python's typeof: a per-example cost); inside, the named records.
    buf, spec, st = LabelledRows(*buf), KernelSpec(*spec), ObscureState(*st)
    replay = mode == REPLAY or mode == REPLAY_BOUND
    merge_rows = replay and merge.shape[0] == 2 * X.shape[0]
    merge_only = mode == REPLAY_BOUND or (merge.shape[0] == 3 and merge[2] != 0)
    step_mode = FUSED if replay else mode
    n_updates = 0
    loss, yhat, updated, slot = 0.0, -1, False, -1
    last = order.shape[0] - 1
    for t in range(order.shape[0]):
        i = order[t]
        if merge_rows:
            ms, mt = merge[2 * i], merge[2 * i + 1]
        elif t == last:
            ms, mt = merge[0], merge[1]
        else:
            ms, mt = -1, -1
        loss, yhat, updated, slot = obscure_step(X[i], Yi[i], buf, spec, st, step_mode, ms, mt, merge_only,
                                                 eviction)
        if updated:
            n_updates += 1
            if merge_rows:
                merge[2 * i] = slot
                merge[2 * i + 1] = buf.tstamp[slot]
    return n_updates, loss, yhat, updated, slot


@njit
def make_room(policy, query, buf, spec, st, a):
    """Evict a stored row under :data:`IH_BUDGET` for the update of ``query``; returns the freed slot.

    ``policy``: ``buffer.EVICT_*``; ``a``: the mirror weights of this step.  Before the row
    goes, its contribution is projected onto the stored row that keeps most of it
    (:func:`~onlinemkl._core.buffer.project_onto`), and the norms are updated exactly.
    """
    params, g, theta_sq = spec.params, st.g, st.theta_sq
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    F = spec.codes.shape[0]
    n = st.istate[I_N]
    d = query.x.shape[0]
    sc = st.fstate[F_SCALE]
    wsq = np.empty(F)
    for j in range(F):
        wsq[j] = (a[j] * sc) ** 2
    slot = choose_evictee(policy, n, buf.tstamp, buf.coef, buf.yneg, buf.sdiag, params, wsq)
    # theta^j . u_e (the scores of x_e: a second pass over the buffer, which also finds the
    # row to project x_e's contribution onto, see buffer.project_onto) and K_j(x, x_e)
    ge = np.empty_like(g)
    kep = np.zeros(F)
    p = partner_scan(slot, d, n, buf, spec, wsq, ge, kep)
    work = block_work(spec.gptr.shape[0] - 1)
    if p >= 0:
        # theta^j . u_p (a third pass) and K_j(x, x_p): keep what row p can of x_e's part
        gp = np.empty_like(g)
        qp = Query(buf.S[p, :d].copy(), buf.ssq[p, :].copy(), buf.sdiag[:, p].copy())
        kernel_scores(qp, rows, n, spec, buf.coef, buf.ypos, buf.yneg, gp)
        kxp = np.empty((F, 1))
        kernel_row_block(query, rows, p, kxp.shape[1], spec, work, kxp)
        project_onto(slot, p, buf, params, theta_sq, g, Projection(wsq, ge, gp, kep, kxp))
    kx = np.empty((F, 1))
    kernel_row_block(query, rows, slot, kx.shape[1], spec, work, kx)
    evict(slot, theta_sq, g, ge, kx, buf.ypos, buf.yneg, buf.coef, buf.sdiag, params)
    st.istate[I_EVICTIONS] += 1
    return slot


@njit_inline
def obscure_step(x, y, buf, spec, st, mode, merge_slot, merge_stamp, merge_only, eviction):
    """One OBSCURE step on ``(x, y)``; the whole per-example work in one call.

    ``y`` is the output index (multiclass) or +1/-1 (binary).  ``mode`` says where the raw
    per-kernel scores ``g`` come from: :data:`FUSED`, the fused serial pass over the buffer;
    :data:`SCORES_GIVEN`, the caller has filled ``g`` (the ``fit`` pass, and the parallel
    passes on large buffers, compiled only when used); :data:`SCORES_MIXED`, the caller has
    filled ``scores`` and the columns of ``g`` an update reads (:func:`~onlinemkl.obscure._fit.gather_mixed`);
    :data:`PREDICT`, the fused pass and no update: ``scores`` are filled, nothing else changes
    (called through :func:`obscure_run`, the one compiled entry point).

    ``merge_slot``, ``merge_stamp``: where ``x`` is stored already (a replayed example; -1 if
    nowhere).  If that row still holds it (same time stamp) with the class pair of this update,
    the update adds to its coefficient instead of storing ``x`` again: the same ``theta`` in
    one row fewer.  The check makes any value safe: a stale or wrong hint only stores a row.
    ``merge_only``: the hint is binding (a replayed step under a budget, LaSVM's "reprocess"):
    without a match the step makes no update, so it never stores or evicts a row.
    ``eviction``: the eviction policy code (``buffer.EVICT_*``) of a learner with a budget, or
    None for one without: then the eviction code (two more passes over the buffer and a
    projection) is pruned from this variant at compile time, and a learner never compiles what
    it cannot run.

    Returns ``(loss, yhat, updated, slot)`` where ``yhat`` is the prediction made
    before the update (test-then-train), ``loss`` the loss at ``w_t`` and
    ``slot`` the buffer row the example was stored in or added to (-1: no update).
    The caller guarantees capacity for one more stored example.
    """
    S, ssq, sdiag, ypos, yneg, coef, tstamp = buf
    theta_sq, istate, fstate, hyper, ihyper, g, scores = st
    params = spec.params
    rows = Rows(S, ssq, sdiag)
    G = spec.gptr.shape[0] - 1
    F = spec.codes.shape[0]
    q = hyper[H_Q]
    lam = hyper[H_LAM]
    binary = ihyper[IH_BINARY] != 0
    n_out = 1 if binary else ihyper[IH_NCLASS]
    n = istate[I_N]

    xsq = np.empty(G)
    xdiag = np.empty(F)
    prepare_query(x, spec, xsq, xdiag)
    query = Query(x, xsq, xdiag)
    if mode != SCORES_GIVEN and mode != SCORES_MIXED:
        kernel_scores(query, rows, n, spec, coef, ypos, yneg, g)
    a = np.empty(F)
    mirror_weights(theta_sq, q, a)
    if mode != SCORES_MIXED:
        class_scores(g, a, fstate[F_SCALE], n_out, scores)
    if mode == PREDICT:
        return 0.0, -1, False, -1
    loss, err, cpos, cneg, sign, yhat = hinge_step_direction(scores, y, n_out, binary)
    istate[I_CLOCK] += 1
    istate[I_CLEAN_RUN] = 0 if err else istate[I_CLEAN_RUN] + 1
    fstate[F_LOSS_SUM] += loss
    fstate[F_LOSS_N] += 1.0

    mult = 1.0 if cneg < 0 else 2.0
    if ihyper[IH_STAGE] == 2:
        # Algorithm 2: adaptive step from the bound on this step's subgradient.
        t = istate[I_T] + 1
        istate[I_T] = t
        theta_q = fstate[F_SCALE] * group_qnorm(theta_sq, q)
        z_q = 0.0
        if err:
            acc = 0.0
            for j in range(F):
                acc += (mult * effective_diag(xdiag[j], params[j, 3])) ** (q / 2.0)
            z_q = acc ** (1.0 / q)
        if ihyper[IH_PEGASOS] != 0:
            s_t = 0.0
        else:
            s_prev = fstate[F_S]
            d_t = lam * t + s_prev
            bound = lam / q * theta_q + z_q
            R = hyper[H_R]
            s_t = s_prev + 0.5 * (np.sqrt(d_t * d_t + q * bound * bound / (R * R)) - d_t)
        fstate[F_S] = s_t
        eta_t = q / (lam * t + s_t)
        shrink = 1.0 - lam * eta_t / q
        if shrink <= 0.0:
            # Pegasos at t = 1: the shrink wipes theta; drop every stored example.
            istate[I_N] = 0
            n = 0
            theta_sq[:] = 0.0
            fstate[F_SCALE] = 1.0
            g[:, :] = 0.0
        else:
            fstate[F_SCALE] *= shrink
        step = eta_t
    else:
        step = hyper[H_ETA]

    updated = False
    slot = -1
    budget = ihyper[IH_BUDGET]
    # A replayed example already stored at merge_slot with the same class pair: the update is
    # that row's coefficient plus r (the same theta, without a second copy of the row).
    merged = (merge_slot >= 0 and merge_slot < n and tstamp[merge_slot] == merge_stamp
              and ypos[merge_slot] == cpos and yneg[merge_slot] == cneg)
    # merge_only: a replayed step under a budget adjusts the row holding its example, or nothing
    if err and step > 0.0 and (merged or not merge_only):
        updated = True
        istate[I_UPDATES] += 1
        sc = fstate[F_SCALE]
        r = sign * step / sc  # raw coefficient: theta <- theta - step * z
        slot = n
        if merged:
            slot = merge_slot
        elif eviction is not None and budget > 0 and n >= budget:
            slot = make_room(eviction, query, buf, spec, st, a)
        else:
            istate[I_N] = n + 1
        cvec = np.empty(coef.shape[1])
        cvec[:] = r
        update_norms_add(theta_sq, g, cpos, cneg, cvec, xdiag, params)
        if merged:
            for k in range(coef.shape[1]):
                coef[slot, k] += r
        else:
            store(slot, query, cpos, cneg, cvec, istate[I_CLOCK], buf)

    if ihyper[IH_STAGE] == 2:
        # Projection onto ||theta||_{2,q} <= q R (keeps ||w||_{2,p} <= R).
        nrm = fstate[F_SCALE] * group_qnorm(theta_sq, q)
        lim = q * hyper[H_R]
        if nrm > lim:
            fstate[F_SCALE] *= lim / nrm

    sc = fstate[F_SCALE]
    if sc < SCALE_FOLD_LOW or sc > SCALE_FOLD_HIGH:
        fold_scales(istate[I_N], coef, fstate[F_SCALE:F_SCALE + 1], theta_sq)
    return loss, yhat, updated, slot


@njit
def theta_sq_from_buffer(buf, n, spec, n_out):
    """Recompute ``||raw theta^j||^2`` from the buffer (O(n^2); tests and repairs)."""
    S, ssq, sdiag, ypos, yneg, coef, _ = buf
    rows = Rows(S, ssq, sdiag)
    F = spec.codes.shape[0]
    out = np.zeros(F)
    g = np.empty((F, n_out))
    per_kernel = 1 if coef.shape[1] > 1 else 0
    d = S.shape[1]
    for i in range(n):
        kernel_scores(Query(S[i, :d].copy(), ssq[i, :].copy(), sdiag[:, i].copy()), rows, n, spec, coef, ypos, yneg, g)
        for j in range(F):
            v = g[j, ypos[i]]
            if yneg[i] >= 0:
                v -= g[j, yneg[i]]
            out[j] += coef[i, j * per_kernel] * v
    return out


def obscure_run_parts(order, X, Yi, buf, spec, st, mode, merge, eviction):
    """The callees of :func:`obscure_run` a helper process may compile while this one compiles the
    rest (:mod:`onlinemkl._split`), with the types this step calls them with: those its type
    inference reaches last, first the kernel values and the score sums, then the update."""
    from numba import typeof, types  # the types of the records, as the step builds them

    buf, spec, st = LabelledRows(*buf), KernelSpec(*spec), ObscureState(*st)
    f1, f2, i = types.float64[::1], types.float64[:, ::1], types.int64
    query = types.NamedUniTuple(f1, 3, Query)
    work = typeof(block_work.py_func(1))
    coef, ypos, yneg, g = typeof(buf.coef), typeof(buf.ypos), typeof(buf.yneg), typeof(st.g)
    theta_sq, scores = typeof(st.theta_sq), typeof(st.scores)
    parts = [
        (block_values, (typeof(spec.codes), typeof(spec.params), typeof(spec.kgroup), types.literal(-1), work, i, f2)),
        (accumulate_block, (f2, i, coef, i, ypos, yneg, f1, g)),
        (scatter_block, (f2, i, coef, i, ypos, yneg, g)),
        (mirror_weights, (theta_sq, types.float64, f1)),
        (class_scores, (g, f1, types.float64, i, scores)),
        (hinge_step_direction, (scores, typeof(Yi).dtype, i, types.boolean)),
        (update_norms_add, (theta_sq, g, i, i, f1, f1, typeof(spec.params))),
        (store, (i, query, i, i, f1, i, typeof(buf))),
        (fold_scales, (i, coef, f1, theta_sq)),
    ]
    return parts


#: The parts of entry points a helper process may compile (:mod:`onlinemkl._split`).
COMPILE_PARTS = {"obscure_run": obscure_run_parts}
