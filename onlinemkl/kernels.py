"""Kernels on feature groups.

A kernel is a small frozen value object: its kind, its parameters and the
*feature group* it reads (``group=None`` means every feature; otherwise a
tuple of column indices for arrays, or of feature names for dicts).  Several
kernels on the same group share one pass over the support buffer: the dot
products, squared distances (and, for Laplacian kernels, L1 distances) of a
group are computed once and every kernel on it is evaluated from them.

>>> import numpy as np
>>> from onlinemkl.kernels import RBF, Linear, kernel_matrix
>>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
>>> K = kernel_matrix(X, X, [Linear(), RBF(gamma=0.5)])
>>> K.shape
(2, 2, 2)
>>> np.round(K[1], 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])

Bandwidths can be given in absolute terms (``gamma``, ``h``) or relative to the
number of features of the group (``gamma=None`` uses ``gamma_scale / d``;
``Polynomial(scale=None)`` uses ``scale_scale / d``;
``BSpline(h=None)`` uses ``h_scale * sqrt(2 d)``, the typical distance of two
standardised points).  Relative values are resolved once, when the kernel's
group first has features, and then frozen: features that join the group later
(a new feature in a stream, for a group of all features) do not change them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Hashable

import numpy as np

from ._core import kernels as _ck
from ._params import Rule
from .kernel_arrays import CompiledKernels, block_kernels, resolve_group_columns

__all__ = [
    "Kernel",
    "Linear",
    "Polynomial",
    "RBF",
    "Laplacian",
    "BSpline",
    "default_kernels",
    "default_fit_kernels",
    "default_regression_kernels",
    "default_stream_regression_kernels",
    "kernel_matrix",
    "mean_distance",
    "distance_kernel",
]


def _check_group(group):
    if group is None:
        return None
    if isinstance(group, (str, bytes)) or not isinstance(group, (tuple, list, range, np.ndarray)):
        raise TypeError(
            f"group={group!r}: a feature group is None (all features) or a tuple of column "
            "indices / feature names, e.g. group=(0, 1, 2) or group=('age', 'height')"
        )
    group = tuple(g.item() if isinstance(g, np.generic) else g for g in group)
    if len(group) == 0:
        raise ValueError("group=(): a feature group needs at least one feature; use None for all features")
    if len(set(group)) != len(group):
        raise ValueError(f"group={group!r} lists a feature twice; list each feature once")
    return group


def _positive(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r}: expected a positive number")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r}: must be a finite number > 0")
    return value


@dataclasses.dataclass(frozen=True)
class Kernel:
    """Base class of the kernel specifications (do not instantiate directly).

    Parameters
    ----------
    group
        The features the kernel reads: None for all, or a tuple of column
        indices (arrays) or feature names (dicts).
    normalize
        Divide by ``sqrt(K(x,x) K(z,z))`` so that the kernel has a unit diagonal.
    """

    group: tuple | None = None
    normalize: bool = False

    code = -1

    def __post_init__(self):
        object.__setattr__(self, "group", _check_group(self.group))
        object.__setattr__(self, "normalize", bool(self.normalize))

    def resolved_params(self, n_features: int) -> tuple[float, float, float]:
        """The three parameters the compiled code reads, with relative bandwidths
        resolved for a group of ``n_features`` features."""
        return (0.0, 0.0, 0.0)

    @property
    def name(self) -> str:
        return repr(self)


@dataclasses.dataclass(frozen=True)
class Linear(Kernel):
    """Linear kernel ``x . z``.

    >>> Linear(group=(0, 1))
    Linear(group=(0, 1), normalize=False)
    """

    code = _ck.LINEAR


@dataclasses.dataclass(frozen=True)
class Polynomial(Kernel):
    """Polynomial kernel ``(scale * x.z + offset) ** degree``.

    ``scale=None`` means ``scale_scale / d`` for a group of ``d`` features (as RBF's
    ``gamma_scale``): on standardised inputs ``x.x ~ d``, so ``scale_scale / d`` keeps
    ``K(x, x) ~ (scale_scale + offset) ** degree`` whatever the width, where ``scale=1``
    grows like ``d ** degree`` (and takes over a sum of kernels on wide inputs).

    >>> Polynomial(degree=3)
    Polynomial(group=None, normalize=False, degree=3, offset=1.0, scale=1.0, scale_scale=1.0)
    >>> Polynomial(scale=None, scale_scale=2.0).resolved_params(10)
    (2.0, 1.0, 0.2)
    """

    degree: int = 2
    offset: float = 1.0
    scale: float | None = 1.0
    scale_scale: float = 1.0

    code = _ck.POLYNOMIAL

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) or not 1 <= self.degree <= 32:
            raise ValueError(f"degree={self.degree!r}: must be an integer between 1 and 32")
        if not (isinstance(self.offset, (int, float)) and math.isfinite(self.offset) and self.offset >= 0):
            raise ValueError(f"offset={self.offset!r}: must be a finite number >= 0 (a negative offset is not a kernel)")
        object.__setattr__(self, "degree", int(self.degree))
        object.__setattr__(self, "offset", float(self.offset))
        object.__setattr__(self, "scale", _positive("scale", self.scale, allow_none=True))
        object.__setattr__(self, "scale_scale", _positive("scale_scale", self.scale_scale))

    def resolved_params(self, n_features):
        s = self.scale if self.scale is not None else self.scale_scale / max(n_features, 1)
        return (float(self.degree), self.offset, s)


@dataclasses.dataclass(frozen=True)
class _GammaKernel(Kernel):
    """A kernel with an inverse bandwidth ``gamma`` (absolute, or ``gamma_scale / d``)."""

    gamma: float | None = None
    gamma_scale: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "gamma", _positive("gamma", self.gamma, allow_none=True))
        object.__setattr__(self, "gamma_scale", _positive("gamma_scale", self.gamma_scale))

    def resolved_params(self, n_features):
        g = self.gamma if self.gamma is not None else self.gamma_scale / max(n_features, 1)
        return (g, 0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class RBF(_GammaKernel):
    """Gaussian kernel ``exp(-gamma ||x - z||^2)``.

    ``gamma=None`` means ``gamma_scale / d`` for a group of ``d`` features.  When an earlier
    RBF kernel on the same group has ``gamma / k`` (``k`` in 2-16, 20, 25, 32, 50, 64, 100,
    128), this kernel's values are that kernel's to the power ``k`` (a "ladder": a few
    multiplications instead of an exponential, within ~``k`` ulps of it).

    >>> RBF(gamma=0.1).resolved_params(10)[0]
    0.1
    >>> RBF(gamma_scale=2.0).resolved_params(10)[0]
    0.2
    """

    code = _ck.RBF


@dataclasses.dataclass(frozen=True)
class Laplacian(_GammaKernel):
    """Laplacian kernel ``exp(-gamma ||x - z||_1)`` (scikit-learn's definition).

    ``gamma=None`` means ``gamma_scale / d``.
    """

    code = _ck.LAPLACIAN


@dataclasses.dataclass(frozen=True)
class BSpline(Kernel):
    """Compactly supported B1-spline kernel ``max(0, 1 - ||x - z|| / h)`` (Martins et al.).

    ``h=None`` means ``h_scale * sqrt(2 d)``.
    """

    h: float | None = None
    h_scale: float = 1.0

    code = _ck.BSPLINE

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "h", _positive("h", self.h, allow_none=True))
        object.__setattr__(self, "h_scale", _positive("h_scale", self.h_scale))

    def resolved_params(self, n_features):
        h = self.h if self.h is not None else self.h_scale * math.sqrt(2.0 * max(n_features, 1))
        return (h, 0.0, 0.0)


def default_kernels() -> tuple[Kernel, ...]:
    """The kernel set used when a learner is given ``kernels=None``.

    Three Gaussian bandwidths spread over two decades around ``1/d`` plus a
    linear and a quadratic kernel, all on every feature.  Meant for
    standardised inputs (put a ``StandardScaler`` in front).

    Examples
    --------
    >>> [type(k).__name__ for k in default_kernels()]
    ['RBF', 'RBF', 'RBF', 'Linear', 'Polynomial']
    """
    return (
        RBF(gamma_scale=0.1),
        RBF(gamma_scale=1.0),
        RBF(gamma_scale=10.0),
        Linear(normalize=True),
        Polynomial(degree=2, normalize=True),
    )


def default_fit_kernels() -> tuple[Kernel, ...]:
    """The kernel set the scikit-learn ``OBSCUREClassifier`` uses with ``kernels=None``.

    :func:`default_kernels` with one more Gaussian, at ``gamma = 3/d``, between the ``1/d`` and
    ``10/d`` ones.  ``fit``'s epochs over a fixed set make use of the finer bandwidth where one
    pass over a stream does not: on sets of many classes with a few clusters each it lifts
    ``fit``'s held-out accuracy to an RBF ``SVC``'s or above (``docs/defaults.md``).  Meant for
    standardised inputs.

    Examples
    --------
    >>> [getattr(k, "gamma_scale", None) for k in default_fit_kernels()]
    [0.1, 1.0, 3.0, 10.0, None, None]
    """
    base = default_kernels()
    return base[:2] + (RBF(gamma_scale=3.0),) + base[2:]


def default_regression_kernels() -> tuple[Kernel, ...]:
    """The kernel set the scikit-learn regressor uses with ``kernels=None``.

    An unnormalised linear kernel (a normalised one would forget the inputs'
    magnitude, which a regression target usually depends on), two wide
    Gaussians and a normalised quadratic kernel; for standardised inputs.
    The river regressor uses :func:`default_stream_regression_kernels`.

    Examples
    --------
    >>> [type(k).__name__ for k in default_regression_kernels()]
    ['Linear', 'RBF', 'RBF', 'Polynomial']
    """
    return (
        Linear(),
        RBF(gamma_scale=0.1),
        RBF(gamma_scale=1.0),
        Polynomial(degree=2, normalize=True),
    )


def default_stream_regression_kernels() -> tuple[Kernel, ...]:
    """The kernel set the river regressor (one pass over a stream) uses with ``kernels=None``.

    :func:`default_regression_kernels` with its quadratic kernel unnormalised and scaled by
    ``2 / d``: ``(1 + 2 x.z / d) ** 2``.  Why: one regression step moves each kernel's part
    of the prediction in proportion to its ``K(x, x)`` (the kernels share one step size,
    capped at ``1 / sum_k K_k(x, x)``), so a kernel's ``K(x, x)`` is its share of every step
    (at first: the river regressor's ``group_steps='norms'`` then shifts the shares towards
    the kernels with the larger norms).
    The normalised quadratic kernel has ``K(x, x) = 1`` against the linear kernel's ``~d``
    and learns pairwise interactions (a target such as river's Planes2D, linear in products
    ``x_1 x_j``) only slowly in one pass; dividing by ``1 + x.x`` also bends it away from a
    quadratic where ``x.x`` varies.  ``scale = 2 / d`` gives it ``K(x, x) ~ 9`` at any width
    (``scale = 1``: ``~d ** 2``, which takes over the linear kernel's steps on wide, mostly
    linear streams).

    >>> default_stream_regression_kernels()[-1].resolved_params(10)
    (2.0, 1.0, 0.2)
    """
    return (
        Linear(),
        RBF(gamma_scale=0.1),
        RBF(gamma_scale=1.0),
        Polynomial(degree=2, scale=None, scale_scale=2.0),
    )


def check_kernels(kernels, default=None) -> tuple[Kernel, ...]:
    """Validate a user's ``kernels`` parameter; returns a tuple of kernels."""
    if kernels is None:
        return default_kernels() if default is None else default()
    if isinstance(kernels, Kernel):
        kernels = (kernels,)
    try:
        kernels = tuple(kernels)
    except TypeError:
        raise TypeError(
            f"kernels={kernels!r}: expected a sequence of onlinemkl.kernels.Kernel objects, "
            "e.g. kernels=(RBF(gamma=0.1), Linear())"
        ) from None
    if not kernels:
        raise ValueError("kernels=(): give at least one kernel, or None for the default set")
    for i, k in enumerate(kernels):
        if not isinstance(k, Kernel) or type(k) is Kernel:
            raise TypeError(
                f"kernels[{i}]={k!r} is not a kernel; use onlinemkl.kernels.Linear, "
                "Polynomial, RBF, Laplacian or BSpline"
            )
    return kernels


def kernels_in_use(face, default=None) -> tuple[Kernel, ...]:
    """A learner's ``kernels`` parameter resolved: the kernels it learns with.

    The kernels given; else, for a model loaded from a file, the kernels it was saved with
    (``face._saved_kernels``, set by the loader from the state's record); else today's default
    set (``default()``, :func:`default_kernels` when None).  Why the middle case: a default set
    may change between releases, and a model file must load with the kernels its arrays were
    learnt with.  The parameter itself stays None, so ``get_params`` and scikit-learn's
    ``clone`` see what the user wrote (a clone resolves today's defaults).
    """
    saved = face.__dict__.get("_saved_kernels")
    if face.kernels is None and saved is not None:
        return saved
    return check_kernels(face.kernels, default)


@contextlib.contextmanager
def restoring_kernels(face, saved):
    """Within the block, ``face`` resolves the kernels ``saved`` (a state's record, or None) when
    its ``kernels`` parameter is None (:func:`kernels_in_use`): for a loader that builds the
    engine of a saved state.  Kept when the block succeeds, undone when it raises."""
    kept = face.__dict__.get("_saved_kernels")
    if saved is not None and getattr(face, "kernels", None) is None:
        face._saved_kernels = tuple(saved)
    try:
        yield
    except BaseException:
        if kept is None:
            face.__dict__.pop("_saved_kernels", None)
        else:
            face._saved_kernels = kept
        raise


def kernel_matrix(X, Z=None, kernels=None) -> np.ndarray:
    """Kernel matrices of every kernel between the rows of ``X`` and ``Z``.

    Parameters
    ----------
    X : array of shape (n, d)
    Z : array of shape (m, d), default ``X``
    kernels : sequence of :class:`Kernel`, default :func:`default_kernels`
        Groups are column indices; relative bandwidths use the group size.

    Returns
    -------
    array of shape (n_kernels, n, m)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(3)
    >>> kernel_matrix(X, kernels=[Linear()])[0]
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    X = _as_matrix("X", X)
    Z = X if Z is None else _as_matrix("Z", Z)
    if Z.shape[1] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}; they must match")
    ck = CompiledKernels(check_kernels(kernels))
    ck.set_columns(resolve_group_columns(ck.groups, X.shape[1]))
    return block_kernels(X, Z, ck)


def _as_matrix(name, A):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values; remove or impute them first")
    return A


def mean_distance(X, metric: str = "euclidean", max_samples: int = 1000, seed: int = 0) -> float:
    """Mean pairwise distance on (a sample of) ``X``: the OBSCURE papers' bandwidth.

    Orabona et al. turn a distance ``d`` into the kernel ``exp(-d / gamma)``
    with ``gamma`` the mean pairwise distance of the training data.  Use it as
    ``RBF(gamma=1 / mean_distance(X, 'sqeuclidean'))`` or with
    :func:`distance_kernel` on a precomputed distance matrix.

    >>> import numpy as np
    >>> round(mean_distance(np.array([[0.0], [2.0]])), 6)
    2.0
    """
    from scipy.spatial.distance import pdist

    X = _as_matrix("X", X)
    if X.shape[0] < 2:
        raise ValueError("mean_distance needs at least 2 rows")
    if X.shape[0] > max_samples:
        X = X[np.random.default_rng(seed).choice(X.shape[0], max_samples, replace=False)]
    names = {"euclidean": "euclidean", "sqeuclidean": "sqeuclidean", "l1": "cityblock", "cityblock": "cityblock"}
    if metric not in names:
        raise ValueError(f"metric={metric!r}: choose one of {sorted(names)}")
    return float(np.mean(pdist(X, names[metric])))


def distance_kernel(D, gamma: float | None = None) -> np.ndarray:
    """``exp(-D / gamma)`` for a precomputed distance matrix, as the OBSCURE experiments do.

    ``gamma`` defaults to the mean pairwise distance: for a square matrix with a zero diagonal
    (training against itself) the mean over the off-diagonal pairs, as :func:`mean_distance`;
    otherwise the mean of ``D``.  For a test-versus-training matrix, pass the training
    ``gamma`` so both use the same kernel.

    >>> import numpy as np
    >>> np.round(distance_kernel(np.array([[0.0, 1.0], [1.0, 0.0]])), 4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2:
        raise ValueError(f"D must be a 2-D distance matrix; got shape {D.shape}")
    if np.any(D < 0) or not np.all(np.isfinite(D)):
        raise ValueError("D must hold finite, non-negative distances")
    if gamma is None:
        n = D.shape[0]
        if D.shape[0] == D.shape[1] and n > 1 and not np.any(np.diag(D)):
            gamma = float(D.sum() / (n * (n - 1)))
        else:
            gamma = float(D.mean())
    gamma = _positive("gamma", gamma)
    return np.exp(-D / gamma)


FeatureName = Hashable


def _check_kernels_param(name, value):
    if value is not None and not isinstance(value, (list, tuple)):
        raise TypeError(f"{name}={value!r}: expected a sequence of onlinemkl.kernels.Kernel or None")
    return value


#: The form of a learner's ``kernels`` parameter (each kernel is checked when the engine is built).
KERNELS_RULE = Rule("sequence of onlinemkl.kernels.Kernel or None", _check_kernels_param)
