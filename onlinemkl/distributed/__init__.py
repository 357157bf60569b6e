"""Learning past one machine: merging models, dynamic averaging, and Ray.

* :func:`merge`, :func:`divergence` (and their state forms): the weighted average of models of
  one learner and the squared RKHS distance between two (:mod:`.merge`);
* :func:`fit_local`: workers learning on shards in one process, synchronised by dynamic
  averaging (:mod:`.local`);
* :func:`fit_ray`, :func:`tune_ray`: the same protocol on a Ray cluster, and grids of
  candidates in parallel (:mod:`.ray`, needs the ``ray`` extra: ``pip install onlinemkl[ray]``).
"""

from .merge import divergence, merge, merge_states, state_divergence

__all__ = ["merge", "merge_states", "divergence", "state_divergence"]
