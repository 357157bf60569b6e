"""Model files for scikit-learn pipelines: ``Pipeline`` and the common preprocessing transformers.

A fitted ``Pipeline`` of scikit-learn transformers and onlinemkl estimators is a component node
like a river pipeline (:mod:`onlinemkl.persist`): its steps are its children, in order.  A
transformer is stored without pickle: its constructor parameters (``get_params(deep=False)``,
JSON values) and its fitted attributes, numeric arrays as ``.npy`` entries (numpy scalars as 0-d
arrays, so that their dtype comes back), ``None`` and Python numbers in the JSON state,
``feature_names_in_`` as a list of strings.  Only the attributes listed in :data:`FITTED` for each
class are written and accepted on load, each checked (dtype, shape against ``n_features_in_``),
so a file cannot set anything else on the object.  Transforms of a loaded pipeline are bit for
bit those of the saved one: they read only these attributes.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["FITTED", "transformer_dump", "transformer_build", "pipeline_dump", "pipeline_build"]

#: The scikit-learn transformers a model file holds: public class path -> the fitted attributes
#: they may have (``feature_names_in_`` only when fitted on a DataFrame with string column names).
FITTED = {
    "sklearn.preprocessing:StandardScaler": ("n_features_in_", "n_samples_seen_", "mean_", "var_", "scale_"),
    "sklearn.preprocessing:MinMaxScaler": ("n_features_in_", "n_samples_seen_", "scale_", "min_", "data_min_",
                                           "data_max_", "data_range_"),
    "sklearn.preprocessing:MaxAbsScaler": ("n_features_in_", "n_samples_seen_", "max_abs_", "scale_"),
    "sklearn.preprocessing:RobustScaler": ("n_features_in_", "center_", "scale_"),
    "sklearn.preprocessing:Normalizer": ("n_features_in_",),
    "sklearn.preprocessing:PolynomialFeatures": ("n_features_in_", "n_output_features_", "_min_degree", "_max_degree",
                                                 "_n_out_full"),
}
_NAMES = "feature_names_in_"


def _allowed(cls) -> tuple:
    for target, names in FITTED.items():
        if target.rsplit(":", 1)[1] == cls.__name__:
            return names + (_NAMES,)
    raise TypeError(f"{cls.__name__} is not a scikit-learn transformer the model format holds")


def transformer_dump(obj):
    """``(params, state, arrays, [])`` of a fitted (or unfitted) scikit-learn transformer."""
    name = type(obj).__name__
    params = obj.get_params(deep=False)
    allowed = _allowed(type(obj))
    state, arrays = {}, {}
    for k, v in vars(obj).items():
        if k in params:
            continue
        if k not in allowed:
            raise TypeError(f"{name} has the fitted attribute {k!r}, which the model format does not know "
                            f"(it holds {', '.join(allowed)}): this scikit-learn version's {name} cannot be saved")
        if k == _NAMES:
            state[k] = {"names": [str(s) for s in v.tolist()]}
        elif v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            state[k] = v
        elif isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype.kind in "iuf":
            arrays[k] = np.asarray(v)
            state[k] = {"array": True, "scalar": isinstance(v, np.generic)}
        else:
            raise TypeError(f"{name}.{k} = {v!r} (type {type(v).__name__}) cannot be stored in a model file")
    return params, state, arrays, []


def transformer_build(cls, params, state, arrays, children):
    """A transformer of ``cls`` from :func:`transformer_dump`'s output, every attribute checked."""
    name = cls.__name__
    obj = cls(**params)
    allowed = _allowed(cls)
    if not isinstance(state, dict) or set(arrays) - set(state):
        raise ValueError(f"{name}: the state must name every array")
    n_in = state.get("n_features_in_")
    if state and (not isinstance(n_in, int) or isinstance(n_in, bool) or n_in < 1):
        raise ValueError(f"{name}: n_features_in_ must be a positive int; got {n_in!r}")
    attrs = {}
    for k, v in state.items():
        if k not in allowed:
            raise ValueError(f"{name}: unknown fitted attribute {k!r} (a {name} has {', '.join(allowed)})")
        if k == _NAMES:
            names = v.get("names") if isinstance(v, dict) else None
            if not isinstance(names, list) or len(names) != n_in or not all(isinstance(s, str) for s in names):
                raise ValueError(f"{name}: feature_names_in_ must be {n_in} strings")
            attrs[k] = np.array(names, dtype=object)
        elif isinstance(v, dict):
            a = arrays.get(k)
            if a is None or a.dtype.kind not in "iuf" or a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n_in):
                raise ValueError(f"{name}.{k}: expected a numeric array of {n_in} values or a scalar")
            attrs[k] = a[()] if v.get("scalar") else a
        elif v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool)):
            attrs[k] = v
        else:
            raise ValueError(f"{name}.{k}: {v!r} is not a fitted value")
    obj.__dict__.update(attrs)
    return obj


def pipeline_dump(obj):
    """``(params, state, arrays, children)`` of a scikit-learn ``Pipeline``: its steps, in order."""
    if obj.memory is not None:
        raise TypeError("a Pipeline with memory=... cannot be saved (its cache is outside the model); "
                        "use memory=None")
    if getattr(obj, "transform_input", None) is not None:
        raise TypeError("a Pipeline with transform_input=... cannot be saved; use transform_input=None")
    for step, est in obj.steps:
        if est is None or isinstance(est, str):
            raise TypeError(f"Pipeline step {step!r} is {est!r}: a model file holds estimators only; drop the step")
    return {"verbose": bool(obj.verbose)}, {}, {}, list(obj.steps)


def pipeline_build(cls, params, state, arrays, children):
    if not children:
        raise ValueError("a pipeline without steps")
    if not all(isinstance(step, str) for step, _ in children):
        raise ValueError("scikit-learn pipeline step names must be strings")
    return cls(steps=[(step, est) for step, est in children], **params)
