"""From a proximal face's parameters to its engine: validation (once, for every face) and the
engine's construction.

:func:`settings` validates what every proximal learner shares (flat and structured),
:func:`classifier_engine` / :func:`regressor_engine` build a
:class:`~onlinemkl.engines.proximal.ProximalEngine` with the face's loss.  Kept apart from the
engine so that a rule about parameters does not grow the engine's module.
"""

from __future__ import annotations

import math

import numpy as np

from .._buffer import EVICTION
from .._lazy import lazy_module
from .._validation import check_choice, check_number
from ..kernels import Linear, default_regression_kernels, kernels_in_use
from ._replay import check_replay, replay_seed, river_seed
from .proximal import (CLASSIFICATION_LOSSES, GROUP_STEPS, REGRESSION_LOSSES, REGULARIZERS, SCHEDULES,
                       ProximalEngine)

_cl = lazy_module("losses")

__all__ = ["settings", "check_eta0", "auto_gamma", "make_engine", "classifier_engine", "regressor_engine",
           "AUTO_ETA0", "AUTO_ETA0_MANY"]

#: ``eta0='auto'`` (the river classifier's default): :data:`AUTO_ETA0` while at most
#: :data:`~onlinemkl.engines._replay.FEW_CLASSES` classes are known, :data:`AUTO_ETA0_MANY` past them.
AUTO_ETA0 = 1.0
AUTO_ETA0_MANY = 4.0


def check_eta0(eta0, regression: bool) -> tuple[float, float]:
    """``(eta0 with few classes, eta0 with many)`` from ``eta0``: a number > 0 (both the same) or
    ``'auto'`` (classifiers only).

    Why 'auto' steps further past three classes: a Crammer-Singer step moves the weights of two
    classes (the true one and the highest-scoring wrong one), so with many classes each class's
    weights take a smaller share of the steps; a longer step makes up for it, as OBSCURE's replay
    takes more steps past three classes (:func:`~onlinemkl.engines._replay.many_class_steps`).
    """
    if eta0 == "auto":
        if regression:
            raise ValueError("eta0='auto' is for the classifiers; give a regressor a number > 0 "
                             "(its default is 0.3 on the river face, 0.1 on the scikit-learn one)")
        return AUTO_ETA0, AUTO_ETA0_MANY
    value = check_number("eta0", eta0, low=0.0, low_open=True, hint=" (the initial step size; or 'auto')")
    return value, value


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
    """Validated settings shared by every proximal learner (flat and structured).

    ``p`` is the face (any object with the parameters as attributes);
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
    check_choice("regularizer", p.regularizer, tuple(REGULARIZERS))
    lam = check_number("lam", p.lam, low=0.0)
    check_choice("schedule", p.schedule, tuple(SCHEDULES))
    eta0, eta0_many = check_eta0(p.eta0, regression)
    check_number("budget", p.budget, low=1, integer=True, allow_none=True)
    check_choice("eviction", p.eviction, tuple(EVICTION))
    check_number("n_epochs", getattr(p, "n_epochs", 1), low=1, integer=True)
    reg = p.regularizer
    if reg == "nonsparse":
        param = check_number("q", p.q, low=1.0, high=2.0, low_open=True)
    elif reg == "elastic_net":
        param = check_number("sigma", p.sigma, low=0.0)
    elif reg == "sparse_group_lasso":
        param = check_number("l1_ratio", p.l1_ratio, low=0.0)
    else:
        param = 0.0
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
    elif p.gamma is None:
        gamma = 0.0
    else:
        gamma = check_number("gamma", p.gamma, low=0.0, low_open=True, hint=" (or 'auto', or None)")
    return dict(kernels=kernels, explicit=explicit, prox=REGULARIZERS[reg], lam=lam, param=param,
                weights=weights, schedule=SCHEDULES[p.schedule], eta0=eta0, eta0_many=eta0_many, modulus=modulus,
                gamma=gamma)


def make_engine(p, n_outputs, loss_code, loss_at_zero, regression=False):
    """The engine of face ``p`` (validated by :func:`settings`) for ``n_outputs`` outputs."""
    st = settings(p, regression, loss_at_zero)
    steps = check_replay(p.replay, p.replay_window, p.budget, buffer_replay=False, eviction=p.eviction,
                         full_replay=not regression)
    group_steps = getattr(p, "group_steps", "equal")
    check_choice("group_steps", group_steps, tuple(GROUP_STEPS))
    # the river faces' ``seed``, the scikit-learn faces' ``random_state``
    seed = river_seed(p.seed) if hasattr(p, "seed") else replay_seed(getattr(p, "random_state", None))
    return ProximalEngine(st["kernels"], st["explicit"], loss_code, st["prox"], st["lam"], st["param"],
                          st["weights"], st["schedule"], st["eta0"], st["modulus"], st["gamma"],
                          p.budget, p.eviction, n_outputs, epsilon=getattr(p, "epsilon", 0.1),
                          average=bool(p.average), replay=steps, replay_window=p.replay_window,
                          seed=seed, group_steps=GROUP_STEPS[group_steps],
                          eta0_many=st["eta0_many"])


def classifier_engine(p, n_classes: int):
    """A classifier's engine: binary hinge/logistic for 2 classes, Crammer-Singer/multinomial for more."""
    check_choice("loss", p.loss, CLASSIFICATION_LOSSES)
    if n_classes == 2:
        code = _cl.HINGE if p.loss == "hinge" else _cl.LOGISTIC
        return make_engine(p, 1, code, 1.0 if p.loss == "hinge" else math.log(2.0))
    code = _cl.MULTICLASS_HINGE if p.loss == "hinge" else _cl.MULTINOMIAL
    return make_engine(p, n_classes, code, 1.0 if p.loss == "hinge" else math.log(n_classes))


def regressor_engine(p):
    """A regressor's engine (squared or epsilon-insensitive loss on standardised targets)."""
    check_choice("loss", p.loss, tuple(REGRESSION_LOSSES))
    check_number("epsilon", p.epsilon, low=0.0)
    return make_engine(p, 1, REGRESSION_LOSSES[p.loss], None, regression=True)
