"""The learner protocol: one small surface that every engine has.

An *engine* owns a learner's state as plain numpy arrays and makes one compiled
call per example (or per mini-batch).  Everything else is written once
against this surface: persistence (:mod:`onlinemkl.persist`), pickling and
``copy``, the river adapters (:mod:`onlinemkl.river`) and the scikit-learn
estimators (:mod:`onlinemkl.sklearn`).  The engines live in
:mod:`onlinemkl.engines`, one module per learner; none imports scikit-learn or
river.

A learner's state as ``(params, arrays)`` is complete: an engine built with
the same constructor arguments and given that state predicts bit for bit like
the original and continues learning identically.  That is what model files
hold, what pickles hold, and what a distributed merge will combine.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np

from ._core import kernels as _ck
from ._validation import init_args
from .kernels import RBF, BSpline, Kernel, Laplacian, Linear, Polynomial, check_kernels

__all__ = ["Engine", "EngineBase", "BufferEngine", "collect_arrays", "restore_arrays", "state_rule", "plain",
           "normalised", "recorded_kernels", "kernels_of_state", "state_with_settings", "engine_for_state",
           "SETTINGS"]


@runtime_checkable
class Engine(Protocol):
    """What every engine offers (the online learners also ``learn(row, label)``, the mini-batch
    learners ``learn_many(rows, labels)``; see each engine's docstring).

    ``get_state()`` returns ``(params, arrays)``: a JSON-able dict of scalars and
    a dict of numpy arrays (which may be the engine's own: read them, or copy
    them before changing anything).  ``set_state(params, arrays, strict=True)`` restores
    them onto an engine built with the same constructor arguments, after
    checking every dtype, shape and index against the others and against the
    constructor arguments: a ``ValueError`` names the rule a corrupted or crafted
    state breaks, so that compiled code never reads or writes out of bounds.
    ``strict`` also checks the values (finite numbers, positive scales), as a
    model file needs; a pickle or copy of a live engine restores whatever it
    held, a diverged model included.

    The per-example methods are named ``scores_one``/``scores_many`` (not
    ``scores``): ``scores`` is the score buffer the engines hand to compiled code.
    """

    n_features: int

    def get_state(self) -> tuple[dict, dict]: ...

    def set_state(self, params: dict, arrays: dict, strict: bool = True) -> None: ...


def state_rule(learner: str):
    """``need(ok, rule)``: raise ``ValueError("inconsistent <learner> state: <rule>")`` unless ``ok``."""

    def need(ok, rule):
        if not ok:
            raise ValueError(f"inconsistent {learner} state: {rule}")

    return need


def normalised(w: np.ndarray) -> np.ndarray:
    """``w / sum(w)``, uniform when the sum is 0 (kernel weights before any update)."""
    s = w.sum()
    return w / s if s > 0 else np.full_like(w, 1.0 / w.size)


def recorded_kernels(params) -> tuple | None:
    """The kernels an engine state records (``params["kernels"]``), checked; None when it records none.

    The engines over a support buffer record the kernels they were built with, so that a model
    saved with ``kernels=None`` loads with the kernels it learnt with, whatever today's default
    set (:func:`onlinemkl.kernels.kernels_in_use`).  A state written before they were recorded
    has none: the learner's ``kernels`` parameter then resolves them, as it did when it was written.
    """
    if not isinstance(params, dict) or "kernels" not in params:
        return None
    value = params["kernels"]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"the state's kernels must be a non-empty list of kernels; got {str(value)[:80]}")
    try:
        return check_kernels(value)
    except TypeError as exc:
        raise ValueError(f"the state's kernels: {exc}") from None


def kernels_of_state(params, arrays, fresh) -> tuple | None:
    """The kernels a saved state was learnt with: its record (:func:`recorded_kernels`), else, for a
    state written before kernels were recorded, the kernels its arrays describe when today's do
    not fit them; None: the parameter's kernels (``fresh()``'s) fit, or nothing can be told.

    ``fresh()`` builds the engine the face's parameters give today.  The arrays of an engine over a
    support buffer hold every kernel's code, group and resolved parameters (``ck.codes``,
    ``ck.kgroup``, ``ck.params``): a state whose kernels all read every feature (as the default
    sets' do) and whose bandwidths were resolved gives back kernels with those absolute values,
    which compute the same numbers as the relative ones they were resolved from.
    """
    kernels = recorded_kernels(params)
    if kernels is not None or not isinstance(params, dict) or SETTINGS in params:
        return kernels
    codes, values, kgroup = arrays.get("ck.codes"), arrays.get("ck.params"), arrays.get("ck.kgroup")
    if not (isinstance(codes, np.ndarray) and isinstance(values, np.ndarray) and isinstance(kgroup, np.ndarray)):
        return None
    engine = fresh()
    if not isinstance(engine, BufferEngine):
        return None
    ck = engine.ck
    if (codes.shape == ck.codes.shape and np.array_equal(codes, ck.codes) and np.array_equal(kgroup, ck.kgroup)
            and values.shape == ck.params.shape
            and np.array_equal(values[:, _ck.P_NORMALIZE], ck.params[:, _ck.P_NORMALIZE])):
        return None  # today's kernels fit the arrays: loaded as they always were
    if (params.get("kernels_resolved") is not True or codes.ndim != 1 or not codes.size
            or values.shape != (codes.shape[0], _ck.N_PARAMS) or kgroup.shape != codes.shape
            or np.any(kgroup != 0)):
        return None
    try:
        return tuple(_kernel_from_row(int(c), values[j]) for j, c in enumerate(codes))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None  # not a kernel this release knows: the usual mismatch error follows


def _kernel_from_row(code: int, row: np.ndarray):
    """The kernel on every feature whose compiled parameters are ``row`` (absolute bandwidths)."""
    normalize = bool(row[_ck.P_NORMALIZE])
    a, b, c = (float(v) for v in row[:3])
    if code == _ck.LINEAR:
        return Linear(normalize=normalize)
    if code == _ck.POLYNOMIAL:
        if a != int(a):
            raise ValueError(f"polynomial degree {a}")
        return Polynomial(degree=int(a), offset=b, scale=c, normalize=normalize)
    kind = {_ck.RBF: RBF, _ck.LAPLACIAN: Laplacian}.get(code)
    if kind is not None:
        return kind(gamma=a, normalize=normalize)
    if code == _ck.BSPLINE:
        return BSpline(h=a, normalize=normalize)
    raise KeyError(code)


# ----------------------------------------------------------------------------------------
# Resolved settings: what a model file records so that loading never resolves a default again

#: The key of an engine state's params that holds the engine's settings (:func:`state_with_settings`).
SETTINGS = "settings"


def _plain(value):
    """``value`` with numpy arrays as lists and numpy scalars as Python ones (what a model file holds)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def state_with_settings(engine) -> tuple[dict, dict]:
    """``engine.get_state()`` with the engine's *settings* added to the params (key :data:`SETTINGS`).

    The settings are the engine's constructor arguments: every value a face resolved from its
    parameters (the kernels in use with ``kernels=None``, ``p=None``'s exponent, ``eta0='auto'``'s
    step sizes and its class threshold, ``replay='auto'``'s steps, the replay seed, ...) and every
    rule an engine resolves itself at construction (it records the resolved value in
    ``_init_args``).  Loading builds the engine from them (:func:`engine_for_state`), so a model
    file keeps predicting and learning as it did when saved, whatever the defaults of the release
    that loads it.  A new engine parameter is recorded with no extra code.
    """
    params, arrays = engine.get_state()
    return {**params, SETTINGS: _plain(engine._init_args)}, arrays


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_setting(name: str, fresh, saved) -> None:
    """Raise ``ValueError`` unless ``saved`` may stand for the setting ``fresh`` (a structural check:
    the engine's own checks judge the state against whatever is accepted here).

    Numbers stand for numbers (finite where ``fresh`` is, not negative where it is not, integers
    for integers), kernels for kernels, containers for containers of such values; strings and
    booleans (choices that come straight from the parameters) must be equal; None stands for None
    or a number (a rule that was optional).
    """
    def bad(why):
        raise ValueError(f"the saved setting {name}={str(saved)[:120]} {why}")

    if _plain(fresh) == saved:
        return
    if isinstance(fresh, (str, bool, np.bool_)):
        bad(f"differs from the parameters' {fresh!r}: the file names another learner configuration")
    if fresh is None or _number(_plain(fresh)):
        if saved is None and fresh is None:
            return
        if not _number(saved):
            bad("is not a number")
        f = None if fresh is None else float(_plain(fresh))
        if f is not None and math.isfinite(f) and not math.isfinite(saved):
            bad("is not finite")
        if f is not None and f >= 0 and not saved >= 0:
            bad(f"is negative where the parameters give {f!r}")
        if isinstance(_plain(fresh), int) and not isinstance(saved, int):
            bad("is not an integer")
        return
    if isinstance(fresh, Kernel):
        if not isinstance(saved, Kernel):
            bad("is not a kernel")
        return
    if isinstance(fresh, dict):
        if not isinstance(saved, dict) or set(saved) != set(fresh):
            bad(f"does not have the keys {sorted(fresh)}")
        for k in fresh:
            _check_setting(f"{name}[{k!r}]", fresh[k], saved[k])
        return
    if isinstance(fresh, (tuple, list, np.ndarray)):
        if not isinstance(saved, (tuple, list)):
            bad("is not a sequence")
        items = list(_plain(fresh))
        for i, v in enumerate(saved):
            _check_setting(f"{name}[{i}]", items[min(i, len(items) - 1)] if items else v, v)
        return
    bad(f"is not a value this setting takes ({type(fresh).__name__})")


def _given(face) -> dict:
    """The face's parameters that no default resolves: those not None and not ``'auto'``."""
    import inspect

    out = {}
    for name in inspect.signature(type(face).__init__).parameters:
        value = getattr(face, name, None)
        if value is not None and not (isinstance(value, str) and value == "auto"):
            out[name] = value
    return out


def _check_given(name, fresh_value, saved, given) -> None:
    """Refuse a saved setting that differs where the face's parameter of that name (or, in a dict
    of settings, of its key's name) was given: only a resolved default may differ."""
    items = [(name, fresh_value, saved)]
    if isinstance(fresh_value, dict) and isinstance(saved, dict):
        items += [(k, fresh_value[k], saved[k]) for k in fresh_value if k in saved]
    for key, f, v in items:
        if key in given and not isinstance(f, dict) and _plain(f) != v:
            raise ValueError(f"the state's settings differ from the parameters: {key}={str(v)[:80]} was saved, "
                             f"the parameter gives {key}={_plain(f)!r}: the state does not belong to this model")


def engine_for_state(fresh, params, face=None):
    """The engine a saved state was learnt with, ready for ``set_state(params, ...)``.

    ``fresh`` is an engine built from the parameters of ``face`` (which validates them).  A state
    that records its settings (:func:`state_with_settings`) gets a new engine of the same class
    built from them when they differ from ``fresh``'s (a default changed since the file was
    written).  Only a setting that a default resolves may differ: one named like a parameter of
    ``face`` that was given (not None, not ``'auto'``) must be ``fresh``'s, as must
    ``_FIXED_SETTINGS``; each other differing setting is checked against ``fresh``'s
    (:func:`_check_setting`), and the engine's ``set_state`` then checks the state against the
    recorded settings.  A setting the file lacks (an engine parameter added since) takes
    ``fresh``'s value; one this engine does not know is refused.  A state without settings
    (older files) gets ``fresh.unrecorded(face)``.
    """
    saved = params.get(SETTINGS) if isinstance(params, dict) else None
    if saved is None:
        return fresh.unrecorded(face)
    if not isinstance(saved, dict):
        raise ValueError(f"the state's {SETTINGS} must be a dict of the engine's settings; got {str(saved)[:80]}")
    current = fresh._init_args
    unknown = sorted(set(saved) - set(current))
    if unknown:
        raise ValueError(f"the state records settings {unknown} that a {type(fresh).__name__} does not take: "
                         "a newer onlinemkl wrote the file; upgrade onlinemkl to load it")
    merged = dict(current)
    changed = False
    given = {} if face is None else _given(face)
    for name, value in saved.items():
        if _plain(current[name]) != value:
            _check_given(name, current[name], value, given)
            if name in fresh._FIXED_SETTINGS:
                raise ValueError(f"the saved setting {name}={str(value)[:80]} differs from the {current[name]!r} "
                                 "the file's parameters and learnt state give")
            _check_setting(name, current[name], value)
            if name == "kernels" or (isinstance(value, dict) and "kernels" in value):
                kernels = value["kernels"] if isinstance(value, dict) else value
                if not isinstance(kernels, (list, tuple)) or not kernels:
                    raise ValueError(f"the saved setting {name} holds no kernels")
                check_kernels(kernels)
            merged[name] = value
            changed = True
    return type(fresh)(**merged) if changed else fresh


# ----------------------------------------------------------------------------------------
# Arrays by attribute path


def _get_path(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def collect_arrays(obj, names) -> dict:
    """``{name: obj.<name>}`` for dotted attribute paths (``"buf.S"``).

    >>> import types, numpy as np
    >>> o = types.SimpleNamespace(a=np.zeros(2), inner=types.SimpleNamespace(b=np.ones(3)))
    >>> sorted(collect_arrays(o, ["a", "inner.b"]))
    ['a', 'inner.b']
    """
    return {name: _get_path(obj, name) for name in names}


def restore_arrays(obj, arrays: dict, names) -> None:
    """Set ``obj.<name> = arrays[name]`` for dotted paths, checking each against the current attribute.

    The saved array must exist and have the current attribute's dtype and
    number of dimensions (shapes are the caller's to check: they depend on the
    state).  Raises ``ValueError`` naming the array otherwise.  The attributes
    become writable C-contiguous copies.
    """
    for name in names:
        if name not in arrays:
            raise ValueError(f"array {name!r} is missing")
        new = arrays[name]
        cur = _get_path(obj, name)
        if not isinstance(new, np.ndarray) or new.dtype != cur.dtype or new.ndim != cur.ndim:
            got = f"{new.dtype}, {new.ndim}-D" if isinstance(new, np.ndarray) else type(new).__name__
            raise ValueError(f"array {name!r} is {got}; expected {cur.dtype}, {cur.ndim}-D")
    for name in names:
        *head, last = name.split(".")
        owner = _get_path(obj, ".".join(head)) if head else obj
        setattr(owner, last, np.array(arrays[name], order="C", copy=True))


def split_hyper(arrays: dict, floats: dict, ints: dict, need, missing=None) -> dict:
    """``arrays`` with a float-only ``hyper`` and an int64 ``ihyper``, from a state saved when one
    float ``hyper`` array held both the real-valued and the integer settings of the compiled step
    (no ``ihyper`` array); any other state as it is.

    ``floats`` and ``ints`` map each index of the new ``hyper`` and ``ihyper`` to the index in
    the saved ``hyper`` that held it; ``missing`` gives the values of saved indices past the end
    of a shorter saved array (a setting added later).  ``need`` (:func:`state_rule`) refuses a
    saved ``hyper`` that is not a 1-D float array of the expected length or whose integer
    settings are not whole numbers.
    """
    if "ihyper" in arrays or "hyper" not in arrays:
        return arrays
    old, missing = arrays["hyper"], dict(missing or {})
    size = max(max(floats.values()), max(ints.values())) + 1
    ok = isinstance(old, np.ndarray) and old.dtype == np.float64 and old.ndim == 1
    need(ok and size - len(missing) <= old.shape[0] <= size,
         f"hyper is {getattr(old, 'dtype', type(old).__name__)} of shape {getattr(old, 'shape', None)}; "
         f"a state without an ihyper array has a float64 hyper of {size} entries")
    full = np.array([old[i] if i < old.shape[0] else missing[i] for i in range(size)], dtype=np.float64)
    whole = full[[ints[k] for k in range(len(ints))]]
    need(bool(np.all(np.isfinite(whole) & (whole == np.round(whole)))),
         f"the integer settings in hyper {whole.tolist()} are not whole numbers")
    return {**arrays, "hyper": full[[floats[k] for k in range(len(floats))]],
            "ihyper": whole.astype(np.int64)}


def check_finite(obj, names, need) -> None:
    """``need`` every array at the dotted ``names`` to hold finite values only."""
    for name in names:
        need(bool(np.all(np.isfinite(_get_path(obj, name)))), f"{name} holds NaN or infinite values")


# ----------------------------------------------------------------------------------------
# Shared engine machinery


class EngineBase:
    """Pickling and ``copy`` through the protocol, for every engine.

    An engine remembers its constructor arguments (:meth:`_remember_init`); a
    pickle holds them and :meth:`get_state`, and unpickling builds a fresh
    engine and calls :meth:`set_state`, so a pickle's structure is checked and
    its derived caches recomputed as a model file's are (its values are not
    judged: ``strict=False``).
    """

    #: Settings that no default decides (they come from the data, e.g. the number of outputs of
    #: the classes in the file): a saved state's value must equal the fresh engine's
    #: (:func:`engine_for_state`), so that a crafted file cannot size the engine's arrays.
    _FIXED_SETTINGS: tuple = ()

    def _remember_init(self, args: dict) -> None:
        """Keep the constructor arguments (pass ``locals()`` first thing in ``__init__``)."""
        self._init_args = init_args(self, args)

    def _resolved(self, name: str, value):
        """Record ``value`` as the setting ``name`` (a constructor argument whose None the engine
        resolved by a rule of today's release) and return it: a saved state then records the value,
        and loading builds the engine with it (:func:`state_with_settings`)."""
        self._init_args[name] = value
        return value

    def unrecorded(self, face) -> EngineBase:
        """The engine a state saved without settings (files older than the recorded settings) was
        learnt with, this one built from ``face``'s parameters: the same unless a default those
        files resolved has changed since, which an engine restores by overriding this."""
        return self

    def set_lookup(self, lookup) -> None:
        """Feature names -> columns, for kernel groups of names (a face's feature map).

        Engines over a support buffer resolve groups when ``set_features`` gives
        them the lookup; the mini-batch engines resolve them at every batch, from
        the lookup kept here.  Not part of the state: the face sets it again after
        unpickling.
        """

    def get_state(self) -> tuple[dict, dict]:  # pragma: no cover - every engine overrides
        raise NotImplementedError

    def set_state(self, params: dict, arrays: dict, strict: bool = True) -> None:  # pragma: no cover
        raise NotImplementedError

    def __getstate__(self):
        params, arrays = self.get_state()
        return {"init": self._init_args, "params": params, "arrays": arrays}

    def __setstate__(self, state):
        self.__init__(**state["init"])
        self.set_state(state["params"], state["arrays"], strict=False)


def _short(kernels) -> str:
    text = ", ".join(map(repr, kernels or ()))
    return f"({text[:300]}{'...' if len(text) > 300 else ''})"


class BufferEngine(EngineBase):
    """Engines over a support buffer (``buf``, a :class:`onlinemkl._buffer.SupportBuffer`) and
    compiled kernels (``ck``): OBSCURE, online proximal MKL and the sequence labeller.

    ``_ROW_ARRAYS`` names the engine's own per-stored-example arrays, grown with
    the buffer's rows.
    """

    _ROW_ARRAYS: tuple = ()
    _BUFFER_ARRAYS = ("buf.S", "buf.ssq", "buf.sdiag", "buf.ypos", "buf.yneg", "buf.coef", "buf.tstamp")
    _KERNEL_ARRAYS = ("ck.codes", "ck.params", "ck.kgroup", "ck.granges", "ck.gptr", "ck.gl1")

    #: The records of the state's arrays that an engine passes to its compiled step
    #: (:mod:`onlinemkl._core.state`), kept between calls by the engines that cache them; None:
    #: build them again.  They refer to the arrays themselves, so every method that replaces an
    #: array (a reallocation, a restored state) calls :meth:`_forget_records`.
    _records = None

    def _forget_records(self) -> None:
        """An array of the state was replaced: drop the cached records (rebuilt on next use)."""
        self._records = None

    @property
    def n_kernels(self) -> int:
        return self.ck.n_kernels

    def _kernel_state(self) -> dict:
        """The kernels in use, for :meth:`get_state`'s params (see :func:`recorded_kernels`)."""
        return {"kernels": list(self.ck.kernels)}

    def _check_kernel_state(self, params, need) -> None:
        """``need`` the kernels a state records (if any) to be the ones this engine was built with."""
        kernels = recorded_kernels(params)
        need(kernels is None or kernels == self.ck.kernels,
             f"it records the kernels {_short(kernels)} but the learner was built with {_short(self.ck.kernels)}")

    def _ensure_rows(self, n_rows: int) -> None:
        """Room for ``n_rows`` stored examples in the buffer and in the engine's per-row arrays."""
        cap = self.buf.capacity
        self.buf.ensure_rows(n_rows)
        new = self.buf.capacity
        if new != cap:
            for name in self._ROW_ARRAYS:
                old = getattr(self, name)
                arr = np.zeros((new,) + old.shape[1:], dtype=old.dtype)
                arr[:cap] = old
                setattr(self, name, arr)
            self._forget_records()

    def _check_buffer(self, need, n_coef: int, row_shapes=()) -> None:
        """The buffer's shapes against each other, the kernels and the budget; ``row_shapes``
        are ``(name, array, trailing shape)`` of the engine's per-row arrays."""
        F, G = self.ck.n_kernels, self.ck.n_groups
        b = self.buf
        cap, dcap = b.S.shape
        for name, arr, shape in (("buf.ssq", b.ssq, (G,)), ("buf.sdiag", b.sdiag, (F,)), ("buf.ypos", b.ypos, ()),
                                 ("buf.yneg", b.yneg, ()), ("buf.coef", b.coef, (n_coef,)),
                                 ("buf.tstamp", b.tstamp, ()), *row_shapes):
            need(arr.shape == (cap,) + tuple(shape), f"{name} has shape {arr.shape}, expected {(cap,) + tuple(shape)}")
        budget = 0 if b.budget is None else b.budget
        need(cap >= 1 and (budget == 0 or cap <= budget), f"buffer capacity {cap} exceeds the budget {budget}")
        n = self.n_support
        need(0 <= n <= cap, f"{n} stored examples in a buffer of {cap} rows")
        need(0 <= self.n_features <= dcap, f"{self.n_features} features in a buffer of {dcap} columns")

    def _check_groups(self, ck, need, what: str = "ck") -> None:
        """``ck``'s feature-group column ranges within the features, and its group index valid."""
        r, p = ck.granges, ck.gptr
        need(r.ndim == 2 and r.shape[1] == 2, f"{what}.granges has shape {r.shape}")
        need(bool(np.all((r[:, 0] >= 0) & (r[:, 0] <= r[:, 1]) & (r[:, 1] <= self.n_features))),
             f"a {what} feature group's columns are out of range")
        need(p[0] == 0 and p[-1] == r.shape[0] and bool(np.all(np.diff(p) >= 0)), f"{what}.gptr is not a valid index")

    def _refresh_row_caches(self) -> None:
        """Recompute the buffer's per-row caches (squared group norms, diagonals) from its rows:
        derived data, never trusted from a file or a pickle; the same bits as the originals."""
        b = self.buf
        self.ck.refresh_row_caches(b.S, self.n_support, b.ssq, b.sdiag_t)


def plain(*records):
    """The records as plain tuples of their fields, as the engines pass them to compiled code.

    Numba types a plain tuple argument from a fingerprint of its items; a NamedTuple's
    fingerprint also spells its class and field names, a cost paid on every call of a per-example
    step.  The compiled entry points turn the tuples back into the records
    (``ProxRows(*buf)``), so the code inside still reads fields by name.
    """
    return tuple(tuple(r) for r in records)
