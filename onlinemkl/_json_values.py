"""JSON values with their Python types, for model files (:mod:`onlinemkl.persist`).

Parameters, feature names and labels are stored as JSON; the values JSON
cannot tell apart (tuples, non-finite floats, dicts with non-string keys,
kernels) are tagged objects with a ``"$type"`` key (the format is described in
:mod:`onlinemkl.persist`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["encode_value", "decode_value"]



def encode_value(value, what: str = "value"):
    """A JSON-representable form of ``value`` (see the module docstring for the tags).

    >>> encode_value((1, "a", None))
    {'$type': 'tuple', 'items': [1, 'a', None]}
    >>> decode_value(encode_value({"a": [1.5, float("inf")], 2: True})) == {"a": [1.5, float("inf")], 2: True}
    True
    """
    from .kernels import Kernel

    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isfinite(f):
            return f
        return {"$type": "float", "value": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple):
        return {"$type": "tuple", "items": [encode_value(v, what) for v in value]}
    if isinstance(value, list):
        return [encode_value(v, what) for v in value]
    if isinstance(value, Kernel):
        out = {"$type": "kernel", "kind": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = encode_value(getattr(value, f.name), f"{what} (kernel field {f.name})")
        return out
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {str(k): encode_value(v, what) for k, v in value.items()}
        return {"$type": "dict", "items": [[encode_value(k, what), encode_value(v, what)] for k, v in value.items()]}
    raise TypeError(
        f"{what}: {value!r} (type {type(value).__name__}) cannot be stored in a model file; model files hold "
        "None, bool, int, float, str, tuples and lists of them, and kernels (see onlinemkl.persist)"
    )


def _kernel_kinds() -> dict:
    from . import kernels

    out = {}
    for name in kernels.__all__:
        obj = getattr(kernels, name)
        if isinstance(obj, type) and issubclass(obj, kernels.Kernel) and obj is not kernels.Kernel:
            out[name] = obj
    return out


def decode_value(obj):
    """The Python value of an :func:`encode_value` form."""
    if isinstance(obj, list):
        return [decode_value(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get("$type")
    if tag is None:
        return {k: decode_value(v) for k, v in obj.items()}
    if tag == "tuple":
        return tuple(decode_value(v) for v in obj["items"])
    if tag == "float":
        v = obj["value"]
        if v not in ("nan", "inf", "-inf"):
            raise ValueError(f"bad float value {v!r}")
        return float(v)
    if tag == "dict":
        return {_hashable(decode_value(k)): decode_value(v) for k, v in obj["items"]}
    if tag == "kernel":
        kinds = _kernel_kinds()
        kind = obj.get("kind")
        if kind not in kinds:
            raise ValueError(f"unknown kernel kind {kind!r} (this onlinemkl knows {sorted(kinds)})")
        fields = {k: decode_value(v) for k, v in obj.items() if k not in ("$type", "kind")}
        return kinds[kind](**fields)
    raise ValueError(f"unknown tagged value {tag!r}")


def _hashable(v):
    if isinstance(v, list):
        raise ValueError(f"a dict key is a list ({v!r}); keys must be hashable")
    return v
