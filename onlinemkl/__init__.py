"""onlinemkl: online multiple kernel learning.

The learners are imported on first use (PEP 562): ``from onlinemkl import OBSCUREClassifier``
loads the OBSCURE estimator and what it needs, not every learner, so a process pays
only for what it uses at start-up.

``onlinemkl.save(model, path)`` writes any model the format holds, a river pipeline such as
``StandardScaler() | OBSCUREClassifier()`` included, and ``onlinemkl.load(path)`` reads it back.
"""

from ._exports import lazy_exports

__version__ = "0.1.0"

#: public name -> module that defines it
_LAZY = {
    "OBSCUREClassifier": ".obscure.sklearn",
    "ProximalMKLClassifier": ".proximal.sklearn",
    "ProximalMKLRegressor": ".proximal.sklearn",
    "SequenceMKLLabeler": ".sequence.sklearn",
    "PolyMKLRegressor": ".polymkl.sklearn",
    "NonlinearKRRRegressor": ".nonlinear.sklearn",
    "load": ".persist",
    "save": ".persist",
    "warmup": "._compile",
}

__all__ = [
    "OBSCUREClassifier",
    "ProximalMKLClassifier",
    "ProximalMKLRegressor",
    "SequenceMKLLabeler",
    "PolyMKLRegressor",
    "NonlinearKRRRegressor",
    "load",
    "save",
    "warmup",
    "__version__",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
