"""Online proximal MKL (Martins et al. 2011, Algorithms 1 and 3), one compiled step per example.

The model has ``P = F + E`` groups: ``F`` implicit kernel groups and ``E``
explicit feature groups (a weight matrix on a set of columns, i.e. a linear
kernel kept in the primal).  Group ``k``'s parameters are::

    implicit: theta_k = sigma_k * sum_s coef[s, k] * sum_c beta[s, c] phi_k(x_s, c)
    explicit: theta_k = sigma_k * W[e]            (W[e] is (d_cap, C_cap), rows = columns of x)

``sigma_k`` is the group's lazy scale: the proximal step and the projection
rescale whole groups (Prop. 1), so each step multiplies ``sigma_k`` and the
coefficients are folded only when ``sigma_k`` drifts far from 1 or the group
is zeroed.  Every stored example carries a dense class vector ``beta[s, :]``
(the negative loss derivative of its step), so one representation serves
binary, multiclass (hinge and multinomial logistic) and regression losses.

One step (Algorithm 1): scores from one pass over the buffer -> loss
derivative -> gradient step on the loss only (store the example, O(P) norm
updates, eq. 17) -> proximal step on the vector of group norms (Prop. 1) ->
projection onto the ball of radius gamma -> lazy bookkeeping for the averaged
model.

With a full budget the evicted example is not simply dropped: its contribution
(and its share of the averaged model) is projected onto the stored example
with a parallel class vector that keeps most of it (:func:`~onlinemkl.proximal._evict.evict_and_merge`),
and only the residual leaves the model.  Plain removal made the models
fragile: with wide kernels (near-constant Gram entries) every stored example
also acts as a large per-class offset, the offsets cancel only in aggregate,
and removing a heavy example shifts every score of its two classes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._config import njit, njit_inline
from .._core.buffer import close_gap, close_row_gap, put_column, put_row
from ._evict import (EVICT_LEAST_IMPACT_COMPETING, choose_dense_evictee, evict_and_merge, evict_scan, project_update,
                     row_impact, update_impact)
from ._group_steps import group_diagonals, normalised_step, step_shares
from .._core.kernels import block_work, effective_diag, kernel_row_block, prepare_query
from .._core.record import new_state_record  # noqa: F401 -- an entry point of this module (the engines' records)
from ._losses import EPSILON_INSENSITIVE, SQUARED, loss_and_derivative
from ._prox import PROX_SPARSE_GROUP_LASSO, prox_group_norms, prox_l1_within
from .._core.scores import dense_kernel_scores
from .._core.state import KernelSpec, Query, Rows

# hyper (float64: the real-valued settings); the first five as in the sequence labeller's
H_LAM = 0  # regularisation lambda
H_PROX_PARAM = 1  # q (non-sparse) or sigma (elastic net) or the l1 weight (sparse group lasso)
H_ETA0 = 2
H_SIGMA_SC = 3  # strong convexity for schedule 2
H_GAMMA = 4  # projection radius (0: none)
H_EPSILON = 5  # epsilon-insensitive width
N_HYPER = 6

# ihyper (int64: the integer settings, codes and counts); the first five as in the sequence labeller's
IH_LOSS = 0
IH_PROX = 1
IH_SCHEDULE = 2  # 0 constant eta0, 1 eta0 / sqrt(t), 2 1 / (strong_convexity t)
IH_BUDGET = 3
IH_POLICY = 4
IH_NOUT = 5  # outputs in use
IH_GROUP_STEPS = 6  # how a step is split among the groups (group_steps.GROUP_STEPS_*)
N_IHYPER = 7

SCHEDULE_CONSTANT = 0
SCHEDULE_INVSQRT = 1
SCHEDULE_STRONGLY_CONVEX = 2

# istate
I_N = 0
I_T = 1
I_UPDATES = 2
I_EVICTIONS = 3
N_ISTATE = 4

# Fold a group's lazy scale into its coefficients once it leaves [1e-6, 1e6].  Not 1e-100: the
# averaged model reads ``coef * (sigma_cum - avg_base)``, a difference of running sums of the
# scales, and ``coef`` grows like 1 / sigma; the difference's rounding error (~eps * sigma_cum)
# is thus amplified by 1 / sigma (~eps / sigma relative).  With folds at 1e-100 the averaged
# scores drifted from the plain-numpy reference by 1.2e-9 after 250 steps of weighted_sq_l1 with
# scales at 1e-10 (tests/core/test_proximal_step.py), and scales below ~1e-16 would leave no digits; with
# folds at 1e-6 the same run agrees to 1e-12.  A fold costs O(n) per group and happens at most
# once per factor 1e6 of shrinkage.
SCALE_FOLD_LOW = 1e-6
SCALE_FOLD_HIGH = 1e6


class ProxRows(NamedTuple):
    """The support buffer of the proximal learners (flat and structured).

    The stored rows and their caches as :class:`~onlinemkl._core.state.Rows` (``S[cap, d]``,
    ``ssq[cap, G]``, ``sdiag[F, cap]``), each row's raw coefficient per implicit group
    ``coef[cap, F]``, its class vector ``beta[cap, C]`` and time stamp ``tstamp[cap]``, and the
    averaged-model bookkeeping: ``avg_acc[cap, F]``, the row's contribution to the running sum
    of the models up to its last fold, and ``avg_base[cap, F]``, ``sigma_cum`` at that fold.
    """

    S: np.ndarray
    ssq: np.ndarray
    sdiag: np.ndarray
    coef: np.ndarray
    beta: np.ndarray
    tstamp: np.ndarray
    avg_acc: np.ndarray
    avg_base: np.ndarray


class ExplicitGroups(NamedTuple):
    """The explicit feature groups: raw weights ``W[E, d_cap, C]``, their running sum ``W_avg``
    (the averaged model) and the groups' column ranges ``granges[R, 2]`` with ``gptr[E + 1]``
    saying which ranges each group owns (as in :class:`~onlinemkl._core.state.KernelSpec`)."""

    W: np.ndarray
    W_avg: np.ndarray
    granges: np.ndarray
    gptr: np.ndarray


class GroupState(NamedTuple):
    """A proximal learner's state beside its buffer: the raw squared group norms
    ``theta_sq[P]``, the lazy scales ``sigma[P]``, their running sums ``sigma_cum[F]`` (implicit
    groups; the averaged model), the regulariser's group weights ``prox_weights[P]``, the
    integer counters ``istate``, the real-valued settings ``hyper`` and the integer ones
    ``ihyper`` (indexed by the learner module's ``I_*``, ``H_*`` and ``IH_*``:
    :mod:`onlinemkl.proximal._step` or :mod:`onlinemkl.sequence._step`)."""

    theta_sq: np.ndarray
    sigma: np.ndarray
    sigma_cum: np.ndarray
    prox_weights: np.ndarray
    istate: np.ndarray
    hyper: np.ndarray
    ihyper: np.ndarray


class ProxScratch(NamedTuple):
    """Scratch of one flat step: the raw per-group scores ``g[P, C]``, the output scores
    ``scores[C]``, the loss derivative ``dl[C]`` and the group norms before and after the
    proximal step ``b[P]``, ``b_new[P]``.  ``g`` and ``scores`` hold the example's scores
    after a call."""

    g: np.ndarray
    scores: np.ndarray
    dl: np.ndarray
    b: np.ndarray
    b_new: np.ndarray


class EvictionPasses(NamedTuple):
    """What the kernel passes of an eviction computed (:func:`evict_and_merge` reads them):
    the raw scores ``ge[F, C]``/``gj[F, C]`` of the evicted row ``x_e`` and of its merge partner
    ``x_j``, ``kej[F]`` the kernel values ``K_k(x_e, x_j)``, and ``kxe[F, 1]``/``kxj[F, 1]`` those
    of the incoming ``x`` against rows ``e`` and ``j``."""

    ge: np.ndarray
    gj: np.ndarray
    kej: np.ndarray
    kxe: np.ndarray
    kxj: np.ndarray


@njit
def explicit_scores(x, W, xgranges, xgptr, n_out, F, g):
    """``g[F + e, c] = x_e . W[e][:, c]`` (raw explicit-group scores)."""
    E = xgptr.shape[0] - 1
    for e in range(E):
        for c in range(n_out):
            acc = 0.0
            for r in range(xgptr[e], xgptr[e + 1]):
                for col in range(xgranges[r, 0], xgranges[r, 1]):
                    acc += x[col] * W[e, col, c]
            g[F + e, c] = acc


@njit
def step_size(schedule, eta0, sigma_sc, t):
    if schedule == SCHEDULE_CONSTANT:
        return eta0
    if schedule == SCHEDULE_INVSQRT:
        return eta0 / np.sqrt(t)
    return 1.0 / (sigma_sc * t)


@njit
def zero_implicit_group(k, n, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum):
    """Group ``k`` became exactly zero: clear its coefficients, reset its scale."""
    for i in range(n):
        avg_acc[i, k] += coef[i, k] * (sigma_cum[k] - avg_base[i, k])
        avg_base[i, k] = sigma_cum[k]
        coef[i, k] = 0.0
    theta_sq[k] = 0.0
    sigma[k] = 1.0


@njit
def fold_implicit_group(k, n, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum):
    """Fold ``sigma_k`` into group ``k``'s coefficients (keeps the averaged-model bookkeeping exact)."""
    sk = sigma[k]
    for i in range(n):
        avg_acc[i, k] += coef[i, k] * (sigma_cum[k] - avg_base[i, k])
        avg_base[i, k] = sigma_cum[k]
        coef[i, k] *= sk
    theta_sq[k] *= sk * sk
    sigma[k] = 1.0


@njit
def fobos_scores(x, state, coef, W, sigma, n, n_out):
    """Scores ``s_c = sum_k sigma_k g[k, c]`` of one example (no update) into the scratch's ``scores``.

    ``state``: the learner's records (see :func:`fobos_run`); the first ``n`` stored rows are
    scored.  The coefficients ``coef`` (``buf.coef``'s shape), the explicit weights ``W`` and the
    scales ``sigma[P]`` are the model to score: the records' own (the last model), or the
    averaged coefficients and weights with unit scales; one compiled variant serves both.  Only
    the scratch's ``g`` (the raw per-group scores) and ``scores`` are written.
    """
    buf, spec, xg, _, scratch = state.records
    buf, spec, xg, scratch = ProxRows(*buf), KernelSpec(*spec), ExplicitGroups(*xg), ProxScratch(*scratch)
    G = spec.gptr.shape[0] - 1
    F = spec.codes.shape[0]
    g = scratch.g
    q = Query(x, np.empty(G), np.empty(F))
    prepare_query(x, spec, q.xsq, q.xdiag)
    dense_kernel_scores(q, Rows(buf.S, buf.ssq, buf.sdiag), n, spec, coef, buf.beta, n_out, g)
    explicit_scores(x, W, xg.granges, xg.gptr, n_out, F, g)
    combine_scores(g, sigma, n_out, scratch.scores)


@njit
def combine_scores(g, sigma, n_out, scores):
    """``s_c = sum_k sigma_k g[k, c]``."""
    P = sigma.shape[0]
    for c in range(n_out):
        acc = 0.0
        for k in range(P):
            acc += sigma[k] * g[k, c]
        scores[c] = acc


@njit
def implicit_insert(slot, q, u, steps, stamp, buf, params, st, g_x, merge):
    """Store the query ``q`` with class vector ``u`` in ``slot``: ``theta_k += steps[k] sum_c u_c phi_k(x, c)``.

    Group norms follow eq. (17): ``||theta_k + r_k v||^2 = ||theta_k||^2 + 2 r_k theta_k.v
    + r_k^2 ||u||^2 K_k(x, x)`` in raw units (``r_k = steps[k] / sigma_k``), with
    ``theta_k.v = sum_c u_c g_x[k, c]`` from the raw scores of ``x``.  ``u`` has one entry per
    output in use; ``stamp`` is the row's time stamp.  Writes row ``slot`` of ``buf``
    (:class:`ProxRows`) and ``st.theta_sq`` (:class:`GroupState`).  ``merge``: row ``slot``
    already holds ``x`` with class vector ``u`` (a replayed example, see :func:`fobos_step`):
    its coefficients grow by ``r_k`` instead, after its share of the averaged model so far is
    folded in (as :func:`fold_implicit_group` does), so the averaged model stays exact.
    ``steps``: each group's step size (``eta`` times its share, :mod:`~onlinemkl.proximal._group_steps`).
    """
    x, xsq, xdiag = q
    coef, beta = buf.coef, buf.beta
    avg_acc, avg_base = buf.avg_acc, buf.avg_base
    theta_sq, sigma, sigma_cum = st.theta_sq, st.sigma, st.sigma_cum
    F = coef.shape[1]
    n_out = u.shape[0]
    usq = 0.0
    for c in range(n_out):
        usq += u[c] * u[c]
    if not merge:
        put_row(buf.S, slot, x)
        put_row(buf.ssq, slot, xsq)
        put_column(buf.sdiag, slot, xdiag)
        buf.tstamp[slot] = stamp
        for c in range(beta.shape[1]):
            beta[slot, c] = u[c] if c < n_out else 0.0
    for k in range(F):
        r = steps[k] / sigma[k]
        tu = 0.0
        for c in range(n_out):
            tu += u[c] * g_x[k, c]
        v = theta_sq[k] + 2.0 * r * tu + r * r * usq * effective_diag(xdiag[k], params[k, 3])
        theta_sq[k] = v if v > 0.0 else 0.0
        if merge:
            avg_acc[slot, k] += coef[slot, k] * (sigma_cum[k] - avg_base[slot, k])
            coef[slot, k] += r
        else:
            coef[slot, k] = r
            avg_acc[slot, k] = 0.0
        avg_base[slot, k] = sigma_cum[k]


@njit
def holds(slot, stamp, u, n, tstamp, beta):
    """True if stored row ``slot`` (of ``n``) still has time stamp ``stamp`` and class vector ``u``."""
    if slot < 0 or slot >= n or tstamp[slot] != stamp:
        return False
    for c in range(beta.shape[1]):
        if beta[slot, c] != (u[c] if c < u.shape[0] else 0.0):
            return False
    return True


@njit
def prox_factors(code, theta_sq, sigma, step_lam, param, weights, gamma, b, b_new, factors):
    """Prop. 1 and the projection: the factor that rescales each group this step.

    ``b_k = ||theta_k||``; ``b' = prox(b)``; then the ball of radius ``gamma``
    (0: none) scales every group by ``min(1, gamma / ||b'||)``.  A factor of
    exactly 0 means the group is now zero.
    """
    P = sigma.shape[0]
    for k in range(P):
        b[k] = sigma[k] * np.sqrt(theta_sq[k]) if theta_sq[k] > 0.0 else 0.0
    prox_group_norms(code, b, step_lam, param, weights, b_new)
    total = 0.0
    for k in range(P):
        total += b_new[k] * b_new[k]
    proj = 1.0
    if gamma > 0.0 and total > gamma * gamma:
        proj = gamma / np.sqrt(total)
    for k in range(P):
        if b[k] > 0.0:
            factors[k] = (b_new[k] / b[k]) * proj
        else:
            factors[k] = 1.0


@njit
def apply_implicit_factors(F, n, factors, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum):
    """Rescale the implicit groups lazily; zero or fold where needed; advance the averages."""
    for k in range(F):
        if factors[k] == 0.0:
            zero_implicit_group(k, n, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum)
        else:
            sigma[k] *= factors[k]
            if sigma[k] < SCALE_FOLD_LOW or sigma[k] > SCALE_FOLD_HIGH:
                fold_implicit_group(k, n, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum)
        sigma_cum[k] += sigma[k]


@njit
def apply_explicit_factor(k, factor, Wk, theta_sq, sigma):
    """Rescale one explicit group (flat weights ``Wk``, a view) lazily; zero or fold where needed."""
    if factor == 0.0:
        Wk[:] = 0.0
        theta_sq[k] = 0.0
        sigma[k] = 1.0
        return
    sigma[k] *= factor
    if sigma[k] < SCALE_FOLD_LOW or sigma[k] > SCALE_FOLD_HIGH:
        Wk *= sigma[k]
        theta_sq[k] *= sigma[k] * sigma[k]
        sigma[k] = 1.0


@njit
def evict_projected(slot, q, n, buf, spec, st, n_out, g):
    """Stored example ``slot`` (of the first ``n``) leaves the model as at a full budget: the kernel
    passes the eviction needs (:func:`evict_scan` finds the partner with a parallel class vector),
    then its arithmetic (:func:`evict_and_merge`: the projection onto the partner, the averaged
    model's share moved along, the norms updated).  ``g`` gets the raw scores of the query ``q``
    corrected for the change.  Row ``slot`` is left for the caller to overwrite or remove.
    Returns the partner row (-1: none, the row was simply removed)."""
    F = spec.codes.shape[0]
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    coef, beta = buf.coef, buf.beta
    ge = np.empty((F, n_out))
    kej = np.zeros(F)
    j = evict_scan(slot, n, rows, spec, coef, beta, n_out, st.sigma, ge, kej)
    work = block_work(spec.gptr.shape[0] - 1)
    kxe = np.empty((F, 1))
    kernel_row_block(q, rows, slot, kxe.shape[1], spec, work, kxe)
    gj = np.zeros((F, n_out))
    kxj = np.zeros((F, 1))
    if j >= 0:
        qj = Query(buf.S[j, :].copy(), buf.ssq[j, :].copy(), buf.sdiag[:, j].copy())
        dense_kernel_scores(qj, rows, n, spec, coef, beta, n_out, gj)
        kernel_row_block(q, rows, j, kxj.shape[1], spec, work, kxj)
    evict_and_merge(slot, j, EvictionPasses(ge, gj, kej, kxe, kxj), buf, spec.params, st, n_out, g)
    return j


@njit
def compress_rows(budget, buf, spec, st, order):
    """Evict stored examples as a step at the budget does (the learner's choice, then
    :func:`evict_projected`) until ``budget`` of the ``st.istate[I_N]`` rows remain; each evicted
    row is removed, the later rows moving up one (their order kept, and ``order[i]``, the row's
    original index, with them).  For a merged model (:mod:`onlinemkl.distributed.merge`) written
    with unit scales; ``st.ihyper[IH_NOUT]`` outputs.  Returns the number of rows left."""
    buf, spec, st = ProxRows(*buf), KernelSpec(*spec), GroupState(*st)
    n_out = st.ihyper[IH_NOUT]
    F = spec.codes.shape[0]
    g = np.zeros((F, n_out))
    n = st.istate[I_N]
    arrays = (buf.S, buf.ssq, buf.coef, buf.beta, buf.avg_acc, buf.avg_base)
    while n > budget:
        e = choose_dense_evictee(st.ihyper[IH_POLICY], n, buf.tstamp, buf.coef, buf.beta, n_out, buf.sdiag,
                                 spec.params, st.sigma)
        q = Query(buf.S[e, :].copy(), buf.ssq[e, :].copy(), buf.sdiag[:, e].copy())
        evict_projected(e, q, n, buf, spec, st, n_out, g)
        for a in arrays:
            close_row_gap(a, e, n)
        for j in range(F):  # kernel by kernel: the diagonals' columns move
            close_gap(buf.sdiag[j], e, n)
        close_gap(buf.tstamp, e, n)
        close_gap(order, e, n)
        n -= 1
        st.istate[I_N] = n
    return n


@njit
def fobos_run(order, X, labels, state, merge, eviction):
    """Steps of :func:`fobos_step` on the rows ``X[order[t]]`` with ``labels = (y_cls, y_val)``:
    labels ``y_cls[t]`` / targets ``y_val[t]``, in order; the learner's one compiled entry point
    for learning.  Returns the last step's ``(loss, yhat, updated, slot)`` and the number of
    steps that updated the model.

    A new example is one step (``order = [0]``, ``X`` its row); replay
    (:mod:`onlinemkl._replay`) takes its steps in one call, with the draws made first:
    one call per replayed step would pay Python's call and Numba's argument dispatch per step, a
    cost that on a small buffer is larger than the step.  Both go through this one function so
    that the step's call tree is compiled and optimised once, not once per entry point (Numba
    re-optimises a function's whole call tree in every compiled caller).

    ``state``: the learner's records ``(buf, spec, xg, st, scratch)``, as :func:`fobos_step` takes
    them, in one :class:`~onlinemkl._core.record.StateRecord`: a call from Python then unboxes one
    object instead of the records' 30 arrays (about 2 us less per call).  ``merge``: row hints,
    ``[slot, stamp]`` per row of ``X`` flattened (see :func:`fobos_step`), updated in place where a
    step stores or adds to a row; any other length (regression: an empty array) passes no hint.
    ``eviction`` as :func:`fobos_step` takes it; the caller guarantees capacity for ``len(order)``
    more rows.
    """
    buf, spec, xg, st, scratch = state.records
    y_cls, y_val = labels
    hints = merge.shape[0] == 2 * X.shape[0]
    none = np.full(2, -1, dtype=np.int64)  # "stored nowhere"
    n_updates = 0
    loss, yhat, updated, slot = 0.0, 0, False, -1
    for t in range(order.shape[0]):
        i = order[t]
        hint = merge[2 * i:2 * i + 2] if hints else none
        loss, yhat, updated, slot = fobos_step(X[i], y_cls[t], y_val[t], buf, spec, xg, st, scratch, hint, eviction)
        if updated:
            n_updates += 1
            if hints and slot >= 0:  # (-1: projected onto a row, the hint still holds or names none)
                merge[2 * i] = slot
                merge[2 * i + 1] = ProxRows(*buf).tstamp[slot]
    return loss, yhat, updated, slot, n_updates


@njit_inline
def fobos_step(x, y_cls, y_val, buf, spec, xg, st, scratch, merge, eviction):
    """One online proximal step on ``(x, y)``; returns ``(loss, yhat, updated, slot)``.

    Inlined into :func:`fobos_run` (its only caller), so it is compiled there only.

    ``merge`` (int64 ``[slot, stamp]``, or ``[-1, -1]``): where ``x`` is stored already (a
    replayed example).  If that row still holds it with this update's class vector ``u`` (the
    multiclass hinge's ``e_y - e_yhat``; never for a regression residual), the update is added
    to it instead of storing ``x`` again.  ``slot``: the row stored or added to (-1: no update).
    ``eviction``: the eviction policy code of a learner with a budget, or None for one without:
    then the eviction code (more passes over the buffer and a projection) is pruned from this
    variant at compile time, so that a learner never compiles what it cannot run.  Under
    :data:`~onlinemkl.proximal._evict.EVICT_LEAST_IMPACT_COMPETING` (replayed steps) the update
    competes with the stored rows: if it is the least, it is projected onto a row
    (:func:`~onlinemkl.proximal._evict.project_update`), nothing is evicted and ``slot`` is -1.

    ``y_cls`` is the output index (multiclass), +-1 (binary); ``y_val`` the
    regression target.  The model is ``buf`` (:class:`ProxRows`), ``spec``
    (:class:`~onlinemkl._core.state.KernelSpec`), ``xg`` (:class:`ExplicitGroups`) and ``st``
    (:class:`GroupState`), all updated in place; ``scratch`` (:class:`ProxScratch`) holds the
    scores of ``x`` before the step on return.  The caller guarantees capacity for one more row.

    Each record may also come as a plain tuple of its fields in order (the engines pass them so,
    from :meth:`~onlinemkl.proximal.engine.ProximalEngine._build_records`): Numba types a plain
    tuple argument from its items alone, a NamedTuple also from its class and field names, at a
    cost paid on every call.  The fields get their names back here.
    """
    buf, spec, xg, st, scratch = ProxRows(*buf), KernelSpec(*spec), ExplicitGroups(*xg), GroupState(*st), \
        ProxScratch(*scratch)
    S, ssq, sdiag, coef, beta, tstamp, avg_acc, avg_base = buf
    W, W_avg, xgranges, xgptr = xg
    theta_sq, sigma, sigma_cum, prox_weights, istate, hyper, ihyper = st
    g, scores, dl, b, b_new = scratch
    params = spec.params
    F = spec.codes.shape[0]
    E = xgptr.shape[0] - 1
    P = F + E
    G = spec.gptr.shape[0] - 1
    n_out = ihyper[IH_NOUT]
    n = istate[I_N]

    # 1. scores of x: one pass over the buffer, plus the explicit groups.
    rows = Rows(S, ssq, sdiag)
    xsq = np.empty(G)
    xdiag = np.empty(F)
    prepare_query(x, spec, xsq, xdiag)
    q = Query(x, xsq, xdiag)
    dense_kernel_scores(q, rows, n, spec, coef, beta, n_out, g)
    explicit_scores(x, W, xgranges, xgptr, n_out, F, g)
    combine_scores(g, sigma, n_out, scores)

    # 2. loss and its derivative with respect to the scores.
    loss, yhat = loss_and_derivative(ihyper[IH_LOSS], scores, n_out, y_cls, y_val, hyper[H_EPSILON], dl)
    t = istate[I_T] + 1
    istate[I_T] = t
    eta = step_size(ihyper[IH_SCHEDULE], hyper[H_ETA0], hyper[H_SIGMA_SC], t)
    lam = hyper[H_LAM]
    loss_code = ihyper[IH_LOSS]
    regression = loss_code == SQUARED or loss_code == EPSILON_INSENSITIVE
    steps = np.ones(P)  # each group's multiplier of eta (group_steps), then its step size
    if regression or ihyper[IH_GROUP_STEPS] != 0:
        kdiag = np.empty(P)
        group_diagonals(x, xdiag, params, xgranges, xgptr, kdiag)
        step_shares(ihyper[IH_GROUP_STEPS], theta_sq, sigma, kdiag, steps)
        if regression:
            eta = normalised_step(eta, kdiag, steps)
    for k in range(P):
        steps[k] *= eta

    # 3. gradient step on the loss only: theta_k += steps_k u, u = -sum_c dl_c phi_k(x, c).
    u = np.empty(n_out)
    usq = 0.0
    for c in range(n_out):
        u[c] = -dl[c]
        usq += u[c] * u[c]
    updated = usq > 0.0 and eta > 0.0
    slot = -1
    if updated:
        istate[I_UPDATES] += 1
        budget = ihyper[IH_BUDGET]
        slot = n
        merged = holds(merge[0], merge[1], u, n, tstamp, beta)
        if merged:
            slot = merge[0]
        elif eviction is not None and budget > 0 and n >= budget:
            slot = choose_dense_evictee(eviction, n, tstamp, coef, beta, n_out, sdiag, params, sigma)
            if eviction == EVICT_LEAST_IMPACT_COMPETING and update_impact(u, steps, xdiag, params) < row_impact(
                    slot, coef, beta, n_out, sdiag, params, sigma):  # the update itself is the least
                project_update(q, u, steps, n, buf, spec, st, n_out)
                slot = -1
            else:
                evict_projected(slot, q, n, buf, spec, st, n_out, g)
            istate[I_EVICTIONS] += 1
        else:
            istate[I_N] = n + 1
        if slot >= 0:
            implicit_insert(slot, q, u, steps, t, buf, params, st, g, merged)
        # explicit groups: W_e[:, c] += r_e u_c x_e (same norm update, K = ||x_e||^2)
        for e in range(E):
            k = F + e
            r = steps[k] / sigma[k]
            tu = 0.0
            for c in range(n_out):
                tu += u[c] * g[k, c]
            xx = 0.0
            for rr in range(xgptr[e], xgptr[e + 1]):
                for col in range(xgranges[rr, 0], xgranges[rr, 1]):
                    xx += x[col] * x[col]
                    for c in range(n_out):
                        W[e, col, c] += r * u[c] * x[col]
            v = theta_sq[k] + 2.0 * r * tu + r * r * usq * xx
            theta_sq[k] = v if v > 0.0 else 0.0
        n = istate[I_N]

    # 4. proximal step on the group norms (Prop. 1), then projection.
    code = ihyper[IH_PROX]
    if code == PROX_SPARSE_GROUP_LASSO and E > 0:
        # within-group l1 on the explicit groups (materialised): the exact prox of
        # l1 + group lasso is the elementwise soft-threshold followed by the group step.
        thr = eta * lam * hyper[H_PROX_PARAM]
        for e in range(E):
            k = F + e
            We = W[e]  # in place through a name: ``W[e] *= s`` would store the view back, a slice
            We *= sigma[k]  # assignment whose shape check compiles seconds of error formatting
            sigma[k] = 1.0
            flat = W[e].ravel()
            prox_l1_within(flat.copy(), thr, flat)
            theta_sq[k] = np.sum(W[e] * W[e])
    factors = np.empty(P)
    prox_factors(code, theta_sq, sigma, eta * lam, hyper[H_PROX_PARAM], prox_weights, hyper[H_GAMMA],
                 b, b_new, factors)
    apply_implicit_factors(F, n, factors, coef, theta_sq, sigma, avg_acc, avg_base, sigma_cum)
    for e in range(E):
        apply_explicit_factor(F + e, factors[F + e], W[e].reshape(-1), theta_sq, sigma)
        # averaged model of the explicit groups: a running sum of sigma * W.
        Wa = W_avg[e]  # in place through a name (see above)
        Wa += sigma[F + e] * W[e]
    return loss, yhat, updated, slot


@njit
def averaged_coefficients(n, coef, avg_acc, avg_base, sigma_cum, T, out):
    """Coefficients of the averaged model ``(1/T) sum_t theta_t`` for the stored examples.

    Example ``i`` has contributed ``avg_acc[i, k]`` up to its last fold and
    ``coef[i, k] * (sigma_cum[k] - avg_base[i, k])`` since.
    """
    F = coef.shape[1]
    inv = 1.0 / T if T > 0 else 0.0
    for i in range(n):
        for k in range(F):
            out[i, k] = (avg_acc[i, k] + coef[i, k] * (sigma_cum[k] - avg_base[i, k])) * inv


@njit
def theta_sq_dense_from_buffer(buf, n, n_out, spec):
    """``||raw theta_k||^2`` of the implicit groups recomputed from the first ``n`` rows of the
    buffer ``buf`` (:class:`ProxRows`) and ``n_out`` outputs (O(n^2); tests)."""
    buf, spec = ProxRows(*buf), KernelSpec(*spec)
    S, ssq, sdiag, coef, beta = buf.S, buf.ssq, buf.sdiag, buf.coef, buf.beta
    rows = Rows(S, ssq, sdiag)
    F = spec.codes.shape[0]
    out = np.zeros(F)
    g = np.empty((F, n_out))
    for i in range(n):
        qi = Query(S[i, :].copy(), ssq[i, :].copy(), sdiag[:, i].copy())
        dense_kernel_scores(qi, rows, n, spec, coef, beta, n_out, g)
        for k in range(F):
            acc = 0.0
            for c in range(n_out):
                acc += beta[i, c] * g[k, c]
            out[k] += coef[i, k] * acc
    return out


def fobos_run_parts(order, X, labels, record, merge, eviction):
    """How a first compilation of :func:`fobos_run` splits over two processes
    (:class:`onlinemkl._split.Plan`), with the types the step calls each part with.

    The helper takes the score pass (:func:`~onlinemkl._core.scores.dense_kernel_scores`, the
    first callee the step's typing reaches and its largest subtree), then the eviction's kernel
    passes with a budget, then the prediction pass :func:`fobos_scores` (the Python twin that
    ``predict_one`` calls next).  This process compiles the rest of the step's callees meanwhile,
    and its typing of the step then finds them all done.  Measured cold on two cores
    (``benchmarks/compile_profile.py proximal --split``): 12 CPU s here and 9 in the helper
    without a budget, 16 and 14 with one."""
    from numba import typeof, types  # the types of the records, as the step builds them

    from .._split import Plan

    buf, spec, xg, st, scratch = record.records
    buf, spec, st, scratch = ProxRows(*buf), KernelSpec(*spec), GroupState(*st), ProxScratch(*scratch)
    explicit = ExplicitGroups(*xg)
    f1, i, f = types.float64[::1], types.int64, types.float64
    query = types.NamedUniTuple(f1, 3, Query)
    y_cls, y_val = labels
    rows, params, state = typeof(buf), typeof(spec.params), typeof(st)
    theta_sq, sigma, g = typeof(st.theta_sq), typeof(st.sigma), typeof(scratch.g)
    x = typeof(X[0])
    kernel_rows = typeof(Rows(buf.S, buf.ssq, buf.sdiag))
    helper = [(dense_kernel_scores, (query, kernel_rows, i, typeof(spec), typeof(buf.coef), typeof(buf.beta), i, g))]
    here = [
        (prepare_query, (x, typeof(spec), f1, f1)),
        (loss_and_derivative, (i, typeof(scratch.scores), i, typeof(y_cls).dtype, typeof(y_val).dtype, f,
                               typeof(scratch.dl))),
        (group_diagonals, (x, f1, params, typeof(explicit.granges), typeof(explicit.gptr), f1)),
        (step_shares, (i, theta_sq, sigma, f1, f1)),
    ]
    if eviction is not None:
        helper.append((evict_projected, (i, query, i, rows, typeof(spec), state, i, g)))
        here += [
            (choose_dense_evictee, (i, i, typeof(buf.tstamp), typeof(buf.coef), typeof(buf.beta), i,
                                    typeof(buf.sdiag), params, sigma)),
            (update_impact, (f1, f1, f1, params)),
        ]
    here += [
        (implicit_insert, (i, query, f1, f1, i, rows, params, state, g, types.boolean)),
        (prox_factors, (i, theta_sq, sigma, f, f, typeof(st.prox_weights), f, typeof(scratch.b), typeof(scratch.b_new),
                        f1)),
        (apply_implicit_factors, (i, i, f1, typeof(buf.coef), theta_sq, sigma, typeof(buf.avg_acc),
                                  typeof(buf.avg_base), typeof(st.sigma_cum))),
        (apply_explicit_factor, (i, f, f1, theta_sq, sigma)),
    ]
    if eviction is not None:  # last: it calls the kernel pass, which the helper has cached by then
        here.append((project_update, (query, f1, f1, i, rows, typeof(spec), state, i)))
    predict = getattr(fobos_scores, "python_entry", fobos_scores)  # the twin (or itself, callees wrapped)
    helper.append((predict, (x, typeof(record), typeof(buf.coef), typeof(explicit.W), sigma, i, i)))
    return Plan(helper, here)


#: The parts of entry points a helper process may compile (:mod:`onlinemkl._split`).
COMPILE_PARTS = {"fobos_run": fobos_run_parts}
