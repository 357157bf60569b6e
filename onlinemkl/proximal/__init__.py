"""Online proximal MKL (Martins et al.): kernelised FOBOS with group-norm proximal steps.

The learner's modules, from the compiled step up:

- ``_step``: the compiled FOBOS step over the support buffer (nopython), with ``_prox`` (the
  proximal operators), ``_losses``, ``_group_steps`` (per-group step sizes) and ``_evict``
  (budget eviction and merging);
- ``engine`` and ``_setup``: :class:`~onlinemkl.proximal.engine.ProximalEngine`, its parameters and
  state;
- ``sklearn``: the scikit-learn faces :class:`ProximalMKLClassifier` and :class:`ProximalMKLRegressor`;
- ``river``: the river faces (public in :mod:`onlinemkl.river`).

The structured-output labeller, :mod:`onlinemkl.sequence`, builds on this step.

The public classes are imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

import importlib

_LAZY = {
    "ProximalMKLClassifier": ".sklearn",
    "ProximalMKLRegressor": ".sklearn",
}

__all__ = ["ProximalMKLClassifier", "ProximalMKLRegressor"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
