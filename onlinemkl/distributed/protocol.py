"""Dynamic averaging (Kamp, Boley, Keren & Mock, ECML PKDD 2014; for kernel models with
support-vector expansions and compression, Kamp, Bothe, Boley & Mock, ECML PKDD 2016).

``k`` workers learn on their own shards from a common start.  Every ``period`` examples (a
round) each worker compares its model with the *reference* model, the last synchronised one,
which it holds: a local condition, no communication.  If some worker's divergence (squared
RKHS distance, :func:`onlinemkl.distributed.merge.state_divergence`) exceeds ``delta``, it
notifies the coordinator, which collects every model, averages them (:func:`merge_states`,
equal weights) and sends the average back: it becomes every worker's model and the new
reference.  ``delta = 0`` synchronises after every round (periodic averaging);
``delta = inf`` never does.  (The 2014 paper's partial synchronisation, which first averages
a few workers only, is not implemented: a violation synchronises all of them.)

This module holds the protocol, written once against a *backend* that runs the workers
(:class:`Worker`, one per shard): in this process (:func:`onlinemkl.distributed.fit_local`)
or as Ray actors (:func:`onlinemkl.distributed.fit_ray`).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_number
from .merge import state_nbytes
from .models import check_model, merge_model_states, model_divergence, model_state, set_model_state

__all__ = ["DynamicAveraging", "SyncLog", "Worker", "check_sync", "run_protocol"]


@dataclass(frozen=True)
class DynamicAveraging:
    """The synchronisation rule: ``delta`` (>= 0; 0 periodic, ``math.inf`` never) and the
    examples per worker between checks, ``period``."""

    delta: float = 0.0
    period: int = 100

    def __post_init__(self):
        if not (isinstance(self.delta, (int, float)) and self.delta == math.inf):
            check_number("delta", self.delta, low=0.0, hint=" (0: periodic averaging, math.inf: no communication)")
        check_number("period", self.period, low=1, integer=True, hint=" (examples per worker between checks)")


def check_sync(sync) -> DynamicAveraging:
    """``sync`` as a :class:`DynamicAveraging`: one, a number (``delta``), 'periodic' or None (never)."""
    if isinstance(sync, DynamicAveraging):
        return sync
    if sync is None:
        return DynamicAveraging(math.inf)
    if sync == "periodic":
        return DynamicAveraging(0.0)
    if isinstance(sync, (int, float)) and not isinstance(sync, bool):
        return DynamicAveraging(float(sync))
    raise ValueError(f"sync={sync!r}: give DynamicAveraging(delta, period), a number delta >= 0, "
                     "'periodic' or None (no synchronisation)")


@dataclass
class SyncLog:
    """What the protocol did: rounds and checks, violations (one small notice each),
    synchronisations, and the models sent during learning (``messages``, ``bytes``: ``k`` up
    and ``k`` down per synchronisation), then the final collection of the ``k`` models into
    one (``final_messages``, ``final_bytes``), counted apart.  ``events``: one dict per
    synchronisation.  ``metric``: the prequential metric over every worker's predictions
    (each example predicted by its worker's model before learning it), when one was given."""

    workers: int = 0
    delta: float = 0.0
    period: int = 0
    rounds: int = 0
    checks: int = 0
    violations: int = 0
    syncs: int = 0
    messages: int = 0
    bytes: int = 0
    final_messages: int = 0
    final_bytes: int = 0
    examples: int = 0
    seconds: float = 0.0
    metric: float | None = None
    events: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        out["delta"] = None if math.isinf(self.delta) else self.delta
        return out


class Worker:
    """One shard's learner (a copy of the given one, which may be fitted already): learns ``n`` examples at a time, measures
    its divergence from the reference, adopts a merged model.  Keeps its own prequential
    record (``(y, prediction)`` before learning) when ``track``."""

    def __init__(self, learner, shard, track=False):
        self.learner = copy.deepcopy(learner)  # a fitted learner is continued
        self.kind = check_model(self.learner)
        self.it = iter(shard() if callable(shard) else shard)
        self.track = bool(track)
        self.pairs = []
        self.seen = 0

    def run(self, n: int) -> int:
        """Learn up to ``n`` examples of the shard; the number learnt (fewer: the shard ended)."""
        learner, pairs, done = self.learner, self.pairs, 0
        if n <= 0:
            return 0
        for x, y in self.it:
            if self.track:
                pairs.append((y, learner.predict_one(x)))
            learner.learn_one(x, y)
            done += 1
            if done == n:
                break
        self.seen += done
        return done

    def state(self):
        return model_state(self.learner)

    def divergence(self, reference) -> float:
        return model_divergence(self.learner, model_state(self.learner), reference)

    def adopt(self, merged) -> None:
        """Take the merged model, keeping what is this worker's own: the replay reservoir of
        its shard's examples, or the pending mini-batch (remapped to the merged features)."""
        own_state, own = model_state(self.learner)
        params, arrays = merged
        arrays = dict(arrays)
        if self.kind == "minibatch":
            names = list(params["features"])
            col = {v: i for i, v in enumerate(names)}
            X = np.zeros((own["pending_X"].shape[0], len(names)))
            for i, v in enumerate(own_state["features"]):
                X[:, col[v]] = own["pending_X"][:, i]
            arrays["pending_X"], arrays["pending_y"] = X, own["pending_y"].copy()
        elif "replay.labels" not in own:
            pass  # the sequence labeller keeps no reservoir
        elif own["replay.labels"].shape[0] and list(own_state["features"]) == list(params["features"])[
                :len(own_state["features"])] and list(own_state.get("labels", [])) == list(
                params.get("labels", []))[:len(own_state.get("labels", []))]:
            # the worker's columns and label indices are a prefix of the merged ones: keep its reservoir
            for name in ("replay.rows", "replay.labels", "replay.counters", "replay.where"):
                arrays[name] = own[name].copy()
            arrays["replay.where"][:] = -1  # its row hints point into its old buffer
        elif "replay.counters" in own:
            arrays["replay.counters"] = own["replay.counters"].copy()
            arrays["replay.rows"] = np.zeros((0, 0))
            arrays["replay.labels"] = own["replay.labels"][:0].copy()
            arrays["replay.where"] = np.zeros((0, 2), dtype=np.int64)
        set_model_state(self.learner, (params, arrays))

    def results(self):
        return self.pairs


def prequential(metric, pairs):
    """A fresh copy of river ``metric`` updated on every ``(y, prediction)`` pair; its value."""
    m = metric.clone()
    for y, p in pairs:
        if p is not None:
            m.update(y, p)
    return float(m.get())


def run_protocol(learner, backend, sync: DynamicAveraging, log: SyncLog):
    """Run the workers of ``backend`` under ``sync``; returns the final model's state.

    ``backend`` offers ``k``, ``run(n) -> [learnt]``, ``divergences(ref) -> [float]``,
    ``states() -> [state]``, ``adopt(state)`` (send it to every worker) and ``share(state)``
    (make it available to the workers: a Ray object reference or the state itself).
    """
    t0 = time.perf_counter()
    k = backend.k
    log.workers, log.delta, log.period = k, sync.delta, sync.period
    reference = backend.share(model_state(learner))
    while True:
        done = backend.run(sync.period)
        log.rounds += 1
        log.examples += int(sum(done))
        if not any(done):
            break
        if k == 1 or math.isinf(sync.delta):
            continue
        if sync.delta == 0.0:
            violated = k
        else:
            div = backend.divergences(reference)
            log.checks += k
            violated = int(sum(d > sync.delta for d in div))
        if not violated:
            continue
        log.violations += violated
        states = backend.states()
        merged = merge_model_states(learner, states)
        up = sum(state_nbytes(s) for s in states)
        down = k * state_nbytes(merged)
        log.syncs += 1
        log.messages += 2 * k
        log.bytes += up + down
        log.events.append({"round": log.rounds, "examples": log.examples, "violations": violated,
                           "bytes": up + down})
        reference = backend.share(merged)
        backend.adopt(reference)
    states = backend.states()
    final = merge_model_states(learner, states)
    if k > 1:
        log.final_messages = k
        log.final_bytes = sum(state_nbytes(s) for s in states)
    log.seconds = time.perf_counter() - t0
    return final
