"""The dynamic-averaging protocol on Ray (:func:`fit_ray`), and grids in parallel (:func:`tune_ray`).

Needs the ``ray`` extra (``pip install "onlinemkl[ray]"``); this module imports without it and
each function says how to install it when called.  Without an address the functions start
Ray's local cluster (``ray.init(num_cpus=...)``) in this process if none is running, and leave
it running for the next call (``ray.shutdown()`` ends it).  Workers are Ray actors holding a
:class:`~onlinemkl.distributed.protocol.Worker`; the coordinator (this process) runs the
protocol of :mod:`.protocol`, putting each reference model into Ray's object store once for
every worker.  :func:`tune_ray` runs one Ray task per candidate, each prequential over the
same stream (put into the object store once).

Compiling once for every worker: a Ray worker is a new process, and with an empty compile cache
each would compile the learner's Numba code on its own, all at the same time on the same cores
(a minute on two cores, against half that for one process).  So this process compiles first:
:func:`compile_for_workers` runs the protocol on a few examples of the data, with the budget
cut to a few rows so that eviction and replay run too, while the actors start; on a terminal a
progress line says so.  The workers then load the compiled code from the same cache: on a
single-node cluster they are given this process's cache location (``NUMBA_CACHE_DIR`` in their
``runtime_env``), whatever environment the cluster was started with.  On a multi-node cluster
the workers keep their own nodes' cache location (this process's path may not exist there), and
a worker whose node's cache is cold compiles on its own; ``onlinemkl warmup`` in the nodes' image
avoids that.  Without an on-disk cache (``ONLINEMKL_NO_CACHE``, an unwritable cache directory)
every worker compiles.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import time

from .. import _config
from .._compile import compile_stats
from .._lazy import blocking
from .._progress import BAR_DELAY_S, Ticker
from ._common import _params, fresh_clone
from .local import LocalBackend, check_shards
from .models import check_model, final_learner, model_state, set_model_state, with_params
from .protocol import DynamicAveraging, SyncLog, Worker, check_sync, prequential, run_protocol

_log = logging.getLogger("onlinemkl")

__all__ = ["fit_ray", "tune_ray", "tune_local", "TuneResult", "ray_init", "release_workers", "evaluate_candidate",
           "candidates", "compile_for_workers", "COMPILE_EXAMPLES"]

#: Examples of the data :func:`compile_for_workers` learns in this process before the workers start.
COMPILE_EXAMPLES = 24

#: Size parameters cut to these values for that run: a full budget (eviction, replay) and a full
#: mini-batch within :data:`COMPILE_EXAMPLES` examples, the same compiled variants as the learner's.
SMALL_PARAMS = {"budget": 4, "batch_size": 4}


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

    def compile_stats(self):
        """This actor's ``{"compiled": n, "loaded": m}`` (:func:`onlinemkl._compile.compile_stats`)."""
        return compile_stats()


#: Hosts kept by ``fit_ray(..., keep_workers=True)``, with the Ray job they belong to.
_POOL = {"job": None, "hosts": []}


def worker_runtime_env(ray) -> dict:
    """The ``runtime_env`` of the workers: this process's compile cache location on a single-node
    cluster (see the module docstring), nothing otherwise."""
    if _config.CACHE_DIR is None or sum(bool(n.get("Alive")) for n in ray.nodes()) != 1:
        return {}
    # CACHE_DIR is <NUMBA_CACHE_DIR or the per-user folder>/core-<stamp>; a worker adds the stamp itself
    return {"env_vars": {"NUMBA_CACHE_DIR": os.path.dirname(_config.CACHE_DIR)}}


def _hosts(ray, k):
    job = ray.get_runtime_context().get_job_id()
    if _POOL["job"] != job:
        _POOL["job"], _POOL["hosts"] = job, []
    remote = ray.remote(num_cpus=1, runtime_env=worker_runtime_env(ray) or None)(Host)
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

    def __init__(self, ray, actors, learner, shards, track, deal):
        self.ray = ray
        self.k = len(actors)
        self.deal = deal
        self.actors = actors
        ray.get([a.reset.remote(learner, None if deal is not None else shards[i], track)
                 for i, a in enumerate(self.actors)])

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


def _small(model):
    """A fresh copy of ``model`` with its size parameters cut to :data:`SMALL_PARAMS` (the same
    compiled variants: a budget stays a budget), or uncut where the learner refuses that."""
    learner = final_learner(model)
    params = _params(learner)
    small = {k: min(params[k], v) for k, v in SMALL_PARAMS.items()
             if isinstance(params.get(k), int) and not isinstance(params.get(k), bool)}
    if not hasattr(learner, "clone"):  # the scikit-learn-style sequence labeller
        copy = fresh_clone(learner)
        try:
            return copy.set_params(**small)
        except (TypeError, ValueError):
            return fresh_clone(learner)
    try:
        return with_params(model, small)
    except (TypeError, ValueError):
        return with_params(model, {})


def _sample(shards, n=COMPILE_EXAMPLES):
    """Up to ``n`` examples of the first shard that can be read again (a list, a dataset, a
    reader, a callable), read here without consuming it; [] if every shard is a one-shot iterator."""
    for s in shards:
        it = s() if callable(s) else s
        it = iter(it)
        if it is s:
            continue
        try:
            return list(itertools.islice(it, n))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
    return []


def compile_for_workers(learners, sample, sync=None, progress=None) -> float:
    """Compile (or load from the cache) what the workers of ``learners`` run, in this process.

    Each learner (with its size parameters cut, :data:`SMALL_PARAMS`) learns ``sample`` as two
    workers of the dynamic-averaging protocol under ``sync``'s ``delta`` (every entry point a
    worker and the coordinator call: learning, prediction, divergence, merge, compression), or,
    with ``sync`` None, prequentially as :func:`tune_ray`'s candidates do.  Compilations run in
    the foreground (not as :mod:`onlinemkl._lazy`'s background jobs), so that they reach the
    on-disk cache before any worker needs them.

    ``progress``: a bar on standard error while compiling (labelled, with the elapsed time; a
    cache load ends before it shows); None only on a terminal, False never.  Returns the seconds.
    """
    from tqdm import tqdm


    sample = list(sample)[:COMPILE_EXAMPLES]
    if len(sample) < 2:
        return 0.0
    name = type(final_learner(learners[0])).__name__
    bar = tqdm(total=1, file=sys.stderr, disable=None if progress is None else not progress, delay=BAR_DELAY_S,
               dynamic_ncols=True, leave=False, bar_format="{desc} [{elapsed}]",
               desc=f"onlinemkl: compiling {name} once for the Ray workers (first run only)")
    t0 = time.perf_counter()
    with bar, Ticker(bar), blocking():
        for model in learners:
            model = _small(model)
            try:
                if sync is None:
                    Worker(model, sample, track=True).run(len(sample))
                else:
                    rule = DynamicAveraging(check_sync(sync).delta, period=max(1, len(sample) // 4))
                    run_protocol(model, LocalBackend(model, [sample[0::2], sample[1::2]], True), rule, SyncLog())
            except Exception as exc:  # the workers meet (and report) the same problem on the real data
                _log.info("compiling for the workers stopped (%s: %s); each worker compiles what is left",
                          type(exc).__name__, exc)
    return time.perf_counter() - t0


def fit_ray(learner, shards, sync=0.0, num_workers=None, metric=None, address=None, keep_workers=False,
            progress=None):
    """:func:`~onlinemkl.distributed.fit_local`'s protocol with one Ray actor per worker.

    ``shards``: one stream per worker (each shipped to its actor, so it must pickle: a list, a
    river dataset, a ``streams`` reader over a file, or a callable returning the stream), or a
    single stream with ``num_workers`` > 1, which this process reads and deals round robin
    (``period`` examples per worker per round).  ``num_workers`` defaults to the number of
    shards.  Returns ``(learner, log)`` as :func:`fit_local` does.

    Before the workers learn, this process compiles their code on a few examples of the first
    shard (:func:`compile_for_workers`, while the actors start), and the workers load it from
    the same cache instead of each compiling it (see the module docstring).  ``progress``: the
    bar of that compilation, None on a terminal only, False never, True always.
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
        actors = _hosts(ray, num_workers)  # they start while this process compiles
        if deal:
            stream = iter(shards[0]() if callable(shards[0]) else shards[0])
            head = list(itertools.islice(stream, COMPILE_EXAMPLES))
            sample, deal = head, itertools.chain(head, stream)
        else:
            sample, deal = _sample(shards), None
        if not sample:
            _log.debug("fit_ray: every shard is a one-shot iterator; each worker compiles on its own")
        compile_for_workers([learner], sample, sync, progress)
        backend = RayBackend(ray, actors, learner, shards, metric is not None, deal)
        sync_log = SyncLog()
        state = run_protocol(learner, backend, sync, sync_log)
        pairs = backend.results()  # also drops the workers' models
        if metric is not None:
            sync_log.metric = prequential(metric, pairs)
    finally:
        if not keep_workers:
            release_workers()
    out = learner.clone()
    set_model_state(out, state)
    return out, sync_log


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


def tune_ray(learner, param_grid, stream, metric=None, num_cpus=None, address=None, progress=None):
    """Every candidate of ``param_grid`` prequential over ``stream``, in parallel Ray tasks.

    ``learner``: the template (``learner.clone(params)`` per candidate); ``param_grid``: a dict
    of lists (or a list of dicts), as scikit-learn's; ``stream``: re-readable (a list, a river
    dataset, or a callable returning the stream; sent to Ray's object store once); ``metric``:
    a river metric.  Returns a :class:`TuneResult`.

    As :func:`fit_ray`, this process first compiles what the candidates run, on a few examples
    of ``stream`` (``progress``: its bar), and the tasks load it from the same cache.
    """
    check_model(learner)
    grid = _check_tune(learner, param_grid, stream, metric)
    ray = ray_init(num_cpus=num_cpus, address=address)
    release_workers()  # kept fit_ray actors would hold the CPUs the tasks need
    compile_for_workers([with_params(learner, p) for p in grid], _sample([stream]), None, progress)
    task = ray.remote(num_cpus=1, runtime_env=worker_runtime_env(ray) or None)(evaluate_candidate)
    ref = ray.put(stream)
    results = ray.get([task.remote(learner, p, ref, metric) for p in grid])
    return TuneResult(learner, grid, results, metric)
