"""OBSCURE (Orabona et al.): p-norm multiple kernel learning, online stage 1 and stochastic stage 2.

The learner's modules, from the compiled step up:

- ``_step``: the compiled per-example step of both stages (nopython);
- ``_fit``: the compiled passes of the batch ``fit``;
- ``engine``: :class:`~onlinemkl.obscure.engine.ObscureEngine`, its parameters, state and streaming policy;
- ``sklearn``: the scikit-learn face :class:`OBSCUREClassifier`;
- ``river``: the river face (public as :class:`onlinemkl.river.OBSCUREClassifier`).

The public class is imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

from .._exports import lazy_exports

_LAZY = {
    "OBSCUREClassifier": ".sklearn",
}

__all__ = ["OBSCUREClassifier"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
