"""Online proximal MKL for sequence labelling (Martins et al., the structured case).

A first-order chain over ``Y`` labels.  The score of a labelling ``y`` of
positions ``x_0..x_{L-1}`` is::

    sum_i U[i, y_i] + sum_{i>0} T[y_{i-1}, y_i] + S0[y_0] + S1[y_{L-1}]

with unary scores ``U[i, c] = sum_k sigma_k sum_s B[k, s, c] K_k(x_s, x_i)``
from the implicit kernel groups over the support buffer of *position examples*: each stored
position carries one class vector per kernel, ``B[k, s, :]`` (:class:`PositionRows`),
and the transition/start/stop scores from one explicit group
``(T, S0, S1) = sigma_T * (Traw, S0raw, S1raw)``.

One step per sequence (Algorithm 1 with the structured loss):

* SVM (structured hinge, Hamming cost): loss-augmented Viterbi gives ``yhat``;
  the subgradient is ``phi(x, yhat) - phi(x, y)``, so each position with
  ``yhat_i != y_i`` gains ``eta (e_{y_i} - e_{yhat_i})`` in every kernel's class vector.
* CRF: forward-backward marginals ``mu``; the gradient is
  ``E_mu[phi] - phi(x, y)``, so every position gains ``eta (e_{y_i} - mu_i)``
  and the transitions move by the observed minus the expected counts.

A position is stored once.  A position already in the buffer (the caller's row hint,
``[slot, stamp]``, still valid) has the update added to its class vectors; any other is a new
row.  The lazy group scales ``sigma_k`` shrink the kernels' groups at different rates, so the
updates of one position at different steps are not parallel across kernels: a class vector per
kernel keeps the sum exact, where one shared class vector with a coefficient per kernel would
need a new row for every update.

Positions are inserted one after the other; after each insertion (and each
eviction) the raw scores of the positions still to be inserted are corrected
with one kernel evaluation, so the norm updates of eq. (17) stay exact (they
include the cross terms ``K_k(x_i, x_j)`` between positions of a sequence).
Then the same proximal step, projection and lazy scaling as the flat learner.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._config import njit
from ._chain import forward_backward, viterbi, viterbi_loss_augmented
from ..proximal._step import GroupState, prox_factors, step_size, SCALE_FOLD_HIGH, SCALE_FOLD_LOW
from .._core.batch import GroupProducts, values_from_products
from .._core.buffer import EVICT_OLDEST, put_column, put_row
from .._core.kernels import (BSPLINE, GROUP_L1, GROUP_SQDIST, ROW_BLOCK, block_work, effective_diag,
                             kernel_row_block, prepare_query, sqdist_block)
from .._core.state import KernelSpec, Query, Rows

# hyper (float64: the real-valued settings); the first five as in the proximal learner's
H_LAM = 0
H_PROX_PARAM = 1
H_ETA0 = 2
H_SIGMA_SC = 3
H_GAMMA = 4  # projection radius (0: none); with gamma="auto" the boundary sets it before each step
H_COST = 5  # Hamming cost per wrong position in loss-augmented decoding
N_HYPER = 6

# ihyper (int64: the integer settings, codes and counts); the first five as in the proximal learner's
IH_LOSS = 0  # 0 structured hinge (SVM), 1 CRF
IH_PROX = 1
IH_SCHEDULE = 2
IH_BUDGET = 3
IH_POLICY = 4
IH_NLABELS = 5
N_IHYPER = 6

LOSS_SVM = 0
LOSS_CRF = 1

# istate
I_N = 0
I_T = 1
I_UPDATES = 2
I_EVICTIONS = 3
I_CLOCK = 4  # positions seen (time stamps)
N_ISTATE = 5


class PositionRows(NamedTuple):
    """The stored positions: rows ``S[cap, d]`` with their caches ``ssq[cap, G]`` and
    ``sdiag[F, cap]`` (as :class:`~onlinemkl._core.state.Rows`), the raw class vectors per kernel
    ``B[F, cap, C]`` (group ``k`` is ``sigma_k sum_s B[k, s, :] phi_k(x_s)``), the time stamps
    ``tstamp[cap]`` (of each row's last update), and the averaged model's bookkeeping: ``Bavg[F,
    cap, C]`` (the running sum up to each row's last change) and ``avg_base[cap, F]`` (``sigma_cum``
    then)."""

    S: np.ndarray
    ssq: np.ndarray
    sdiag: np.ndarray
    B: np.ndarray
    tstamp: np.ndarray
    Bavg: np.ndarray
    avg_base: np.ndarray


class ChainScores(NamedTuple):
    """The transition group: transition scores ``T[C, C]`` (``T[a, b]``: label ``a`` then ``b``),
    start scores ``S0[C]`` and stop scores ``S1[C]``, for ``C`` label slots (the first ``Y`` in
    use).  Raw (times the lazy scale ``sigma[F]``) in the model, their running sums in the
    averaged model, or a model's own scores at prediction."""

    T: np.ndarray
    S0: np.ndarray
    S1: np.ndarray


#: Relative margin of the screen of :func:`screened_sqdist`: far above the rounding error of
#: ``|x|^2 + |z|^2 - 2 x.z`` (a few hundred ulps of ``|x|^2 + |z|^2`` for thousands of columns).
SCREEN_MARGIN = 1e-9


@njit
def blas_ready(spec, n_cols):
    """Whether :func:`word_kernel_scores` applies: every feature group is all ``n_cols`` columns
    of the buffer and its kernels read dot products, norms and squared distances (no Laplacian)."""
    G = spec.gptr.shape[0] - 1
    for g in range(G):
        r = spec.gptr[g]
        if spec.gptr[g + 1] - r != 1 or spec.granges[r, 0] != 0 or spec.granges[r, 1] != n_cols:
            return False
        if (spec.gl1[g] & GROUP_L1) != 0:
            return False
    return True


@njit
def spline_reach(spec, g):
    """The largest ``h^2`` of the group's B1-spline kernels: beyond it they are all 0."""
    reach = 0.0
    for j in range(spec.codes.shape[0]):
        if spec.kgroup[j] == g and spec.codes[j] == BSPLINE:
            reach = max(reach, spec.params[j, 0] * spec.params[j, 0])
    return reach


@njit
def screened_sqdist(xs, S, dots, xsq, zsq, reach, spec, g, out):
    """``out[a, i] = ||x_a - S_i||^2`` for a group flagged ``GROUP_SQDIST`` (a B1-spline kernel),
    summed directly only where it may be below ``reach`` (:func:`spline_reach`).

    Every pair is first screened by ``|x_a|^2 + |S_i|^2 - 2 dots[a, i]``: where that is at least
    ``reach`` by more than :data:`SCREEN_MARGIN` of the norms, the true distance is too, so every
    B1-spline of the group is exactly 0 there and the screened value stands (as the other
    kernels read it on the matrix-product path).  The other pairs, the few near neighbours of a
    sparse kernel, are summed directly by the per-position pass's own loop
    (:func:`~onlinemkl._core.kernels.sqdist_block`), so the B1-spline values are those of that
    pass, bit for bit.
    """
    L, n = dots.shape
    r0, r1 = spec.gptr[g], spec.gptr[g + 1]
    one = np.empty(1)
    for a in range(L):
        x = xs[a]
        for i in range(n):
            norms = xsq[a] + zsq[i]
            v = norms - 2.0 * dots[a, i]
            if v - SCREEN_MARGIN * norms < reach:
                sqdist_block(x, S, i, 1, spec.granges, r0, r1, one)
                v = one[0]
            out[a, i] = v if v > 0.0 else 0.0


@njit
def word_kernel_scores(xs, buf, n, spec, xsqs, xdiags, Y, gpos):
    """``gpos[i, k, c] = sum_s B[k, s, c] K_k(x_i, S_s)`` for every position of a word at once,
    from matrix products; ``buf`` is the model's :class:`PositionRows` (its first ``n`` rows).

    Per feature group one BLAS product ``xs S[:n]^T`` gives every dot product of the word
    against the buffer; every kernel of the group derives its values from them and the cached
    norms (:func:`~onlinemkl._core.batch.values_from_products`, the batch path's formulas); each
    kernel's values times its class vectors then give its scores in one more product.  The
    buffer must be :func:`blas_ready`; ``xsqs``/``xdiags`` hold the positions' query caches.
    A group with a B1-spline kernel reads its squared distances from :func:`screened_sqdist`
    (summed directly only for the pairs within the kernel's reach).  The same numbers as one
    :func:`position_scores` pass per position up to rounding (the sums run in another order).
    """
    L = xs.shape[0]
    F = spec.codes.shape[0]
    G = spec.gptr.shape[0] - 1
    gpos[:, :, :Y] = 0.0
    if n == 0 or L == 0:
        return
    S, ssq, B = buf.S, buf.ssq, buf.B
    vals = np.empty((F, L, n))
    zdiag = np.ascontiguousarray(buf.sdiag[:, :n].T)
    unused = np.zeros((1, 1))
    Sn = S[:n]
    for g in range(G):
        nk = 0
        for j in range(F):
            if spec.kgroup[j] == g:
                nk += 1
        js = np.empty(nk, dtype=np.int64)
        nk = 0
        for j in range(F):
            if spec.kgroup[j] == g:
                js[nk] = j
                nk += 1
        if nk == 0:
            continue
        dots = np.dot(xs, Sn.T)
        xsq, zsq = np.ascontiguousarray(xsqs[:, g]), np.ascontiguousarray(ssq[:n, g])
        use_sqd = (spec.gl1[g] & GROUP_SQDIST) != 0
        sqd = unused
        if use_sqd:
            sqd = np.empty((L, n))
            screened_sqdist(xs, S, dots, xsq, zsq, spline_reach(spec, g), spec, g, sqd)
        values_from_products(GroupProducts(dots, xsq, zsq, unused, sqd), False, use_sqd, js, spec, xdiags, zdiag,
                             False, vals)
    for k in range(F):
        sc = np.dot(vals[k], B[k, :n])
        for i in range(L):
            for c in range(Y):
                gpos[i, k, c] = sc[i, c]


@njit
def position_scores(q, rows, n, B, spec, Y, g):
    """``g[k, c] = sum_s B[k, s, c] K_k(x, S_s)``: one position's raw per-kernel scores, one pass
    over the first ``n`` stored rows in blocks (:func:`~onlinemkl._core.kernels.kernel_row_block`)."""
    F = spec.codes.shape[0]
    for k in range(F):
        for c in range(Y):
            g[k, c] = 0.0
    work = block_work(spec.gptr.shape[0] - 1)
    kv = np.empty((F, ROW_BLOCK))
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(q, rows, i0, m, spec, work, kv)
        for k in range(F):
            for t in range(m):
                v = kv[k, t]
                for c in range(Y):
                    g[k, c] += v * B[k, i0 + t, c]


@njit
def unary_scores(xs, buf, n, spec, sigma, gpos, xsqs, xdiags, U):
    """Raw per-group scores ``gpos[i]`` and unary scores ``U[i, c]`` of every position.

    ``buf`` (:class:`PositionRows`, its first ``n`` rows) and the scales ``sigma`` are the model;
    ``xsqs[i]``/``xdiags[i]`` receive each position's query caches
    (:func:`~onlinemkl._core.kernels.prepare_query`); ``U``'s columns are the labels in use.
    The whole word at once from matrix products (:func:`word_kernel_scores`) where the kernels
    allow it, otherwise one pass over the buffer per position (:func:`position_scores`).
    """
    L = xs.shape[0]
    Y = U.shape[1]
    F = spec.codes.shape[0]
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    for i in range(L):
        prepare_query(xs[i], spec, xsqs[i], xdiags[i])
    if blas_ready(spec, xs.shape[1]) and xs.shape[1] == buf.S.shape[1]:
        word_kernel_scores(xs, buf, n, spec, xsqs, xdiags, Y, gpos)
    else:
        for i in range(L):
            position_scores(Query(xs[i], xsqs[i], xdiags[i]), rows, n, buf.B, spec, Y, gpos[i])
    for i in range(L):
        for c in range(Y):
            acc = 0.0
            for k in range(F):
                acc += sigma[k] * gpos[i, k, c]
            U[i, c] = acc


@njit
def chain_scores(Traw, S0raw, S1raw, sT, Y, T, S0, S1):
    for a in range(Y):
        S0[a] = sT * S0raw[a]
        S1[a] = sT * S1raw[a]
        for b2 in range(Y):
            T[a, b2] = sT * Traw[a, b2]


@njit
def model_scores(xs, buf, n, spec, sigma, Traw, S0raw, S1raw, Y):
    """Every score Viterbi needs for a sequence ``xs`` under a model, freshly allocated.

    Returns ``(gpos, xsqs, xdiags, U, T, S0, S1)``: the raw per-group scores, the query caches
    and the unary scores of :func:`unary_scores` (model: the first ``n`` rows of ``buf`` and the
    scales ``sigma``), and the transition, start and stop scores of :func:`chain_scores` (the raw
    transition group ``Traw``, ``S0raw``, ``S1raw`` scaled by ``sigma[F]``), over ``Y`` labels.
    """
    L = xs.shape[0]
    F = spec.codes.shape[0]
    G = spec.gptr.shape[0] - 1
    gpos = np.empty((L, F, Y))
    xsqs = np.empty((L, G))
    xdiags = np.empty((L, F))
    U = np.empty((L, Y))
    unary_scores(xs, buf, n, spec, sigma, gpos, xsqs, xdiags, U)
    T = np.empty((Y, Y))
    S0 = np.empty(Y)
    S1 = np.empty(Y)
    chain_scores(Traw, S0raw, S1raw, sigma[F], Y, T, S0, S1)
    return gpos, xsqs, xdiags, U, T, S0, S1


@njit
def sequence_predict(xs, buf, n, spec, sigma, chain, Y, out_path):
    """Viterbi labelling of one sequence under a model; returns its score, the path in ``out_path``.

    The model: the first ``n`` rows of ``buf`` (:class:`PositionRows`), the scales ``sigma[F + 1]``
    and the raw transition group ``chain`` (:class:`ChainScores`, scaled by ``sigma[F]``), over
    ``Y`` labels.  The averaged model is the averaged class vectors and transition sums with unit
    scales.  The records may come as plain tuples of their fields (see :func:`sequence_learn`).
    """
    buf, spec, chain = PositionRows(*buf), KernelSpec(*spec), ChainScores(*chain)
    _, _, _, U, T, S0, S1 = model_scores(xs, buf, n, spec, sigma, chain.T, chain.S0, chain.S1, Y)
    return viterbi(U, T, S0, S1, out_path)


@njit
def sequence_score(U, T, S0, S1, y):
    L = y.shape[0]
    if L == 0:
        return 0.0
    s = S0[y[0]] + S1[y[L - 1]]
    for i in range(L):
        s += U[i, y[i]]
        if i > 0:
            s += T[y[i - 1], y[i]]
    return s


@njit
def same_row(S, slot, x):
    """Whether stored row ``slot`` is ``x`` (its columns past ``x``'s are 0)."""
    d = x.shape[0]
    for j in range(d):
        if S[slot, j] != x[j]:
            return False
    for j in range(d, S.shape[1]):
        if S[slot, j] != 0.0:
            return False
    return True


@njit
def store_position(slot, q, u, eta, stamp, buf, params, st, g_x, merge):
    """Add ``eta u (x) phi_k(x)`` to every kernel group, in row ``slot``: a new row holding ``q``,
    or, with ``merge``, the row that holds ``q`` already (its class vectors grow).

    Group norms follow eq. (17) in raw units (``r_k = eta / sigma_k``): ``||theta_k||^2 + 2 r_k
    u.g_x[k] + r_k^2 ||u||^2 K_k(x, x)``, with ``g_x`` the raw scores of ``x``.  A merged row's
    share of the averaged model so far is folded into ``Bavg`` first, so the averaged model stays
    exact.  ``stamp`` becomes the row's time stamp.
    """
    x, xsq, xdiag = q
    B, Bavg, avg_base = buf.B, buf.Bavg, buf.avg_base
    theta_sq, sigma, sigma_cum = st.theta_sq, st.sigma, st.sigma_cum
    F = B.shape[0]
    C = B.shape[2]
    Y = u.shape[0]
    usq = 0.0
    for c in range(Y):
        usq += u[c] * u[c]
    if not merge:
        put_row(buf.S, slot, x)
        put_row(buf.ssq, slot, xsq)
        put_column(buf.sdiag, slot, xdiag)
    buf.tstamp[slot] = stamp
    for k in range(F):
        r = eta / sigma[k]
        tu = 0.0
        for c in range(Y):
            tu += u[c] * g_x[k, c]
        v = theta_sq[k] + 2.0 * r * tu + r * r * usq * effective_diag(xdiag[k], params[k, 3])
        theta_sq[k] = v if v > 0.0 else 0.0
        if merge:
            w = sigma_cum[k] - avg_base[slot, k]
            for c in range(C):
                Bavg[k, slot, c] += B[k, slot, c] * w
            for c in range(Y):
                B[k, slot, c] += r * u[c]
        else:
            for c in range(C):
                B[k, slot, c] = r * u[c] if c < Y else 0.0
                Bavg[k, slot, c] = 0.0
        avg_base[slot, k] = sigma_cum[k]


@njit
def apply_position_factors(F, n, factors, buf, theta_sq, sigma, sigma_cum):
    """Rescale the kernel groups lazily (``sigma_k *= factors[k]``); fold a scale that drifted
    out of range into the class vectors, clear a group whose factor is 0; advance ``sigma_cum``."""
    B, Bavg, avg_base = buf.B, buf.Bavg, buf.avg_base
    C = B.shape[2]
    for k in range(F):
        f = factors[k]
        fold = f == 0.0
        if not fold:
            sigma[k] *= f
            fold = sigma[k] < SCALE_FOLD_LOW or sigma[k] > SCALE_FOLD_HIGH
        if fold:
            sk = sigma[k] if f != 0.0 else 0.0
            for i in range(n):
                w = sigma_cum[k] - avg_base[i, k]
                for c in range(C):
                    Bavg[k, i, c] += B[k, i, c] * w
                    B[k, i, c] *= sk
                avg_base[i, k] = sigma_cum[k]
            theta_sq[k] *= sk * sk
            sigma[k] = 1.0
        sigma_cum[k] += sigma[k]


@njit
def choose_position_evictee(policy, n, buf, Y, params, sigma):
    """The row a full buffer drops: the oldest time stamp (least recently updated), or the least
    ``sum_k sigma_k^2 ||B[k, s]||^2 K_k(x_s, x_s)``."""
    best = 0
    if policy == EVICT_OLDEST:
        for i in range(1, n):
            if buf.tstamp[i] < buf.tstamp[best]:
                best = i
        return best
    best_val = np.inf
    F = buf.B.shape[0]
    for i in range(n):
        val = 0.0
        for k in range(F):
            bsq = 0.0
            for c in range(Y):
                bsq += buf.B[k, i, c] * buf.B[k, i, c]
            val += sigma[k] * sigma[k] * bsq * effective_diag(buf.sdiag[k, i], params[k, 3])
        if val < best_val:
            best_val = val
            best = i
    return best


@njit
def evict_position_norms(e, ge, theta_sq, B, Y, sdiag, params):
    """Take stored row ``e`` out of every kernel group's norm: ``||theta_k||^2 - 2 B[k, e].ge[k] +
    ||B[k, e]||^2 K_k(x_e, x_e)`` in raw units, ``ge`` the raw scores of ``x_e``."""
    for k in range(B.shape[0]):
        tu = 0.0
        bsq = 0.0
        for c in range(Y):
            tu += B[k, e, c] * ge[k, c]
            bsq += B[k, e, c] * B[k, e, c]
        v = theta_sq[k] - 2.0 * tu + bsq * effective_diag(sdiag[k, e], params[k, 3])
        theta_sq[k] = v if v > 0.0 else 0.0


@njit
def averaged_class_vectors(n, B, Bavg, avg_base, sigma_cum, T, out):
    """``out[k, s, :]``: the averaged model's class vectors ``(1/T) sum_t sigma_k(t) B_t[k, s, :]``
    of the first ``n`` rows (use them with unit scales)."""
    F, C = B.shape[0], B.shape[2]
    inv = 1.0 / T if T > 0 else 0.0
    for k in range(F):
        for i in range(n):
            w = sigma_cum[k] - avg_base[i, k]
            for c in range(C):
                out[k, i, c] = (Bavg[k, i, c] + B[k, i, c] * w) * inv


@njit
def theta_sq_from_rows(buf, n, Y, spec):
    """``||raw theta_k||^2`` of the kernel groups recomputed from the first ``n`` rows of ``buf``
    (:class:`PositionRows`) over ``Y`` labels (O(n^2); tests)."""
    buf, spec = PositionRows(*buf), KernelSpec(*spec)
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    F = spec.codes.shape[0]
    out = np.zeros(F)
    g = np.empty((F, Y))
    for i in range(n):
        qi = Query(buf.S[i, :].copy(), buf.ssq[i, :].copy(), buf.sdiag[:, i].copy())
        position_scores(qi, rows, n, buf.B, spec, Y, g)
        for k in range(F):
            for c in range(Y):
                out[k] += buf.B[k, i, c] * g[k, c]
    return out


@njit
def sequence_learn(xs, ys, buf, spec, chain, chain_avg, st, b, b_new, hints):
    """One online proximal step on a labelled sequence; returns ``(loss, n_wrong, updated)``.

    ``n_wrong`` counts the positions the model (before the step) labels wrongly
    under plain Viterbi.  The model is ``buf`` (:class:`PositionRows`), ``spec``
    (:class:`~onlinemkl._core.state.KernelSpec`), the raw transition group ``chain`` and its
    running sum ``chain_avg`` (:class:`ChainScores`) and ``st`` (:class:`GroupState`, indexed by
    this module's ``H_*``/``I_*``), all updated in place; ``b``, ``b_new`` are scratch for the
    group norms (``F + 1``).  The caller guarantees capacity for ``L`` more rows.

    ``hints[i] = [slot, stamp]``: the row that held position ``i`` after an earlier step (a
    re-visit of the same position), or ``[-1, -1]``.  A hint whose row still carries that time
    stamp and the same features is added to; any other position is stored in a new row (or an evicted one).  On
    return each updated position's hint is its row and new stamp (others keep theirs).

    Each record may also come as a plain tuple of its fields in order, as the engine passes them
    (Numba types a plain tuple from its items alone, a NamedTuple also from its class and field
    names, on every call); the fields get their names back here.
    """
    buf, spec, st = PositionRows(*buf), KernelSpec(*spec), GroupState(*st)
    chain, chain_avg = ChainScores(*chain), ChainScores(*chain_avg)
    S, ssq, sdiag, B, tstamp = buf.S, buf.ssq, buf.sdiag, buf.B, buf.tstamp
    Traw, S0raw, S1raw = chain
    Tavg, S0avg, S1avg = chain_avg
    theta_sq, sigma, sigma_cum, prox_weights, istate, hyper, ihyper = st
    params = spec.params
    L = xs.shape[0]
    F = spec.codes.shape[0]
    G = spec.gptr.shape[0] - 1
    P = F + 1
    Y = ihyper[IH_NLABELS]
    n = istate[I_N]
    t = istate[I_T] + 1
    istate[I_T] = t
    eta = step_size(ihyper[IH_SCHEDULE], hyper[H_ETA0], hyper[H_SIGMA_SC], t)

    gpos, xsqs, xdiags, U, T, S0, S1 = model_scores(xs, buf, n, spec, sigma, Traw, S0raw, S1raw, Y)

    path = np.empty(L, dtype=np.int64)
    viterbi(U, T, S0, S1, path)
    n_wrong = 0
    for i in range(L):
        if path[i] != ys[i]:
            n_wrong += 1

    # class vectors u_i (position gradients, negated) and transition count differences.
    u = np.zeros((L, Y))
    dT = np.zeros((Y, Y))
    dS0 = np.zeros(Y)
    dS1 = np.zeros(Y)
    gold = sequence_score(U, T, S0, S1, ys)
    if ihyper[IH_LOSS] == LOSS_SVM:
        yhat = np.empty(L, dtype=np.int64)
        aug = viterbi_loss_augmented(U, T, S0, S1, ys, hyper[H_COST], yhat)
        loss = aug - gold
        if loss < 0.0:
            loss = 0.0
        if loss > 0.0:
            for i in range(L):
                if yhat[i] != ys[i]:
                    u[i, ys[i]] += 1.0
                    u[i, yhat[i]] -= 1.0
            if L > 0:
                dS0[ys[0]] += 1.0
                dS0[yhat[0]] -= 1.0
                dS1[ys[L - 1]] += 1.0
                dS1[yhat[L - 1]] -= 1.0
            for i in range(1, L):
                dT[ys[i - 1], ys[i]] += 1.0
                dT[yhat[i - 1], yhat[i]] -= 1.0
    else:
        marg = np.empty((L, Y))
        pair = np.empty((Y, Y))
        log_z = forward_backward(U, T, S0, S1, marg, pair)
        loss = log_z - gold
        if loss < 0.0:
            loss = 0.0
        for i in range(L):
            for c in range(Y):
                u[i, c] = -marg[i, c]
            u[i, ys[i]] += 1.0
        if L > 0:
            for c in range(Y):
                dS0[c] = -marg[0, c]
                dS1[c] = -marg[L - 1, c]
            dS0[ys[0]] += 1.0
            dS1[ys[L - 1]] += 1.0
        for a in range(Y):
            for c in range(Y):
                dT[a, c] = -pair[a, c]
        for i in range(1, L):
            dT[ys[i - 1], ys[i]] += 1.0

    # gradient step on the implicit groups: insert positions one by one, keeping the
    # raw scores of the positions still to come exact.
    updated = loss > 0.0 and eta > 0.0
    if not updated:
        for i in range(L):
            for c in range(Y):
                u[i, c] = 0.0
        dT[:, :] = 0.0
        dS0[:] = 0.0
        dS1[:] = 0.0
    else:
        istate[I_UPDATES] += 1
    budget = ihyper[IH_BUDGET]
    work = block_work(G)
    rows = Rows(S, ssq, sdiag)
    kx = np.empty((F, 1))  # K_k(x_j, S_slot): the one-row blocked pass
    ge = np.empty((F, Y))
    for i in range(L):
        usq = 0.0
        for c in range(Y):
            usq += u[i, c] * u[i, c]
        if usq == 0.0:
            continue
        slot = hints[i, 0]
        merge = 0 <= slot < n and tstamp[slot] == hints[i, 1] and same_row(S, slot, xs[i])
        if not merge:
            slot = n
            if budget > 0 and n >= budget:
                slot = choose_position_evictee(ihyper[IH_POLICY], n, buf, Y, params, sigma)
                for j in range(i, L):  # the evicted row leaves the raw scores of the positions to come
                    kernel_row_block(Query(xs[j], xsqs[j], xdiags[j]), rows, slot, kx.shape[1], spec, work, kx)
                    for k in range(F):
                        for c in range(Y):
                            gpos[j, k, c] -= kx[k, 0] * B[k, slot, c]
                # the raw scores of the evicted row (a second pass), then its share of the norms
                qe = Query(S[slot, :].copy(), ssq[slot, :].copy(), sdiag[:, slot].copy())
                position_scores(qe, rows, n, B, spec, Y, ge)
                evict_position_norms(slot, ge, theta_sq, B, Y, sdiag, params)
                istate[I_EVICTIONS] += 1
            else:
                n += 1
                istate[I_N] = n
        istate[I_CLOCK] += 1
        store_position(slot, Query(xs[i], xsqs[i], xdiags[i]), u[i], eta, istate[I_CLOCK], buf, params, st, gpos[i],
                       merge)
        hints[i, 0] = slot
        hints[i, 1] = istate[I_CLOCK]
        for j in range(i + 1, L):  # the update's share of the raw scores of the positions to come
            kernel_row_block(Query(xs[j], xsqs[j], xdiags[j]), rows, slot, kx.shape[1], spec, work, kx)
            for k in range(F):
                r = eta / sigma[k]
                for c in range(Y):
                    gpos[j, k, c] += kx[k, 0] * r * u[i, c]

    # gradient step on the transition group (explicit), exact norm.
    rT = eta / sigma[F]
    acc = 0.0
    for a in range(Y):
        S0raw[a] += rT * dS0[a]
        S1raw[a] += rT * dS1[a]
        acc += S0raw[a] * S0raw[a] + S1raw[a] * S1raw[a]
        for c in range(Y):
            Traw[a, c] += rT * dT[a, c]
            acc += Traw[a, c] * Traw[a, c]
    theta_sq[F] = acc

    # proximal step and projection over the P = F + 1 group norms.
    factors = np.empty(P)
    prox_factors(ihyper[IH_PROX], theta_sq, sigma, eta * hyper[H_LAM], hyper[H_PROX_PARAM], prox_weights,
                 hyper[H_GAMMA], b, b_new, factors)
    apply_position_factors(F, n, factors, buf, theta_sq, sigma, sigma_cum)
    fT = factors[F]
    if fT == 0.0:
        Traw[:, :] = 0.0
        S0raw[:] = 0.0
        S1raw[:] = 0.0
        theta_sq[F] = 0.0
        sigma[F] = 1.0
    else:
        sigma[F] *= fT
        if sigma[F] < SCALE_FOLD_LOW or sigma[F] > SCALE_FOLD_HIGH:
            sT = sigma[F]
            Traw *= sT
            S0raw *= sT
            S1raw *= sT
            theta_sq[F] *= sT * sT
            sigma[F] = 1.0
    sT = sigma[F]
    Tavg += sT * Traw
    S0avg += sT * S0raw
    S1avg += sT * S1raw
    return loss, n_wrong, updated


def sequence_learn_parts(xs, ys, buf, spec, chain, chain_avg, st, b, b_new, hints):
    """The callees of :func:`sequence_learn` a helper process may compile while this one compiles
    the rest (:mod:`onlinemkl._split`), with the types the step calls them with: those its type
    inference reaches after the word's matrix-product scores, in that order."""
    from numba import typeof, types  # the types of the records, as the step builds them

    buf, spec, st = PositionRows(*buf), KernelSpec(*spec), GroupState(*st)
    f1, f2, i, f = types.float64[::1], types.float64[:, ::1], types.int64, types.float64
    query = types.NamedUniTuple(f1, 3, Query)
    rows, params, state = typeof(buf), typeof(spec.params), typeof(st)
    B, sdiag, theta_sq, sigma, path = typeof(buf.B), typeof(buf.sdiag), typeof(st.theta_sq), typeof(st.sigma), typeof(ys)
    return [
        (chain_scores, (f2, f1, f1, f, i, f2, f1, f1)),
        (viterbi, (f2, f2, f1, f1, types.int64[::1])),
        (sequence_score, (f2, f2, f1, f1, path)),
        (viterbi_loss_augmented, (f2, f2, f1, f1, path, f, types.int64[::1])),
        (forward_backward, (f2, f2, f1, f1, f2, f2)),
        (choose_position_evictee, (i, i, rows, i, params, sigma)),
        (position_scores, (query, typeof(Rows(buf.S, buf.ssq, buf.sdiag)), i, B, typeof(spec), i, f2)),
        (evict_position_norms, (i, f2, theta_sq, B, i, sdiag, params)),
        (store_position, (i, query, f1, f, i, rows, params, state, f2, types.boolean)),
        (prox_factors, (i, theta_sq, sigma, f, f, typeof(st.prox_weights), f, typeof(b), typeof(b_new), f1)),
        (apply_position_factors, (i, i, f1, rows, theta_sq, sigma, typeof(st.sigma_cum))),
    ]


#: The parts of entry points a helper process may compile (:mod:`onlinemkl._split`).
COMPILE_PARTS = {"sequence_learn": sequence_learn_parts}
