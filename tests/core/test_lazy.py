"""Background compilation (onlinemkl._lazy): a first call waits for its compilation in a thread,
then the dispatcher takes over; nothing runs as Python meanwhile.

The suite runs with ``ONLINEMKL_BACKGROUND_COMPILE=0`` (conftest.py); these tests turn it on.
In-process tests use a small module of their own whose compilation a gate holds back, so the
order of events is forced, not timed; one subprocess test runs the real thing on an empty cache
and then on the cache it wrote, and compares the predictions bit for bit.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest

from onlinemkl import _lazy
from _helpers import engine_of

SOURCE = textwrap.dedent("""
    import numba

    SCALE = 3.0

    @numba.njit(cache=False)
    def bump(a):
        a[0] += 1.0
        return a.sum() * SCALE

    @numba.njit(cache=False)
    def broken(a):
        return a.no_such_attribute
""")


def _load(path, name, disable_jit):
    saved = numba.config.DISABLE_JIT
    numba.config.DISABLE_JIT = disable_jit
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        numba.config.DISABLE_JIT = saved


@pytest.fixture
def gated(tmp_path, monkeypatch):
    """A LazyModule over a fresh module whose compilations wait for ``gate``."""
    path = tmp_path / "lazy_fixture.py"
    path.write_text(SOURCE)
    module = _load(path, "lazy_fixture", disable_jit=False)
    gate = threading.Event()
    for disp in (module.bump, module.broken):
        real = disp.compile

        def held(sig, real=real):
            assert gate.wait(30), "the test never opened the gate"
            return real(sig)
        disp.compile = held  # an instance attribute: the background job calls this one
    monkeypatch.setenv("ONLINEMKL_BACKGROUND_COMPILE", "1")
    monkeypatch.setattr(_lazy, "LOAD_WAIT_S", 0.01)
    monkeypatch.setattr(_lazy, "_counts", {"compiled_in_background": 0})
    monkeypatch.setattr(_lazy, "_jobs", [])
    lazy = _lazy.LazyModule(module)
    yield lazy, module, gate
    gate.set()
    _lazy.wait(30)


def _call_in_thread(fn, *args):
    """``fn(*args)`` in a thread; returns the thread and a dict that receives the result."""
    got = {}
    thread = threading.Thread(target=lambda: got.setdefault("result", fn(*args)), daemon=True)
    thread.start()
    return thread, got


def test_a_first_call_waits_for_its_compilation_then_the_dispatcher_takes_over(gated):
    lazy, module, gate = gated
    assert lazy.SCALE == 3.0  # constants pass through
    a = np.zeros(3)
    thread, got = _call_in_thread(lazy.bump, a)
    thread.join(0.5)
    # while the compilation is held, nothing ran: no Python stand-in answered or changed ``a``
    assert thread.is_alive() and not got and a[0] == 0.0
    assert _lazy.stats() == {"compiled_in_background": 0, "compiling": 1}
    gate.set()
    thread.join(30)
    assert got["result"] == 3.0 and a[0] == 1.0
    assert _lazy.stats() == {"compiled_in_background": 1, "compiling": 0}
    assert lazy.bump(a) == 6.0 and a[0] == 2.0
    assert lazy.bump is module.bump  # later calls go straight to Numba


def test_blocking_compiles_in_the_foreground(gated):
    lazy, module, gate = gated
    gate.set()
    with _lazy.blocking():
        assert not _lazy.enabled()
        lazy.bump(np.zeros(2))
    assert _lazy.enabled()
    assert not _lazy._jobs and lazy.bump is module.bump  # compiled in the caller, no thread


def test_off_switch(gated, monkeypatch):
    lazy, module, gate = gated
    gate.set()
    monkeypatch.setenv("ONLINEMKL_BACKGROUND_COMPILE", "0")
    lazy.bump(np.zeros(2))
    assert not _lazy._jobs and lazy.bump is module.bump  # compiled in the caller, no thread


def test_a_failed_background_compilation_raises_in_the_caller(gated):
    lazy, module, gate = gated
    gate.set()
    with pytest.raises(numba.core.errors.TypingError, match="no_such_attribute"):
        lazy.broken(np.zeros(2))


@pytest.mark.parametrize("cache", [True, False])
def test_exit_waits_for_compilations_only_when_a_cache_keeps_them(gated, monkeypatch, cache):
    """With a cache, the at-exit hook waits so that the compiled code reaches it; without one
    (a read-only install, ONLINEMKL_NO_CACHE) the code would be thrown away: no wait."""
    lazy, module, gate = gated
    _call_in_thread(lazy.bump, np.zeros(2))  # a caller interrupted while its compilation is held
    while not _lazy._jobs:
        threading.Event().wait(0.01)
    monkeypatch.setattr(_lazy._config, "CACHE", cache)
    opened = threading.Timer(1.0, gate.set)
    opened.start()
    _lazy._finish_at_exit()
    assert bool(module.bump.overloads) is cache  # waited for the compiled code, or returned at once
    opened.join()


CHILD = textwrap.dedent("""
    from river import datasets
    import onlinemkl.river as om
    from onlinemkl import _lazy

    model = om.OBSCUREClassifier()
    for i, (x, y) in enumerate(datasets.Phishing()):
        if i == 300:
            break
        print(float(model.predict_proba_one(x).get(True, 0.5)).hex())
        model.learn_one(x, y)
    from onlinemkl import _compile
    from onlinemkl.obscure._step import obscure_run  # the learner's step: compiled, or loaded
    print(_lazy.stats()["compiled_in_background"], sum(obscure_run.python_entry.stats.cache_misses.values()),
          _compile.compile_stats()["loaded"])
""")


def test_the_same_script_gives_the_same_bits_on_an_empty_and_on_a_warm_cache(tmp_path):
    """Background compilation on (the suite turns it off): a process on an empty cache must learn
    and predict exactly as one that loads the compiled code.  Online learning amplifies a last-bit
    difference (it decides whether a margin error triggers an update), so any step taken by code
    other than the compiled one shows here.  One learner (the river faces' default classifier on
    river's Phishing) is enough to show it, and keeps this to one cold compilation.  With two
    cores, the cold process hands part of the step's call tree to a helper process
    (onlinemkl._split) and loads those parts from the cache the helper writes: the types the step
    lists for them must be those it calls them with, or nothing would load."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), ONLINEMKL_BACKGROUND_COMPILE="1",
               ONLINEMKL_NO_CACHE="", ONLINEMKL_SPLIT_COMPILE="1",
                   ONLINEMKL_WRAP_CALLEES="")  # the build users get: callees without wrappers
    runs = []
    for _ in range(2):  # an empty cache, then the cache the first process left behind
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                             timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(out.stdout.splitlines())
    (*cold, cold_stats), (*warm, warm_stats) = runs
    assert len(cold) == len(warm) == 300
    assert [i for i, (c, w) in enumerate(zip(cold, warm)) if c != w] == []
    assert cold_stats.split()[0] != "0" and cold_stats.split()[1] == "1"  # compiled in the background
    assert warm_stats.split()[1] == "0"  # then loaded from the cache
    if len(os.sched_getaffinity(0)) >= 2:  # the helper compiled its parts: the step loaded them
        assert int(cold_stats.split()[2]) >= 9  # obscure_run_parts lists nine


def test_a_model_that_has_learnt_nothing_answers_without_compiled_code(monkeypatch):
    """Every score of a model with nothing stored is 0 exactly: the engine answers it itself, so
    a new process's first prediction (the river regressor's, before any example) never waits for
    a compilation, and the answer is the compiled pass's (checked against it)."""
    from onlinemkl.proximal import engine as ep
    from onlinemkl.river import ProximalMKLRegressor

    x = {"a": 1.5, "b": -2.0}
    model = ProximalMKLRegressor()
    model.learn_one(x, 3.0)  # sets the feature columns up, and compiles the passes
    fresh = ProximalMKLRegressor()
    fresh._features = model._features  # the same columns, nothing learnt
    row = fresh._row(x, grow=False)
    with monkeypatch.context() as m:
        m.setattr(ep._cf, "fobos_scores", lambda *a: pytest.fail("fobos_scores called for an empty model"))
        got = engine_of(fresh).scores_one(row)
        assert fresh.predict_one(x) == 0.0
    engine = engine_of(fresh)
    ep._cf.fobos_scores(row, engine._state_record(), engine.buf.coef, engine.W, engine.sigma, 0, 1)  # the compiled pass
    assert got.shape == (1,) and got.tobytes() == engine.scores[:1].tobytes()
    assert model.predict_one(x) != 0.0  # a model that has learnt goes through the compiled pass
