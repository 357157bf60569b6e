"""The dynamic-averaging protocol with every worker in this process (:func:`fit_local`).

The same protocol as :func:`onlinemkl.distributed.fit_ray` (:mod:`.protocol`), run one worker
after another: for tests, for simulating ``k`` machines (the messages and bytes are what they
would send), and for users without Ray.  It does not run faster than one learner.
"""

from __future__ import annotations

from ._common import fresh_clone
from .models import check_model, set_model_state
from .protocol import DynamicAveraging, SyncLog, Worker, check_sync, prequential, run_protocol

__all__ = ["fit_local", "DynamicAveraging"]


class LocalBackend:
    """The workers as plain objects of this process."""

    def __init__(self, learner, shards, track):
        self.workers = [Worker(learner, shard, track) for shard in shards]
        self.k = len(self.workers)

    def share(self, state):
        return state

    def run(self, n):
        return [w.run(n) for w in self.workers]

    def divergences(self, reference):
        return [w.divergence(reference) for w in self.workers]

    def states(self):
        return [w.state() for w in self.workers]

    def adopt(self, state):
        for w in self.workers:
            w.adopt(state)

    def results(self):
        return [p for w in self.workers for p in w.results()]


def check_shards(shards):
    """``shards`` as a list (at least one); each an iterable of ``(x, y)`` or a callable returning one."""
    if isinstance(shards, (str, bytes)) or not hasattr(shards, "__iter__"):
        raise TypeError(f"shards={shards!r}: give a list of streams of (x, y) pairs, one per worker "
                        "(river datasets, streams readers, lists, or callables returning them)")
    shards = list(shards)
    if not shards:
        raise ValueError("shards is empty: give one stream of (x, y) pairs per worker")
    for i, s in enumerate(shards):
        if not (callable(s) or hasattr(s, "__iter__")):
            raise TypeError(f"shards[{i}] is a {type(s).__name__}: each shard must be an iterable of (x, y) pairs "
                            "or a callable returning one")
    return shards


def fit_local(learner, shards, sync=0.0, metric=None):
    """Learn ``learner`` on ``shards`` by dynamic averaging, every worker in this process.

    Parameters
    ----------
    learner : onlinemkl river learner, or a river pipeline of StandardScalers before one
        The start of every worker (copied, not changed; a fitted learner is continued).
    shards : list
        One stream of ``(x, y)`` pairs per worker (a river dataset, a ``streams`` reader, a
        list, or a callable returning one).
    sync : DynamicAveraging, float, 'periodic' or None
        The synchronisation rule (:class:`~onlinemkl.distributed.protocol.DynamicAveraging`); a
        number is its ``delta`` (0: periodic averaging every 100 examples per worker; None or
        ``math.inf``: no communication until the final merge).
    metric : river metric, optional
        Measured prequentially on every worker's predictions; its value lands in ``log.metric``.

    Returns
    -------
    (learner, log) : the merged model (a new learner) and the :class:`SyncLog`.

    Examples
    --------
    >>> from river import datasets, metrics
    >>> from onlinemkl.river import ProximalMKLClassifier
    >>> data = list(datasets.Phishing())
    >>> model, log = fit_local(ProximalMKLClassifier(budget=100), [data[0::2], data[1::2]],
    ...                        sync=DynamicAveraging(0.0, period=200), metric=metrics.Accuracy())
    >>> log.syncs, log.messages, model.n_support_ <= 100, log.metric > 0.8
    (4, 16, True, True)
    """
    check_model(learner)
    sync = check_sync(sync)
    backend = LocalBackend(learner, check_shards(shards), metric is not None)
    log = SyncLog()
    state = run_protocol(learner, backend, sync, log)
    if metric is not None:
        log.metric = prequential(metric, backend.results())
    out = fresh_clone(learner)
    set_model_state(out, state)
    return out, log

