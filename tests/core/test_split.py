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
