"""onlinemkl: online multiple kernel learning.

The learners are imported on first use (PEP 562): ``from onlinemkl import OBSCUREClassifier``
loads the OBSCURE estimator and what it needs, not every learner, so a process pays
only for what it uses at start-up.

``onlinemkl.save(model, path)`` writes any model the format holds, a river pipeline such as
``StandardScaler() | OBSCUREClassifier()`` included, and ``onlinemkl.load(path)`` reads it back.
"""

import importlib

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


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onlinemkl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
