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

from .._exports import lazy_exports

_LAZY = {
    "ProximalMKLClassifier": ".sklearn",
    "ProximalMKLRegressor": ".sklearn",
}

__all__ = ["ProximalMKLClassifier", "ProximalMKLRegressor"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
