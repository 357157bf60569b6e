"""Merging models of the sequence labeller (:class:`onlinemkl.SequenceMKLLabeler`), and the
distance between two of them.

A model of the labeller is two parts (:mod:`onlinemkl.sequence._step`): the emission part, a
kernel expansion over stored position examples (a class vector per example and kernel, handled
here as rank-one rows: a coefficient per kernel times one class vector), and the transition group, the label transition matrix ``T`` with
the start and stop scores ``S0``, ``S1``.  Every score is linear in both, so the merge is the
weighted average of each, as for the flat proximal learner (:mod:`onlinemkl.distributed.merge`):

* the emission supports are united, each row's coefficients (lazy scales folded) multiplied by
  its model's weight, rows holding the same position example with the same class vector added
  into one; beyond the budget the union is compressed by the labeller's own choice of evictee
  (oldest, or least impact) with the proximal merge's projected removal
  (:func:`onlinemkl.proximal._step.compress_rows`: the evicted row's contribution moves onto a
  stored row with a parallel class vector where there is one); the norms are recomputed;
* ``T``, ``S0``, ``S1`` (and the averaged model's) are the weighted means;
* with ``average=True`` the averaged models are merged alike (coefficients materialised, the
  running sums restarted from them).

A model that has learnt nothing is left out of a merge.  More than two budgeted models
merge in pairs, as the other budgeted learners do, so a merge's kernel matrix stays near
``(2 budget)^2`` entries per kernel.

Without compression the merged model's per-position emission scores and its transition, start
and stop scores are the weighted means of the models' (last and averaged model), so its
Viterbi labelling is that of the averaged score.  Labels and feature names are aligned by name
(the first model's order first); models trained on arrays must have the same number of columns.
The step count and the number of positions learnt are the weighted means (they set the step
size and ``gamma='auto'``), the time-stamp clock the largest.

The divergence of two models is the squared RKHS distance of their emission parts (summed over
kernels, over the union of their supports) plus the squared Frobenius distance of their
transition groups (``T``, ``S0`` and ``S1``): 0 between copies, symmetric; an unfitted model is
the zero model there.  It is computed over the union of the two supports (rows both hold cancel
exactly), so copies are at distance exactly 0.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .._lazy import lazy_module
from ..features import label_key
from ..kernel_arrays import block_kernels
from ..sequence.engine import per_kernel_class_vectors
from ._common import _merged_scaling, _union, check_scalings, fresh_clone, in_units, unit_frame

_cf = lazy_module("onlinemkl.proximal._step")
_cs = lazy_module("onlinemkl.sequence._step")

__all__ = ["merge_sequence", "sequence_divergence", "learnt"]

_CHAIN = ("T", "S0", "S1")


class _Model:
    """One fitted labeller's state as rank-one rows over named columns (a row, a class vector over
    named labels, its coefficient per kernel and averaged coefficient per kernel, scales folded),
    and the chain (last, averaged).

    A stored position carries a class vector per kernel (last and averaged model), so it becomes
    up to ``2 F`` rank-one rows: one per kernel with ``coef = e_k`` and the kernel's class vector,
    one per kernel with ``avg = e_k`` and its averaged class vector.  :func:`_write` adds the rows
    of one position back together."""

    def __init__(self, state, frame=None):
        params, a = state
        eng = params["engine"]
        self.array_input = params["array_input"]
        d = int(eng["n_features"])
        self.names = list(params["features"]) if self.array_input is False else list(range(d))
        self.labels = list(params["labels"])
        a = per_kernel_class_vectors(a)
        F = a["buf.coef"].shape[1]
        n = int(a["istate"][_cs.I_N])
        T = int(a["istate"][_cs.I_T])
        Y = len(self.labels)
        sigma = a["sigma"]
        X = a["buf.S"][:n, :d]
        if frame:  # the rows in the merge's common units (the models standardised their inputs)
            X = in_units(X, self.names, state, frame)
        B = a["beta"][:, :n, :Y] * sigma[:F, None, None]
        Bavg = np.zeros_like(a["beta"])
        if n:
            _cs.averaged_class_vectors(n, a["beta"], a["avg_acc"], a["avg_base"], a["sigma_cum"], max(T, 1), Bavg)
        Bavg = Bavg[:, :n, :Y]
        rows, beta, coef, avg, stamps = [], [], [], [], []
        eye = np.eye(F)
        for i in range(n):
            for k in range(F):
                for vec, last in ((B[k, i], True), (Bavg[k, i], False)):
                    if not np.any(vec):
                        continue
                    rows.append(X[i])
                    beta.append(vec)
                    coef.append(eye[k] if last else np.zeros(F))
                    avg.append(np.zeros(F) if last else eye[k])
                    stamps.append(a["buf.tstamp"][i])
        m = len(rows)
        self.X = np.array(rows, dtype=float).reshape(m, X.shape[1])
        self.beta = np.array(beta, dtype=float).reshape(m, Y)
        self.coef = np.array(coef, dtype=float).reshape(m, F)
        self.avg = np.array(avg, dtype=float).reshape(m, F)
        self.stamps = np.array(stamps, dtype=np.int64)
        self.chain = [_labels_part(a[k], Y) * sigma[F] for k in _CHAIN]
        self.chain_avg = [_labels_part(a[k + "avg"], Y) / max(T, 1) for k in _CHAIN]


def learnt(state) -> bool:
    """Whether a labeller state has learnt anything (fitted, with an input kind: a fitted model
    without one has seen only empty sequences, which are no-ops)."""
    return bool(state[0].get("fitted")) and state[0].get("array_input") is not None


def _labels_part(arr, Y):
    """The first ``Y`` label slots of a transition (``Y x Y``) or start/stop (``Y``) array."""
    return arr[:Y, :Y] if arr.ndim == 2 else arr[:Y]


class _Union:
    """The weighted rows and chains of several models over the union of columns and labels."""

    def __init__(self, models, weights, names, labels):
        col = {v: i for i, v in enumerate(names)}
        lab = {label_key(v): i for i, v in enumerate(labels)}
        d, Y = len(names), len(labels)
        F = models[0].coef.shape[1]
        self.chain = [np.zeros((Y, Y)), np.zeros(Y), np.zeros(Y)]
        self.chain_avg = [np.zeros((Y, Y)), np.zeros(Y), np.zeros(Y)]
        rows, beta, coef, avg, stamps, index = [], [], [], [], [], {}
        for m, w in zip(models, weights):
            cmap = np.array([col[v] for v in m.names], dtype=np.int64)
            lmap = np.array([lab[label_key(v)] for v in m.labels], dtype=np.int64)
            X = np.zeros((m.X.shape[0], d))
            X[:, cmap] = m.X
            B = np.zeros((m.X.shape[0], Y))
            B[:, lmap] = m.beta
            for out, src in ((self.chain, m.chain), (self.chain_avg, m.chain_avg)):
                out[0][np.ix_(lmap, lmap)] += w * src[0]
                out[1][lmap] += w * src[1]
                out[2][lmap] += w * src[2]
            for i in range(X.shape[0]):
                key = X[i].tobytes() + B[i].tobytes()
                j = index.get(key)
                if j is None:
                    index[key] = len(rows)
                    rows.append(X[i])
                    beta.append(B[i])
                    coef.append(w * m.coef[i])
                    avg.append(w * m.avg[i])
                    stamps.append(m.stamps[i])
                else:
                    coef[j] = coef[j] + w * m.coef[i]
                    avg[j] = avg[j] + w * m.avg[i]
                    stamps[j] = max(stamps[j], m.stamps[i])
        n = len(rows)
        self.X = np.array(rows, dtype=float).reshape(n, d)
        self.beta = np.array(beta, dtype=float).reshape(n, Y)
        self.coef = np.array(coef, dtype=float).reshape(n, F)
        self.avg = np.array(avg, dtype=float).reshape(n, F)
        self.stamps = np.array(stamps, dtype=np.int64)


def _models(states, weights):
    """The fitted states (with their weights) and their :class:`_Model`; the union of their
    columns and labels.  ``ValueError`` if they mix input kinds or array widths."""
    fitted = [(s, w) for s, w in zip(states, weights) if learnt(s)]
    frame = unit_frame([s for s, _ in fitted])
    models = [_Model(s, frame) for s, _ in fitted]
    kinds = {m.array_input for m in models if m.array_input is not None}
    if len(kinds) > 1:
        raise ValueError("states mix models trained on arrays and on feature dicts; merge models of one input kind")
    if kinds == {True} and len({len(m.names) for m in models if m.array_input}) > 1:
        widths = sorted({len(m.names) for m in models if m.array_input})
        raise ValueError(f"states were trained on arrays of different widths {widths}; merge models over the same "
                         "columns")
    names = _union(m.names for m in models)
    labels = _union((m.labels for m in models), label_key)
    return fitted, models, names, labels


def _holder(learner, state, names, labels):
    """A clone of ``learner`` holding ``state`` with its feature map and label set extended to
    ``names`` and ``labels`` (the first model's come first, so its indices are kept)."""
    tmp = fresh_clone(learner)
    tmp._set_state(*state)
    if tmp._array_input is False:
        new = [v for v in names if v not in tmp._features.columns]
        if new:
            tmp._features.add(new)
            tmp._engine.set_features(len(tmp._features), tmp._features.lookup)
    for y in labels:
        tmp._labels.add(y)
    if len(tmp._labels) > tmp._engine.n_labels:
        tmp._engine.set_n_labels(len(tmp._labels))
    return tmp


def _emission_norms(coef, beta, K):
    """``theta_sq[k] = sum_c M_k[:, c]' K_k M_k[:, c]``, ``M_k = coef[:, k] * beta``."""
    out = np.zeros(K.shape[0])
    for k in range(K.shape[0]):
        M = coef[:, k][:, None] * beta
        out[k] = float(np.sum(M * (K[k] @ M)))
    return out


def merge_sequence(learner, states, weights):
    """The weighted average of two or more fitted labeller states (``weights`` normalised, one
    per state; see the module docstring).  :func:`onlinemkl.distributed.merge.merge_states`
    leaves unfitted states out and merges more than two budgeted models in pairs."""
    check_scalings(states)
    fitted, models, names, labels = _models(states, weights)
    w = np.asarray(weights, dtype=float)
    u = _Union(models, w, names, labels)
    tmp = _holder(learner, fitted[0][0], names, labels)
    eng = tmp._engine
    with threadpool_limits(1, user_api="blas"):
        K = block_kernels(u.X, u.X, eng.ck) if u.X.shape[0] else np.zeros((eng.ck.n_kernels, 0, 0))
        budget = eng.buf.budget
        if budget is not None and len({row.tobytes() for row in u.X}) > budget:  # more positions than the budget
            kept = _compress(u, eng, budget)
            K = K[:, kept][:, :, kept]
        theta_sq = _emission_norms(u.coef, u.beta, K)
    _write(u, eng, theta_sq, fitted, w)
    return _merged_scaling(tmp._get_state(), states)


def _compress(u, eng, budget):
    """Evict with the labeller's choice of row and the projected removal of
    :func:`onlinemkl.proximal._step.compress_rows` until ``budget`` rank-one rows remain (so at
    most ``budget`` positions: fewer where a position kept several of its rows) (the union handed
    over with unit scales and its averaged coefficients as running sums, so an evicted row's share
    of the averaged model moves to its partner).  Returns the kept rows' original indices."""
    n, F = u.X.shape[0], eng.ck.n_kernels
    ssq = np.zeros((n, eng.ck.n_groups))
    sdiag = np.zeros((F, n))  # kernel by kernel, as the buffer holds them
    X = np.array(u.X, dtype=float, order="C")
    eng.ck.refresh_row_caches(X, n, ssq, sdiag)
    coef = np.array(u.coef, order="C")
    avg = np.array(u.avg, order="C")
    beta = np.array(u.beta, order="C")
    rows = _cf.ProxRows(X, ssq, sdiag, coef, beta, u.stamps.copy(), avg, np.zeros((n, F)))
    istate = np.zeros(_cf.N_ISTATE, dtype=np.int64)
    istate[_cf.I_N] = n
    ihyper = np.zeros(_cf.N_IHYPER, dtype=np.int64)
    ihyper[_cf.IH_POLICY] = eng.ihyper[_cs.IH_POLICY]
    ihyper[_cf.IH_BUDGET] = budget
    ihyper[_cf.IH_NOUT] = beta.shape[1]
    st = _cf.GroupState(np.zeros(F), np.ones(F), np.zeros(F), np.ones(F), istate, np.zeros(_cf.N_HYPER), ihyper)
    order = np.arange(n, dtype=np.int64)
    m = int(_cf.compress_rows(int(budget), tuple(rows), tuple(eng.ck.spec()), tuple(st), order))
    kept = order[:m].copy()
    u.X, u.beta, u.stamps = u.X[kept], beta[:m].copy(), rows.tstamp[:m].copy()
    u.coef, u.avg = coef[:m].copy(), avg[:m].copy()
    return kept


def _write(u, eng, theta_sq, fitted, w):
    """Write the merged rows, chain and counters into ``eng`` (the holder's engine)."""
    arrays = [a for (_, a), _ in fitted]
    len_sums = [p["engine"]["len_sum"] for (p, _), _ in fitted]
    F = eng.ck.n_kernels
    d, Y = u.X.shape[1], u.beta.shape[1]
    T = int(round(float(np.dot(w, [a["istate"][_cs.I_T] for a in arrays]))))
    # the rank-one rows of one position added back into its class vectors per kernel
    where, first = {}, []
    for i in range(u.X.shape[0]):
        key = u.X[i].tobytes()
        if key not in where:
            where[key] = len(first)
            first.append(i)
    n = len(first)
    budget = eng.buf.budget
    cap = max(n, 1) if budget is None else min(max(n, 1), budget)
    b = eng.buf
    for name in ("ssq", "sdiag", "ypos", "yneg", "coef", "tstamp"):
        arr = getattr(b, name)
        setattr(b, name, np.zeros((cap,) + arr.shape[1:], dtype=arr.dtype))
    b.yneg[:] = -1
    b.S = np.zeros((cap, max(d, b.S.shape[1], 1)))
    b.S[:n, :d] = u.X[first]
    C = eng.beta.shape[2]
    eng.beta = np.zeros((F, cap, C))
    eng.avg_acc = np.zeros((F, cap, C))
    for i in range(u.X.shape[0]):
        j = where[u.X[i].tobytes()]
        eng.beta[:, j, :Y] += u.coef[i][:, None] * u.beta[i][None, :]
        eng.avg_acc[:, j, :Y] += (u.avg[i] * max(T, 1))[:, None] * u.beta[i][None, :]
        b.tstamp[j] = max(b.tstamp[j], u.stamps[i])
    eng.avg_base = np.zeros((cap, F))
    eng.sigma[:] = 1.0
    eng.sigma_cum[:] = 0.0
    for i, name in enumerate(_CHAIN):
        for target, src, scale in ((name, u.chain[i], 1.0), (name + "avg", u.chain_avg[i], max(T, 1))):
            arr = getattr(eng, target)
            arr[...] = 0.0
            arr[tuple(slice(0, Y) for _ in range(arr.ndim))] = src * scale
    eng.theta_sq[:F] = theta_sq
    eng.theta_sq[F] = float(sum(np.sum(c ** 2) for c in u.chain))
    ist = eng.istate
    ist[_cs.I_N] = n
    ist[_cs.I_T] = T
    ist[_cs.I_CLOCK] = max(int(a["istate"][_cs.I_CLOCK]) for a in arrays)
    for i in (_cs.I_UPDATES, _cs.I_EVICTIONS):
        ist[i] = int(round(float(np.dot(w, [a["istate"][i] for a in arrays]))))
    eng.len_sum = int(round(float(np.dot(w, len_sums))))
    eng._forget_records()
    eng._refresh_row_caches()


def sequence_divergence(learner, a, b) -> float:
    """Squared RKHS distance of the emission parts plus squared Frobenius distance of the
    transition groups of two labeller states (module docstring)."""
    check_scalings([s for s in (a, b) if learnt(s)])
    fitted, models, names, labels = _models([a, b], [1.0, 1.0])
    if len(models) < 2:  # an unfitted model is the zero model
        if not models:
            return 0.0
        models.append(_Empty(models[0]))
        names = _union(m.names for m in models)
    u = _Union(models, np.array([1.0, -1.0]), names, labels)
    tmp = _holder(learner, fitted[0][0], names, labels)
    with threadpool_limits(1, user_api="blas"):
        K = block_kernels(u.X, u.X, tmp._engine.ck) if u.X.shape[0] else np.zeros((tmp._engine.ck.n_kernels, 0, 0))
        total = float(np.sum(_emission_norms(u.coef, u.beta, K)))
    total += float(sum(np.sum(c ** 2) for c in u.chain))
    return max(total, 0.0)


class _Empty:
    """The zero model over the columns and labels of ``like``."""

    def __init__(self, like):
        self.names, self.labels = like.names, like.labels
        F, Y = like.coef.shape[1], len(like.labels)
        self.X, self.beta = np.zeros((0, like.X.shape[1])), np.zeros((0, Y))
        self.coef = self.avg = np.zeros((0, F))
        self.stamps = np.zeros(0, dtype=np.int64)
        self.chain = self.chain_avg = [np.zeros((Y, Y)), np.zeros(Y), np.zeros(Y)]
