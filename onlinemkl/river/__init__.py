"""river adapters: the only part of onlinemkl that imports river.

Each adapter is a river estimator (``learn_one``/``predict_one`` on dicts) over
the same compiled engine as the array API, so it composes with river's
pipelines::

    from river import preprocessing
    from onlinemkl.river import OBSCUREClassifier
    model = preprocessing.StandardScaler() | OBSCUREClassifier()

:class:`Guard` placed first (``Guard() | StandardScaler() | OBSCUREClassifier()``) refuses an
example with a NaN, infinite, too large or non-numeric value before any step learns it.

Adapters are imported on first use (PEP 562), each with its own engine only, and
none imports scikit-learn, so a river pipeline starts faster.  Every adapter is
a short declaration of its parameters over :class:`onlinemkl._river_adapter.EngineAdapter`.
"""

from .._exports import lazy_exports

_LAZY = {
    "OBSCUREClassifier": "onlinemkl.obscure.river",
    "ProximalMKLClassifier": "onlinemkl.proximal.river",
    "ProximalMKLRegressor": "onlinemkl.proximal.river",
    "PolyMKLRegressor": "onlinemkl.polymkl.river",
    "NonlinearKRRRegressor": "onlinemkl.nonlinear.river",
    "Guard": "._guard",
}

__all__ = [
    "OBSCUREClassifier",
    "ProximalMKLClassifier",
    "ProximalMKLRegressor",
    "PolyMKLRegressor",
    "NonlinearKRRRegressor",
    "Guard",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
