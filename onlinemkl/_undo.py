"""Undoing what the steps before a learner learnt from an example the learner then rejected.

River's pipelines let the steps in front of the learner (a ``StandardScaler``) learn from an
example before the learner checks it; the command line and the server restore those steps
when the learner rejects the example, so a rejected example changes nothing.
"""

from __future__ import annotations

__all__ = ["snapshot", "undo_steps"]


def snapshot(step, x):
    """A function that restores ``step`` (a pipeline step before the learner) to its state before
    it learnt from ``x``: for river's ``StandardScaler``, only the entries of ``x``'s names (O(len(x)),
    where a copy of the whole scaler costs O(features) per example); other steps are deep-copied."""
    from river import preprocessing

    if type(step) is preprocessing.StandardScaler and step.window_size is None:
        saved = []
        for d in (step.counts, step.means, step.vars):
            saved.append((d, {k: d[k] for k in x if k in d}, [k for k in x if k not in d]))

        def restore():
            for d, old, new in saved:
                for k in new:
                    d.pop(k, None)
                for k, v in old.items():  # item by item: Counter.update would add the counts
                    d[k] = v

        return restore
    import copy

    state = copy.deepcopy(step.__dict__)

    def restore():
        step.__dict__.clear()
        step.__dict__.update(state)

    return restore


def undo_steps(model, x) -> list:
    """The :func:`snapshot` restorers of every step of pipeline ``model`` before its learner (none
    for a bare learner, which checks before it changes anything)."""
    steps = getattr(model, "steps", None)
    if not steps:
        return []
    return [snapshot(step, x) for step in list(steps.values())[:-1]]
