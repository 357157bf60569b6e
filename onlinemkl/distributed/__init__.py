"""Learning past one machine: merging models, dynamic averaging, and Ray.

* :func:`merge`, :func:`divergence` (and their state forms): the weighted average of models of
  one learner and the squared RKHS distance between two (:mod:`.merge`);
* :func:`fit_local`: workers learning on shards in one process, synchronised by dynamic
  averaging (:mod:`.local`);
* :func:`fit_ray`, :func:`tune_ray`: the same protocol on a Ray cluster, and grids of
  candidates in parallel (:mod:`.ray`, needs the ``ray`` extra: ``pip install onlinemkl[ray]``).
"""

from .local import fit_local
from .merge import divergence, merge, merge_states, state_divergence
from .protocol import DynamicAveraging, SyncLog

__all__ = ["merge", "merge_states", "divergence", "state_divergence", "fit_local", "DynamicAveraging", "SyncLog",
           "fit_ray", "tune_ray"]


def __getattr__(name):
    # fit_ray/tune_ray import Ray only when called; the module itself imports without it
    if name in ("fit_ray", "tune_ray"):
        from . import ray as _ray

        return getattr(_ray, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
