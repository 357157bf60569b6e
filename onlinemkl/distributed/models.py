"""What the protocol moves and merges: a learner, or a river pipeline of StandardScalers before one.

The command line's models are ``StandardScaler | learner`` pipelines, so the protocol also takes
those: a pipeline's state is its learner's state plus each scaler's running statistics, and a
merge pools the scalers' statistics (per feature, the mixture of the models' distributions with
weights ``weight * count``: its mean, its variance, and the weighted mean of the counts) beside
the learner's merge (:func:`onlinemkl.distributed.merge.merge_states`).  The divergence is the
learners'.
"""

from __future__ import annotations

import collections

import numpy as np

from .merge import check_learner, merge_states, state_divergence

__all__ = ["final_learner", "check_model", "model_state", "set_model_state", "merge_model_states",
           "model_divergence", "with_params"]


def _scalers(model):
    return list(model.steps.values())[:-1] if hasattr(model, "steps") else []


def final_learner(model):
    """The learner of ``model`` (the model itself, or a pipeline's last step)."""
    return list(model.steps.values())[-1] if hasattr(model, "steps") else model


def check_model(model) -> str:
    """The learner's kind (:func:`check_learner`); ``TypeError`` for a pipeline step other than
    river's StandardScaler (without ``window_size``)."""
    from river import preprocessing

    for step in _scalers(model):
        if type(step) is not preprocessing.StandardScaler or step.window_size is not None:
            raise TypeError(f"pipeline step {type(step).__name__}: distributed learning merges pipelines of "
                            "river StandardScalers (without window_size) before an onlinemkl learner only")
    return check_learner(final_learner(model))


def model_state(model):
    """``(params, arrays)``: the learner's state, and ``params['scalers']`` for a pipeline."""
    params, arrays = final_learner(model)._get_state()
    if hasattr(model, "steps"):
        params = dict(params, scalers=[(dict(s.counts), dict(s.means), dict(s.vars)) for s in _scalers(model)])
    return params, arrays


def set_model_state(model, state) -> None:
    params, arrays = state
    params = dict(params)
    scalers = params.pop("scalers", [])
    final_learner(model)._set_state(params, arrays)
    for s, (counts, means, vars_) in zip(_scalers(model), scalers):
        s.counts = collections.Counter(counts)
        s.means = collections.defaultdict(float, means)
        s.vars = collections.defaultdict(float, vars_)


def _learner_state(state):
    params, arrays = state
    return {k: v for k, v in params.items() if k != "scalers"}, arrays


def _pool(stats, weights):
    """Pooled ``(counts, means, vars)`` of several scalers (see the module docstring)."""
    counts, means, vars_ = {}, {}, {}
    for k in dict.fromkeys(k for c, _, _ in stats for k in c):
        n = np.array([c.get(k, 0) for c, _, _ in stats], dtype=float)
        m = np.array([mu.get(k, 0.0) for _, mu, _ in stats])
        v = np.array([va.get(k, 0.0) for _, _, va in stats])
        wn = weights * n
        total = wn.sum()
        mean = float(wn @ m / total) if total > 0 else 0.0
        counts[k] = int(round(float(weights @ n)))
        means[k] = mean
        vars_[k] = float(wn @ (v + (m - mean) ** 2) / total) if total > 0 else 0.0
    return counts, means, vars_


def merge_model_states(model, states, weights=None):
    """:func:`merge_states` of the learners, the scalers' statistics pooled (one state: itself)."""
    if len(states) == 1:
        return states[0]
    merged = merge_states(final_learner(model), [_learner_state(s) for s in states], weights)
    if not hasattr(model, "steps"):
        return merged
    w = np.full(len(states), 1.0 / len(states)) if weights is None else np.asarray(weights, float) / np.sum(weights)
    per_scaler = zip(*[s[0]["scalers"] for s in states])
    return dict(merged[0], scalers=[_pool(list(stats), w) for stats in per_scaler]), merged[1]


def model_divergence(model, a, b) -> float:
    return state_divergence(final_learner(model), _learner_state(a), _learner_state(b))


def with_params(model, params):
    """A fresh copy of ``model`` with the learner's ``params`` changed (a pipeline's scalers cloned)."""
    if not hasattr(model, "steps"):
        return model.clone(params)
    from river import compose

    steps = [s.clone() for s in _scalers(model)] + [final_learner(model).clone(params)]
    return compose.Pipeline(*steps)
