"""Non-linear (polynomial) kernel combinations (Cortes et al.) as a mini-batch learner.

The learner's modules, from the compiled step up:

- ``engine``: kernel ridge regression over a learnt degree-``d`` polynomial combination of the base
  kernels, fitted on a window of recent examples (compiled products in
  :mod:`onlinemkl._core.polynomial`);
- ``sklearn``: the scikit-learn face :class:`NonlinearKRRRegressor`;
- ``river``: the river face (public as :class:`onlinemkl.river.NonlinearKRRRegressor`).

The public class is imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

from .._exports import lazy_exports

_LAZY = {
    "NonlinearKRRRegressor": ".sklearn",
}

__all__ = ["NonlinearKRRRegressor"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
