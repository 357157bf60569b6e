"""Online proximal MKL (Martins, Smith, Xing, Aguiar & Figueiredo 2011): kernelised FOBOS.

The array-API faces :class:`ProximalMKLClassifier` and
:class:`ProximalMKLRegressor` over :class:`onlinemkl.engines.proximal.ProximalEngine`
(the algorithm and its options are described there); the river adapters are
in :mod:`onlinemkl.river`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from ._sync import ModelLock
from ._validation import store_params
from .engines._replay import DEFAULT_WINDOW
from .engines.proximal_setup import classifier_engine, regressor_engine
from .sklearn import EngineClassifier, EngineEstimator, check_labels

__all__ = ["ProximalMKLClassifier", "ProximalMKLRegressor"]


class _ProximalFace(ModelLock):
    """The fitted attributes every proximal learner shares (the sequence labeller's too; under the model lock)."""

    @property
    def kernel_weights_(self):
        """``beta_k = ||theta_k|| / sum_l ||theta_l||`` per group (kernels, then explicit groups)."""
        return self._fitted_engine().kernel_weights()

    @property
    def zero_groups_(self):
        """Boolean mask of the groups that are exactly zero."""
        return self._fitted_engine().group_norms() == 0.0


_COMMON_DOC = """
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        Implicit kernel groups (None: the default set).
    explicit_groups : tuple of feature groups, default None
        Extra groups kept in the primal as linear weight matrices (a group is
        None for all features or a tuple of columns).
    regularizer : {'sq_l21', 'weighted_sq_l1', 'l21', 'sparse_group_lasso', 'nonsparse', 'elastic_net', 'none'}
        'sq_l21' is MKL, ``0.5 (sum_k ||theta_k||)^2``; 'l21' the group lasso;
        'weighted_sq_l1' uses ``group_weights``; 'nonsparse' ``0.5 sum ||theta_k||^q``;
        'elastic_net' ``sum ||theta_k|| + sigma/2 ||theta||^2``; 'sparse_group_lasso'
        adds an l1 term (weight ``l1_ratio * lam``) inside explicit groups.
    lam : float >= 0, default 1e-4
    q : float in (1, 2], default 1.5  (regularizer='nonsparse')
    sigma : float >= 0, default 1.0  (regularizer='elastic_net')
    l1_ratio : float >= 0, default 1.0  (regularizer='sparse_group_lasso')
    group_weights : sequence of float or None  (regularizer='weighted_sq_l1')
    schedule : {'invsqrt', 'constant', 'strongly_convex'}, default 'invsqrt'
        ``eta0/sqrt(t)``, ``eta0``, or ``1/(modulus t)`` for a strongly convex regulariser (Prop. 5).
    eta0 : float > 0 or 'auto', default 1.0
        The initial step size.  'auto' (classifiers; the river classifier's default): 1.0 with up
        to three classes, 2.0 with more (a multiclass step moves two classes' weights).
    gamma : float, 'auto' or None, default 'auto'
        Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)``
        where the regulariser is strongly convex (otherwise no projection).
    average : bool, default False
        Predict with the averaged model ``(1/T) sum_t theta_t`` (kept without storing history).
    budget : int or None; eviction : {'oldest', 'least_impact'}
        As in OBSCURE.
    replay : int >= 0 or 'auto', default 'auto' (classifier), 0 (regressor)
        After a step with a positive loss, this many extra steps on past examples drawn
        from a reservoir of ``replay_window`` of them (0: off); in ``partial_fit`` and in
        ``fit``'s epochs alike.  'auto': 5 (0 with a budget and ``eviction='oldest'``).
        Under a budget the classifier replays once its buffer is full (replay while it
        has room would spend the rows 'least_impact' keeps on repeats), the regressor
        while it has room.  The reservoir is kept beside the budget.  The regressor's
        default is off: it helped on some regression streams and hurt badly on others
        (docs/defaults.md).
    replay_window : int >= 1, default 5000
        Past examples kept for replay (a uniform sample; fewer when rows are very wide).
    n_epochs : int, default 1
        Passes over the data in ``fit`` (random order).
    random_state : int or None
        Seed of ``fit``'s example order and of the replay draws (None: 0 for the draws).
"""

# The flat learners evict with a projection onto a partner (onlinemkl._core.group_evict.evict_and_merge)
# and default to 'least_impact'; the sequence labeller reuses _COMMON_DOC with plain removal.
_FLAT_BUDGET_DOC = _COMMON_DOC.replace("""    budget : int or None; eviction : {'oldest', 'least_impact'}
        As in OBSCURE.
""", """    budget : int or None
        Maximum number of stored examples (None: unbounded).  With replay on, a reservoir of
        up to ``replay_window`` past examples is kept beside them (``replay=0``: none).
    eviction : {'least_impact', 'oldest'}, default 'least_impact'
        What a full buffer drops: the stored example with the smallest contribution
        ``||Delta theta||^2``, or the oldest (a sliding window, for drifting streams).
        Either way its contribution is first projected, per kernel group, onto the
        stored example with a parallel class vector that keeps most of it (always
        possible with one output: binary classification and regression; the same
        class pair for the multiclass hinge); the averaged model's share moves with
        it, and only the residual is lost.  With the decaying step sizes the oldest
        examples carry the largest coefficients, so 'oldest' costs accuracy on
        stationary data (the averaged model, which weights each example by its time
        in the model, the most).
""") + """    scale : {'auto', True, False}, default 'auto'
        The learner's own standardisation of its inputs, for raw features of any units (the
        default kernels are meant for standardised ones).  'auto': the inputs are used as they
        come until a learnt value shows they are not standardised (magnitude above
        ``max(10, 2 sqrt(n))`` at the n-th example, which no standardised stream reaches), then
        every feature is standardised (mean and deviation estimated over its first 50 values,
        then frozen; ``fit`` uses the whole set's); standardised inputs reach the learner bit for
        bit as they come.  True: always; False: never.  The statistics are saved with the model
        (:mod:`onlinemkl._scaling`).
"""


class ProximalMKLClassifier(ClassifierMixin, _ProximalFace, EngineClassifier):
    __doc__ = """Online proximal MKL classifier (kernelised FOBOS with group-norm proximal steps).

    Parameters
    ----------
    loss : {'hinge', 'logistic'}, default 'hinge'
        Binary hinge / logistic for two classes, Crammer-Singer hinge / multinomial
        logistic for more.
    group_steps : {'equal', 'norms'}, default 'equal'
        How a gradient step is split among the groups, as :class:`ProximalMKLRegressor`'s.
        The river classifier's one pass defaults to 'norms'; ``fit``'s epochs have not been
        evaluated with it, so the default here is 'equal'.""" + _FLAT_BUDGET_DOC + """
    ``predict_proba`` is the softmax of the class scores (two classes: the logistic function of
    :meth:`decision_function`), columns in the order of ``classes_``: the mapping of the river
    face's ``predict_proba_one``; calibrated for ``loss='logistic'``, only monotone in the scores
    for the hinge loss.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from onlinemkl import ProximalMKLClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = ProximalMKLClassifier(n_epochs=3, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    def __init__(self, kernels=None, explicit_groups=None, loss="hinge", regularizer="sq_l21", lam=1e-4, q=1.5,
                 sigma=1.0, l1_ratio=1.0, group_weights=None, schedule="invsqrt", eta0=1.0, gamma="auto",
                 average=False, budget=None, eviction="least_impact", replay="auto",
                 replay_window=DEFAULT_WINDOW, n_epochs=1, random_state=None, group_steps="equal", scale="auto"):
        store_params(self, locals())

    def _new_engine(self, classes):
        return classifier_engine(self, len(classes))

    def _learn_rows(self, engine, X, yi, order):
        for i in order:
            engine.stream_learn(X[i], yi[i])

    def fit(self, X, y):
        X = self._rows(X, first=True)
        y = check_labels(y, X.shape[0])
        classes = self._fit_classes(y)
        engine = self._new_engine(classes)
        engine.set_features(X.shape[1])
        yi = self._encode(y, classes, len(classes) == 2)
        scaling = self._new_scaling()
        if scaling is not None:
            X = scaling.fit_rows(X)
        self.classes_, self._engine, self.n_features_in_, self._scaling = classes, engine, X.shape[1], scaling
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            self._learn_rows(engine, X, yi, rng.permutation(X.shape[0]))
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn from a mini-batch in order; ``classes`` is required on the first call."""
        first = not hasattr(self, "_engine")
        X = self._rows(X, first)
        y = check_labels(y, X.shape[0])
        if first:
            classes = self._first_classes(classes)
            engine = self._new_engine(classes)
            engine.set_features(X.shape[1])
            scaling = self._new_scaling()
        else:
            engine, classes, scaling = self._engine, self.classes_, self._scaling
        yi = self._encode(y, classes, len(classes) == 2)
        if scaling is not None:
            X = scaling.learn_rows(X)
        self._engine, self.classes_, self.n_features_in_, self._scaling = engine, classes, X.shape[1], scaling
        self._learn_rows(engine, X, yi, range(X.shape[0]))
        return self

    def decision_function(self, X):
        s = self._fitted_engine().scores_many(self._scaled(self._rows(X)))
        return s[:, 0] if len(self.classes_) == 2 else s

    def predict(self, X):
        return self._predict_from_scores(self.decision_function(X), threshold_inclusive=True)


class ProximalMKLRegressor(RegressorMixin, _ProximalFace, EngineEstimator):
    __doc__ = """Online proximal MKL regressor (kernelised FOBOS with group-norm proximal steps).

    Parameters
    ----------
    loss : {'squared', 'epsilon_insensitive'}, default 'squared'
    epsilon : float >= 0, default 0.1
        Width of the epsilon-insensitive loss, in units of the target's standard deviation.
    group_steps : {'equal', 'norms'}, default 'equal'
        How a gradient step is split among the groups.  'equal': every group takes the
        same step, so a group's part of the prediction moves in proportion to its
        ``K(x, x)``.  'norms': a larger share to the groups with larger norms (the
        kernels the data has used so far), the step's total length unchanged; it learns
        interactions held by one kernel faster in one pass (the river regressor's
        default; :mod:`onlinemkl._core.group_steps` says why).""" + _FLAT_BUDGET_DOC + """
    Defaults differ from the classifier's where regression needs it:
    ``kernels=None`` uses :func:`onlinemkl.kernels.default_regression_kernels`,
    ``lam=1e-2``, ``eta0=0.1``, the averaged model and 3 epochs in ``fit``.
    Targets are standardised online by their running mean and standard
    deviation (an intercept and a scale learnt from the stream), so ``eta0``
    and ``epsilon`` do not depend on the target's units.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinemkl import ProximalMKLRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> reg = ProximalMKLRegressor(n_epochs=3, random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    def __init__(self, kernels=None, explicit_groups=None, loss="squared", epsilon=0.1, regularizer="sq_l21",
                 lam=1e-2, q=1.5, sigma=1.0, l1_ratio=1.0, group_weights=None, schedule="invsqrt", eta0=0.1,
                 gamma=None, average=True, budget=None, eviction="least_impact", replay=0,
                 replay_window=DEFAULT_WINDOW, n_epochs=3, random_state=None, group_steps="equal", scale="auto"):
        store_params(self, locals())

    def _new_engine(self):
        return regressor_engine(self)

    def fit(self, X, y):
        X = self._rows(X, first=True)
        y = self._targets(y, X.shape[0])
        engine = self._new_engine()
        engine.set_features(X.shape[1])
        scaling = self._new_scaling()
        if scaling is not None:
            X = scaling.fit_rows(X)
        self._engine, self.n_features_in_, self._scaling = engine, X.shape[1], scaling
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            for i in rng.permutation(X.shape[0]):
                engine.stream_learn(X[i], y[i])
        return self

    def partial_fit(self, X, y):
        first = not hasattr(self, "_engine")
        X = self._rows(X, first)
        y = self._targets(y, X.shape[0])
        if first:
            engine = self._new_engine()
            engine.set_features(X.shape[1])
            scaling = self._new_scaling()
        else:
            engine, scaling = self._engine, self._scaling
        if scaling is not None:
            X = scaling.learn_rows(X)
        self._engine, self.n_features_in_, self._scaling = engine, X.shape[1], scaling
        for i in range(X.shape[0]):
            engine.stream_learn(X[i], y[i])
        return self

    def predict(self, X):
        return self._fitted_engine().predict_many(self._scaled(self._rows(X)))
