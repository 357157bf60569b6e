"""fit_ray and tune_ray on Ray's local cluster (skipped without Ray): the Ray runs give what the
in-process protocol gives, and the workers load the code this process compiled.  One ``ray.init``
for the module; a few small runs.

The cluster's workers are started with a compile cache of their own, empty
(``NUMBA_CACHE_DIR`` in the job's ``runtime_env``), as on a cluster started from another
environment: left to it, every worker would compile.  fit_ray and tune_ray hand them this
process's cache instead."""

import numpy as np
import pytest
from river import datasets, metrics

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'onlinemkl[ray]')")

from onlinemkl.distributed import DynamicAveraging, fit_local, fit_ray, tune_ray  # noqa: E402
from onlinemkl.distributed.ray import tune_local  # noqa: E402
from onlinemkl.river import OBSCUREClassifier, ProximalMKLClassifier  # noqa: E402
from _helpers import engine_of

DATA = list(datasets.Phishing().take(400))


@pytest.fixture(scope="module", autouse=True)
def cluster(tmp_path_factory):
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("workers-own-cache"))}})
    yield
    if started:
        ray.shutdown()


def test_fit_ray_is_fit_local_and_kept_workers_start_afresh():
    from onlinemkl.distributed.ray import _POOL, release_workers

    learner = OBSCUREClassifier(budget=50)
    sync = DynamicAveraging(5.0, period=40)
    shards = [DATA[0::2], DATA[1::2]]
    b, log_b = fit_local(learner, shards, sync=sync, metric=metrics.Accuracy())
    keep = ("syncs", "messages", "bytes", "checks", "violations", "final_bytes", "metric", "examples")
    for _ in range(2):  # the second call reuses the actors of the first
        a, log_a = fit_ray(learner, shards, sync=sync, metric=metrics.Accuracy(), keep_workers=True)
        (pa, xa), (pb, xb) = a._get_state(), b._get_state()
        assert pa == pb and all(np.array_equal(xa[k], xb[k]) for k in xa)
        assert {k: getattr(log_a, k) for k in keep} == {k: getattr(log_b, k) for k in keep}
        assert len(_POOL["hosts"]) == 2
    assert log_a.syncs > 0
    release_workers()
    assert _POOL["hosts"] == []


def test_workers_load_what_this_process_compiled():
    from onlinemkl.distributed.ray import _POOL, release_workers

    def _compile_stats(host):
        """What a worker's compiled code came from (run in the actor; nested, so Ray ships it by value)."""
        from onlinemkl._compile import compile_stats

        return compile_stats()

    learner = ProximalMKLClassifier(budget=40)
    # delta > 0: the workers also measure their divergence; the budget fills, so they evict and replay
    model, log = fit_ray(learner, [DATA[0::2], DATA[1::2]], sync=DynamicAveraging(1.0, period=50),
                         metric=metrics.Accuracy(), keep_workers=True, progress=False)
    try:
        stats = ray.get([h.__ray_call__.remote(_compile_stats) for h in _POOL["hosts"]])
        assert [s["compiled"] for s in stats] == [0, 0], stats
        assert all(s["loaded"] > 0 for s in stats), stats
        assert ray.get([h.compile_stats.remote() for h in _POOL["hosts"]]) == stats  # the library's count
    finally:
        release_workers()
    assert log.checks > 0 and model.n_support_ <= 40
    from onlinemkl._compile import compile_stats

    assert compile_stats()["loaded"] + compile_stats()["compiled"] > 0  # this process's own


def test_fit_ray_deals_one_stream_to_the_workers():
    learner = ProximalMKLClassifier(budget=50)
    model, log = fit_ray(learner, [DATA], num_workers=2, sync=DynamicAveraging(0.0, period=50))
    ref, ref_log = fit_local(learner, [DATA[0::2], DATA[1::2]], sync=DynamicAveraging(0.0, period=50))
    assert log.examples == len(DATA) and log.syncs == ref_log.syncs
    x = DATA[0][0]
    np.testing.assert_array_equal(engine_of(model).scores_one(model._row(x, False)),
                                  engine_of(ref).scores_one(ref._row(x, False)))
    with pytest.raises(ValueError, match="num_workers=3 for 2 shards"):
        fit_ray(learner, [DATA, DATA], num_workers=3)


def test_tune_ray_is_tune_local():
    learner = ProximalMKLClassifier(budget=50)
    grid = {"lam": [1e-3, 1e-4], "eta0": [0.5, 1.0]}
    res = tune_ray(learner, grid, DATA, metric=metrics.Accuracy())
    ref = tune_local(learner, grid, DATA, metric=metrics.Accuracy())
    assert [r["Accuracy"] for r in res.table] == [r["Accuracy"] for r in ref.table]
    frame = res.frame()
    assert list(frame.columns) == ["eta0", "lam", "Accuracy", "seconds"] and len(frame) == 4
    assert frame["Accuracy"].iloc[0] == max(r["Accuracy"] for r in res.table) == res.best_score
    assert res.best_model._get_params() == learner.clone(res.best_params)._get_params()
    x = DATA[0][0]
    assert res.best_model.predict_one(x) == ref.best_model.predict_one(x)
    with pytest.raises(ValueError, match="lam"):
        tune_ray(learner, {"lam": [-1.0]}, DATA, metric=metrics.Accuracy())


def test_command_line_train_with_workers(tmp_path, capsys):
    import csv

    from onlinemkl import load
    from onlinemkl.cli import main

    path = tmp_path / "phishing.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        keys = list(DATA[0][0])
        w.writerow(keys + ["label"])
        for x, y in DATA:
            w.writerow([x[k] for k in keys] + [int(y)])
    save = tmp_path / "m.omkl"
    code = main(["train", str(path), "--target", "label", "-p", "budget=50", "--workers", "2", "--sync-every", "50",
                 "--save", str(save)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"examples learnt  : {len(DATA)} by 2 workers" in out
    assert "synchronisations : 4 (16 models sent" in out
    model = load(save)
    assert model.predict_one(DATA[0][0]) in ('0', '1')  # csv labels are text
