"""Compiled functions without Numba's CPython wrapper (onlinemkl._config.CompiledFunction).

A callee reached from another compiled function is compiled without the wrapper that unboxes
Python arguments; a call from Python goes to a twin of the same source that has one, cached
apart (``<name>_py``), whose callees are the wrapper-less functions.  The suite itself keeps
the wrappers (``ONLINEMKL_WRAP_CALLEES=1``, conftest.py), so this runs a small module of its own
in a subprocess without that variable and with an empty cache, twice: the second run must load
everything it calls from the cache the first wrote.
"""

import os
import subprocess
import sys
import textwrap

MODULE = textwrap.dedent("""
    from onlinemkl._config import njit


    @njit
    def inner(a):
        return a.sum() * 2.0


    @njit
    def outer(a):
        return inner(a) + 1.0
""")

SCRIPT = textwrap.dedent("""
    import numpy as np

    import compiled_mod as m

    a = np.ones(3)
    sig = (m.outer.typeof_pyval(a),)
    print("value", m.outer(a), m.inner(a))
    cres = m.inner.overloads.get(sig)  # the callee as the caller compiled it (cold runs only)
    print("callee_wrapper", None if cres is None else
          cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name) != 0)
    print("entry_signatures", len(m.outer.signatures), len(m.outer.python_entry.signatures))
    print("loaded", sum(m.outer.python_entry.stats.cache_hits.values()),
          sum(m.inner.python_entry.stats.cache_hits.values()))

    # Ray and copy rebuild a dispatcher from its state: no cache settings of its own, so its
    # twin compiles uncached, and it still runs from Python
    import copy, pickle
    from onlinemkl import _config
    from onlinemkl._core.kernels import effective_diag
    rebuilt = [pickle.loads(pickle.dumps(effective_diag)), copy.deepcopy(effective_diag)]
    print("rebuilt", isinstance(effective_diag, _config.CompiledFunction),
          *[(f(2.5, 0.0), f(2.5, 1.0), f(-1.0, 1.0)) == (2.5, 1.0, 0.0) for f in rebuilt])
""")


def _run(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), ONLINEMKL_NO_CACHE="", ONLINEMKL_WRAP_CALLEES="",
               ONLINEMKL_SPLIT_COMPILE="0", PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}


def test_callees_have_no_python_wrapper_and_python_calls_go_to_a_cached_twin(tmp_path):
    (tmp_path / "compiled_mod.py").write_text(MODULE)
    cold, warm = _run(tmp_path), _run(tmp_path)
    for run in (cold, warm):
        assert run["value"] == ["7.0", "6.0"]
    assert cold["callee_wrapper"] == ["False"]  # inner, compiled for outer, carries no wrapper
    assert warm["callee_wrapper"] == ["None"]  # outer's cached code holds inner's: not even loaded
    assert cold["entry_signatures"] == ["0", "1"]  # outer ran from Python only: its twin compiled
    assert cold["loaded"] == ["0", "0"]
    assert warm["loaded"] == ["1", "1"]  # both twins from the cache the first run wrote
    names = {f.split("-")[0] for _, _, files in os.walk(tmp_path / "cache") for f in files}
    assert {"compiled_mod.outer_py", "compiled_mod.inner_py", "compiled_mod.inner"} <= names
    assert cold["rebuilt"] == ["True", "True", "True"]



def test_the_suite_keeps_the_wrappers_in_a_cache_folder_of_their_own():
    """conftest.py sets ONLINEMKL_WRAP_CALLEES: plain Numba dispatchers, whose cache must never
    be shared with the wrapper-less build's (its entries cannot be called from Python)."""
    from onlinemkl import _config
    from onlinemkl._core.kernels import effective_diag

    assert _config.WRAP_CALLEES
    assert not isinstance(effective_diag, _config.CompiledFunction)
    assert os.path.basename(_config.CACHE_DIR).endswith("-wrapped")
    plain, problem = _config.resolve_cache_dir(dict(os.environ, ONLINEMKL_WRAP_CALLEES=""))
    assert problem is None and plain == _config.CACHE_DIR[:-len("-wrapped")]
