"""A first compilation split over two processes (onlinemkl._split): a helper process compiles the
parts an entry point lists into the shared cache, and the entry point's compilation loads them.

The suite turns splitting off (conftest.py); this test turns it on in a subprocess with an
empty cache, over three tiny modules of its own: one whose part the helper compiles, one whose
helper dies on start-up and one whose helper hangs (the entry point then compiles everything
itself, the hung helper ended after the part's time-out).  The learners' own
lists are checked where a learner is compiled cold anyway (tests/core/test_lazy.py).
"""

import os
import subprocess
import sys
import textwrap

import pytest

MODULE = textwrap.dedent("""
    import os
    import time

    from numba import typeof

    from onlinemkl._config import njit

    if os.environ.get("ONLINEMKL_SPLIT_COMPILE") == "0":  # in the helper (it runs with splitting off)
        {helper_start}


    @njit
    def inner(a):
        return a.sum() * 2.0


    @njit
    def outer(a):
        return inner(a) + 1.0


    def outer_parts(a):
        return [(inner, (typeof(a),))]


    COMPILE_PARTS = {{"outer": outer_parts}}
""")

SCRIPT = textwrap.dedent("""
    import numpy as np

    from onlinemkl import _lazy, _split

    for name in ("helped", "crashing", "hanging"):
        _split.PART_TIMEOUT_S = 1.0 if name == "hanging" else 120.0
        lazy = _lazy.lazy_module(name)
        module = __import__(name)
        print(name, lazy.outer(np.ones(3)), sum(module.inner.stats.cache_hits.values()),
              sum(module.outer.python_entry.stats.cache_misses.values()))
""")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="splitting needs two cores")
def test_a_helper_compiles_the_listed_parts_and_a_failed_helper_changes_nothing(tmp_path):
    for name, start in [("helped", "pass"), ("crashing", "raise SystemExit(1)"), ("hanging", "time.sleep(600)")]:
        (tmp_path / f"{name}.py").write_text(MODULE.format(helper_start=start))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), ONLINEMKL_SPLIT_COMPILE="1",
               ONLINEMKL_BACKGROUND_COMPILE="0", ONLINEMKL_NO_CACHE="", ONLINEMKL_WRAP_CALLEES="",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}
    # helped: the part came from the helper's cache; the entry point was compiled here
    assert rows["helped"] == ["7.0", "1", "1"]
    # crashing, hanging: no help, the same answer, every part compiled here
    assert rows["crashing"] == rows["hanging"] == ["7.0", "0", "1"]


PLANNED = textwrap.dedent("""
    from numba import typeof

    from onlinemkl._config import njit
    from onlinemkl._split import Plan


    @njit
    def first(a):  # the first callee the entry point's typing reaches: the helper's part
        return a.sum() * 2.0


    @njit
    def later(a):  # reached last: compiled here before the entry point
        return a.max() + 1.0


    @njit
    def outer(a):
        return first(a) + later(a)


    @njit
    def predict(a):  # another entry point: the helper compiles its Python twin
        return first(a) - 1.0


    def outer_parts(a):
        sig = (typeof(a),)
        return Plan(helper=[(predict.python_entry, sig), (first, sig)], here=[(later, sig)])


    COMPILE_PARTS = {"outer": outer_parts}
""")

PLANNED_SCRIPT = textwrap.dedent("""
    import numpy as np

    from numba.core import event

    from onlinemkl import _lazy
    import planned

    started = []  # the functions whose compilation starts in this process, in order


    class Started(event.Listener):
        def on_start(self, ev):
            started.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev):
            pass


    event.register("numba:compile", Started())
    lazy = _lazy.lazy_module("planned")
    hits = lambda d: sum(d.stats.cache_hits.values())
    misses = lambda d: sum(d.stats.cache_misses.values())
    print(lazy.outer(np.ones(3)), hits(planned.first), misses(planned.later), hits(planned.later),
          misses(planned.outer.python_entry))
    print(lazy.predict(np.ones(3)), hits(planned.predict.python_entry), misses(planned.predict.python_entry))
    print(*started)
""")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="splitting needs two cores")
def test_a_plan_compiles_its_late_parts_here_first_and_hands_the_helper_a_python_twin(tmp_path):
    """A :class:`~onlinemkl._split.Plan`: the helper compiles the first-reached callee and another
    entry point's Python twin, in its order (the twin first here, so that it is done before the
    entry point's typing waits for the callee after it); this process compiles the late callee
    before the entry point, whose typing then finds it compiled and loads the rest."""
    (tmp_path / "planned.py").write_text(PLANNED)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), ONLINEMKL_SPLIT_COMPILE="1",
               ONLINEMKL_BACKGROUND_COMPILE="0", ONLINEMKL_NO_CACHE="", ONLINEMKL_WRAP_CALLEES="",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PLANNED_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    learn, predict, started = (line.split() for line in out.stdout.splitlines())
    # outer's value; first loaded from the helper; later compiled here once, never loaded; outer compiled here
    assert learn == ["8.0", "1", "1", "0", "1"]
    # the twin loaded from the helper's cache, not compiled here
    assert predict == ["5.0", "1", "0"]
    assert started.index("later") < started.index("outer")  # ahead of the entry point, not within its typing
