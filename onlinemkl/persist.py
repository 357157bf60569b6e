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
scaler statistics included:

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

Reading checks, in order: the archive is intact (a truncated file has no
central directory), ``meta.json`` parses and names the format, the version
is not newer than this reader's, the archive holds exactly the listed
entries, and each entry's size and SHA-256 match; then the component's own
``_set_state`` checks the arrays' dtypes, shapes and indices against each
other, so a crafted file cannot drive the compiled code out of bounds.  Any
failure raises :class:`ModelFileError` (a ``ValueError``) naming the file and
what is wrong.

Writes are atomic: the archive is written to a temporary file in the target's
directory, flushed and ``fsync``-ed, then renamed over the target with
``os.replace``; a crash leaves the previous file intact.

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
:class:`onlinemkl.river._base.EngineAdapter`), written once over the engine
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
import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from ._json_values import decode_value, encode_value

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

FORMAT_NAME = "onlinemkl-model"
FORMAT_VERSION = 1
META = "meta.json"

#: The dtype kinds a model file may hold (no object arrays: they would need pickle).
ARRAY_KINDS = frozenset("biufcUSMm")

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")
#: meta.json is read in full; a larger one is not a model file of ours.
MAX_META_BYTES = 64 << 20


class ModelFileError(ValueError):
    """A model file that cannot be read: truncated, corrupted, of a newer format, or inconsistent."""


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


def _protocol_build(cls, params, state, arrays, children):
    obj = cls(**params)
    obj._set_state(state, arrays)
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


_BUILTIN = [
    _Entry("onlinemkl.OBSCUREClassifier", "onlinemkl.obscure:OBSCUREClassifier"),
    _Entry("onlinemkl.river.OBSCUREClassifier", "onlinemkl.river._obscure:OBSCUREClassifier"),
    _Entry("onlinemkl.SequenceMKLLabeler", "onlinemkl.sequence:SequenceMKLLabeler"),
    *(_Entry(f"onlinemkl{pre}.{c}", f"onlinemkl{mod}:{c}") for pre, mod, c in (("", ".polymkl", "PolyMKLRegressor"), ("", ".nonlinear", "NonlinearKRRRegressor"), (".river", ".river._polymkl", "PolyMKLRegressor"), (".river", ".river._nonlinear", "NonlinearKRRRegressor"))),  # noqa: E501
    _Entry("onlinemkl.ProximalMKLClassifier", "onlinemkl.proximal:ProximalMKLClassifier"),
    _Entry("onlinemkl.ProximalMKLRegressor", "onlinemkl.proximal:ProximalMKLRegressor"),
    _Entry("onlinemkl.river.ProximalMKLClassifier", "onlinemkl.river._proximal:ProximalMKLClassifier"),
    _Entry("onlinemkl.river.ProximalMKLRegressor", "onlinemkl.river._proximal:ProximalMKLRegressor"),
    _Entry("river.preprocessing.StandardScaler", "river.preprocessing.scale:StandardScaler",
           _scaler_dump, _scaler_build),
    _Entry("river.compose.Pipeline", "river.compose.pipeline:Pipeline", _pipeline_dump, _pipeline_build),
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
        name = registered_name(obj)
        entry = _REGISTRY[name]
        dump = entry.dump or _protocol_dump
        params, state, arrays, children = dump(obj)
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

    @staticmethod
    def _add(zf, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
        info.compress_type = zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        zf.writestr(info, data)

    def write(self, zf, meta: dict) -> None:
        entries = {}
        for name, arr in self.pending:
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
            data = buf.getvalue()
            self._add(zf, name, data)
            entries[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        meta = dict(meta, entries=entries)
        self._add(zf, META, json.dumps(meta, indent=1, allow_nan=False).encode("utf-8"))


def _umask() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def save(model, path, *, extra: dict | None = None) -> Path:
    """Write ``model`` to ``path`` atomically in the model format; returns the path.

    Parameters
    ----------
    model
        A registered model: an onlinemkl learner (array or river API), a river
        ``StandardScaler`` or a river ``Pipeline`` of registered steps.
    path
        The file to write (by convention ``*.omkl``); replaced atomically.
    extra
        A JSON-representable dict stored as ``meta["extra"]`` (e.g. where a
        training stream stopped).

    Raises ``TypeError`` for an object or a value the format cannot hold, and
    ``OSError`` when the file cannot be written (the old file is then intact).
    """
    from . import __version__

    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    # Everything that can fail on the model's values fails here, before any file is touched.
    w = _Writer()
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "model": w.node(model, type(model).__name__),
        "extra": encode_value(extra or {}, "extra"),
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                w.write(zf, meta)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            mode = path.stat().st_mode & 0o777
        else:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return path


# ----------------------------------------------------------------------------------------
# Reading


def _read_verified(path: Path):
    """(meta, arrays by entry name) after every container, version and checksum check."""
    from . import __version__

    def fail(msg):
        return ModelFileError(f"cannot load model file {str(path)!r}: {msg}")

    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail("it is a directory") from None
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    with fh:
        try:
            zf = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as exc:
            size = path.stat().st_size
            raise fail(f"not an onlinemkl model file, or truncated ({size} bytes; the zip container is "
                       f"damaged: {exc})") from None
        except Exception as exc:  # OSError, ValueError, EOFError, NotImplementedError (bad header fields)
            raise fail(f"the zip container is damaged ({type(exc).__name__}: {exc})") from None
        with zf:
            try:
                names = zf.namelist()
                if META not in names:
                    raise fail(f"no {META} in the archive: not an onlinemkl model file")
                info = zf.getinfo(META)
                if info.file_size > MAX_META_BYTES:
                    raise fail(f"{META} is {info.file_size} bytes, larger than any model's metadata")
                raw = zf.read(META)
            except ModelFileError:
                raise
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
                raise fail(f"{META} is corrupted ({exc})") from None
            except Exception as exc:  # zlib.error and friends: still a damaged file
                raise fail(f"{META} is corrupted ({type(exc).__name__}: {exc})") from None
            try:
                meta = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise fail(f"{META} is not valid JSON ({exc})") from None
            if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
                got = meta.get("format") if isinstance(meta, dict) else None
                raise fail(f"not an onlinemkl model file ({META} names the format {got!r}, not {FORMAT_NAME!r})")
            version = meta.get("format_version")
            if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                raise fail(f"bad format_version {version!r} in {META}")
            if version > FORMAT_VERSION:
                raise fail(
                    f"written in model format version {version} by onlinemkl {meta.get('library_version', '?')}; "
                    f"this onlinemkl {__version__} reads format version {FORMAT_VERSION} at most: upgrade onlinemkl"
                )
            entries = meta.get("entries")
            if not isinstance(entries, dict) or not isinstance(meta.get("model"), dict):
                raise fail(f"{META} lacks its 'entries' or 'model' section")
            listed, present = set(entries), set(names) - {META}
            if listed - present:
                raise fail(f"entries missing from the archive: {sorted(listed - present)[:5]}")
            if present - listed:
                raise fail(f"unexpected entries in the archive: {sorted(present - listed)[:5]}")
            if len(names) != len(set(names)):
                raise fail("duplicate entries in the archive")
            arrays = {}
            for name, spec in entries.items():
                try:
                    size, digest = int(spec["size"]), str(spec["sha256"])
                except (TypeError, KeyError, ValueError):
                    raise fail(f"bad checksum record for {name!r}") from None
                try:
                    with zf.open(name) as member:
                        data = member.read(size + 1)
                except Exception as exc:  # BadZipFile (CRC), zlib.error, OSError, EOFError
                    raise fail(f"entry {name!r} is corrupted ({type(exc).__name__}: {exc})") from None
                if len(data) != size:
                    raise fail(f"entry {name!r} is {len(data)} bytes, expected {size}")
                if hashlib.sha256(data).hexdigest() != digest:
                    raise fail(f"entry {name!r} fails its SHA-256 checksum (the file is corrupted)")
                try:
                    arr = np.load(io.BytesIO(data), allow_pickle=False)
                except Exception as exc:
                    raise fail(f"entry {name!r} is not a readable .npy array ({exc})") from None
                if arr.dtype.kind not in ARRAY_KINDS:
                    raise fail(f"entry {name!r} has dtype {arr.dtype}, which model files never hold")
                arrays[name] = np.array(arr, order="C", copy=True)
    return meta, arrays


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
    meta, arrays = _read_verified(path)
    try:
        model = _build(meta["model"], arrays, "model")
        meta = dict(meta)
        meta["extra"] = decode_value(meta.get("extra", {}))
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ModelFileError(f"cannot load model file {str(path)!r}: inconsistent model state: {exc}") from None
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
