"""OBSCURE's ``fit`` over precomputed kernel matrices: :func:`obscure_fit_run`; over the class sums
of every training example and a chunk's own kernel values: :func:`obscure_fit_chunk`.

The steps are :func:`~onlinemkl.obscure._step.obscure_step`'s, with the raw scores read from the
kernel matrices (or from the class sums kept beside them) instead of a pass over the buffer.
A learner that only streams never compiles this module's functions.
"""

from __future__ import annotations

import numpy as np

from .._config import njit
from .._core.buffer import fold_scales
from .._core.kernels import ROW_BLOCK
from .._core.scores import add_block_scores, dense_accumulation
from .._core.state import KernelSpec, LabelledRows
from ._step import (F_SCALE, H_LAM, H_Q, I_N, I_T, IH_BINARY, IH_NCLASS, IH_PEGASOS, IH_STAGE, SCALE_FOLD_LOW,
                    SCORES_GIVEN, SCORES_MIXED, ObscureState, hinge_step_direction, mirror_weights, obscure_run_parts,
                    obscure_step)


@njit
def obscure_fit_run(order, X, Yi, matrix, buf, spec, st, merge, eviction, G):
    """:func:`obscure_run`'s steps for ``fit``, with the kernel rows gathered from precomputed matrices.

    ``matrix = (Kt, sv_index)``: the kernel row of example ``i`` against the buffer is read
    from ``Kt[j, i, sv_index[s]]`` (``sv_index[s]`` is the training index of stored row ``s``,
    kept up to date here) instead of being recomputed; ``Kt`` float64 or float32 (each compiles
    its own variant, and stream users compile neither).  ``G``: None (that code is then pruned
    at compile time), or the per-kernel class
    scores of every training example, ``G[j, c, v] = sum_s coef_s ([ypos_s = c] - [yneg_s = c])
    Kt[j, sv_s, v]`` (raw, before the lazy scale), kept up to date here (see
    :func:`add_class_sums`); it needs symmetric ``Kt`` over the whole training set and no budget.
    With it a step reads its scores in ``O(F C)`` and an update costs ``O(F N)``, where
    without it every step sums over the stored rows.  ``merge``: ``[-1, -1]`` or ``2 len(X)``
    entries, ``[slot, stamp]`` of the row last stored for each row of ``X`` (kept up to date
    here), as :func:`obscure_run`'s :data:`REPLAY`.  Returns ``obscure_run``'s tuple.
    """
    Kt, sv_index = matrix
    buf, spec, st = LabelledRows(*buf), KernelSpec(*spec), ObscureState(*st)
    F = spec.codes.shape[0]
    coef, ypos, yneg, g, istate = buf.coef, buf.ypos, buf.yneg, st.g, st.istate
    n_updates = 0
    dense = dense_accumulation(coef, g)
    merge_rows = merge.shape[0] == 2 * X.shape[0]
    kv = np.empty((F, ROW_BLOCK))
    ws = np.empty(ROW_BLOCK)
    loss, yhat, updated, slot = 0.0, -1, False, -1
    # Multiclass: the scores from the mixed kernel, and the per-kernel scores only of the two
    # outputs an update needs (gather_mixed).  Binary problems have one output, which every
    # update needs per kernel: the dense sums of add_block_scores.
    binary = st.ihyper[IH_BINARY] != 0
    mixed = not binary
    a = np.empty(F)
    km = np.empty(Kt.shape[2] if mixed else 0)
    for t in range(order.shape[0]):
        i = order[t]
        ms, mt = (merge[2 * i], merge[2 * i + 1]) if merge_rows else (-1, -1)
        n0 = istate[I_N]
        if G is not None:
            n_out = 1 if binary else st.ihyper[IH_NCLASS]
            for j in range(F):
                for c in range(n_out):
                    g[j, c] = G[j, c, i]
            step_mode = SCORES_GIVEN
        elif mixed:
            gather_mixed(i, Yi[i], Kt, sv_index, buf, st, a, km)
            step_mode = SCORES_MIXED
        else:
            # The scores straight from Kt, a block of stored rows at a time (the sums of kernel_scores)
            g[:, :] = 0.0
            for i0 in range(0, n0, ROW_BLOCK):
                m = min(ROW_BLOCK, n0 - i0)
                for j in range(F):
                    for r in range(m):
                        kv[j, r] = Kt[j, i, sv_index[i0 + r]]
                add_block_scores(dense, kv, m, coef, i0, ypos, yneg, ws, g)
            step_mode = SCORES_GIVEN
        # the coefficient of the row the hint names, before the step (an update may add to it)
        c0 = coef[ms, 0] if ms >= 0 and ms < n0 else 0.0
        loss, yhat, updated, slot = obscure_step(X[i], Yi[i], buf, spec, st, step_mode, ms, mt, False, eviction)
        if updated:
            n_updates += 1
            sv_index[slot] = i
            if merge_rows:
                merge[2 * i] = slot
                merge[2 * i + 1] = buf.tstamp[slot]
        if G is not None:
            if st.ihyper[IH_STAGE] == 2 and (istate[I_T] == 1 or st.fstate[F_SCALE] == 1.0):
                # Stage 2's first step may drop every row (Pegasos), and it shrinks the scale at
                # every step, so 1 after a step means the lazy scale was folded into the
                # coefficients.  Both rescale many rows: recompute.
                class_sums(Kt, sv_index, buf, istate[I_N], G)
            elif updated:
                # a new row (slot n0) or the hinted row's coefficient moved: no budget, no other row changed
                delta = coef[slot, 0] - (c0 if slot < n0 else 0.0)
                add_class_sums(G, Kt, i, ypos[slot], yneg[slot], delta)
    return n_updates, loss, yhat, updated, slot


@njit
def obscure_fit_chunk(idx, X, Yi, Kc, G, buf, spec, st, merge, pending):
    """:func:`obscure_fit_run`'s steps with class sums ``G`` on a chunk of training examples, for
    training sets whose kernel matrices are not kept: no kernel row against the training set
    is needed during the chunk.

    ``idx``: the training indices of the chunk's steps, in order; ``Kc[j, a, b] =
    K_j(X[idx[a]], X[idx[b]])``, the chunk's kernel values among themselves.  ``G``: the
    per-kernel class sums of every training example (as :func:`obscure_fit_run`'s) before the
    chunk.  A step's scores are its column of ``G`` plus what the chunk's earlier updates added,
    read from ``Kc``; each update is recorded in ``pending = (where, delta)``: ``where[k] =
    [position in the chunk, cpos, cneg]`` and ``delta[k]`` the move of the raw coefficient,
    for the caller to add to ``G`` with one block of kernel rows (updated examples against the
    training set) per chunk.  So an epoch computes kernel rows only for its updates, where
    gathering scores from the stored rows needs every example's row against them all.

    ``G`` changes here only as the stored rows do all at once: Pegasos' first stage-2 step drops
    them (``G`` and ``pending`` are zeroed), and a lazy scale about to be folded into the
    coefficients is folded here first (``G`` and ``pending`` times the scale), so that the fold
    happens at a known factor.  No budget (no eviction).  ``merge``: ``2 len(X)`` entries as
    :func:`obscure_fit_run`'s, or ``[-1, -1]``.  Returns ``(n_updates, n_pending)``.
    """
    buf, spec, st = LabelledRows(*buf), KernelSpec(*spec), ObscureState(*st)
    where, delta = pending
    F = G.shape[0]
    coef, ypos, yneg, g, istate, fstate = buf.coef, buf.ypos, buf.yneg, st.g, st.istate, st.fstate
    n_out = 1 if st.ihyper[IH_BINARY] != 0 else st.ihyper[IH_NCLASS]
    merge_rows = merge.shape[0] == 2 * X.shape[0]
    q, lam = st.hyper[H_Q], st.hyper[H_LAM]
    n_updates, n_pend = 0, 0
    for t in range(idx.shape[0]):
        i = idx[t]
        sc = fstate[F_SCALE]
        if sc < 1e10 * SCALE_FOLD_LOW:
            # a step shrinks the scale by far less than 1e10: obscure_step will not fold it
            fold_scales(istate[I_N], coef, fstate[F_SCALE:F_SCALE + 1], st.theta_sq)
            G *= sc
            for k in range(n_pend):
                delta[k] *= sc
        for j in range(F):
            for c in range(n_out):
                g[j, c] = G[j, c, i]
        for k in range(n_pend):
            a, cp, cn = where[k, 0], where[k, 1], where[k, 2]
            for j in range(F):
                v = delta[k] * Kc[j, a, t]
                g[j, cp] += v
                if cn >= 0:
                    g[j, cn] -= v
        ms, mt = (merge[2 * i], merge[2 * i + 1]) if merge_rows else (-1, -1)
        n0 = istate[I_N]
        c0 = coef[ms, 0] if ms >= 0 and ms < n0 else 0.0
        # obscure_step's first stage-2 shrink under Pegasos, the same operations: <= 0 drops every row
        dropped = (st.ihyper[IH_STAGE] == 2 and st.ihyper[IH_PEGASOS] != 0 and istate[I_T] == 0
                   and 1.0 - lam * (q / (lam * 1 + 0.0)) / q <= 0.0)
        updated, slot = obscure_step(X[i], Yi[i], buf, spec, st, SCORES_GIVEN, ms, mt, False, None)[2:]
        if dropped:  # Pegasos at its first stage-2 step: every stored row dropped
            G[:, :, :] = 0.0
            n_pend = 0
        if updated:
            n_updates += 1
            if merge_rows:
                merge[2 * i] = slot
                merge[2 * i + 1] = buf.tstamp[slot]
            where[n_pend, 0], where[n_pend, 1], where[n_pend, 2] = t, ypos[slot], yneg[slot]
            delta[n_pend] = coef[slot, 0] - (c0 if slot == ms and not dropped else 0.0)
            n_pend += 1
    return n_updates, n_pend


@njit
def add_pending_sums(G, rows, row_of, pending, n_pend):
    """Add the ``n_pend`` updates :func:`obscure_fit_chunk` recorded in ``pending`` to ``G``: update
    ``k`` moved a coefficient by ``delta[k]`` for the classes ``where[k, 1:]``, and ``rows[:,
    row_of[k]]`` holds its example's kernel row against the training set (two rows of ``G`` per
    update, where a dense product would touch every class)."""
    where, delta = pending
    for k in range(n_pend):
        add_class_sums(G, rows, row_of[k], where[k, 1], where[k, 2], delta[k])


@njit
def add_class_sums(G, Kt, u, cpos, cneg, delta):
    """``G[j, cpos] += delta Kt[j, u]`` and ``G[j, cneg] -= delta Kt[j, u]`` (``cneg`` -1: none):
    training example ``u``'s coefficient moved by ``delta`` (``Kt`` symmetric: its row ``u`` is
    its column, read contiguously)."""
    for j in range(G.shape[0]):
        row = Kt[j, u]
        gp = G[j, cpos]
        for v in range(gp.shape[0]):
            gp[v] += delta * row[v]
        if cneg >= 0:
            gn = G[j, cneg]
            for v in range(gn.shape[0]):
                gn[v] -= delta * row[v]


@njit
def class_sums(Kt, sv_index, buf, n, G):
    """``G`` of :func:`obscure_fit_run` recomputed from the ``n`` stored rows."""
    coef, ypos, yneg = buf.coef, buf.ypos, buf.yneg
    per_kernel = 1 if coef.shape[1] > 1 else 0
    G[:, :, :] = 0.0
    for s in range(n):
        u = sv_index[s]
        for j in range(G.shape[0]):
            w = coef[s, j * per_kernel]
            row = Kt[j, u]
            gp = G[j, ypos[s]]
            for v in range(gp.shape[0]):
                gp[v] += w * row[v]
            if yneg[s] >= 0:
                gn = G[j, yneg[s]]
                for v in range(gn.shape[0]):
                    gn[v] -= w * row[v]


@njit
def gather_mixed(i, y, Kt, sv_index, buf, st, a, km):
    """Fill ``st.scores`` for training example ``i`` (label ``y``) from the precomputed matrices, and the
    columns of ``st.g`` that its update reads, without a per-kernel scatter over the buffer.

    The output scores need only the mixed kernel: ``scores[c] = scale sum_s coef_s
    ([ypos_s = c] - [yneg_s = c]) sum_j a_j Kt[j, i, sv_s]``, one value per stored row where
    the per-kernel scores ``g[j, c]`` take ``F`` per output (``2 F`` read-modify-writes of
    ``g`` per row, or ``F + 1`` dot products per output: most of a multiclass step's time).  The norm update reads ``g[:, cpos]`` and
    ``g[:, cneg]`` only, for the class pair of a margin error: those two columns are summed in
    a second pass over the rows holding either class, only when there is an update.  Other
    columns of ``g`` are left stale (only :func:`obscure_step` with :data:`SCORES_MIXED`, which
    reads the given scores and those two columns, follows).  ``a``: scratch of ``F``; ``km``:
    scratch of ``Kt.shape[2]``.  When the stored rows outnumber half the columns of ``Kt`` (an
    example stored with several class pairs), the mixed kernel of every column is computed
    first, in one contiguous pass per kernel, and each row reads its column's value: one
    read per row instead of ``F`` scattered ones.
    """
    coef, ypos, yneg = buf.coef, buf.ypos, buf.yneg
    theta_sq, istate, fstate, hyper, ihyper, g, scores = st
    F = g.shape[0]
    n = istate[I_N]
    binary = ihyper[IH_BINARY] != 0
    n_out = 1 if binary else ihyper[IH_NCLASS]
    mirror_weights(theta_sq, hyper[H_Q], a)
    for c in range(n_out):
        scores[c] = 0.0
    if 2 * n >= km.shape[0]:
        km[:] = 0.0
        for j in range(F):
            for u in range(km.shape[0]):
                km[u] += a[j] * Kt[j, i, u]
        for s in range(n):
            v = coef[s, 0] * km[sv_index[s]]
            scores[ypos[s]] += v
            if yneg[s] >= 0:
                scores[yneg[s]] -= v
    else:
        for s in range(n):
            u = sv_index[s]
            v = 0.0
            for j in range(F):
                v += a[j] * Kt[j, i, u]
            v *= coef[s, 0]
            scores[ypos[s]] += v
            if yneg[s] >= 0:
                scores[yneg[s]] -= v
    sc = fstate[F_SCALE]
    for c in range(n_out):
        scores[c] *= sc
    err, cpos, cneg = hinge_step_direction(scores, y, n_out, binary)[1:4]
    if not err:
        return
    for j in range(F):
        g[j, cpos] = 0.0
        if cneg >= 0:
            g[j, cneg] = 0.0
    for s in range(n):
        yp, yn = ypos[s], yneg[s]
        pos = yp == cpos or yp == cneg
        neg = yn >= 0 and (yn == cpos or yn == cneg)
        if pos or neg:
            u = sv_index[s]
            for j in range(F):
                v = coef[s, 0] * Kt[j, i, u]
                if pos:
                    g[j, yp] += v
                if neg:
                    g[j, yn] -= v


def obscure_fit_run_parts(order, X, Yi, matrix, buf, spec, st, merge, eviction, G):
    """The callees of :func:`obscure_fit_run` a helper process may compile while this one compiles
    the rest (:mod:`onlinemkl._split`): the step's, which ``fit`` reaches through
    :func:`~onlinemkl.obscure._step.obscure_step` with the stream's types."""
    return obscure_run_parts(order, X, Yi, buf, spec, st, None, merge, eviction)


#: The parts of entry points a helper process may compile (:mod:`onlinemkl._split`).
COMPILE_PARTS = {"obscure_fit_run": obscure_fit_run_parts}
