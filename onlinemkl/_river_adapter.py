"""The river face: one adapter base for every river estimator of onlinemkl.

An adapter declares its parameters (``__init__``, which builds its engine at
once, so a bad parameter fails at construction and not mid-stream) and how
``learn_one``/``predict_one`` feed the engine; the rest is here, written once
against the engine protocol (:mod:`onlinemkl.engine`): dict examples to rows
through a :class:`onlinemkl.features.FeatureMap`, labels to indices through a
:class:`onlinemkl.features.LabelMap`, saving (``save``,
``_get_state``/``_set_state`` for :mod:`onlinemkl.persist`) and pickling.
Nothing here imports scikit-learn.
"""

from __future__ import annotations

import numpy as np

from ._proba import class_probabilities
from ._scaling import InputScaling, scaling_of
from ._sync import ModelLock, _lock_of
from ._validation import MAX_ABS_VALUE, FeatureTypeError, FeatureValueError, check_target_value, with_upstream_hint
from .engine import BufferEngine, engine_for_state, kernels_of_state, state_with_settings
from .features import FeatureMap, LabelMap, check_feature_cap
from .kernels import restoring_kernels

__all__ = ["EngineAdapter", "proba_dict", "proba_frame", "check_regression_target", "upstream_hint"]

_BAD_VALUE = (FeatureValueError, FeatureTypeError)


class upstream_hint:
    """Context manager: a bad feature value raised inside it gets
    :data:`onlinemkl._validation.UPSTREAM_HINT` (the learner cannot tell whether a pipeline step
    made the value, so the message says that it may have and what to do)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, _BAD_VALUE):
            raise with_upstream_hint(exc) from None
        return False


def proba_dict(labels, scores, binary: bool = False) -> dict:
    """``{label: probability}`` of one example's class scores (binary: the first score is the
    positive class's, labels ``[False, True]``), by :func:`onlinemkl._proba.class_probabilities`, the mapping the
    scikit-learn faces' ``predict_proba`` uses too."""
    s = np.asarray(scores, dtype=np.float64)
    p = class_probabilities(s[:1] if binary else s[None], binary)[0]
    return {lab: float(v) for lab, v in zip(labels, p.tolist())}


def proba_frame(labels, scores, index, binary: bool = False):
    """The pandas DataFrame of :func:`proba_dict` for many rows (one column per label)."""
    import pandas as pd

    return pd.DataFrame(class_probabilities(scores, binary), index=index, columns=list(labels))


def check_regression_target(y) -> float:
    """A river regression target: a finite real number (not a bool) of magnitude at most 1e50."""
    t = type(y)
    if (t is float or t is int) and -MAX_ABS_VALUE <= y <= MAX_ABS_VALUE:  # the common cases, checked in place
        return float(y)
    return check_target_value(y)


class EngineAdapter(ModelLock):
    """Mixin before river's estimator base: ``_engine``, ``_features`` and (classifiers) ``_labels``.

    Subclasses call :meth:`_attach` at the end of ``__init__``.  Learning, prediction, saving and
    the fitted attributes take the model's lock (:mod:`onlinemkl._sync`): one model can be shared
    by several threads.
    """

    _scaling = None  # the input scaling (onlinemkl._scaling.InputScaling) of the scale parameter, if any

    def _attach(self, engine, features: FeatureMap, labels: LabelMap | None = None) -> None:
        self._engine = engine
        self._features = features
        self._scaling = self._new_scaling()
        if labels is not None:
            self._labels = labels
        self._link()
        if features.hashing is not None:  # fixed columns from the start
            engine.set_features(len(features), features.lookup)

    def _new_scaling(self):
        """The input scaling of the ``scale`` parameter (:func:`onlinemkl._scaling.scaling_of`)."""
        return scaling_of(self)

    def _feature_map(self, ordered: str = "arrival") -> FeatureMap:
        """The feature map of the ``max_features`` and ``feature_hashing`` parameters (validated)."""
        hashing = getattr(self, "feature_hashing", None)
        check_feature_cap(self.max_features, hashing, ordered)
        return FeatureMap(ordered, self.max_features, hashing)

    def check_features(self, x: dict) -> None:
        """Raise ``ValueError`` (listing them) if learning ``x`` would take the model past ``max_features``.

        :meth:`learn_one` checks this itself; the server calls it on the raw example, before the
        steps in front of the learner (a scaler) add the names to their own statistics.
        """
        with _lock_of(self):
            f = self._features
            if f.max_features is not None:
                f.check_room(f.new_names(x))

    def _link(self) -> None:
        """Give the engine the feature map's lookup (for kernel groups of feature names)."""
        self._engine.set_lookup(self._features.lookup)

    def __setstate__(self, state):
        # the engine unpickles through its protocol state, which holds no reference to the feature map
        self.__dict__.update(state)
        self._link()

    # -- input ----------------------------------------------------------------------------------

    def _row(self, x: dict, grow: bool) -> np.ndarray:
        """The validated float64 row of ``x`` over the engine's features; with ``grow`` new features
        get columns (after every value is checked, so a rejected example changes nothing)."""
        f = self._features
        sc = self._scaling
        try:
            if not grow:
                row = f.encode_large(x, False)[0]
                return row if sc is None or not sc.live else sc.rows(row)
            n_before = len(f.names)
            row, large = f.encode_large(x, True)
        except _BAD_VALUE as exc:
            raise with_upstream_hint(exc) from None
        if len(f.names) != n_before:
            self._engine.set_features(len(f.names), f.lookup)
        if sc is not None:
            if large or sc.live or sc.mode is True:
                row = sc.learn_row(row, large)
            else:  # 'auto' on inputs that look standardised (most calls): only the count of examples
                sc.seen += 1
        return row

    def _frame_rows(self, X) -> np.ndarray:
        """The float64 rows of a DataFrame over the engine's features (unknown columns dropped)."""
        with upstream_hint():
            rows = self._features.frame(X, width=self._engine.n_features)
        return rows if self._scaling is None else self._scaling.rows(rows)

    def _frame_examples(self, X, y, check_label, what="label") -> list:
        """``[(dict, label)]`` of a DataFrame and its labels for ``learn_many``, every value and label
        checked first (``check_label``), so that a rejected batch changes nothing; the examples then
        go through ``learn_one`` one by one, in order, and learn what a ``learn_one`` loop learns."""
        import pandas as pd

        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"X must be a pandas DataFrame; got {type(X).__name__}")
        labels = list(y)
        if len(labels) != len(X):
            raise ValueError(f"y must hold one {what} per row of X ({len(X)} rows); got {len(labels)}")
        rows = X.to_dict(orient="records")
        with upstream_hint():
            for x in rows:
                FeatureMap.values(x)
        for label in labels:
            check_label(label)
        return list(zip(rows, labels))

    # -- attributes -----------------------------------------------------------------------------

    @property
    def kernel_weights_(self) -> np.ndarray:
        return self._engine.kernel_weights()

    @property
    def n_support_(self) -> int:
        return self._engine.n_support

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        The write is atomic; see :mod:`onlinemkl.persist` for the format and
        its limits (labels and feature names must be JSON-representable:
        str, int, float, bool, None or tuples of them).  Returns the path.
        To save a pipeline, use ``onlinemkl.persist.save(pipeline, path)``.
        """
        from .persist import save

        return save(self, path)

    def _adapter_state(self):
        """``(state, arrays)`` the adapter keeps beside the engine and the maps (e.g. a pending batch)."""
        return {}, {}

    def _restore_adapter(self, state, arrays) -> None:
        """Restore what :meth:`_adapter_state` saved (after the engine and the maps)."""

    def _check_labels(self, labels: LabelMap) -> None:
        """Raise ``ValueError`` unless the restored labels fit the engine's outputs."""
        if len(labels) != self._engine.n_outputs:
            raise ValueError(f"{len(labels)} labels for {self._engine.n_outputs} outputs")

    def _get_state(self):
        params, arrays = state_with_settings(self._engine)
        state = {"engine": params, "features": list(self._features.names)}
        if self._scaling is not None:
            state["scaling"], scaling_arrays = self._scaling.state()
            arrays = {**arrays, **scaling_arrays}
        if hasattr(self, "_labels"):
            state["labels"] = list(self._labels.labels)
        extra_state, extra_arrays = self._adapter_state()
        return {**state, **extra_state}, {**arrays, **extra_arrays}

    def _set_state(self, state, arrays):
        """Restore onto a fresh adapter built from the saved parameters; a ``ValueError`` names the
        rule an inconsistent state breaks.

        The state records the engine's settings (the kernels in use, every default resolved):
        the adapter builds its engine again from them when they are not what its parameters
        resolve to today (:func:`onlinemkl.engine.engine_for_state`).  A state without them (an
        older file) gives at least the kernels of an engine over a support buffer (recorded, or
        read from its arrays: :func:`onlinemkl.engine.kernels_of_state`), which the engine is then
        built with (:func:`onlinemkl.kernels.kernels_in_use`)."""
        current = self._engine
        saved = None
        if isinstance(current, BufferEngine):
            saved = kernels_of_state(state["engine"], arrays, lambda: current)
        with restoring_kernels(self, saved):
            engine = self._engine
            if saved is not None and self.kernels is None and saved != self._engine.ck.kernels:
                engine = self._new_engine()
            engine = engine_for_state(engine, state["engine"], self)
            engine.set_state(state["engine"], arrays)
            self._engine = engine
            old = self._features
            features = FeatureMap(old.ordered, old.max_features, old.hashing)
            features.restore(state["features"])
            if len(features) != self._engine.n_features:
                raise ValueError(f"{len(features)} feature names for {self._engine.n_features} engine features")
            if hasattr(self, "_labels"):
                labels = LabelMap(state["labels"])
                self._check_labels(labels)
                self._labels = labels
            elif getattr(self._engine, "n_outputs", 1) != 1:
                raise ValueError(f"a regressor has 1 output; the engine has {self._engine.n_outputs}")
            scaling = self._restored_scaling(state, arrays, len(features))
            self._features = features
            self._scaling = scaling
            self._link()
            self._restore_adapter(state, arrays)

    def _restored_scaling(self, state, arrays, n_features):
        """The input scaling a state holds, checked; a state without one (a file written before the
        ``scale`` parameter, or with ``scale=False``) makes the model ``scale=False``."""
        if state.get("scaling") is None:
            if getattr(self, "scale", False) is not False:
                self.scale = False
            return None
        if getattr(self, "scale", False) is False:
            raise ValueError("the state holds input scaling statistics but the learner has scale=False")
        scaling = InputScaling(self.scale)
        scaling.restore(state["scaling"], arrays, n_features)
        return scaling
