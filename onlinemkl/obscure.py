"""OBSCURE: online-batch strongly convex multi kernel learning (Orabona, Jie & Caputo 2012).

Two faces over one engine:

* :class:`OBSCUREClassifier` -- the array API (scikit-learn estimator:
  ``fit``, ``partial_fit``, ``predict``, ``decision_function``, ...);
* :class:`onlinemkl.river.OBSCUREClassifier` -- the river classifier (dicts).

Both drive :class:`ObscureEngine`, which owns the state (plain numpy arrays)
and makes exactly one compiled call per example.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._core import obscure as _co
from ._obscure_engine import (  # noqa: F401  (re-exported: the engine's historic home)
    AUTO_SWITCH_CLEAN_RUN,
    EVICTION,
    ObscureEngine,
    check_switch_after,
    default_eta,
    default_p,
    encode_labels,
    hinge_losses,
    stream_step,
)
from ._validation import check_choice, check_number, check_rows, check_target
from .kernels import check_kernels

__all__ = ["OBSCUREClassifier", "ObscureEngine", "default_p", "default_eta"]

#: ``fit`` precomputes the training set's kernel matrices (BLAS) when they fit in this many bytes.
KERNEL_CACHE_BYTES = 1 << 30


def check_labels(y, n_rows):
    """A 1-D array of classification labels, one per row."""
    y = check_target(y, n_rows, what="label")
    check_classification_targets(y)
    return y



class OBSCUREClassifier(ClassifierMixin, BaseEstimator):
    """OBSCURE multiple kernel classifier: p-norm MKL, online stage 1 + stochastic stage 2.

    Learns a kernel predictor and the weight of each kernel, one example at a
    time (``partial_fit``) or from a data set (``fit``: epochs of stage 1 until
    an epoch without margin errors, then epochs of stage 2 on random examples,
    as the authors' toolbox).

    Parameters
    ----------
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        The kernels to combine; None uses :func:`onlinemkl.kernels.default_kernels`
        (three RBF bandwidths, linear and quadratic; meant for standardised inputs).
    p : float in (1, 2], default None
        The group norm ``||w||_{2,p}``.  Near 1 gives sparse kernel weights, 2 the
        plain sum of kernels.  None: the authors' ``q = 2 ln F``, ``p = q/(q-1)``.
    lam : float > 0, default None
        Regularisation ``lambda`` of the objective ``lambda/2 ||w||_{2,p}^2 + mean loss``.
        None: ``1 / (C N)`` with ``N`` the training set size in ``fit``, or the
        number of examples seen at the switch in ``partial_fit``.
    C : float > 0, default 1.0
        The SVM-style constant used when ``lam`` is None.
    eta : float > 0, default None
        Stage-1 step size; None: the authors' ``F^(-2/q)``.
    stage1_epochs, stage2_epochs : int, default 5
        Epochs of each stage in ``fit`` (stage 1 stops early after an epoch
        without margin errors; ``stage2_epochs=0`` gives stage 1 only).
    switch_after : int, 'auto' or None, default 'auto'
        ``partial_fit``: when stage 2 starts.  An int: after that many examples;
        'auto': once stage-1 updates stop (500 consecutive examples without a
        margin error; a noisy stream may never switch); None: stage 1 only.
        The radius ``R`` then comes from the stage-1 norm and the mean online
        hinge loss of stage 1.
    pegasos : bool, default False
        Stage 2 with ``s_t = 0``: the paper's Pegasos-MKL baseline.
    budget : int or None, default None
        Maximum stored examples (None: unbounded; memory grows with the number of updates).
    eviction : {'oldest', 'least_impact'}, default 'oldest'
        Which stored example a full buffer drops: the oldest (sliding window),
        or the one whose removal changes the predictor least.
    loss : {'auto', 'hinge', 'multiclass_hinge'}, default 'auto'
        'auto': binary hinge for two classes, Crammer-Singer hinge for more.
    random_state : int or None, default None
        Seed of the random example order in ``fit``.

    Attributes
    ----------
    classes_ : ndarray
    kernel_weights_ : ndarray of shape (n_kernels,)
        Normalised ``||w^j||`` (sums to 1).
    n_support_ : int
    stage_ : int
    R_ : float or None
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from onlinemkl import OBSCUREClassifier
    >>> from onlinemkl.kernels import RBF, Linear
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = OBSCUREClassifier(kernels=[RBF(gamma=0.5), Linear()], random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.kernel_weights_.shape
    (2,)
    """

    def __init__(self, kernels=None, p=None, lam=None, C=1.0, eta=None, stage1_epochs=5, stage2_epochs=5,
                 switch_after="auto", pegasos=False, budget=None, eviction="oldest", loss="auto",
                 random_state=None):
        self.kernels = kernels
        self.p = p
        self.lam = lam
        self.C = C
        self.eta = eta
        self.stage1_epochs = stage1_epochs
        self.stage2_epochs = stage2_epochs
        self.switch_after = switch_after
        self.pegasos = pegasos
        self.budget = budget
        self.eviction = eviction
        self.loss = loss
        self.random_state = random_state

    # -- validation ----------------------------------------------------------------------

    def _checked_params(self):
        kernels = check_kernels(self.kernels)
        F = len(kernels)
        p = default_p(F) if self.p is None else check_number(
            "p", self.p, low=1.0, high=2.0, low_open=True,
            hint=" (OBSCURE needs 1 < p <= 2; use p close to 1, e.g. 1.01, for sparse kernel weights)")
        check_number("lam", self.lam, low=0.0, low_open=True, allow_none=True)
        check_number("C", self.C, low=0.0, low_open=True)
        check_number("eta", self.eta, low=0.0, low_open=True, allow_none=True)
        check_number("stage1_epochs", self.stage1_epochs, low=0, integer=True)
        check_number("stage2_epochs", self.stage2_epochs, low=0, integer=True)
        check_switch_after(self.switch_after)
        check_number("budget", self.budget, low=1, integer=True, allow_none=True)
        check_choice("eviction", self.eviction, tuple(EVICTION))
        check_choice("loss", self.loss, ("auto", "hinge", "multiclass_hinge"))
        return kernels, p

    def _new_engine(self, classes, lam):
        kernels, p = self._checked_params()
        binary = self.loss == "hinge" or (self.loss == "auto" and len(classes) == 2)
        if self.loss == "hinge" and len(classes) != 2:
            raise ValueError(f"loss='hinge' is binary but there are {len(classes)} classes; use loss='multiclass_hinge'")
        eng = ObscureEngine(kernels, p, self.eta, lam, self.budget, self.eviction, bool(self.pegasos), binary,
                            C=self.C)
        eng.set_n_classes(len(classes))
        return eng

    # -- learning ------------------------------------------------------------------------

    def fit(self, X, y):
        """Stage 1 epochs (until one without margin errors), then stage 2 epochs on random examples."""
        X = check_rows(X)
        y = check_labels(y, X.shape[0])
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"y has 1 class (a single class, {classes[0].item()!r}); a classifier needs at least 2")
        self._checked_params()  # before lam = 1/(C N): C = 0 is a parameter error, not a division
        N = X.shape[0]
        lam = self.lam if self.lam is not None else 1.0 / (self.C * N)
        engine = self._new_engine(classes, lam)
        engine.set_features(X.shape[1])
        yi = encode_labels(y, classes, engine.binary)
        self.classes_, self._engine, self.n_features_in_ = classes, engine, X.shape[1]
        rng = np.random.default_rng(self.random_state)
        fast = N * N * engine.ck.n_kernels * 8 <= KERNEL_CACHE_BYTES
        run = engine.fit_pass_precomputed(X, yi) if fast else None
        for _ in range(self.stage1_epochs):
            order = rng.permutation(N)
            if fast:
                errors = run(order)
            else:
                errors = sum(engine.learn(X[i], yi[i])[2] for i in order)
            if errors == 0:
                break
        self.stage1_updates_ = int(engine.istate[_co.I_UPDATES])
        if self.stage2_epochs > 0:
            train_scores = run.train_scores() if fast else engine.scores_many(X)
            mean_loss = float(hinge_losses(train_scores, yi, engine.binary).mean())
            engine.switch_to_stage2(engine.radius_from_loss(mean_loss))
            for _ in range(self.stage2_epochs):
                order = rng.integers(0, N, size=N)
                if fast:
                    run(order)
                else:
                    for i in order:
                        engine.learn(X[i], yi[i])
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn from a mini-batch, one example at a time (stage 1, then stage 2 per ``switch_after``).

        ``classes`` (every label that can ever occur) is required on the first call.
        A rejected batch leaves the model unchanged.
        """
        first = not hasattr(self, "_engine")
        X = check_rows(X, n_features=None if first else self.n_features_in_, owner=type(self).__name__)
        y = check_labels(y, X.shape[0])
        if first:
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit, e.g. classes=[0, 1, 2]")
            classes = np.unique(np.asarray(classes))
            if len(classes) < 2:
                raise ValueError(f"classes={classes.tolist()!r}: a classifier needs at least 2 classes")
            check_switch_after(self.switch_after)
            engine = self._new_engine(classes, self.lam)
            engine.set_features(X.shape[1])
        else:
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
                raise ValueError(f"classes={list(classes)!r} differs from the first call's {self.classes_.tolist()}")
            engine, classes = self._engine, self.classes_
        yi = encode_labels(y, classes, engine.binary)
        # Everything is checked: commit.
        self._engine, self.classes_, self.n_features_in_ = engine, classes, X.shape[1]
        for i in range(X.shape[0]):
            stream_step(engine, X[i], yi[i], self.switch_after)
        return self

    # -- prediction ----------------------------------------------------------------------

    def decision_function(self, X):
        """Scores: shape (n,) for two classes (positive means ``classes_[1]``), else (n, n_classes)."""
        check_is_fitted(self, "_engine")
        X = check_rows(X, n_features=self.n_features_in_, owner=type(self).__name__)
        s = self._engine.scores_many(X)
        return s[:, 0] if self._engine.binary else s

    def predict(self, X):
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    # -- attributes ----------------------------------------------------------------------

    @property
    def kernel_weights_(self):
        check_is_fitted(self, "_engine")
        return self._engine.kernel_weights()

    @property
    def n_support_(self):
        check_is_fitted(self, "_engine")
        return self._engine.n_support

    @property
    def stage_(self):
        check_is_fitted(self, "_engine")
        return self._engine.stage

    @property
    def R_(self):
        check_is_fitted(self, "_engine")
        R = self._engine.hyper[_co.H_R]
        return None if math.isinf(R) else float(R)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        The write is atomic; see :mod:`onlinemkl.persist` for the format.  Returns the path.
        """
        from .persist import save

        return save(self, path)

    def _get_state(self):
        if not hasattr(self, "_engine"):
            return {"fitted": False}, {}
        state, arrays = self._engine._get_state()
        out = {"fitted": True, "engine": state, "n_features_in_": int(self.n_features_in_)}
        if hasattr(self, "stage1_updates_"):
            out["stage1_updates_"] = int(self.stage1_updates_)
        classes = np.asarray(self.classes_)
        if classes.dtype.kind == "O":
            out["classes_"] = classes.tolist()
        else:
            arrays = dict(arrays, classes_=classes)
        return out, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
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
        engine = self._new_engine(classes, self.lam)
        engine._set_state(state["engine"], arrays)
        n_out = engine.n_outputs
        if (engine.binary and len(classes) != 2) or (not engine.binary and n_out != len(classes)):
            raise ValueError(f"{len(classes)} classes but the engine has {n_out} outputs")
        if int(state["n_features_in_"]) != engine.n_features:
            raise ValueError(f"n_features_in_={state['n_features_in_']} but the engine has {engine.n_features}")
        self._engine, self.classes_, self.n_features_in_ = engine, classes, int(state["n_features_in_"])
        if "stage1_updates_" in state:
            self.stage1_updates_ = int(state["stage1_updates_"])
