"""From a proximal face's parameters to its engine: validation (once, for every face) and the
engine's construction.

:func:`settings` validates what every proximal learner shares (flat and structured),
:func:`classifier_engine` / :func:`regressor_engine` build a
:class:`~onlinemkl.proximal.engine.ProximalEngine` with the face's loss.  Kept apart from the
engine so that a rule about parameters does not grow the engine's module.
"""

from __future__ import annotations

import math

import numpy as np

from .._buffer import EVICTION
from .._lazy import lazy_module
from .._params import Bool, Choice, Param, Rule, Table, number
from .._replay import DEFAULT_WINDOW, SEED_PARAMS, check_replay, replay_seed, river_seed
from .._scaling import SCALE_PARAM
from .._validation import check_number
from ..features import FEATURE_CAP_PARAMS
from ..kernels import KERNELS_RULE, Linear, default_regression_kernels, kernels_in_use
from .engine import CLASSIFICATION_LOSSES, GROUP_STEPS, REGRESSION_LOSSES, REGULARIZERS, SCHEDULES, ProximalEngine

_cl = lazy_module("onlinemkl.proximal._losses")

__all__ = ["CLASSIFIER_PARAMS", "REGRESSOR_PARAMS", "common_rows", "settings", "check_eta0", "auto_gamma",
           "make_engine", "classifier_engine", "regressor_engine", "AUTO_ETA0", "AUTO_ETA0_MANY"]

#: ``eta0='auto'`` (the river classifier's default): :data:`AUTO_ETA0` while at most
#: :data:`~onlinemkl._replay.FEW_CLASSES` classes are known, :data:`AUTO_ETA0_MANY` past them.
AUTO_ETA0 = 1.0
AUTO_ETA0_MANY = 4.0


def check_eta0(eta0, regression: bool) -> tuple[float, float]:
    """``(eta0 with few classes, eta0 with many)`` from ``eta0``: a number > 0 (both the same) or
    ``'auto'`` (classifiers only).

    Why 'auto' steps further past three classes: a Crammer-Singer step moves the weights of two
    classes (the true one and the highest-scoring wrong one), so with many classes each class's
    weights take a smaller share of the steps; a longer step makes up for it, as OBSCURE's replay
    takes more steps past three classes (:func:`~onlinemkl._replay.many_class_steps`).
    """
    if eta0 == "auto":
        if regression:
            raise ValueError("eta0='auto' is for the classifiers; give a regressor a number > 0 "
                             "(its default is 0.3 on the river face, 0.1 on the scikit-learn one)")
        return AUTO_ETA0, AUTO_ETA0_MANY
    value = check_number("eta0", eta0, low=0.0, low_open=True, hint=" (the initial step size; or 'auto')")
    return value, value


def check_eta0_param(name, value):
    if value == "auto":
        return value
    return check_number(name, value, low=0.0, low_open=True, hint=" (the initial step size; or 'auto')")


def check_gamma_param(name, value):
    if value is None or value == "auto":
        return value
    return check_number(name, value, low=0.0, low_open=True, hint=" (or 'auto', or None)")


def check_group_weights_param(name, value):
    if value is not None and not isinstance(value, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}={value!r}: expected a sequence of positive numbers (one per group) or None")
    return value


def _check_explicit_groups(name, value):
    check_explicit_groups(value)
    return value


def check_replay_param(name, value):
    check_replay(value, 1)
    return value


_EVICTION_DOC = (
    "What a full buffer drops: the stored example with the smallest contribution ``||Delta theta||^2``,\n"
    "or the oldest (a sliding window, for drifting streams).  Either way its contribution is first\n"
    "projected, per kernel group, onto the stored example with a parallel class vector that keeps most of\n"
    "it (always possible with one output: binary classification and regression; the same class pair for\n"
    "the multiclass hinge); the averaged model's share moves with it, and only the residual is lost.  With\n"
    "the decaying step sizes the oldest examples carry the largest coefficients, so 'oldest' costs\n"
    "accuracy on stationary data (the averaged model, which weights each example by its time in the\n"
    "model, the most).")

_GROUP_STEPS_DOC = (
    "How a gradient step is split among the groups.  'equal': every group takes the same step, so a\n"
    "group's part of the prediction moves in proportion to its ``K(x, x)``.  'norms': a larger share to\n"
    "the groups with larger norms (the kernels the data has used so far), the step's total length\n"
    "unchanged; in one pass the kernel a stream needs learns faster (interactions held by one kernel).")
_GROUP_STEPS_FIT = ("``fit``'s epochs default to 'equal': the norms of an early epoch are a poor guide to\n"
                    "a split that later epochs correct anyway, and 'equal' is the setting ``fit`` was measured with.")


def common_rows(eviction_default="least_impact", eviction_doc=_EVICTION_DOC):
    """The rows every proximal learner shares, in signature order after ``kernels`` and the loss:
    ``(regularizer ... group_weights, schedule)`` and ``(budget, eviction)``, as two tuples."""
    regularisation = (
        Param("regularizer", Choice(tuple(REGULARIZERS)), "sq_l21",
              "'sq_l21' is MKL, ``0.5 (sum_k ||theta_k||)^2``; 'l21' the group lasso; 'weighted_sq_l1' uses\n"
              "``group_weights``; 'nonsparse' ``0.5 sum ||theta_k||^q``; 'elastic_net'\n"
              "``sum ||theta_k|| + sigma/2 ||theta||^2``; 'sparse_group_lasso' adds an l1 term (weight\n"
              "``l1_ratio * lam``) inside explicit groups; 'none' no regulariser."),
    )
    shape = (
        Param("q", number("float in (1, 2]", low=1.0, high=2.0, low_open=True), 1.5,
              "The exponent of ``regularizer='nonsparse'``."),
        Param("sigma", number("float >= 0", low=0.0), 1.0, "The l2 weight of ``regularizer='elastic_net'``."),
        Param("l1_ratio", number("float >= 0", low=0.0), 1.0,
              "The l1 weight of ``regularizer='sparse_group_lasso'``, relative to ``lam``."),
        Param("group_weights", Rule("sequence of float > 0 or None", check_group_weights_param), None,
              "One weight per group (kernels, then explicit or transition groups) for\n"
              "``regularizer='weighted_sq_l1'``; None: all 1."),
        Param("schedule", Choice(tuple(SCHEDULES)), "invsqrt",
              "``eta0/sqrt(t)``, ``eta0``, or ``1/(modulus t)`` for a strongly convex regulariser (Proposition 5)."),
    )
    buffer = (
        Param("budget", number("int >= 1 or None", low=1, integer=True, allow_none=True), None,
              "Maximum number of stored examples (None: unbounded).  With replay on, a reservoir of up to\n"
              "``replay_window`` past examples is kept beside them (``replay=0``: none)."),
        Param("eviction", Choice(tuple(EVICTION)), eviction_default, eviction_doc),
    )
    return regularisation, shape, buffer


def _flat_table(regression):
    """The table of the flat classifier (``regression=False``) or regressor."""
    regularisation, shape, buffer = common_rows()
    if regression:
        kernels_doc = ("The kernels, one group each; None: :func:`onlinemkl.kernels.default_regression_kernels`\n"
                       "on the scikit-learn face, and on the river face\n"
                       ":func:`onlinemkl.kernels.default_stream_regression_kernels` (an unnormalised quadratic\n"
                       "kernel, which learns pairwise interactions in one pass).")
        loss = (Param("loss", Choice(tuple(REGRESSION_LOSSES)), "squared",
                      "The loss on the standardised target (targets are standardised online by their running\n"
                      "mean and deviation, so ``eta0`` and ``epsilon`` do not depend on their units)."),
                Param("epsilon", number("float >= 0", low=0.0), 0.1,
                      "Width of the epsilon-insensitive loss, in units of the target's standard deviation."))
        lam = Param("lam", number("float >= 0", low=0.0), 1e-3,
                    "Regularisation strength.  ``fit``'s epochs revisit every example, so they regularise\n"
                    "more than one pass over a stream.", fit_default=1e-2)
        eta0 = Param("eta0", Rule("float > 0", check_eta0_param), 0.3,
                     "The initial step size (every regression step is capped at ``1 / K(x, x)``, so a larger\n"
                     "step stays stable on wide inputs).  ``fit``'s epochs take shorter steps: each example\n"
                     "is seen several times.", fit_default=0.1)
        gamma = Param("gamma", Rule("float > 0, 'auto' or None", check_gamma_param), None,
                      "Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)`` where\n"
                      "the regulariser is strongly convex (otherwise no projection); None: no projection.")
        average = Param("average", Bool(), False,
                        "Predict with the averaged model ``(1/T) sum_t theta_t`` (kept without storing history).\n"
                        "One pass predicts with the last iterate, which follows a drifting target where the\n"
                        "average of all iterates lags; ``fit``'s epochs over a fixed set average.", fit_default=True)
        replay = Param("replay", Rule("int >= 0 or 'auto'", check_replay_param), 0,
                       "After a step with a positive loss, this many extra steps on past examples drawn from a\n"
                       "reservoir of ``replay_window`` of them (0: off); 'auto': 5 (0 with a budget and\n"
                       "``eviction='oldest'``), replayed while the buffer has room.  Off by default: it helped\n"
                       "on some regression streams and hurt badly on others.")
        epochs = 3
    else:
        kernels_doc = "The kernels, one group each; None: :func:`onlinemkl.kernels.default_kernels`."
        loss = (Param("loss", Choice(CLASSIFICATION_LOSSES), "hinge",
                      "Binary hinge / logistic for two classes, Crammer-Singer hinge / multinomial logistic for\n"
                      "more (on the river face, over the labels seen so far)."),)
        lam = Param("lam", number("float >= 0", low=0.0), 1e-4, "Regularisation strength.")
        eta0 = Param("eta0", Rule("float > 0 or 'auto'", check_eta0_param), "auto",
                     "The initial step size.  'auto': 1.0 while at most three classes are known, 4.0 past them\n"
                     "(a multiclass step moves two classes' weights, so each class takes a smaller share of\n"
                     "the steps); a number is used for any number of classes.  ``fit``'s default, 1.0, is the\n"
                     "setting its epochs were measured with.", fit_default=1.0)
        gamma = Param("gamma", Rule("float > 0, 'auto' or None", check_gamma_param), "auto",
                      "Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)`` where\n"
                      "the regulariser is strongly convex (otherwise no projection); None: no projection.")
        average = Param("average", Bool(), False,
                        "Predict with the averaged model ``(1/T) sum_t theta_t`` (kept without storing history).")
        replay = Param("replay", Rule("int >= 0 or 'auto'", check_replay_param), "auto",
                       "After a step with a positive loss, this many extra steps on past examples drawn from a\n"
                       "reservoir of ``replay_window`` of them (0: off), in one pass and in ``fit``'s epochs\n"
                       "alike.  'auto': 5 (0 with a budget and ``eviction='oldest'``).  Under a budget, once the\n"
                       "buffer is full (replay while it has room would spend the rows 'least_impact' keeps on\n"
                       "repeats).  The reservoir is kept beside the budget.")
        epochs = 1
    return Table(
        Param("kernels", KERNELS_RULE, None, kernels_doc + "\nOn the river face, kernel groups are tuples of feature names."),
        Param("explicit_groups", Rule("tuple of feature groups or None", _check_explicit_groups), None,
              "Extra groups kept in the primal as linear weight matrices (a group is None for all features\n"
              "or a tuple of columns; on the river face, of feature names)."),
        *loss,
        *regularisation,
        lam,
        *shape,
        eta0,
        gamma,
        average,
        *buffer,
        replay,
        Param("replay_window", number("int >= 1", low=1, integer=True), DEFAULT_WINDOW,
              "Past examples kept for replay (a uniform sample; fewer when rows are very wide)."),
        Param("n_epochs", number("int >= 1", low=1, integer=True), epochs,
              "Passes over the data in ``fit`` (random order).", faces=("sklearn",)),
        Param("group_steps", Choice(tuple(GROUP_STEPS)), "norms", _GROUP_STEPS_DOC + "\n" + _GROUP_STEPS_FIT,
              fit_default="equal"),
        *FEATURE_CAP_PARAMS,
        *SEED_PARAMS,
        SCALE_PARAM,
    )


def auto_gamma(loss_at_zero, modulus) -> float:
    """``gamma='auto'``: appendix E's radius ``sqrt(2 L(0) / modulus)`` of the ball holding the
    optimum; 0 (no projection) without strong convexity or without a loss at ``theta = 0``."""
    return math.sqrt(2.0 * loss_at_zero / modulus) if (modulus > 0 and loss_at_zero is not None) else 0.0


def check_explicit_groups(groups):
    if groups is None:
        return ()
    if not isinstance(groups, (tuple, list)):
        raise TypeError(f"explicit_groups={groups!r}: expected a tuple of feature groups, e.g. ((0, 1), None)")
    return tuple(Linear(group=g).group for g in groups)


def settings(p, regression, loss_at_zero, n_extra_groups=0):
    """The settings every proximal learner (flat and structured) derives from its parameters, and
    the rules that join several of them.

    ``p`` is the face (any object with the parameters as attributes, each already checked by its
    parameter table's rule: :meth:`onlinemkl._params.Table.validated`);
    ``regression`` picks the default kernels, unless the face names its own
    (a ``_default_kernels`` function, as the river regressor does); a model loaded from a file
    keeps the kernels it was saved with (:func:`onlinemkl.kernels.kernels_in_use`); ``loss_at_zero`` is the loss at
    ``theta = 0`` for ``gamma='auto'`` (None: no projection).

    ``n_extra_groups`` counts groups the learner adds itself (the sequence
    labeller's transition group) for ``group_weights``.
    """
    default = getattr(p, "_default_kernels", None) or (default_regression_kernels if regression else None)
    kernels = kernels_in_use(p, default)
    explicit = check_explicit_groups(getattr(p, "explicit_groups", None))
    P = len(kernels) + len(explicit) + n_extra_groups
    lam = float(p.lam)
    eta0, eta0_many = check_eta0(p.eta0, regression)
    reg = p.regularizer
    param = {"nonsparse": p.q, "elastic_net": p.sigma, "sparse_group_lasso": p.l1_ratio}.get(reg, 0.0)
    param = float(param)
    weights = None
    if p.group_weights is not None:
        weights = np.asarray(p.group_weights, dtype=float)
        if weights.shape != (P,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ValueError(
                f"group_weights must hold {P} finite positive numbers (one per kernel, then one per "
                f"explicit group or transition group); got {p.group_weights!r}"
            )
    # Strong convexity of lam * R (for the 1/(sigma t) schedule) and the appendix-E radius.
    modulus = {"sq_l21": lam, "weighted_sq_l1": lam * float(np.min(weights)) ** 2 if weights is not None else lam,
               "elastic_net": lam * param,
               # 0.5 sum ||theta_k||^q is lam-strongly convex only at q = 2 (the plain squared l2 norm)
               "nonsparse": lam if float(p.q) == 2.0 else 0.0}.get(reg, 0.0)
    if p.schedule == "strongly_convex" and modulus <= 0:
        raise ValueError(
            f"schedule='strongly_convex' needs a strongly convex regulariser (sq_l21, weighted_sq_l1, or "
            f"elastic_net with sigma > 0) and lam > 0; regularizer={reg!r}, lam={lam}"
        )
    if p.gamma == "auto":
        gamma = auto_gamma(loss_at_zero, modulus)
    else:
        gamma = 0.0 if p.gamma is None else float(p.gamma)
    return dict(kernels=kernels, explicit=explicit, prox=REGULARIZERS[reg], lam=lam, param=param,
                weights=weights, schedule=SCHEDULES[p.schedule], eta0=eta0, eta0_many=eta0_many, modulus=modulus,
                gamma=gamma)


def make_engine(p, face_name, n_outputs, loss_code, loss_at_zero, regression=False):
    """The engine of face ``p`` (its ``face_name`` face: 'river' or 'sklearn'; its parameters
    checked by its table) for ``n_outputs`` outputs."""
    st = settings(p, regression, loss_at_zero)
    steps = check_replay(p.replay, p.replay_window, p.budget, buffer_replay=False, eviction=p.eviction,
                         full_replay=not regression)
    group_steps = getattr(p, "group_steps", "equal")
    # the river faces' ``seed``, the scikit-learn faces' ``random_state``
    seed = river_seed(p.seed) if hasattr(p, "seed") else replay_seed(getattr(p, "random_state", None))
    return ProximalEngine(st["kernels"], st["explicit"], loss_code, st["prox"], st["lam"], st["param"],
                          st["weights"], st["schedule"], st["eta0"], st["modulus"], st["gamma"],
                          p.budget, p.eviction, n_outputs, epsilon=getattr(p, "epsilon", 0.1),
                          average=bool(p.average), replay=steps, replay_window=p.replay_window,
                          seed=seed, group_steps=GROUP_STEPS[group_steps],
                          eta0_many=st["eta0_many"])


def classifier_engine(p, face_name, n_classes: int):
    """A classifier's engine: binary hinge/logistic for 2 classes, Crammer-Singer/multinomial for more;
    every parameter is first checked by the face's table."""
    p._params.validated(p, face_name)
    if n_classes == 2:
        code = _cl.HINGE if p.loss == "hinge" else _cl.LOGISTIC
        return make_engine(p, face_name, 1, code, 1.0 if p.loss == "hinge" else math.log(2.0))
    code = _cl.MULTICLASS_HINGE if p.loss == "hinge" else _cl.MULTINOMIAL
    return make_engine(p, face_name, n_classes, code, 1.0 if p.loss == "hinge" else math.log(n_classes))


def regressor_engine(p, face_name):
    """A regressor's engine (squared or epsilon-insensitive loss on standardised targets); every
    parameter is first checked by the face's table."""
    p._params.validated(p, face_name)
    return make_engine(p, face_name, 1, REGRESSION_LOSSES[p.loss], None, regression=True)


#: The proximal classifier's parameters (both faces' signatures, docs and validation).
CLASSIFIER_PARAMS = _flat_table(regression=False)
#: The proximal regressor's parameters.
REGRESSOR_PARAMS = _flat_table(regression=True)
