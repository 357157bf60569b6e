"""What the merges of :mod:`.merge` and :mod:`.sequence` (and the workers' set-up) share: an
unfitted copy of a learner, its parameters, the union of several models' feature names or
labels in order of first appearance, and the check and merge of their input scalings."""

from __future__ import annotations

import numpy as np


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


def check_scalings(states) -> None:
    """Raise ``ValueError`` unless the states' input scalings (``scale``) standardise the same
    features with the same statistics (I_N = 0 is the stored rows' count of every learner's ``istate``):
    their stored rows are then in the same units."""
    if not states:
        return
    ref = next((i for i, s in enumerate(states) if int(s[1]["istate"][0])), 0)
    first = _scaling_of(states[ref])
    for i, state in enumerate(states):
        other = _scaling_of(state)
        if other == first or not int(state[1]["istate"][0]):
            continue
        name = next(k for k in list(first) + list(other) if first.get(k) != other.get(k))
        raise ValueError(
            f"states[{ref}] and states[{i}] standardise their inputs differently (feature {name!r}: "
            f"{_shown_stats(first.get(name))} vs {_shown_stats(other.get(name))}), so their stored examples are in "
            "different units and cannot be averaged. Standardise upstream (a scaler fitted once, shared by every "
            "worker) and build the learners with scale=False, or merge models whose inputs were standardised alike")


def _shown_stats(stats) -> str:
    if stats is None:
        return "used as it comes"
    n, mean, m2 = stats
    return f"mean {mean:.6g}, sd {np.sqrt(m2 / n):.6g} over {n} values"


def _merged_scaling(out, states):
    """The merged state ``out`` with the input scaling of the models that store examples (which
    :func:`check_scalings` found equal) over its features, and the most examples any model learnt."""
    params, arrays = out
    if not isinstance(params, dict) or params.get("scaling") is None:
        return out
    stats = next((_scaling_of(s) for s in states if int(s[1]["istate"][0])), {})
    names = _feature_names(params)
    count, mean, m2 = np.zeros(len(names), dtype=np.int64), np.zeros(len(names)), np.zeros(len(names))
    for j, name in enumerate(names):
        if name in stats:
            count[j], mean[j], m2[j] = stats[name]
    params["scaling"] = {**params["scaling"], "seen": max(int(s[0]["scaling"]["seen"]) for s in states)}
    arrays = {**arrays, "scaling.count": count, "scaling.mean": mean, "scaling.m2": m2}
    return params, arrays
