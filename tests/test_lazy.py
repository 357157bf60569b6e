"""Background compilation (onlinemkl._lazy): Python answers while Numba compiles, then hands over.

The suite runs with ``ONLINEMKL_BACKGROUND_COMPILE=0`` (conftest.py); these tests turn it on.
In-process tests use a small module of their own whose compilation a gate holds back, so the
order of events is forced, not timed; one subprocess test runs the real thing on an empty cache.
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest

from onlinemkl import _lazy

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
    python = _load(path, "lazy_fixture_python", disable_jit=True)
    gate = threading.Event()
    for disp in (module.bump, module.broken):
        real = disp.compile

        def held(sig, real=real):
            assert gate.wait(30), "the test never opened the gate"
            return real(sig)
        disp.compile = held  # an instance attribute: the background job calls this one
    monkeypatch.setenv("ONLINEMKL_BACKGROUND_COMPILE", "1")
    monkeypatch.setattr(_lazy, "LOAD_WAIT_S", 0.01)
    monkeypatch.setattr(_lazy, "_counts", {"python_calls": 0, "compiled_in_background": 0})
    monkeypatch.setattr(_lazy, "_jobs", [])
    lazy = _lazy.LazyModule(module, python_module=lambda: python)
    yield lazy, module, gate
    gate.set()
    _lazy.wait(30)


def test_python_answers_while_compiling_then_the_dispatcher_takes_over(gated):
    lazy, module, gate = gated
    assert lazy.SCALE == 3.0  # constants pass through
    a = np.zeros(3)
    assert lazy.bump(a) == 3.0 and a[0] == 1.0  # same result, same in-place update, from Python
    assert _lazy.stats() == {"python_calls": 1, "compiled_in_background": 0, "compiling": 1}
    assert not module.bump.overloads
    gate.set()
    assert _lazy.wait(30)
    assert _lazy.stats()["compiled_in_background"] == 1
    assert lazy.bump(a) == 6.0 and a[0] == 2.0
    assert lazy.bump is module.bump  # later calls go straight to Numba
    assert _lazy.stats()["python_calls"] == 1


def test_large_calls_wait_for_the_compilation(gated, monkeypatch):
    lazy, module, gate = gated
    monkeypatch.setattr(_lazy, "PYTHON_MAX_ELEMENTS", 10)
    threading.Timer(0.2, gate.set).start()
    assert lazy.bump(np.zeros(11)) == 3.0
    assert _lazy.stats()["python_calls"] == 0 and module.bump.overloads


def test_blocking_compiles_in_the_foreground(gated):
    lazy, module, gate = gated
    gate.set()
    with _lazy.blocking():
        assert not _lazy.enabled()
        lazy.bump(np.zeros(2))
    assert _lazy.enabled()
    assert _lazy.stats()["python_calls"] == 0 and lazy.bump is module.bump


def test_off_switch(gated, monkeypatch):
    lazy, module, gate = gated
    gate.set()
    monkeypatch.setenv("ONLINEMKL_BACKGROUND_COMPILE", "0")
    lazy.bump(np.zeros(2))
    assert _lazy.stats()["python_calls"] == 0 and lazy.bump is module.bump


def test_a_failed_background_compilation_raises_in_the_foreground(gated):
    lazy, module, gate = gated
    with pytest.raises(AttributeError):  # the Python stand-in fails first, as Python
        lazy.broken(np.zeros(2))
    gate.set()
    assert _lazy.wait(30)
    with pytest.raises(numba.core.errors.TypingError, match="no_such_attribute"):
        lazy.broken(np.zeros(2))


@pytest.mark.parametrize("cache", [True, False])
def test_exit_waits_for_compilations_only_when_a_cache_keeps_them(gated, monkeypatch, cache):
    """With a cache, the at-exit hook waits so that the compiled code reaches it; without one
    (a read-only install, ONLINEMKL_NO_CACHE) the code would be thrown away: no wait."""
    lazy, module, gate = gated
    lazy.bump(np.zeros(2))  # a compilation is now held at the gate
    monkeypatch.setattr(_lazy._config, "CACHE", cache)
    opened = threading.Timer(1.0, gate.set)
    opened.start()
    _lazy._finish_at_exit()
    assert bool(module.bump.overloads) is cache  # waited for the compiled code, or returned at once
    opened.join()


def test_the_python_copy_of_core_is_plain_python():
    obscure = _lazy._python_module("obscure")
    assert obscure.__name__ == f"{_lazy.PYTHON_PACKAGE}.obscure"
    assert type(obscure.obscure_run).__name__ == "function"
    assert type(obscure.prepare_query).__name__ == "function"  # its imports are copies too
    assert not numba.config.DISABLE_JIT
    from onlinemkl._core import obscure as compiled

    assert isinstance(compiled.obscure_run, numba.core.dispatcher.Dispatcher)


CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    from river import datasets
    from river.preprocessing import StandardScaler
    import onlinemkl.river as om
    from onlinemkl import _lazy

    def run(stop):
        model = StandardScaler() | om.OBSCUREClassifier()
        probas = []
        for i, (x, y) in enumerate(datasets.Phishing()):
            if i == stop:
                break
            probas.append(model.predict_proba_one(x).get(True, 0.0))
            model.learn_one(x, y)
        return probas

    first = run(40)
    during = _lazy.stats()
    assert _lazy.wait(600)
    from onlinemkl.engines import obscure as engine
    again = run(40)
    print(json.dumps(dict(first=first, again=again, during=during, after=_lazy.stats(),
                          dispatcher=type(engine._co.obscure_run).__name__)))
""")


def test_a_river_pipeline_answers_from_python_on_an_empty_cache_and_warm_runs_never_do(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), ONLINEMKL_BACKGROUND_COMPILE="1",
               ONLINEMKL_NO_CACHE="")
    runs = []
    for _ in range(2):  # an empty cache, then the cache the first process left behind
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["during"]["python_calls"] > 0 and cold["after"]["compiled_in_background"] >= 1
    assert cold["dispatcher"] == "CPUDispatcher"
    # the model taught by Python agrees with the one taught by the compiled code within rounding
    np.testing.assert_allclose(cold["first"], cold["again"], rtol=1e-9, atol=1e-12)
    # the first process finished its compilation at exit, into the cache: no Python the second time
    assert warm["during"]["python_calls"] == 0
    np.testing.assert_allclose(warm["first"], cold["again"], rtol=1e-9, atol=1e-12)
