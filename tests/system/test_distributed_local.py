"""Dynamic averaging in one process (onlinemkl.distributed.fit_local): the protocol's invariants.

One worker equals the single learner bit for bit; delta = 0 equals periodic averaging written
out by hand; delta = inf sends nothing until the final merge; a finite delta sends fewer models
than periodic averaging.
"""

import math

import numpy as np
import pytest
from river import datasets, metrics

from onlinemkl.distributed import DynamicAveraging, fit_local, merge_states
from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier

DATA = list(datasets.Phishing().take(600))
SHARDS = [DATA[0::2], DATA[1::2]]


def same_state(a, b):
    (pa, xa), (pb, xb) = a._get_state(), b._get_state()
    assert pa == pb
    assert xa.keys() == xb.keys()
    for name in xa:
        assert np.array_equal(xa[name], xb[name]), name


@pytest.mark.parametrize("learner", [OBSCUREClassifier(budget=60), ProximalMKLClassifier(budget=60),
                                     ProximalMKLClassifier()])
def test_one_worker_is_the_single_learner_bit_for_bit(learner):
    single = learner.clone()
    for x, y in DATA:
        single.learn_one(x, y)
    model, log = fit_local(learner, [DATA], sync=DynamicAveraging(0.0, period=50))
    same_state(model, single)
    assert log.messages == 0 and log.final_messages == 0 and log.examples == len(DATA)


def test_delta_zero_is_periodic_averaging():
    learner = ProximalMKLClassifier(budget=60, replay=0)
    period = 40
    model, log = fit_local(learner, SHARDS, sync=DynamicAveraging(0.0, period=period))
    # the same by hand: every worker learns a period, then every worker takes the average
    workers = [learner.clone(), learner.clone()]
    its = [iter(s) for s in SHARDS]
    rounds = 0
    while True:
        done = 0
        for w, it in zip(workers, its):
            for _, (x, y) in zip(range(period), it):
                w.learn_one(x, y)
                done += 1
        if not done:
            break
        rounds += 1
        merged = merge_states(learner, [w._get_state() for w in workers])
        for w in workers:
            w._set_state(*merged)
    want = learner.clone()
    want._set_state(*merge_states(learner, [w._get_state() for w in workers]))
    same_state(model, want)
    assert log.syncs == rounds == math.ceil(len(SHARDS[0]) / period)
    assert log.messages == 2 * 2 * rounds and log.bytes > 0


def test_delta_infinite_sends_nothing():
    model, log = fit_local(ProximalMKLClassifier(budget=60), SHARDS, sync=None)
    assert (log.syncs, log.messages, log.bytes, log.checks) == (0, 0, 0, 0)
    assert log.final_messages == 2 and log.final_bytes > 0
    assert model.n_support_ <= 60


def test_dynamic_averaging_sends_less_than_periodic_and_keeps_accuracy():
    learner = OBSCUREClassifier(budget=80)
    runs = {}
    for delta in (0.0, 20.0):
        model, log = fit_local(learner, SHARDS, sync=DynamicAveraging(delta, period=20), metric=metrics.Accuracy())
        runs[delta] = log
        if delta:
            assert log.checks == 2 * (log.rounds - 1)  # every round but the empty last one
            assert all(e["violations"] >= 1 for e in log.events)
    assert 0 < runs[20.0].messages < runs[0.0].messages
    single = learner.clone()
    acc = metrics.Accuracy()
    for x, y in DATA:
        acc.update(y, single.predict_one(x))
        single.learn_one(x, y)
    for log in runs.values():
        assert log.metric > acc.get() - 0.05


def test_bad_arguments_are_named():
    learner = ProximalMKLClassifier()
    with pytest.raises(ValueError, match="shards is empty"):
        fit_local(learner, [])
    with pytest.raises(TypeError, match=r"shards\[1\] is a int"):
        fit_local(learner, [DATA, 3])
    with pytest.raises(ValueError, match="sync='often'"):
        fit_local(learner, SHARDS, sync="often")
    with pytest.raises(ValueError, match="delta"):
        DynamicAveraging(-1.0)
    with pytest.raises(ValueError, match="period"):
        DynamicAveraging(1.0, period=0)
    with pytest.raises(TypeError, match="onlinemkl's river learners"):
        fit_local(object(), SHARDS)


def test_without_ray_the_message_says_how_to_install(monkeypatch):
    import sys

    from onlinemkl.distributed import ray as dray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(ImportError, match=r"pip install \"onlinemkl\[ray\]\""):
        dray.ray_init()


def test_a_scaled_pipeline_merges_its_scaler_statistics():
    """The scalers' statistics pool into those of the whole stream (mixture mean and variance)."""
    from river import preprocessing

    from onlinemkl.distributed.models import final_learner

    model, log = fit_local(preprocessing.StandardScaler() | ProximalMKLClassifier(budget=60), SHARDS, sync=None)
    whole = preprocessing.StandardScaler()
    for x, _ in DATA:
        whole.learn_one(x)
    scaler = model.steps["StandardScaler"]
    for k in whole.means:
        assert scaler.means[k] == pytest.approx(whole.means[k], rel=1e-9, abs=1e-12)
        assert scaler.vars[k] == pytest.approx(whole.vars[k], rel=1e-9, abs=1e-12)
        assert scaler.counts[k] == len(DATA) // 2  # the weighted mean of the workers' counts
    assert final_learner(model).n_support_ <= 60
    assert model.predict_one(DATA[0][0]) in (True, False)
    with pytest.raises(TypeError, match="pipeline step MinMaxScaler"):
        fit_local(preprocessing.MinMaxScaler() | ProximalMKLClassifier(), SHARDS)


def test_dynamic_averaging_on_raw_inputs_with_the_default_scaling():
    """Workers that standardise raw inputs themselves (scale='auto') estimate their statistics on
    their own shards; every synchronisation merges them in pooled units and the model learns."""
    from river import datasets

    from onlinemkl.distributed import DynamicAveraging, fit_local
    from onlinemkl.river import OBSCUREClassifier

    data = list(datasets.ImageSegments().take(700))
    model, log = fit_local(OBSCUREClassifier(budget=150), [data[0:600:2], data[1:600:2]],
                           sync=DynamicAveraging(0.0, period=100))
    assert log.syncs >= 2 and model._scaling.live
    assert sum(model.predict_one(x) == y for x, y in data[600:]) >= 80
