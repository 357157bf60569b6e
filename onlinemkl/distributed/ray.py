"""The dynamic-averaging protocol on Ray (:func:`fit_ray`), and grids in parallel (:func:`tune_ray`).

Needs the ``ray`` extra (``pip install "onlinemkl[ray]"``); this module imports without it and
each function says how to install it when called.  Without an address the functions start
Ray's local cluster (``ray.init(num_cpus=...)``) in this process if none is running, and leave
it running for the next call (``ray.shutdown()`` ends it).  Workers are Ray actors holding a
:class:`~onlinemkl.distributed.protocol.Worker`; the coordinator (this process) runs the
protocol of :mod:`.protocol`, putting each reference model into Ray's object store once for
every worker.  :func:`tune_ray` runs one Ray task per candidate, each prequential over the
same stream (put into the object store once).
"""

from __future__ import annotations

import os
import time

from .local import check_shards
from .models import check_model, final_learner, model_state, set_model_state, with_params
from .protocol import SyncLog, Worker, check_sync, prequential, run_protocol

__all__ = ["fit_ray", "tune_ray", "tune_local", "TuneResult", "ray_init", "release_workers", "evaluate_candidate",
           "candidates"]


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("this needs Ray: pip install \"onlinemkl[ray]\" (or pip install ray); without Ray, "
                          "onlinemkl.distributed.fit_local runs the same protocol in one process") from None
    return ray


def ray_init(num_cpus=None, address=None):
    """Ray, initialised: connected to ``address``, or a local cluster of ``num_cpus`` CPUs
    (default: all) started here unless one is running already."""
    ray = _import_ray()
    if not ray.is_initialized():
        if address is not None:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    return ray


class ChunkWorker(Worker):
    """A worker fed by the coordinator: ``run_chunk(pairs)`` learns the given examples (one
    stream dealt round robin to the workers)."""

    def __init__(self, learner, track=False):
        super().__init__(learner, [], track)

    def run_chunk(self, pairs) -> int:
        self.it = iter(pairs)
        return self.run(len(pairs)) if pairs else 0


class Host:
    """A Ray actor holding one worker; kept between calls with ``keep_workers=True`` (its process
    has imported onlinemkl and loaded the compiled code already: starting one is seconds)."""

    def __init__(self):
        self.w = None

    def reset(self, learner, shard, track):
        self.w = ChunkWorker(learner, track) if shard is None else Worker(learner, shard, track)

    def run(self, n):
        return self.w.run(n)

    def run_chunk(self, pairs):
        return self.w.run_chunk(pairs)

    def divergence(self, reference):
        return self.w.divergence(reference)

    def state(self):
        return self.w.state()

    def adopt(self, reference):
        self.w.adopt(reference)

    def results(self):
        out, self.w = self.w.results(), None
        return out


#: Hosts kept by ``fit_ray(..., keep_workers=True)``, with the Ray job they belong to.
_POOL = {"job": None, "hosts": []}


def _hosts(ray, k):
    job = ray.get_runtime_context().get_job_id()
    if _POOL["job"] != job:
        _POOL["job"], _POOL["hosts"] = job, []
    remote = ray.remote(num_cpus=1)(Host)
    while len(_POOL["hosts"]) < k:
        _POOL["hosts"].append(remote.remote())
    return _POOL["hosts"][:k]


def release_workers():
    """End the actors kept by ``fit_ray(..., keep_workers=True)`` (each holds a CPU of the cluster)."""
    hosts, _POOL["hosts"], _POOL["job"] = _POOL["hosts"], [], None
    if hosts:
        ray = _import_ray()
        if ray.is_initialized():
            for h in hosts:
                ray.kill(h)


class RayBackend:
    """The workers as Ray actors; with ``deal``, one stream dealt round robin by the coordinator."""

    def __init__(self, ray, learner, shards, track, num_workers, deal):
        self.ray = ray
        self.k = num_workers
        self.deal = iter(shards[0]() if callable(shards[0]) else shards[0]) if deal else None
        self.actors = _hosts(ray, num_workers)
        ray.get([a.reset.remote(learner, None if deal else shards[i], track) for i, a in enumerate(self.actors)])

    def _all(self, method, *args):
        return self.ray.get([getattr(a, method).remote(*args) for a in self.actors])

    def share(self, state):
        return self.ray.put(state)

    def run(self, n):
        if self.deal is None:
            return self._all("run", n)
        batch = [pair for _, pair in zip(range(n * self.k), self.deal)]
        return self.ray.get([a.run_chunk.remote(batch[i::self.k]) for i, a in enumerate(self.actors)])

    def divergences(self, reference):
        return self._all("divergence", reference)

    def states(self):
        return self._all("state")

    def adopt(self, reference):
        self._all("adopt", reference)

    def results(self):
        return [p for r in self._all("results") for p in r]


def fit_ray(learner, shards, sync=0.0, num_workers=None, metric=None, address=None, keep_workers=False):
    """:func:`~onlinemkl.distributed.fit_local`'s protocol with one Ray actor per worker.

    ``shards``: one stream per worker (each shipped to its actor, so it must pickle: a list, a
    river dataset, a ``streams`` reader over a file, or a callable returning the stream), or a
    single stream with ``num_workers`` > 1, which this process reads and deals round robin
    (``period`` examples per worker per round).  ``num_workers`` defaults to the number of
    shards.  Returns ``(learner, log)`` as :func:`fit_local` does.
    """
    check_model(learner)
    sync = check_sync(sync)
    shards = check_shards(shards)
    if num_workers is None:
        num_workers = len(shards)
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers={num_workers!r}: give a positive integer")
    deal = len(shards) == 1 and num_workers > 1
    if not deal and num_workers != len(shards):
        raise ValueError(f"num_workers={num_workers} for {len(shards)} shards: give one shard per worker, "
                         "or one stream to deal round robin")
    ray = ray_init(address=address)
    try:
        backend = RayBackend(ray, learner, shards, metric is not None, num_workers, deal)
        log = SyncLog()
        state = run_protocol(learner, backend, sync, log)
        pairs = backend.results()  # also drops the workers' models
        if metric is not None:
            log.metric = prequential(metric, pairs)
    finally:
        if not keep_workers:
            release_workers()
    out = learner.clone()
    set_model_state(out, state)
    return out, log


# ----------------------------------------------------------------------------------------
# Grids


def candidates(param_grid):
    """The grid's parameter dicts (scikit-learn's ``ParameterGrid``: a dict of lists or a list of them)."""
    from sklearn.model_selection import ParameterGrid

    try:
        return list(ParameterGrid(param_grid))
    except (TypeError, ValueError) as err:
        raise ValueError(f"param_grid: {err} (give e.g. {{'lam': [1e-3, 1e-4]}})") from None


def evaluate_candidate(learner, params, stream, metric):
    """One candidate prequentially over ``stream``: ``(metric value, seconds, fitted state)``."""
    model = with_params(learner, params)
    m = metric.clone()
    t0 = time.perf_counter()
    for x, y in (stream() if callable(stream) else stream):
        p = model.predict_one(x)
        if p is not None:
            m.update(y, p)
        model.learn_one(x, y)
    return float(m.get()), time.perf_counter() - t0, model_state(model)


class TuneResult:
    """A grid's outcome: ``table`` (one dict per candidate: its parameters, the metric, seconds),
    ``frame()`` (the table as a pandas DataFrame, best first), ``best_params``, ``best_model``."""

    def __init__(self, learner, grid, results, metric):
        self.metric_name = type(metric).__name__
        self.bigger_is_better = bool(metric.bigger_is_better)
        self.table = [{**params, self.metric_name: value, "seconds": secs}
                      for params, (value, secs, _) in zip(grid, results)]
        sign = -1.0 if self.bigger_is_better else 1.0
        best = min(range(len(grid)), key=lambda i: sign * results[i][0])
        self.best_params = grid[best]
        self.best_score = results[best][0]
        self.best_model = with_params(learner, grid[best])
        set_model_state(self.best_model, results[best][2])

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.table).sort_values(self.metric_name, ascending=not self.bigger_is_better,
                                                    kind="stable").reset_index(drop=True)


def _check_tune(learner, param_grid, stream, metric):
    if metric is None or not hasattr(metric, "bigger_is_better") or not hasattr(metric, "clone"):
        raise TypeError(f"metric={metric!r}: give a river metric, e.g. river.metrics.Accuracy()")
    if not (callable(stream) or hasattr(stream, "__iter__")):
        raise TypeError(f"stream is a {type(stream).__name__}: give an iterable of (x, y) pairs that can be read "
                        "again (a list, a river dataset) or a callable returning one")
    grid = candidates(param_grid)
    known = final_learner(learner)._get_params()
    for params in grid:
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"{type(final_learner(learner)).__name__} has no parameter {unknown[0]!r} "
                             f"(its parameters: {', '.join(sorted(known))})")
        with_params(learner, params)  # a bad value fails here, naming the parameter
    return grid


def tune_local(learner, param_grid, stream, metric=None):
    """:func:`tune_ray`, one candidate after another in this process."""
    check_model(learner)
    grid = _check_tune(learner, param_grid, stream, metric)
    return TuneResult(learner, grid, [evaluate_candidate(learner, p, stream, metric) for p in grid], metric)


def tune_ray(learner, param_grid, stream, metric=None, num_cpus=None, address=None):
    """Every candidate of ``param_grid`` prequential over ``stream``, in parallel Ray tasks.

    ``learner``: the template (``learner.clone(params)`` per candidate); ``param_grid``: a dict
    of lists (or a list of dicts), as scikit-learn's; ``stream``: re-readable (a list, a river
    dataset, or a callable returning the stream; sent to Ray's object store once); ``metric``:
    a river metric.  Returns a :class:`TuneResult`.
    """
    check_model(learner)
    grid = _check_tune(learner, param_grid, stream, metric)
    ray = ray_init(num_cpus=num_cpus, address=address)
    release_workers()  # kept fit_ray actors would hold the CPUs the tasks need
    task = ray.remote(num_cpus=1)(evaluate_candidate)
    ref = ray.put(stream)
    results = ray.get([task.remote(learner, p, ref, metric) for p in grid])
    return TuneResult(learner, grid, results, metric)
