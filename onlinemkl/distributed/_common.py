"""What the merges of :mod:`.merge` and :mod:`.sequence` (and the workers' set-up) share: an
unfitted copy of a learner, its parameters, the union of several models' feature names or
labels in order of first appearance, and the check and merge of their input scalings."""

from __future__ import annotations

import numpy as np

from .._scaling import LIMIT


def fresh_clone(learner):
    """An unfitted copy of ``learner``'s parameters (river's ``clone``, else scikit-learn's)."""
    if hasattr(learner, "clone"):
        return learner.clone()
    from sklearn.base import clone

    return clone(learner)


def _params(learner):
    return learner._get_params() if hasattr(learner, "_get_params") else learner.get_params(deep=False)


def _union(lists, key=None):
    """Names in order of first appearance over the lists (the first list's order kept); with ``key``,
    names of one key are one name (labels: :func:`~onlinemkl.features.label_key`)."""
    out, seen = [], set()
    for names in lists:
        for v in names:
            k = v if key is None else key(v)
            if k not in seen:
                seen.add(k)
                out.append(v)
    return out


def _feature_names(params) -> list:
    """A state's feature names by column (the sequence labeller on arrays: the column numbers)."""
    if params.get("array_input") is True:
        return list(range(int(params["engine"]["n_features"])))
    return list(params.get("features", []))


def _scaling_of(state) -> dict:
    """``{feature name: (count, mean, m2)}`` of the features a state's input scaling standardises
    (none for a model that stores no example: it has no units to agree with)."""
    params, arrays = state
    if not isinstance(params, dict) or params.get("scaling") is None or not int(arrays["istate"][0]):
        return {}
    names = _feature_names(params)
    count, mean, m2 = (np.asarray(arrays[f"scaling.{k}"]) for k in ("count", "mean", "m2"))
    return {names[j]: (int(count[j]), float(mean[j]), float(m2[j]))
            for j in np.flatnonzero(count > 0) if j < len(names)}


def unit_frame(states) -> dict:
    """The units a merge writes the models' stored rows in: ``{feature name: (count, mean, m2)}``
    pooled (Chan et al.'s parallel formula) over every model that stores examples and standardises
    the feature (the input scaling, ``scale``).  Workers estimate their statistics on their own
    shards, so they differ; each model's rows go back to its raw units and into these
    (:func:`in_units`).  Empty when no model standardises anything: the rows are then merged as
    they are, bit for bit."""
    pooled: dict = {}
    for state in states:
        for name, (n, mean, m2) in _scaling_of(state).items():
            if name not in pooled:
                pooled[name] = (n, mean, m2)
                continue
            if pooled[name] == (n, mean, m2):  # the same frozen estimate (copies, or after a sync)
                continue
            na, ma, qa = pooled[name]
            total = na + n
            delta = mean - ma
            pooled[name] = (total, ma + delta * n / total, qa + m2 + delta * delta * na * n / total)
    return pooled


def _shift_scale(stats):
    n, mean, m2 = stats
    sd = float(np.sqrt(m2 / n)) if n > 0 else 0.0
    return mean, (sd if sd > 0 else 1.0)


def in_units(X, names, state, frame):
    """Rows ``X`` of ``state`` (columns ``names``) in the units of ``frame`` (:func:`unit_frame`): a
    column the state standardised goes back to raw units, then every column the frame standardises
    is standardised by its pooled statistics and clipped as the learner clips it.  ``X`` itself
    when the state's units are the frame's."""
    own = _scaling_of(state)
    if own == frame or not X.shape[0]:
        return X
    out = np.array(X, dtype=np.float64, copy=True)
    for j, name in enumerate(names[:out.shape[1]]):
        if own.get(name) == frame.get(name):  # this column is in the frame's units already
            continue
        if name in own:
            shift, scale = _shift_scale(own[name])
            out[:, j] = out[:, j] * scale + shift
        if name in frame:
            shift, scale = _shift_scale(frame[name])
            out[:, j] = np.clip((out[:, j] - shift) / scale, -LIMIT, LIMIT)
    return out


def check_scalings(states) -> None:
    """Raise ``ValueError`` unless every state's input scaling holds what :func:`unit_frame` reads:
    arrays of counts, means and sums of squares of one length, finite, none negative."""
    for i, (params, arrays) in enumerate(states):
        if not isinstance(params, dict) or params.get("scaling") is None:
            continue
        parts = [np.asarray(arrays.get(f"scaling.{k}", np.zeros(0))) for k in ("count", "mean", "m2")]
        if len({p.shape for p in parts}) != 1 or not all(np.all(np.isfinite(p)) for p in parts) \
                or np.any(parts[0] < 0) or np.any(parts[2] < 0):
            raise ValueError(f"states[{i}] holds an inconsistent input scaling (scaling.count, .mean, .m2)")


def _merged_scaling(out, states):
    """The merged state ``out`` with the pooled input scaling of the models that store examples
    (:func:`unit_frame`, the units its rows were written in) over its features, and the most
    examples any model learnt."""
    params, arrays = out
    if not isinstance(params, dict) or params.get("scaling") is None:
        return out
    stats = unit_frame(states)
    names = _feature_names(params)
    count, mean, m2 = np.zeros(len(names), dtype=np.int64), np.zeros(len(names)), np.zeros(len(names))
    for j, name in enumerate(names):
        if name in stats:
            count[j], mean[j], m2[j] = stats[name]
    params["scaling"] = {**params["scaling"], "seen": max(int(s[0]["scaling"]["seen"]) for s in states)}
    arrays = {**arrays, "scaling.count": count, "scaling.mean": mean, "scaling.m2": m2}
    return params, arrays
