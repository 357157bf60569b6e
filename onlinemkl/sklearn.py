"""The scikit-learn face: one base for every array-API estimator.

A public estimator declares its parameters (``__init__``), how to build its
engine from them (``_new_engine``) and how it feeds rows to the engine; the
rest is here, written once against the engine protocol
(:mod:`onlinemkl.engine`): input checks, fitted attributes, saving
(``save``, ``_get_state``/``_set_state`` for :mod:`onlinemkl.persist`).
Only this module and the estimators import scikit-learn; the engines and the
river adapters do not.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._proba import class_probabilities
from ._scaling import InputScaling, scaling_of
from ._sync import ModelLock
from ._validation import check_rows, check_target, first_out_of_range, float_array, writeable_contiguous
from .engine import engine_for_state, kernels_of_state, state_with_settings
from .features import LabelMap
from .kernels import restoring_kernels

__all__ = ["EngineEstimator", "EngineClassifier", "MiniBatchRegressor", "check_labels", "check_targets"]


def check_labels(y, n_rows):
    """A 1-D array of classification labels, one per row."""
    y = check_target(y, n_rows, what="label")
    check_classification_targets(y)
    return y


def check_targets(y, n_rows, owner="this regressor", name="y"):
    """A finite float64 1-D target vector, one value per row (a column vector is ravelled, with
    scikit-learn's ``DataConversionWarning``)."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None (pass one target per row of X)")
    try:
        v = float_array(name, y)
    except TypeError as exc:  # scikit-learn's convention for targets: a ValueError
        raise ValueError(str(exc)) from None
    if v.ndim == 2 and v.shape[1] == 1:
        warnings.warn(f"A column-vector y was passed when a 1d array was expected; {name} (n, 1) was ravelled to "
                      "shape (n,)", DataConversionWarning, stacklevel=3)
        v = v.ravel()
    if v.ndim != 1 or v.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-D with one target per row of X ({n_rows} rows); got shape {v.shape}")
    found = first_out_of_range(v)
    if found is not None:
        (i,), value, why = found
        if np.isfinite(value):
            raise ValueError(f"{name}[{i}] = {value!r} {why}")
        raise ValueError(f"{name} contains NaN or infinite targets (first at position {i}); drop or impute them")
    return writeable_contiguous(v)


class EngineEstimator(ModelLock, BaseEstimator):
    """Base of the array-API estimators: a fitted estimator holds ``_engine`` and ``n_features_in_``.

    Subclasses define ``_new_engine(...)`` (a fresh engine from the parameters,
    validating them) and may keep learnt state beside the engine's with
    ``_face_state`` (what to save) and ``_face_attrs`` (what to restore).  Fitting, prediction,
    saving and the fitted attributes take the model's lock (:mod:`onlinemkl._sync`): one
    estimator can be shared by several threads.
    """

    _scaling = None  # the input scaling (onlinemkl._scaling.InputScaling) of the scale parameter, if any

    # -- input ------------------------------------------------------------------------------

    def _new_scaling(self):
        """The input scaling of the ``scale`` parameter (:func:`onlinemkl._scaling.scaling_of`)."""
        return scaling_of(self)

    def _scaled(self, X):
        """Rows to predict as the learner sees them (the input scaling applied, statistics unchanged)."""
        return X if self._scaling is None else self._scaling.rows(X)

    def _rows(self, X, first=False):
        """Validated float64 rows; after the first fit, with the fitted number of features."""
        return check_rows(X, n_features=None if first else self.n_features_in_, owner=type(self).__name__)

    def _fitted_engine(self):
        check_is_fitted(self, "_engine")
        return self._engine

    def _targets(self, y, n_rows):
        return check_targets(y, n_rows, owner=type(self).__name__)

    # -- attributes -------------------------------------------------------------------------

    @property
    def n_support_(self):
        """Stored examples (support vectors or the support window)."""
        return self._fitted_engine().n_support

    # -- persistence (the onlinemkl.persist protocol) ---------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        The write is atomic; see :mod:`onlinemkl.persist` for the format.  Returns the path.
        """
        from .persist import save

        return save(self, path)

    def _face_state(self):
        """``(state, arrays)`` the estimator keeps beside its engine's (e.g. ``classes_``)."""
        return {}, {}

    def _face_attrs(self, state, arrays) -> dict:
        """The attributes :meth:`_face_state` saved, checked; set once the whole state is restored."""
        return {}

    def _engine_for(self, attrs):
        """A fresh engine for a saved state with the face attributes ``attrs``."""
        return self._new_engine()

    def _get_state(self):
        if not hasattr(self, "_engine"):
            return {"fitted": False}, {}
        params, arrays = state_with_settings(self._engine)
        face_state, face_arrays = self._face_state()
        state = {"fitted": True, "engine": params, "n_features_in_": int(self.n_features_in_), **face_state}
        if self._scaling is not None:
            state["scaling"], scaling_arrays = self._scaling.state()
            face_arrays = {**face_arrays, **scaling_arrays}
        return state, {**arrays, **face_arrays}

    def _set_state(self, state, arrays):
        """Restore onto a fresh estimator built from the saved parameters; a ``ValueError`` names
        the rule an inconsistent state breaks (the estimator is unchanged then)."""
        if not state.get("fitted"):
            return
        attrs = self._face_attrs(state, arrays)
        saved = kernels_of_state(state["engine"], arrays, lambda: self._engine_for(attrs))
        with restoring_kernels(self, saved):  # the engine is built with them
            fresh = self._engine_for(attrs)
            n_outputs = getattr(fresh, "n_outputs", None)  # what the face's classes imply
            engine = engine_for_state(fresh, state["engine"], self)  # built with the saved settings
            engine.set_state(state["engine"], arrays)
            if getattr(engine, "n_outputs", None) != n_outputs:
                raise ValueError(f"the engine has {engine.n_outputs} outputs where the estimator has {n_outputs}")
            n_in = int(state["n_features_in_"])
            if n_in != engine.n_features or n_in < 1:
                raise ValueError(f"n_features_in_={n_in} but the engine has {engine.n_features} features")
            scaling = None
            if state.get("scaling") is not None:
                if getattr(self, "scale", False) is False:
                    raise ValueError("the state holds input scaling statistics but the estimator has scale=False")
                scaling = InputScaling(self.scale)
                scaling.restore(state["scaling"], arrays, n_in)
        if scaling is None and getattr(self, "scale", False) is not False:
            self.scale = False  # a file written before the parameter (or with scale=False): inputs as they come
        self.__dict__.update(attrs)
        self._engine, self.n_features_in_, self._scaling = engine, n_in, scaling


class EngineClassifier(EngineEstimator):
    """Base of the array-API classifiers: ``classes_`` (sorted) and the label map over it.

    ``_new_engine(classes)`` builds the engine for those classes.
    """

    def _first_classes(self, classes):
        """``partial_fit``'s ``classes`` on the first call: required, at least 2."""
        if classes is None:
            raise ValueError("classes must be given on the first call to partial_fit, e.g. classes=[0, 1, 2]")
        classes = np.unique(np.asarray(classes))
        if len(classes) < 2:
            raise ValueError(f"classes={classes.tolist()!r}: a classifier needs at least 2 classes")
        return classes

    def _same_classes(self, classes):
        """``partial_fit``'s ``classes`` on a later call: None or the first call's."""
        if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes={list(classes)!r} differs from the first call's {self.classes_.tolist()}")

    def _partial_fit_batch(self, X, y, classes):
        """``partial_fit``'s batch checked, then committed: returns the engine, the rows (scaled) and
        the encoded labels.

        ``classes`` is required on the first call and, when given later, must be the first call's.
        Everything is checked before the face changes, so a rejected batch leaves the model unchanged.
        """
        first = not hasattr(self, "_engine")
        X = self._rows(X, first)
        y = check_labels(y, X.shape[0])
        if first:
            classes = self._first_classes(classes)
            engine = self._new_engine(classes)
            engine.set_features(X.shape[1])
            scaling = self._new_scaling()
        else:
            self._same_classes(classes)
            engine, classes, scaling = self._engine, self.classes_, self._scaling
        yi = self._encode(y, classes, self._binary_labels(engine, classes))
        if scaling is not None:
            X = scaling.learn_rows(X)
        self._engine, self.classes_, self.n_features_in_, self._scaling = engine, classes, X.shape[1], scaling
        return engine, X, yi

    @staticmethod
    def _binary_labels(engine, classes) -> bool:
        """Whether labels are encoded as -1/+1 for one output (two classes) rather than as indices."""
        return len(classes) == 2

    @staticmethod
    def _fit_classes(y):
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"y has 1 class (a single class, {classes[0].item()!r}); a classifier needs at least 2")
        return classes

    @staticmethod
    def _encode(y, classes, binary):
        """Labels -> output indices (or -1/+1 when ``binary``) over ``classes``."""
        return LabelMap.from_classes(classes).encode(y, binary)

    def _predict_from_scores(self, s, threshold_inclusive=False):
        """Labels from :meth:`decision_function`'s scores (1-D: the sign picks ``classes_[1]``)."""
        if s.ndim == 1:
            return self.classes_[((s >= 0) if threshold_inclusive else (s > 0)).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    def predict_proba(self, X):
        """Class probabilities, shape (n, n_classes), columns in the order of ``classes_``.

        The softmax of :meth:`decision_function`'s class scores; with two classes, the logistic
        function of the score for ``classes_[1]`` (``1 / (1 + exp(-s))``).  The mapping is the river
        face's ``predict_proba_one`` (:func:`onlinemkl._proba.class_probabilities`), so both faces
        give the same probabilities for the same scores.  They rank the classes as the scores do
        but are calibrated only for a logistic loss (``ProximalMKLClassifier(loss='logistic')``);
        a hinge loss gives scores of arbitrary scale.
        """
        s = self.decision_function(X)
        return class_probabilities(s, s.ndim == 1)

    def _face_state(self):
        classes = np.asarray(self.classes_)
        if classes.dtype.kind == "O":
            return {"classes_": classes.tolist()}, {}
        return {}, {"classes_": classes}

    def _face_attrs(self, state, arrays):
        if "classes_" in arrays:
            classes = arrays["classes_"]
        else:
            labels = list(state["classes_"])
            classes = np.empty(len(labels), dtype=object)
            for i, lab in enumerate(labels):
                classes[i] = lab
        if classes.ndim != 1 or len(classes) < 2:
            raise ValueError(f"classes_ must be 1-D with at least 2 labels; got shape {classes.shape}")
        if not np.array_equal(np.unique(classes), classes):
            raise ValueError("classes_ must be sorted and unique")
        return {"classes_": classes}

    def _engine_for(self, attrs):
        return self._new_engine(attrs["classes_"])


class MiniBatchRegressor(EngineEstimator):
    """Base of the mini-batch regressors (PolyMKL, non-linear KRR): the engine learns whole batches.

    ``fit`` feeds the rows in order in mini-batches of ``budget`` rows (one batch if ``budget``
    is None), warm-starting each from the last; ``partial_fit`` feeds one batch.  A subclass
    declares its parameters (which include ``budget``) and ``_new_engine()``.
    """

    def fit(self, X, y):
        """Learn from scratch: mini-batches of ``budget`` rows in order (one batch if ``budget`` is None)."""
        engine = self._new_engine()
        X = self._rows(X, first=True)
        y = self._targets(y, X.shape[0])
        engine.check_columns(X.shape[1])
        step = X.shape[0] if self.budget is None else self.budget
        for start in range(0, X.shape[0], step):
            engine.learn_many(X[start:start + step], y[start:start + step])
        self._engine, self.n_features_in_ = engine, X.shape[1]
        return self

    def partial_fit(self, X, y):
        """Learn from one mini-batch, warm-starting from the previous one.  A rejected batch changes nothing."""
        first = not hasattr(self, "_engine")
        X = self._rows(X, first)
        y = self._targets(y, X.shape[0])
        engine = self._new_engine() if first else self._engine
        engine.check_columns(X.shape[1])
        engine.learn_many(X, y)
        self._engine, self.n_features_in_ = engine, X.shape[1]
        return self

    def predict(self, X):
        return self._fitted_engine().predict_many(self._rows(X))

    @property
    def objective_(self):
        """The objective after each iteration of the last batch."""
        return np.asarray(self._fitted_engine().history)
