"""``Guard``: the first step of a river pipeline, refusing a bad example before any step learns it."""

from __future__ import annotations

import math

import numpy as np
from river import base

from .._validation import MAX_ABS_VALUE, FeatureTypeError, check_feature_value, first_out_of_range

__all__ = ["Guard"]

_REFUSED = "onlinemkl.river.Guard refused the example before any step of the pipeline learnt it"


def _check_one(x) -> None:
    if not isinstance(x, dict):
        raise ValueError(f"{_REFUSED}: an example must be a dict of feature values; got {type(x).__name__}")
    lim = MAX_ABS_VALUE
    for k, v in x.items():
        t = type(v)
        if (t is float or t is int) and -lim <= v <= lim:
            continue
        try:
            check_feature_value(k, v)
        except (ValueError, FeatureTypeError) as exc:
            raise ValueError(f"{_REFUSED}: {exc}") from None


def _check_many(X) -> None:
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        raise ValueError(f"{_REFUSED}: a batch must be a pandas DataFrame; got {type(X).__name__}")
    for name in X.columns:
        try:
            v = np.asarray(X[name], dtype=np.float64)
        except (TypeError, ValueError):
            bad = next((u for u in X[name] if isinstance(u, bool) or not isinstance(u, (int, float, np.number))),
                       X[name].iloc[0])
            raise ValueError(f"{_REFUSED}: feature {name!r} = {bad!r} is not a number; encode categorical "
                             "features (e.g. river's preprocessing.OneHotEncoder) after the Guard") from None
        found = first_out_of_range(v)
        if found is not None:
            (r,), value, why = found
            what = "is not finite; impute or drop it" if not math.isfinite(value) else why
            raise ValueError(f"{_REFUSED}: feature {name!r} = {value!r} (row {X.index[r]!r}) {what}")


class Guard(base.MiniBatchTransformer):
    """Refuse a bad example at the head of a river pipeline, before any step learns it.

    Place it first: ``Guard() | preprocessing.StandardScaler() | OBSCUREClassifier()``.  river's
    pipeline calls each unsupervised step's ``learn_one`` and then its ``transform_one``, in order,
    so the Guard's ``learn_one`` runs before the scaler's: an example with a NaN, an infinite
    value, a value of magnitude above ``1e50`` (the library's bound,
    :data:`onlinemkl._validation.MAX_ABS_VALUE`) or a value that is not a real number is refused
    with a ``ValueError`` naming the feature, and no step has learnt it, so the stream goes on
    with the pipeline as it was.  Without the Guard, one such value enters the scaler's running
    mean and variance and every later example reaches the learner as NaN.  Predictions
    (``transform_one``) are checked the same way.  ``learn_many`` / ``transform_many`` check a
    DataFrame whole.  Valid examples pass through unchanged (the same dict); the Guard has no
    state and no parameters, and pipelines holding it save and load (:func:`onlinemkl.save`).

    Examples
    --------
    >>> from river import preprocessing
    >>> from onlinemkl.river import Guard, OBSCUREClassifier
    >>> model = Guard() | preprocessing.StandardScaler() | OBSCUREClassifier()
    >>> model.learn_one({"a": 1.0, "b": 0.5}, "yes")
    >>> model.learn_one({"a": float("nan"), "b": 0.5}, "no")
    Traceback (most recent call last):
    ...
    ValueError: onlinemkl.river.Guard refused the example ...: feature 'a' = nan is not finite; ...
    >>> dict(model["StandardScaler"].counts)
    {'a': 1, 'b': 1}
    """

    def learn_one(self, x):
        _check_one(x)

    def transform_one(self, x):
        _check_one(x)
        return x

    def learn_many(self, X):
        _check_many(X)

    def transform_many(self, X):
        _check_many(X)
        return X

    # -- persistence (the onlinemkl.persist protocol): nothing learnt ----------------------------

    def _get_state(self):
        return {}, {}

    def _set_state(self, state, arrays):
        if state or arrays:
            raise ValueError("a Guard holds no state")

    @classmethod
    def _unit_test_params(cls):
        yield {}
