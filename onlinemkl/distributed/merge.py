"""Merging models of the support-vector learners, and the distance between two of them.

A model of OBSCURE or online proximal MKL is a kernel expansion over its stored examples.
:func:`merge_states` averages ``k`` such models: the union of their buffers, each row's
coefficients multiplied by its model's weight (the lazy scales folded in first), rows that
hold the same example with the same class structure in several models added into one (after
a synchronisation every worker holds the same rows: without this the buffer would grow ``k``
times per round).  If the union holds more rows than the budget, it is compressed back to it
by the learner's own eviction, row after row, as its step does at a full budget: OBSCURE's
``choose_evictee`` picks a row whose contribution is first projected onto the stored row with
the same class pair and sign that keeps most of it (one coefficient, in the kernels' weighted
sum, ``onlinemkl._core.buffer.project_onto``); the proximal learners
(:func:`onlinemkl.proximal._step.compress_rows`) project it per kernel group onto the stored row
with a parallel class vector (its share of the averaged model moving along).  Only the
residual leaves.  Plain removal made merged models collapse (every stored row also acts as a
per-class offset that cancels only in aggregate).
More than two budgeted models merge in pairs, level after level (:func:`_merge_tree`), so the
kernel matrix of a merge stays near ``(2 budget)^2`` entries per kernel whatever their number.

What is averaged, per learner:

* **OBSCURE** averages the dual vectors ``theta^j`` (one coefficient per stored example,
  shared by the kernels).  Its predictor is the mirror image ``w^j = a_j theta^j`` with
  ``a_j`` a function of the norms ``||theta^j||`` (p-norm mirror map), so the merged
  model's raw per-kernel scores are the weighted mean of the models' raw scores, and its
  class scores are the weighted mean of theirs only where ``a_j`` is constant: ``p = 2``.
  Averaging ``w`` itself would need a coefficient per example and kernel, which OBSCURE's
  state does not have.  Counters (stage-2 step count, ``s_t``, running loss) are the
  weighted means; the time stamps' clock is the largest; a stage-2 model's settings
  (``lam``, ``R``) win over stage 1.
* **Proximal MKL** (classifier and regressor) averages ``theta_k`` per group (one
  coefficient per example and kernel, and the explicit weight matrices): its scores are
  linear in ``theta``, so the merged scores are the weighted mean of the scores.  With
  ``average=True`` the averaged models are merged alike (their coefficients materialised,
  the running sums restarted from them), so the merged averaged model's scores are the
  weighted mean too.  Regression target statistics are pooled (weighted means of the count
  and mean, the variance with the spread of the means).

* **The sequence labeller**: :mod:`onlinemkl.distributed.sequence` (emission expansion as
  proximal MKL, transition scores averaged entrywise).

The learners' own input standardisation (``scale``, :mod:`onlinemkl._scaling`): each worker
estimates its statistics on its own shard, so its stored rows are in its own units.  A merge (and
a divergence) first writes every model's rows in common units: back to raw units by the model's
statistics, then standardised by the statistics pooled over the models
(:func:`~onlinemkl.distributed._common.unit_frame`), which the merged model keeps.  Models whose
units agree (none standardised, or the same frozen estimates) merge bit for bit as before.

The models' feature names and labels are aligned by name first (the first model's columns
and label indices come first; later models' new names are appended in order), so workers
that saw features or classes in different orders merge correctly.

:func:`state_divergence` is ``||theta_a - theta_b||^2`` summed over kernels (and explicit
groups), the squared RKHS distance of the two expansions over the union of their supports,
from the kernel matrices of the stored rows: the quantity dynamic averaging watches.
"""

from __future__ import annotations

import copy

import numpy as np
from threadpoolctl import threadpool_limits

from .._lazy import lazy_module
from ..obscure.engine import ObscureEngine
from ..proximal.engine import ProximalEngine
from ..sequence.engine import SequenceEngine
from ..features import label_key
from ..kernel_arrays import block_kernels
from ._common import _merged_scaling, _params, _union, check_scalings, fresh_clone, in_units, unit_frame
from .compress import compress, group_norms
from .minibatch import merge_minibatch, minibatch_divergence
from .sequence import learnt, merge_sequence, sequence_divergence

_cb = lazy_module("onlinemkl._core.buffer")
_co = lazy_module("onlinemkl.obscure._step")
_cf = lazy_module("onlinemkl.proximal._step")

__all__ = ["merge", "merge_states", "divergence", "state_divergence", "kind_of", "check_learner",
           "state_nbytes", "check_scalings"]


def kind_of(learner) -> str:
    """``'obscure'``, ``'proximal'``, ``'sequence'`` or ``'minibatch'`` for a learner :func:`merge` supports."""
    engine = getattr(learner, "_engine", None)
    if isinstance(engine, ObscureEngine):
        return "obscure"
    if isinstance(engine, ProximalEngine):
        return "proximal"
    if isinstance(engine, SequenceEngine) or type(learner).__name__ == "SequenceMKLLabeler":
        return "sequence"
    if engine is not None and hasattr(engine, "learn_many") and hasattr(learner, "_features"):
        return "minibatch"
    return ""


def check_learner(learner) -> str:
    """The learner's kind; ``TypeError`` saying what is supported otherwise."""
    kind = kind_of(learner)
    if not kind or not hasattr(learner, "_get_state"):
        raise TypeError(
            f"learner={type(learner).__name__}: distributed learning merges onlinemkl's river learners "
            "(onlinemkl.river.OBSCUREClassifier, ProximalMKLClassifier, ProximalMKLRegressor, PolyMKLRegressor, "
            "NonlinearKRRRegressor, and onlinemkl.SequenceMKLLabeler); pass one of them (scale features upstream: a pipeline's scaler is not merged)")
    return kind


def state_nbytes(state) -> int:
    """Bytes of a state's arrays (what one message of a synchronisation carries, JSON aside)."""
    return int(sum(a.nbytes for a in state[1].values()))


# ----------------------------------------------------------------------------------------
# A model as rows and coefficients over named features and labels


class _Expansion:
    """One model: rows ``X`` over ``names``, class structure ``cls`` (OBSCURE: ``(ypos, yneg)``;
    proximal: the class vector ``beta``) over ``labels``, coefficients ``coef`` (lazy scales
    folded), the averaged model's coefficients ``avg`` (proximal, else None), time stamps, and
    the explicit groups' weights ``W`` and averaged weights ``Wbar`` (proximal)."""

    def __init__(self, kind, state, frame=None):
        params, a = state
        eng = params["engine"]
        self.names = list(params["features"])
        self.labels = list(params.get("labels", []))
        d = int(eng["n_features"])
        n = int(a["istate"][0])  # I_N is 0 for both learners
        self.X = a["buf.S"][:n, :d]
        if frame:  # the rows in the merge's common units (the models standardised their inputs)
            self.X = in_units(self.X, self.names, state, frame)
        self.stamps = a["buf.tstamp"][:n]
        self.W = self.Wbar = self.avg = None
        if kind == "obscure":
            self.cls = np.stack([a["buf.ypos"][:n], a["buf.yneg"][:n]], axis=1)
            self.coef = a["buf.coef"][:n] * a["fstate"][_co.F_SCALE]
        else:
            C = max(int(a["ihyper"][_cf.IH_NOUT]), 1)
            F = a["buf.coef"].shape[1]
            sigma = a["sigma"]
            self.cls = a["beta"][:n, :C]
            self.coef = a["buf.coef"][:n] * sigma[:F]
            T = int(a["istate"][_cf.I_T])
            self.avg = np.zeros((n, F))
            if n:
                _cf.averaged_coefficients(n, a["buf.coef"], a["avg_acc"], a["avg_base"], a["sigma_cum"], max(T, 1),
                                          self.avg)
            E = a["W"].shape[0]
            self.W = a["W"][:, :d, :C] * sigma[F:F + E, None, None]
            self.Wbar = a["W_avg"][:, :d, :C] / max(T, 1)


class _Union:
    """The rows of several expansions over the union of their features and labels, equal rows
    (same example, same class structure) added into one."""

    def __init__(self, kind, exps, weights, names=None, labels=None):
        self.kind = kind
        self.names = _union(e.names for e in exps) if names is None else names
        self.labels = _union((e.labels for e in exps), label_key) if labels is None else labels
        col = {v: i for i, v in enumerate(self.names)}
        lab = {label_key(v): i for i, v in enumerate(self.labels)}
        d, C = len(self.names), max(len(self.labels), 1)
        rows, cls, coef, avg, stamps, index = [], [], [], [], [], {}
        for e, w in zip(exps, weights):
            cmap = np.array([col[v] for v in e.names], dtype=np.int64)
            X = np.zeros((e.X.shape[0], d))
            X[:, cmap] = e.X
            if kind == "obscure":
                lmap = np.array([lab[label_key(v)] for v in e.labels] + [-1], dtype=np.int64)  # -1 stays -1
                K = e.cls.copy()
                if e.labels:
                    K = lmap[K]
            else:
                K = np.zeros((e.cls.shape[0], C if self.labels else e.cls.shape[1]))
                lmap = np.array([lab[label_key(v)] for v in e.labels], dtype=np.int64) if e.labels else np.arange(e.cls.shape[1])
                K[:, lmap] = e.cls
            for i in range(X.shape[0]):
                key = X[i].tobytes() + K[i].tobytes()
                j = index.get(key)
                if j is None:
                    index[key] = len(rows)
                    rows.append(X[i])
                    cls.append(K[i])
                    coef.append(w * e.coef[i])
                    avg.append(None if e.avg is None else w * e.avg[i])
                    stamps.append(e.stamps[i])
                else:
                    coef[j] = coef[j] + w * e.coef[i]
                    if e.avg is not None:
                        avg[j] = avg[j] + w * e.avg[i]
                    stamps[j] = max(stamps[j], e.stamps[i])
        n = len(rows)
        ncoef = exps[0].coef.shape[1]
        self.X = np.array(rows).reshape(n, d)
        self.cls = np.array(cls, dtype=exps[0].cls.dtype).reshape((n,) + exps[0].cls.shape[1:2]) if kind == "obscure" \
            else np.array(cls).reshape(n, C if self.labels else exps[0].cls.shape[1])
        self.coef = np.array(coef).reshape(n, ncoef)
        self.avg = None if exps[0].avg is None else np.array(avg).reshape(n, ncoef)
        self.stamps = np.array(stamps, dtype=np.int64)
        self.W = self.Wbar = None
        if exps[0].W is not None:
            E = exps[0].W.shape[0]
            Cw = self.cls.shape[1]
            self.W = np.zeros((E, d, Cw))
            self.Wbar = np.zeros((E, d, Cw))
            for e, w in zip(exps, weights):
                cmap = np.array([col[v] for v in e.names], dtype=np.int64)
                lmap = np.array([lab[label_key(v)] for v in e.labels], dtype=np.int64) if e.labels else np.arange(e.W.shape[2])
                self.W[np.ix_(np.arange(E), cmap, lmap)] += w * e.W
                self.Wbar[np.ix_(np.arange(E), cmap, lmap)] += w * e.Wbar

    def class_matrix(self) -> np.ndarray:
        """``B[i, c]``: row ``i``'s weight on output ``c`` (OBSCURE: +1 at ypos, -1 at yneg)."""
        if self.kind != "obscure":
            return self.cls
        n, C = self.cls.shape[0], max(len(self.labels), 1)
        B = np.zeros((n, C))
        B[np.arange(n), self.cls[:, 0]] += 1.0
        neg = self.cls[:, 1] >= 0
        B[np.arange(n)[neg], self.cls[neg, 1]] -= 1.0
        return B

    def keep(self, rows):
        for name in ("X", "cls", "coef", "stamps"):
            setattr(self, name, getattr(self, name)[rows])
        if self.avg is not None:
            self.avg = self.avg[rows]


# ----------------------------------------------------------------------------------------
# The public functions


def _holder(learner, state, names):
    """A clone of ``learner`` holding ``state``, its feature map extended to ``names`` (whose
    kernels then resolve the union's feature groups)."""
    tmp = learner.clone()
    tmp._set_state(*state)
    new = [v for v in names if v not in tmp._features.columns]
    if new:
        tmp._features.add(new)
        tmp._engine.set_features(len(tmp._features), tmp._features.lookup)
    return tmp


def _check_states(states, weights, learner=None):
    """The normalised weights; each state checked by restoring it onto a clone of ``learner``
    (the learner's own strict rules), so a malformed state fails here, naming its position."""
    if not states:
        raise ValueError("states is empty: merge needs at least one model")
    if learner is not None:
        for i, state in enumerate(states):
            try:
                fresh_clone(learner)._set_state(*state)
            except (KeyError, ValueError, TypeError, IndexError) as err:
                raise ValueError(f"states[{i}] is not a state of this {type(learner).__name__} ({err!s}); pass "
                                 "the _get_state() of a learner of the same class and parameters") from None
    if weights is None:
        weights = np.full(len(states), 1.0 / len(states))
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (len(states),) or not np.all(np.isfinite(weights)) or np.any(weights < 0) \
            or not weights.sum() > 0:
        raise ValueError(f"weights must be {len(states)} finite non-negative numbers with a positive sum; "
                         f"got {weights.tolist()!r}")
    return weights / weights.sum()


def merge_states(learner, states, weights=None):
    """The weighted average of models given as states (``learner._get_state()`` pairs).

    ``learner``: any learner of the same class and parameters (its own state is not read);
    ``weights``: one non-negative number per state (normalised; default equal), e.g. the
    number of examples each model has seen.  Returns the merged model's state.  One state is
    returned as it is (the identity, bit for bit).  See the module docstring for what is
    averaged.
    """
    kind = check_learner(learner)
    if kind == "minibatch":
        return merge_minibatch(learner, states, _check_states(states, weights, learner))
    if kind == "sequence":
        weights = _check_states(states, weights, learner)
        keep = [i for i, s in enumerate(states) if learnt(s)]  # a model that learnt nothing is left out
        if len(keep) < 2:
            return states[keep[0] if keep else 0]
        states, weights = [states[i] for i in keep], weights[keep]
        weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(keep), 1.0 / len(keep))
        if len(states) > 2 and learner.budget is not None:
            return _merge_tree(learner, states, weights)
        return merge_sequence(learner, states, weights)
    weights = _check_states(states, weights, learner)
    if len(states) == 1:
        return states[0]
    check_scalings(states)
    if len(states) > 2 and learner._engine.buf.budget is not None:
        return _merge_tree(learner, states, weights)
    frame = unit_frame(states)
    exps = [_Expansion(kind, s, frame) for s in states]
    u = _Union(kind, exps, weights)
    tmp = _holder(learner, states[0], u.names)
    eng = tmp._engine
    if u.kind != "obscure" and u.labels and eng.n_outputs < len(u.labels):
        eng.set_n_outputs(len(u.labels))
    elif u.kind == "obscure" and not eng.binary and eng.n_outputs < len(u.labels):
        eng.set_n_classes(len(u.labels))
    ck = eng.ck
    with threadpool_limits(1, user_api="blas"):  # small products: threads only wait on each other
        K = block_kernels(u.X, u.X, ck) if u.X.shape[0] else np.zeros((ck.n_kernels, 0, 0))
        B = u.class_matrix()
        budget = eng.buf.budget
        if budget is not None and u.X.shape[0] > budget:
            track = u.kind == "obscure" and eng.ihyper[_co.IH_POLICY] == _cb.EVICT_LEAST_IMPACT
            theta_sq, G = group_norms(u.coef, B, K) if track else (None, None)
            theta_sq = compress(u, eng, K, B, theta_sq, G, budget)
        else:
            theta_sq = group_norms(u.coef, B, K)[0]
    _write(u, eng, theta_sq, states, weights)
    return _merged_scaling(tmp._get_state(), states)


def _merge_tree(learner, states, weights):
    """Merge in pairs, level after level, each pair's weight the sum of its leaves': every merge
    is of two budgeted models (a union of at most twice the budget, plus the rows they do not
    share), whatever the number of models; the flat union of ``k`` models would need a kernel
    matrix of up to ``(k budget)^2`` entries per kernel."""
    level = list(zip(states, weights))
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            (sa, wa), (sb, wb) = level[i], level[i + 1]
            nxt.append((merge_states(learner, [sa, sb], [wa, wb]) if wa + wb > 0 else sa, wa + wb))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0][0]


def _wmean(values, weights):
    return float(np.dot(weights, np.asarray(values, dtype=float)))


def _write(u, eng, theta_sq, states, weights):
    """Write the merged rows and counters into ``eng`` (the holder's engine)."""
    n, d = u.X.shape
    budget = eng.buf.budget
    cap = max(n, 1) if budget is None else min(max(n, 1), budget)
    b = eng.buf
    for name in ("S", "ssq", "sdiag", "ypos", "yneg", "coef", "tstamp"):
        arr = getattr(b, name)
        new = np.zeros((cap,) + arr.shape[1:], dtype=arr.dtype)
        if name == "yneg":
            new[:] = -1
        setattr(b, name, new)
    b.S = np.zeros((cap, max(d, 1)))
    b.S[:n, :d] = u.X
    b.coef[:n] = u.coef
    b.tstamp[:n] = u.stamps
    arrays = [a for _, a in states]
    if u.kind == "obscure":
        b.ypos[:n] = u.cls[:, 0]
        b.yneg[:n] = u.cls[:, 1]
        eng.theta_sq[:] = theta_sq
        ist, fst = eng.istate, eng.fstate
        ist[_co.I_N] = n
        ist[_co.I_CLOCK] = max(int(a["istate"][_co.I_CLOCK]) for a in arrays)
        for i in (_co.I_T, _co.I_UPDATES, _co.I_EVICTIONS, _co.I_CLEAN_RUN):
            ist[i] = int(round(_wmean([a["istate"][i] for a in arrays], weights)))
        fst[_co.F_SCALE] = 1.0
        for i in (_co.F_S, _co.F_LOSS_SUM, _co.F_LOSS_N):
            fst[i] = _wmean([a["fstate"][i] for a in arrays], weights)
        stage2 = [a for a in arrays if a["ihyper"][_co.IH_STAGE] == 2]
        if stage2 and eng.stage != 2:
            for i in (_co.H_LAM, _co.H_R):
                eng.hyper[i] = stage2[0]["hyper"][i]
            eng.ihyper[_co.IH_STAGE] = 2
    else:
        F = eng.ck.n_kernels
        C = eng.beta.shape[1]
        eng.beta = np.zeros((cap, C))
        eng.beta[:n, :u.cls.shape[1]] = u.cls
        T = int(round(_wmean([a["istate"][_cf.I_T] for a in arrays], weights)))
        eng.avg_acc = np.zeros((cap, F))
        eng.avg_acc[:n] = u.avg * max(T, 1)
        eng.avg_base = np.zeros((cap, F))
        eng.sigma[:] = 1.0
        eng.sigma_cum[:] = 0.0
        E = eng.W.shape[0]
        eng.W = np.zeros((E, max(eng.W.shape[1], d), C))
        eng.W_avg = np.zeros_like(eng.W)
        eng.W[:, :d, :u.W.shape[2]] = u.W
        eng.W_avg[:, :d, :u.W.shape[2]] = u.Wbar * max(T, 1)
        eng.theta_sq[:F] = theta_sq
        for e in range(E):
            eng.theta_sq[F + e] = float(np.sum(eng.W[e] ** 2))
        ist = eng.istate
        ist[_cf.I_N] = n
        ist[_cf.I_T] = T
        for i in (_cf.I_UPDATES, _cf.I_EVICTIONS):
            ist[i] = int(round(_wmean([a["istate"][i] for a in arrays], weights)))
        eng.ystats[:] = _pooled_stats([a["ystats"] for a in arrays], weights)
        # the targets' range of them all (a state saved before the range was kept: not known, unbounded)
        ranges = np.array([a.get("yrange", (-np.inf, np.inf)) for a in arrays], dtype=float)
        eng.yrange[:] = (ranges[:, 0].min(), ranges[:, 1].max())
    eng._forget_records()
    eng._refresh_row_caches()


def _pooled_stats(stats, weights):
    """Welford ``(count, mean, m2)`` of a weighted mixture: weighted count and mean; the
    variance is the mean of the variances plus the variance of the means."""
    counts = np.array([s[0] for s in stats])
    means = np.array([s[1] for s in stats])
    var = np.array([s[2] / s[0] if s[0] > 0 else 0.0 for s in stats])
    n = float(np.dot(weights, counts))
    mean = float(np.dot(weights, means))
    v = float(np.dot(weights, var) + np.dot(weights, (means - mean) ** 2))
    return np.array([n, mean, v * n])


def state_divergence(learner, a, b) -> float:
    """``sum_j ||theta_a^j - theta_b^j||^2`` of two models given as states (see the module
    docstring): 0 between copies, symmetric; the squared RKHS distance of the expansions."""
    kind = check_learner(learner)
    if kind == "minibatch":
        return minibatch_divergence(learner, a, b)
    if kind == "sequence":
        _check_states([a, b], None, learner)
        return sequence_divergence(learner, a, b)
    _check_states([a, b], None, learner)
    check_scalings([a, b])
    frame = unit_frame([a, b])
    exps = [_Expansion(kind, s, frame) for s in (a, b)]
    names = _union(e.names for e in exps)
    labels = _union((e.labels for e in exps), label_key)
    ua, ub = (_Union(kind, [e], np.ones(1), names, labels) for e in exps)
    ck = _holder(learner, a, names)._engine.ck
    # ||a - b||^2 = ||a||^2 + ||b||^2 - 2 <a, b>: the norms are in the states (kept up to date by
    # every step), so only the cross kernel block is computed, a quarter of the union's matrix
    total = _norms_sq(kind, a) + _norms_sq(kind, b)
    if ua.X.shape[0] and ub.X.shape[0]:
        with threadpool_limits(1, user_api="blas"):
            K = block_kernels(ua.X, ub.X, ck)
        Ba, Bb = ua.class_matrix(), ub.class_matrix()
        C = max(Ba.shape[1], Bb.shape[1])
        Ba, Bb = (np.pad(B, ((0, 0), (0, C - B.shape[1]))) for B in (Ba, Bb))
        for j in range(K.shape[0]):
            Ma = ua.coef[:, j if ua.coef.shape[1] > 1 else 0][:, None] * Ba
            Mb = ub.coef[:, j if ub.coef.shape[1] > 1 else 0][:, None] * Bb
            total -= 2.0 * float(np.sum(Ma * (K[j] @ Mb)))
    if ua.W is not None:
        total += float(np.sum((ua.W - ub.W) ** 2)) - float(np.sum(ua.W ** 2)) - float(np.sum(ub.W ** 2))
    return max(total, 0.0)


def _norms_sq(kind, state) -> float:
    """``sum_k ||theta_k||^2`` of a state, from its squared norms and lazy scales."""
    a = state[1]
    if kind == "obscure":
        return float(np.sum(a["theta_sq"]) * a["fstate"][_co.F_SCALE] ** 2)
    return float(np.sum(a["theta_sq"] * a["sigma"] ** 2))


def merge(learners, weights=None):
    """A new learner: the weighted average of fitted ``learners`` (same class and parameters).

    >>> from onlinemkl.river import ProximalMKLClassifier
    >>> from river import datasets
    >>> a, b = ProximalMKLClassifier(budget=50), ProximalMKLClassifier(budget=50)
    >>> for i, (x, y) in enumerate(datasets.Phishing().take(200)):
    ...     (a if i % 2 else b).learn_one(x, y)
    >>> m = merge([a, b])
    >>> m.n_support_ <= 50
    True
    """
    learners = list(learners)
    if not learners:
        raise ValueError("learners is empty: merge needs at least one model")
    first = learners[0]
    check_learner(first)
    for other in learners[1:]:
        if type(other) is not type(first) or _params(other) != _params(first):
            raise ValueError("merge needs learners of one class with the same parameters; "
                             f"got {type(first).__name__} and {type(other).__name__} with different parameters")
    out = fresh_clone(first)
    out._set_state(*merge_states(first, [copy.deepcopy(m._get_state()) for m in learners], weights))
    return out


def divergence(a, b) -> float:
    """:func:`state_divergence` of two learners."""
    return state_divergence(a, a._get_state(), b._get_state())

