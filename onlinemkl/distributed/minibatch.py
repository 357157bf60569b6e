"""Merging the mini-batch kernel ridge learners (PolyMKL and the non-linear KRR of Cortes et al.).

Neither merge is exact.  These learners solve a kernel ridge problem over a sliding window of
the last ``budget`` examples with kernel weights learnt by an iterative solver; the window's
sufficient statistics are its rows (a kernel matrix does not add across shards: it is a
function of the rows of every shard at once), so no sum of per-shard statistics gives the
model of the union.  A merge therefore:

1. takes the union of the windows (distinct rows; the most recent of every window first when
   the union exceeds the budget, so every shard stays represented);
2. averages the kernel weights (non-linear KRR: ``mu``; PolyMKL: ``theta`` over the union of
   the sampled multi-indices, and its prediction iterate alike) with the models' weights;
3. refits: one run of the learner's own solver on the merged window, warm-started from the
   averaged weights (for a fixed kernel weight this is the exact KRR solution on the window).

The models must have the same feature names (these learners number features in sorted name
order; a merge of models that saw different features raises, naming them).  A model that has seen
no example yet (no features, no window, no pending rows) holds nothing to merge: it is left out,
and it predicts 0 in a divergence, as it does when asked.

The divergence of two models is the mean squared difference of their predictions over the
union of their windows: each model has its own kernel (its own weights), so the two do not
share an RKHS in which a distance of expansions would be defined.
"""

from __future__ import annotations

import numpy as np

__all__ = ["merge_minibatch", "minibatch_divergence"]


def _empty(state) -> bool:
    """Whether a model has seen nothing yet (no feature names, no window, no pending rows)."""
    params, arrays = state
    pending = arrays.get("pending_X")
    return (not list(params["features"]) and arrays["Xw"].shape[0] == 0
            and (pending is None or pending.shape[0] == 0))


def _same_features(states):
    names = list(states[0][0]["features"])
    for i, (params, _) in enumerate(states[1:], 1):
        if list(params["features"]) != names:
            diff = sorted(set(names) ^ set(params["features"]), key=str)[:5]
            raise ValueError(f"states[{i}] has other feature names than states[0] (e.g. {diff}); mini-batch "
                             "learners merge only models over the same features: give every worker every feature")
    return names


def _union_window(arrays, budget):
    """The windows' distinct rows (row and target), the most recent of every window first when
    they exceed ``budget`` (round robin by age), oldest first in the result as in a window."""
    cand = []  # (age, model, row index)
    for m, a in enumerate(arrays):
        n = a["Xw"].shape[0]
        cand += [(n - 1 - i, m, i) for i in range(n)]
    cand.sort()
    seen, kept = set(), []
    for age, m, i in cand:
        key = arrays[m]["Xw"][i].tobytes() + arrays[m]["yw"][i].tobytes()
        if key not in seen:
            seen.add(key)
            kept.append((age, m, i))
    if budget is not None:
        kept = kept[:budget]
    kept.sort(key=lambda t: (-t[0], t[1]))
    d = arrays[0]["Xw"].shape[1]
    X = np.array([arrays[m]["Xw"][i] for _, m, i in kept]).reshape(len(kept), d)
    y = np.array([arrays[m]["yw"][i] for _, m, i in kept], dtype=np.float64)
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def merge_minibatch(learner, states, weights):
    """The merged state of mini-batch models (see the module docstring); ``weights`` normalised."""
    kept = [(s, w) for s, w in zip(states, weights) if not _empty(s)]
    if len(kept) < len(states):
        if not kept:
            return states[0]
        states = [s for s, _ in kept]
        weights = np.array([w for _, w in kept], dtype=np.float64)
        weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(kept), 1.0 / len(kept))
    if len(states) == 1:
        return states[0]
    _same_features(states)
    arrays = [a for _, a in states]
    tmp = learner.clone()
    tmp._set_state(*states[0])
    eng = tmp._engine
    eng.Xw, eng.yw = _union_window(arrays, eng.budget)
    n = eng.Xw.shape[0]
    if hasattr(eng, "mu"):  # non-linear KRR: mu over the same base kernels
        r = max(a["mu"].shape[0] for a in arrays)
        mus = [a["mu"] for a in arrays if a["mu"].shape[0] == r]
        ws = np.array([w for a, w in zip(arrays, weights) if a["mu"].shape[0] == r])
        eng.mu = np.tensordot(ws / ws.sum(), np.array(mus), axes=1)
        eng.alpha = np.zeros(n)
    else:  # PolyMKL: theta over the union of the multi-indices
        index = {}
        for a in arrays:
            for row in a["Z"]:
                index.setdefault(row.tobytes(), row)
        Z = np.array(list(index.values()), dtype=np.int64).reshape(len(index), -1)
        theta, theta_pred = np.zeros(len(Z)), np.zeros(len(Z))
        where = {row.tobytes(): i for i, row in enumerate(Z)}
        for a, w in zip(arrays, weights):
            rows = [where[row.tobytes()] for row in a["Z"]]
            theta[rows] += w * a["theta"]
            theta_pred[rows] += w * a["theta_pred"]
        eng.Z, eng.theta, eng.theta_pred = Z, theta, theta_pred
        eng.rebuild_index()
        eng.alpha = np.zeros(n)
        eng.alpha_pred = np.zeros(n)
    eng.learn_many(np.zeros((0, eng.n_features)), np.zeros(0))  # the solver on the merged window
    return tmp._get_state()


def minibatch_divergence(learner, a, b) -> float:
    """Mean squared difference of two models' predictions over the union of their windows (a model
    that has learnt nothing yet predicts 0)."""
    if _empty(a) and _empty(b):
        return 0.0
    if _empty(a) or _empty(b):
        m = learner.clone()
        m._set_state(*(b if _empty(a) else a))
        X = m._engine.Xw
        return float(np.mean(m._engine.predict_many(X) ** 2)) if X.shape[0] else 0.0
    _same_features([a, b])
    models = []
    for s in (a, b):
        m = learner.clone()
        m._set_state(*s)
        models.append(m)
    X = np.vstack([s[1]["Xw"] for s in (a, b)])
    if X.shape[0] == 0:
        return 0.0
    pa, pb = (m._engine.predict_many(X) for m in models)
    return float(np.mean((pa - pb) ** 2))
