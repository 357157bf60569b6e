"""OBSCURE: online-batch strongly convex multi kernel learning (Orabona, Jie & Caputo 2012).

Two faces over one engine (:class:`onlinemkl.engines.obscure.ObscureEngine`):

* :class:`OBSCUREClassifier` -- the array API (scikit-learn estimator:
  ``fit``, ``partial_fit``, ``predict``, ``decision_function``, ...);
* :class:`onlinemkl.river.OBSCUREClassifier` -- the river classifier (dicts).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import ClassifierMixin

from ._core import obscure as _co
from ._validation import check_choice, check_number, store_params
from .engines._replay import DEFAULT_WINDOW, check_replay, many_class_steps, replay_seed
from .engines.obscure import MIN_CHUNK, ObscureEngine, check_params, hinge_losses, stream_step
from .kernels import kernels_in_use
from .sklearn import EngineClassifier, check_labels

__all__ = ["OBSCUREClassifier"]

#: ``fit`` precomputes the training set's kernel matrices (BLAS) when they fit in this many
#: bytes (float64, or else float32 computed in row blocks, as LIBSVM's cache keeps single
#: precision), else computes them in blocks of at most half of it per chunk of an epoch (LIBSVM's
#: kernel cache is 200 MB by default).  Half: a block is computed afresh for every chunk, and
#: smaller blocks are as fast (first touch of fresh pages costs as much as it saves).
KERNEL_CACHE_BYTES = 512 << 20

#: ``stage2_epochs='auto'``: this many stage-2 epochs in ``fit`` with up to
#: :data:`FEW_CLASSES` classes, :data:`STAGE2_EPOCHS_MANY` with more.  A multiclass step moves
#: two of the classes' weight vectors, so with more classes each one gets fewer updates per
#: epoch (10 epochs lift the accuracy of data sets with 5 to 26 classes, and cost that of
#: 2- and 3-class sets).
STAGE2_EPOCHS_FEW = 5
STAGE2_EPOCHS_MANY = 10
FEW_CLASSES = 3


class OBSCUREClassifier(ClassifierMixin, EngineClassifier):
    """OBSCURE multiple kernel classifier: p-norm MKL, online stage 1 + stochastic stage 2.

    Learns a kernel predictor and the weight of each kernel, one example at a
    time (``partial_fit``) or from a data set (``fit``: epochs of stage 1 until
    an epoch without margin errors, then epochs of stage 2 on random examples,
    as the authors' toolbox).  ``fit`` reads kernel values from matrices computed
    with BLAS, whole or in blocks per chunk of an epoch, within
    :data:`KERNEL_CACHE_BYTES` of memory whatever the training set's size.

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
    stage1_epochs : int, default 5
        Epochs of stage 1 in ``fit`` (it stops early after an epoch without margin errors).
    stage2_epochs : int or 'auto', default 'auto'
        Epochs of stage 2 in ``fit`` (0: stage 1 only).  'auto': 5 with up to three
        classes, 10 with more (:data:`STAGE2_EPOCHS_FEW`, :data:`STAGE2_EPOCHS_MANY`).
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
        With replay on, a reservoir of up to ``replay_window`` past examples is kept beside
        them (``replay=0``: none).
    eviction : {'least_impact', 'oldest'}, default 'least_impact'
        Which stored example a full buffer drops: the one whose removal changes the
        predictor least (the newest of those tied), or the oldest (a sliding window, for
        drifting streams).  Either way its contribution is first projected onto the stored
        example with the same class pair that keeps most of it (one coefficient for all
        kernels, fitted in the kernels' weighted sum); only the residual is lost.
    loss : {'auto', 'hinge', 'multiclass_hinge'}, default 'auto'
        'auto': binary hinge for two classes, Crammer-Singer hinge for more.
    replay : int >= 0 or 'auto', default 'auto'
        ``partial_fit``: after a margin error, this many extra steps on past examples drawn
        from a reservoir of ``replay_window`` of them (0: off; ``fit`` runs epochs instead);
        'auto': 5, 10 with more than three classes (0 with a budget and ``eviction='oldest'``).
        With a budget and more than two classes, while the buffer has room, on stored examples instead, each step
        adding to its own stored row or to nothing (no row spent on a repeat); once it is full, from the reservoir, an
        update taking the row eviction frees.
    replay_window : int >= 1, default 5000
        Past examples kept for replay (a uniform sample; fewer when rows are very wide).
    random_state : int or None, default None
        Seed of the random example order in ``fit`` and of the replay draws (None: 0 for
        the draws, so that ``partial_fit`` stays reproducible).
    scale : {'auto', True, False}, default 'auto'
        The learner's own standardisation of its inputs, for raw features of any units (the
        default kernels are meant for standardised ones).  'auto': the inputs are used as they
        come until a learnt value shows they are not standardised (magnitude above
        ``max(10, 2 sqrt(n))`` at the n-th example, which no standardised stream reaches), then
        every feature is standardised (mean and deviation estimated over its first 50 values,
        then frozen; ``fit`` uses the whole set's); standardised inputs reach the learner bit for
        bit as they come.  True: always; False: never.  The statistics are saved with the model
        (:mod:`onlinemkl._scaling`).

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

    def __init__(self, kernels=None, p=None, lam=None, C=1.0, eta=None, stage1_epochs=5, stage2_epochs="auto",
                 switch_after="auto", pegasos=False, budget=None, eviction="least_impact", loss="auto",
                 replay="auto", replay_window=DEFAULT_WINDOW, random_state=None, scale="auto"):
        store_params(self, locals())

    # -- validation ----------------------------------------------------------------------

    def _checked_params(self):
        kernels, p = check_params(kernels_in_use(self), self.p, self.lam, self.C, self.eta, self.switch_after,
                                  self.budget, self.eviction)
        check_number("stage1_epochs", self.stage1_epochs, low=0, integer=True)
        if self.stage2_epochs != "auto":
            check_number("stage2_epochs", self.stage2_epochs, low=0, integer=True, hint=" (or 'auto')")
        check_choice("loss", self.loss, ("auto", "hinge", "multiclass_hinge"))
        check_replay(self.replay, self.replay_window, self.budget, eviction=self.eviction)
        return kernels, p

    def _new_engine(self, classes, lam=None):
        """A fresh engine for ``classes``; ``lam`` None: the parameter (``1 / (C N)`` at the stage switch)."""
        lam = self.lam if lam is None else lam
        kernels, p = self._checked_params()
        binary = self.loss == "hinge" or (self.loss == "auto" and len(classes) == 2)
        if self.loss == "hinge" and len(classes) != 2:
            raise ValueError(f"loss='hinge' is binary but there are {len(classes)} classes; use loss='multiclass_hinge'")
        steps = check_replay(self.replay, self.replay_window, self.budget, eviction=self.eviction)
        eng = ObscureEngine(kernels, p, self.eta, lam, self.budget, self.eviction, bool(self.pegasos), binary,
                            C=self.C, replay=steps, replay_many=many_class_steps(self.replay, steps),
                            replay_window=self.replay_window,
                            seed=replay_seed(self.random_state))
        eng.set_n_classes(len(classes))
        return eng

    # -- learning ------------------------------------------------------------------------

    def fit(self, X, y):
        """Stage 1 epochs (until one without margin errors), then stage 2 epochs on random examples."""
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
            fast, run = True, engine.fit_pass_precomputed(X, yi, 0 if fast else int(rows32))
        else:
            run = engine.fit_pass_blocked(X, yi, KERNEL_CACHE_BYTES // 2)
        for _ in range(self.stage1_epochs):
            if run(rng.permutation(N)) == 0:
                break
        self.stage1_updates_ = int(engine.istate[_co.I_UPDATES])
        epochs2 = self.stage2_epochs
        if epochs2 == "auto":
            epochs2 = STAGE2_EPOCHS_FEW if len(classes) <= FEW_CLASSES else STAGE2_EPOCHS_MANY
        if epochs2 > 0:
            train_scores = run.train_scores() if fast else engine.scores_many(X)
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
        yi = self._encode(y, classes, engine.binary)
        # Everything is checked: commit.
        if scaling is not None:
            X = scaling.learn_rows(X)
        self._engine, self.classes_, self.n_features_in_, self._scaling = engine, classes, X.shape[1], scaling
        for i in range(X.shape[0]):
            stream_step(engine, X[i], yi[i], self.switch_after)
        return self

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
        R = self._fitted_engine().hyper[_co.H_R]
        return None if math.isinf(R) else float(R)

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
