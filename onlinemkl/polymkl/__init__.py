"""The polynomial-kernel stochastic solver (Afkanpour et al.) as a mini-batch learner.

The learner's modules, from the compiled step up:

- ``engine`` and ``_active``: the solver over a window of recent examples and its active set of
  product kernels; the compiled products and sampling live in :mod:`onlinemkl._core.polynomial`,
  shared with :mod:`onlinemkl.nonlinear`;
- ``sklearn``: the scikit-learn face :class:`PolyMKLRegressor`;
- ``river``: the river face (public as :class:`onlinemkl.river.PolyMKLRegressor`).

The public class is imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

from .._exports import lazy_exports

_LAZY = {
    "PolyMKLRegressor": ".sklearn",
}

__all__ = ["PolyMKLRegressor"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
