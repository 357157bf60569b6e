"""What the merges of :mod:`.merge` and :mod:`.sequence` (and the workers' set-up) share: an
unfitted copy of a learner, its parameters, and the union of several models' feature names or
labels in order of first appearance."""

from __future__ import annotations


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
