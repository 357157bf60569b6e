"""Saving and loading models: a versioned, documented format that is not pickle.

``model.save(path)`` (or :func:`save` for any supported object, e.g. a river
pipeline) writes a model file; :func:`load` reads it back.  Loading never
executes code from the file: the file holds JSON and plain numeric arrays, and
the classes it names are looked up in a fixed registry (never imported from a
path written in the file).  A loaded model predicts bit-for-bit like the saved
one and continues learning identically.

>>> import os, tempfile
>>> from onlinemkl.river import OBSCUREClassifier
>>> from onlinemkl.persist import load
>>> model = OBSCUREClassifier(budget=50)
>>> for i in range(30):
...     model.learn_one({"a": i % 3 - 1.0, "b": (i % 5) / 5.0}, "up" if i % 3 else "down")
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "model.omkl")
...     _ = model.save(path)
...     loaded = load(path)
>>> x = {"a": 0.5, "b": 0.2}
>>> loaded.predict_one(x) == model.predict_one(x)
True
>>> loaded.predict_proba_one(x) == model.predict_proba_one(x)
True

A river pipeline (``StandardScaler() | learner``) is saved the same way,
scaler statistics included (and so is a scikit-learn ``Pipeline``, below):

>>> from river import preprocessing
>>> from onlinemkl.persist import save
>>> pipe = preprocessing.StandardScaler() | OBSCUREClassifier()
>>> pipe.learn_one({"a": 1.0}, "yes"); pipe.learn_one({"a": -1.0}, "no")
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = save(pipe, os.path.join(tmp, "pipe.omkl"))
...     again = load(path)
>>> dict(again["StandardScaler"].means) == dict(pipe["StandardScaler"].means)
True

The format, version 1
---------------------
A model file is a zip archive (entries stored uncompressed, fixed time stamps,
so equal models give equal files) holding:

``meta.json``
    UTF-8 JSON object with the keys

    * ``"format"``: ``"onlinemkl-model"``;
    * ``"format_version"``: ``1`` (an integer, bumped on any incompatible
      change; a reader refuses versions newer than its own);
    * ``"library_version"``: the ``onlinemkl`` version that wrote the file;
    * ``"model"``: the root *component node* (below);
    * ``"entries"``: for every other entry of the archive, ``{"sha256": hex,
      "size": bytes}`` (the archive's own CRC-32 guards ``meta.json``);
    * ``"extra"``: a JSON object the writer attaches, e.g. the command line
      stores ``{"train": {"examples_consumed": ..., "source": ..., ...}}``.

    A component node is ``{"class": name, "params": {...}, "state": value,
    "arrays": {array name: entry name}, "children": [[step name, node], ...]}``:
    ``class`` is a registry name such as ``"onlinemkl.river.OBSCUREClassifier"``
    or ``"river.compose.Pipeline"``; ``params`` are the constructor arguments;
    ``state`` is the learnt state that is not an array (feature names, labels,
    counters); ``children`` are the steps of a composite (a pipeline).
    Every onlinemkl learner records its engine's *settings* in
    ``state["engine"]["settings"]``: the engine's constructor arguments, i.e. every
    value the face resolved from its parameters (the kernels in use with
    ``kernels=None``, ``p=None``'s exponent, ``eta0='auto'``'s step sizes and class
    threshold, ``gamma='auto'``'s radius, ``replay='auto'``'s steps, the replay
    seed, ...) and every rule the engine resolved itself.  Loading builds the
    engine from them, each checked against what the parameters resolve to today
    (:func:`onlinemkl.engine.engine_for_state`), so a file loads and learns as it
    did whatever the defaults of the release reading it.  The learners over a
    support buffer (OBSCURE, proximal MKL, the sequence labeller) also record the
    kernels in ``state["engine"]["kernels"]`` (a list of kernels).  A file without
    ``settings`` (written before they were recorded) builds its engine from the
    parameters, with the recorded kernels when ``kernels`` is None; a file
    without either resolves its kernels from the parameter or, when those do not
    fit its arrays, from the arrays' kernel codes and resolved parameters
    (:func:`onlinemkl.engine.kernels_of_state`).
``arrays/<node>/<name>.npy``
    One numpy ``.npy`` file per state array (bool, integer, float, complex,
    fixed-width string or datetime dtypes; never object arrays), written and
    read with ``allow_pickle=False``.

JSON values keep their Python types as far as JSON allows: ``None``, ``bool``,
``int``, ``float``, ``str`` and lists are plain JSON; other values are tagged
objects with a ``"$type"`` key: ``{"$type": "tuple", "items": [...]}``,
``{"$type": "float", "value": "nan" | "inf" | "-inf"}``, ``{"$type": "dict",
"items": [[key, value], ...]}`` (a dict whose keys are not all plain strings)
and ``{"$type": "kernel", "kind": "RBF", "gamma": 0.1, ...}`` (a kernel of
:mod:`onlinemkl.kernels` with its fields).

Limits: parameters, feature names and labels must be made of those values.
Labels and feature names may be ``str``, ``int``, ``float``, ``bool``,
``None`` or tuples of them; numpy scalars are stored as the Python scalar of
the same kind (``np.int64(3)`` comes back as ``3``); anything else (dates,
custom objects, ``random_state`` as a ``RandomState`` object) makes
:func:`save` raise a ``TypeError`` naming the value.  The array API's
``classes_`` keeps its numpy dtype when it is not an object array.  river's
windowed ``StandardScaler(window_size=...)`` cannot be saved (its state is
a window of objects).

A fitted scikit-learn ``Pipeline`` (``"sklearn.pipeline.Pipeline"``, its steps as children,
``memory=None``) of onlinemkl estimators and the transformers ``StandardScaler``,
``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``, ``Normalizer`` and ``PolynomialFeatures``
(``"sklearn.preprocessing.<name>"``) is saved the same way: a transformer's ``params`` are its
``get_params(deep=False)``, its state the fitted attributes its class is known to have (numeric
arrays as entries, ``{"array": true, "scalar": ...}`` in the state; ``feature_names_in_`` as
``{"names": [...]}``), see :mod:`onlinemkl._persist_sklearn`.  Any other step (or a
``"passthrough"`` one) makes :func:`save` raise a ``TypeError`` naming the step.

Reading checks, in order: the archive is intact (a truncated file has no
central directory), every entry is stored uncompressed (what the writer
does: no entry can expand past the file, so a zip bomb is refused unread)
and all entries fit in the file, ``meta.json`` parses and names the format,
the version is not newer than this reader's, the archive holds exactly the
listed entries, each entry's size and SHA-256 match, and each ``.npy``
header's shape and dtype account for exactly the entry's bytes (checked
before anything is allocated); then the component's own ``_set_state``
checks the arrays' dtypes, shapes and indices against each other, so a
crafted file cannot drive the compiled code out of bounds, and what the
restored component would save again must have the file's state keys and
arrays (a file whose class name was edited fails).  Any failure, including
``RecursionError``, ``OverflowError`` or ``MemoryError`` raised while
building the model, raises :class:`ModelFileError` (a ``ValueError``)
naming the file and what is wrong.  The memory a load takes is bounded by
the file's own size (about twice the bytes of its arrays, plus the parsed
metadata, at most 64 MiB of JSON).

Writes are atomic: the archive is written to a temporary file in the target's
directory (``.<name>.p<pid>.<random>.tmp``, locked while written), flushed
and ``fsync``-ed, then renamed over the target with ``os.replace``; a crash
leaves the previous file intact, and the temporary file a killed save left
is removed by the next :func:`save` or :func:`load` of that target once its
writer is gone (see :mod:`onlinemkl._archive`).

Adding a learner (the persistence protocol)
-------------------------------------------
A learner class plugs in with one :func:`register` call (or a line in
``_BUILTIN`` below) and two methods::

    def _get_state(self) -> tuple[dict, dict[str, numpy.ndarray]]:
        '''(state, arrays): everything learnt, beyond the constructor parameters.'''

    def _set_state(self, state: dict, arrays: dict[str, numpy.ndarray]) -> None:
        '''Restore onto a fresh instance built from the saved parameters.'''

Every onlinemkl learner has them from its face's base
(:class:`onlinemkl.sklearn.EngineEstimator`,
:class:`onlinemkl._river_adapter.EngineAdapter`), written once over the engine
protocol (:mod:`onlinemkl.engine`): the engine's ``get_state()`` plus what the
face keeps (feature names, labels, ``classes_``).

* The constructor parameters are read from the attributes named like the
  ``__init__`` arguments (the scikit-learn and river convention) and passed
  back to the constructor on load.
* ``state`` is a dict of JSON-like values (see above); ``arrays`` maps names
  (letters, digits, ``._-``) to numpy arrays.  On load the arrays are fresh,
  writable, C-contiguous copies.
* ``_set_state`` must check what it restores (dtypes, shapes, index ranges)
  and raise ``ValueError`` on anything inconsistent; the loader reports it
  with the file name.
* An unfitted estimator returns ``({"fitted": False}, {})`` or similar.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import io
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__
from ._archive import (ARRAY_KINDS, FORMAT_NAME, FORMAT_VERSION, MAX_META_BYTES, META, ModelFileError, add_entry,
                       read_verified, remove_stale_temporaries, write_atomic)
from ._json_values import decode_value, encode_value
from ._persist_sklearn import FITTED, pipeline_build, pipeline_dump, transformer_build, transformer_dump

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ModelFileError",
    "save",
    "load",
    "load_with_meta",
    "register",
    "registered_name",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")


# ----------------------------------------------------------------------------------------
# The registry


@dataclasses.dataclass
class _Entry:
    name: str
    target: str  # "module:qualname"
    dump: Callable | None = None  # obj -> (params, state, arrays, children)
    build: Callable | None = None  # (cls, params, state, arrays, children) -> obj


def _init_params(obj) -> dict:
    """Constructor arguments read from the attributes of the same names (sklearn/river convention)."""
    sig = inspect.signature(type(obj).__init__)
    out = {}
    for name, p in sig.parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if not hasattr(obj, name):
            raise TypeError(f"{type(obj).__name__} does not store its parameter {name!r} as an attribute")
        out[name] = getattr(obj, name)
    return out


def _protocol_dump(obj):
    if not (hasattr(obj, "_get_state") and hasattr(obj, "_set_state")):
        raise TypeError(
            f"{type(obj).__name__} does not implement the persistence protocol (_get_state/_set_state) yet"
        )
    state, arrays = obj._get_state()
    return _init_params(obj), state, arrays, []


#: Arrays of a learner's state that an older file lacks and that loading derives from another of
#: its arrays (the integer settings of the compiled step, split off the float ``hyper``): the
#: restored model saves them although the file did not hold them.
_DERIVED_ON_LOAD = {"ihyper": "hyper"}


def _protocol_build(cls, params, state, arrays, children):
    try:
        obj = cls(**params)
    except TypeError as exc:  # an unknown parameter name
        raise ValueError(f"the file's parameters do not fit a {cls.__name__} ({exc}): the metadata names another "
                         "learner class than the one that wrote the file, or a newer onlinemkl wrote it") from None
    obj._set_state(state, arrays)
    # A file whose class name was edited can restore "successfully" onto another class (e.g. as an
    # unfitted model): what the restored model would save again must be what the file holds.
    again, again_arrays = obj._get_state()
    derived = {name for name, source in _DERIVED_ON_LOAD.items() if name not in arrays and source in arrays}
    if isinstance(state, dict) and isinstance(again, dict) and (set(again) != set(state)
                                                                or set(again_arrays) - derived != set(arrays)):
        diff = sorted(map(str, set(state) ^ set(again))) + sorted(set(arrays) ^ (set(again_arrays) - derived))
        raise ValueError(f"the file's state does not fit a {cls.__name__} (state keys or arrays differ: "
                         f"{', '.join(diff[:6])}): the metadata names another learner class than the one "
                         "that wrote the file")
    return obj


def _scaler_dump(obj):
    if getattr(obj, "window_size", None) is not None:
        raise TypeError(
            "StandardScaler(window_size=...) cannot be saved: its state is a window of past values; "
            "use StandardScaler() (running mean and variance)"
        )
    state, arrays = {}, {}
    for field, dtype in (("counts", np.int64), ("means", np.float64), ("vars", np.float64)):
        d = getattr(obj, field)
        state[field] = list(d.keys())
        arrays[field] = np.array(list(d.values()), dtype=dtype).reshape(-1)
    return {"with_std": obj.with_std}, state, arrays, []


def _scaler_build(cls, params, state, arrays, children):
    obj = cls(**params)
    for field, kind in (("counts", "i"), ("means", "f"), ("vars", "f")):
        keys, values = state[field], arrays[field]
        if not isinstance(keys, list) or values.ndim != 1 or values.shape[0] != len(keys) or values.dtype.kind != kind:
            raise ValueError(f"StandardScaler {field}: {len(keys)} names but array of {values.dtype} {values.shape}")
        d = getattr(obj, field)
        for k, v in zip(keys, values.tolist()):  # item by item: Counter.update would add
            d[k] = v
    return obj


def _pipeline_dump(obj):
    return {}, {}, {}, list(obj.steps.items())


def _pipeline_build(cls, params, state, arrays, children):
    if not children:
        raise ValueError("a pipeline without steps")
    return cls(*children)


#: Each learner's folder and public class name: the scikit-learn face is ``onlinemkl.<name>``, the
#: river face ``onlinemkl.river.<name>`` (the sequence labeller has no river face).
_LEARNERS = (("obscure", "OBSCUREClassifier"), ("sequence", "SequenceMKLLabeler"), ("polymkl", "PolyMKLRegressor"),
             ("nonlinear", "NonlinearKRRRegressor"), ("proximal", "ProximalMKLClassifier"),
             ("proximal", "ProximalMKLRegressor"))

_BUILTIN = [
    *(_Entry(f"onlinemkl.{name}", f"onlinemkl.{folder}.sklearn:{name}") for folder, name in _LEARNERS),
    *(_Entry(f"onlinemkl.river.{name}", f"onlinemkl.{folder}.river:{name}") for folder, name in _LEARNERS
      if folder != "sequence"),
    _Entry("onlinemkl.river.Guard", "onlinemkl.river._guard:Guard"),
    _Entry("river.preprocessing.StandardScaler", "river.preprocessing.scale:StandardScaler",
           _scaler_dump, _scaler_build),
    _Entry("river.compose.Pipeline", "river.compose.pipeline:Pipeline", _pipeline_dump, _pipeline_build),
    _Entry("sklearn.pipeline.Pipeline", "sklearn.pipeline:Pipeline", pipeline_dump, pipeline_build),
    *(_Entry(target.replace(":", "."), target, transformer_dump, transformer_build) for target in FITTED),
]
_REGISTRY: dict[str, _Entry] = {e.name: e for e in _BUILTIN}


def register(name: str, cls, dump: Callable | None = None, build: Callable | None = None) -> None:
    """Register ``cls`` (a class, or ``"module:qualname"``) under the file name ``name``.

    Without ``dump``/``build`` the class follows the protocol above
    (``_get_state``/``_set_state``).  ``dump(obj) -> (params, state, arrays,
    children)`` and ``build(cls, params, state, arrays, children) -> obj``
    handle classes that cannot carry the methods (third-party ones);
    ``children`` is a list of ``(name, component)`` pairs for composites.
    ``name`` is what the file stores; keep it stable across releases.
    """
    target = cls if isinstance(cls, str) else f"{cls.__module__}:{cls.__qualname__}"
    _REGISTRY[name] = _Entry(name, target, dump, build)


def _resolve(entry: _Entry):
    module, _, qualname = entry.target.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def registered_name(obj) -> str:
    """The registry name of ``obj``'s class (``TypeError`` when it cannot be saved)."""
    cls = type(obj)
    target = f"{cls.__module__}:{cls.__qualname__}"
    for entry in _REGISTRY.values():
        if entry.target == target:
            return entry.name
    # Entries may name a class by its public path (``sklearn.preprocessing:StandardScaler``); they are
    # resolved only when their package is imported already (it is, if obj is one of its classes).
    package = cls.__module__.split(".")[0]
    for entry in _REGISTRY.values():
        module = entry.target.partition(":")[0]
        if module.split(".")[0] == package and module in sys.modules:
            try:
                if _resolve(entry) is cls:
                    return entry.name
            except (ImportError, AttributeError):
                continue
    raise TypeError(
        f"cannot save a {cls.__module__}.{cls.__qualname__}: it is not a registered model class "
        f"(registered: {', '.join(sorted(_REGISTRY))}); see onlinemkl.persist.register"
    )


# ----------------------------------------------------------------------------------------
# Writing


class _Writer:
    """Walks the model into component nodes, then writes the archive."""

    def __init__(self):
        self.pending: list = []  # (entry name, array)
        self.n_nodes = 0

    def node(self, obj, where: str) -> dict:
        try:
            name = registered_name(obj)
            entry = _REGISTRY[name]
            dump = entry.dump or _protocol_dump
            params, state, arrays, children = dump(obj)
        except TypeError as exc:  # name the step of a pipeline
            raise TypeError(f"{where}: {exc}") from None
        node_id = self.n_nodes
        self.n_nodes += 1
        node = {
            "class": name,
            "params": {k: encode_value(v, f"{where}: parameter {k}") for k, v in params.items()},
            "state": encode_value(state, f"{where}: state"),
            "arrays": {},
            "children": [],
        }
        for aname, arr in arrays.items():
            if not _NAME_RE.match(aname):
                raise ValueError(f"{where}: array name {aname!r} must be letters, digits and ._-")
            arr = np.asarray(arr)
            if arr.dtype.kind not in ARRAY_KINDS:
                raise TypeError(f"{where}: array {aname!r} has dtype {arr.dtype}, which needs pickle; "
                                "model files hold numeric, bool and fixed-width string arrays only")
            entry_name = f"arrays/{node_id}/{aname}.npy"
            self.pending.append((entry_name, arr))
            node["arrays"][aname] = entry_name
        for cname, child in children:
            node["children"].append([encode_value(cname, f"{where}: step name"), self.node(child, f"{where}/{cname}")])
        return node

    def write(self, zf, meta: dict) -> None:
        entries = {}
        for name, arr in self.pending:
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
            data = buf.getvalue()
            add_entry(zf, name, data)
            entries[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        meta = dict(meta, entries=entries)
        add_entry(zf, META, json.dumps(meta, indent=1, allow_nan=False).encode("utf-8"))


def save(model, path, *, extra: dict | None = None) -> Path:
    """Write ``model`` to ``path`` atomically in the model format; returns the path.

    Parameters
    ----------
    model
        A registered model: an onlinemkl learner (array or river API), a river
        ``StandardScaler``, ``onlinemkl.river.Guard``, a river ``Pipeline`` of registered steps,
        or a scikit-learn ``Pipeline`` of onlinemkl estimators and common transformers.
    path
        The file to write (by convention ``*.omkl``); replaced atomically.
    extra
        A JSON-representable dict stored as ``meta["extra"]`` (e.g. where a
        training stream stopped).

    Raises
    ------
    TypeError
        For an object or a value the format cannot hold.
    OSError
        When the file cannot be written (the old file is then intact).
    """
    path = Path(path)
    # Everything that can fail on the model's values fails here, before any file is touched.
    w = _Writer()
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "model": w.node(model, type(model).__name__),
        "extra": encode_value(extra or {}, "extra"),
    }

    def write(fh):
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            w.write(zf, meta)

    return write_atomic(path, write)


# ----------------------------------------------------------------------------------------
# Reading


def _build(node, arrays, where, depth=0):
    if depth > 32:
        raise ValueError("components nested too deeply")
    if not isinstance(node, dict):
        raise ValueError(f"{where}: a component node must be a JSON object")
    name = node.get("class")
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"{where}: unknown model class {name!r} (this onlinemkl knows {', '.join(sorted(_REGISTRY))})")
    cls = _resolve(entry)
    params = {k: decode_value(v) for k, v in dict(node.get("params", {})).items()}
    state = decode_value(node.get("state", {}))
    arr = {}
    for aname, entry_name in dict(node.get("arrays", {})).items():
        if entry_name not in arrays:
            raise ValueError(f"{where}: array {aname!r} refers to a missing entry {entry_name!r}")
        arr[aname] = arrays[entry_name]
    children = []
    for item in node.get("children", []):
        cname, cnode = item
        children.append((decode_value(cname), _build(cnode, arrays, f"{where}/{cname}", depth + 1)))
    build = entry.build or _protocol_build
    return build(cls, params, state, arr, children)


def load_with_meta(path):
    """``(model, meta)``: the model and the file's metadata (``meta["extra"]`` decoded)."""
    path = Path(path)
    remove_stale_temporaries(path)  # left by a save killed before its rename: resuming cleans up
    meta, arrays = read_verified(path)
    try:
        model = _build(meta["model"], arrays, "model")
        meta = dict(meta)
        meta["extra"] = decode_value(meta.get("extra", {}))
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ModelFileError(f"cannot load model file {str(path)!r}: inconsistent model state: {what}") from None
    except Exception as exc:  # RecursionError, OverflowError, MemoryError, ...: a crafted file, never a crash
        raise ModelFileError(f"cannot load model file {str(path)!r}: the model state cannot be built "
                             f"({type(exc).__name__}: {exc})") from None
    return model, meta


def load(path):
    """Read a model written by :func:`save` (or ``model.save``).

    Raises :class:`ModelFileError` (a ``ValueError``) naming the file and the
    problem when the file is missing, truncated, corrupted, of a newer format
    version, or inconsistent.

    >>> import tempfile, os
    >>> from onlinemkl.persist import load
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     bad = os.path.join(tmp, "bad.omkl")
    ...     with open(bad, "wb") as fh:
    ...         _ = fh.write(b"not a model")
    ...     load(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onlinemkl.persist.ModelFileError: cannot load model file '...bad.omkl': not an onlinemkl model file, or truncated ...
    """
    return load_with_meta(path)[0]
