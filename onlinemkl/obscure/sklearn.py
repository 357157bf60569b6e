"""OBSCURE: online-batch strongly convex multi kernel learning (Orabona, Jie & Caputo 2012).

Two faces over one engine (:class:`onlinemkl.obscure.engine.ObscureEngine`):

* :class:`OBSCUREClassifier` -- the array API (scikit-learn estimator:
  ``fit``, ``partial_fit``, ``predict``, ``decision_function``, ...);
* :class:`onlinemkl.river.OBSCUREClassifier` -- the river classifier (dicts).
"""

from __future__ import annotations


import numpy as np
from sklearn.base import ClassifierMixin

from .._params import face
from .._replay import check_replay, many_class_steps, replay_seed
from .engine import MIN_CHUNK, PARAMS, ObscureEngine, hinge_losses, resolve_params
from ..kernels import default_fit_kernels, kernels_in_use
from ..sklearn import EngineClassifier, check_labels

__all__ = ["OBSCUREClassifier"]

#: ``fit`` precomputes the training set's kernel matrices (BLAS) when they fit in this many
#: bytes (float64, or else float32 computed in row blocks, as LIBSVM's cache keeps single
#: precision), else computes them in blocks of at most half of it per chunk of an epoch (LIBSVM's
#: kernel cache is 200 MB by default).  Half: a block is computed afresh for every chunk, and
#: smaller blocks are as fast (first touch of fresh pages costs as much as it saves).
KERNEL_CACHE_BYTES = 512 << 20

#: ``stage1_epochs='auto'`` and ``stage2_epochs='auto'``: ``fit``'s epochs of each stage with up to
#: :data:`FEW_CLASSES` classes (``_FEW``) and with more (``_MANY``).  A multiclass step moves two
#: of the classes' weight vectors, so with more classes each one needs more epochs; stage 1
#: stops early after an epoch without margin errors, and its late epochs update few examples
#: (cheap).  Stage 2 restarts its step sizes at ``t = 1``: its first epochs undo much of what
#: stage 1 learnt, which 5 epochs recover on 2- and 3-class sets (and gain on noisy ones) but
#: not on sets of 10 to 26 classes, where 20 stage-1 epochs alone are as accurate as 5 + 10
#: and take a half to a third of the time.
STAGE1_EPOCHS_FEW = 5
STAGE1_EPOCHS_MANY = 20
STAGE2_EPOCHS_FEW = 5
STAGE2_EPOCHS_MANY = 0
FEW_CLASSES = 3


@face(PARAMS, "sklearn")
class OBSCUREClassifier(ClassifierMixin, EngineClassifier):
    """OBSCURE multiple kernel classifier: p-norm MKL, online stage 1 + stochastic stage 2.

    Learns a kernel predictor and the weight of each kernel, one example at a
    time (``partial_fit``) or from a data set (``fit``: epochs of stage 1 until
    an epoch without margin errors, then epochs of stage 2 on random examples,
    as the authors' toolbox).  ``fit`` reads kernel values from matrices computed
    with BLAS, whole or in blocks per chunk of an epoch, within
    :data:`KERNEL_CACHE_BYTES` of memory whatever the training set's size.

    {parameters}

    Notes
    -----
    ``predict_proba`` is the softmax of the class scores (two classes: the logistic function of
    :meth:`decision_function`), columns in the order of ``classes_``: the mapping of the river
    face's ``predict_proba_one``, monotone in the scores but not calibrated probabilities.

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

    # -- validation ----------------------------------------------------------------------

    def _checked_params(self):
        """The validated parameters (the table's rules), ``kernels`` and ``p`` resolved."""
        v = PARAMS.validated(self, "sklearn")
        v["kernels"], v["p"] = resolve_params(kernels_in_use(self, default_fit_kernels), v["p"])
        return v

    def _new_engine(self, classes, lam=None):
        """A fresh engine for ``classes``; ``lam`` None: the parameter (``1 / (C N)`` at the stage switch)."""
        v = self._checked_params()
        lam = v["lam"] if lam is None else lam
        binary = v["loss"] == "hinge" or (v["loss"] == "auto" and len(classes) == 2)
        if v["loss"] == "hinge" and len(classes) != 2:
            raise ValueError(f"loss='hinge' is binary but there are {len(classes)} classes; use loss='multiclass_hinge'")
        steps = check_replay(v["replay"], v["replay_window"], v["budget"], eviction=v["eviction"])
        eng = ObscureEngine(v["kernels"], v["p"], v["eta"], lam, v["budget"], v["eviction"], v["pegasos"], binary,
                            C=v["C"], replay=steps, replay_many=many_class_steps(v["replay"], steps),
                            replay_window=v["replay_window"], seed=replay_seed(v["random_state"]))
        eng.set_n_classes(len(classes))
        return eng

    # -- learning ------------------------------------------------------------------------

    def fit(self, X, y):
        """Stage 1 epochs (until one without margin errors), then stage 2 epochs on random examples
        (with more than three classes, by default stage 1 only: see :data:`STAGE1_EPOCHS_MANY`)."""
        X = self._rows(X, first=True)
        y = check_labels(y, X.shape[0])
        classes = self._fit_classes(y)
        self._checked_params()  # before lam = 1/(C N): C = 0 is a parameter error, not a division
        scaling = self._new_scaling()
        if scaling is not None:
            X = scaling.fit_rows(X)
        N = X.shape[0]
        lam = self.lam if self.lam is not None else 1.0 / (self.C * N)
        engine = self._new_engine(classes, lam)
        engine.set_features(X.shape[1])
        yi = self._encode(y, classes, engine.binary)
        self.classes_, self._engine, self.n_features_in_, self._scaling = classes, engine, X.shape[1], scaling
        rng = np.random.default_rng(self.random_state)
        F = engine.ck.n_kernels
        fast = N * N * (F + 3) * 8 <= KERNEL_CACHE_BYTES  # as fit_pass_blocked counts
        # else float32 matrices, computed in row blocks whose float64 work fits beside them
        rows32 = 0 if fast else (KERNEL_CACHE_BYTES - N * N * F * 4) // (N * (F + 3) * 8)
        if fast or rows32 >= MIN_CHUNK:
            run = engine.fit_pass_precomputed(X, yi, 0 if fast else int(rows32))
        else:
            run = engine.fit_pass_blocked(X, yi, KERNEL_CACHE_BYTES // 2)
        few = len(classes) <= FEW_CLASSES
        epochs1 = self.stage1_epochs
        if epochs1 == "auto":
            epochs1 = STAGE1_EPOCHS_FEW if few else STAGE1_EPOCHS_MANY
        for _ in range(epochs1):
            if run(rng.permutation(N)) == 0:
                break
        self.stage1_updates_ = engine.updates
        epochs2 = self.stage2_epochs
        if epochs2 == "auto":
            epochs2 = STAGE2_EPOCHS_FEW if few else STAGE2_EPOCHS_MANY
        if epochs2 > 0:
            train_scores = run.train_scores()
            mean_loss = float(hinge_losses(train_scores, yi, engine.binary).mean())
            engine.switch_to_stage2(engine.radius_from_loss(mean_loss))
            for _ in range(epochs2):
                run(rng.integers(0, N, size=N))
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn from a mini-batch, one example at a time (stage 1, then stage 2 per ``switch_after``).

        ``classes`` (every label that can ever occur) is required on the first call.
        A rejected batch leaves the model unchanged.
        """
        engine, X, yi = self._partial_fit_batch(X, y, classes)
        for i in range(X.shape[0]):
            engine.stream_learn(X[i], yi[i], self.switch_after)
        return self

    @staticmethod
    def _binary_labels(engine, classes) -> bool:
        return engine.binary  # the loss decides: the binary hinge has one output

    # -- prediction ----------------------------------------------------------------------

    def decision_function(self, X):
        """Scores: shape (n,) for two classes (positive means ``classes_[1]``), else (n, n_classes)."""
        engine = self._fitted_engine()
        s = engine.scores_many(self._scaled(self._rows(X)))
        return s[:, 0] if engine.binary else s

    def predict(self, X):
        return self._predict_from_scores(self.decision_function(X))

    # -- attributes ----------------------------------------------------------------------

    @property
    def kernel_weights_(self):
        return self._fitted_engine().kernel_weights()

    @property
    def stage_(self):
        return self._fitted_engine().stage

    @property
    def R_(self):
        return self._fitted_engine().radius

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

    # -- persistence: the base's, with the stage-1 update count ------------------------

    def _face_state(self):
        state, arrays = super()._face_state()
        if hasattr(self, "stage1_updates_"):
            state["stage1_updates_"] = int(self.stage1_updates_)
        return state, arrays

    def _face_attrs(self, state, arrays):
        attrs = super()._face_attrs(state, arrays)
        if "stage1_updates_" in state:
            attrs["stage1_updates_"] = int(state["stage1_updates_"])
        return attrs
