"""Test-session settings shared by ``tests/``, the doctests in ``onlinemkl/`` and ``streams/``.

The suite compiles in the caller's thread (``ONLINEMKL_BACKGROUND_COMPILE=0``, plain Numba)
and in this process only (``ONLINEMKL_SPLIT_COMPILE=0``): one code path for every test, and no
compilation thread or helper process left running between tests.  ``tests/core/test_lazy.py``
runs the background path itself, ``tests/core/test_split.py`` the helper process.

Compiled callees keep their CPython wrapper in the suite (``ONLINEMKL_WRAP_CALLEES=1``, see
``onlinemkl._config.CompiledFunction``): the tests call many compiled helpers from Python,
and with the wrapper one compilation serves both those calls and the learners' steps, where a
wrapper-less callee would compile a second time as its Python twin.  The machine code of the
functions themselves is the same.  The tests of the wrapper-less build run it in subprocesses
without the variable (``tests/core/test_compiled_function.py``, ``test_lazy.py``,
``test_split.py``).
"""

import os

os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"
os.environ["ONLINEMKL_SPLIT_COMPILE"] = "0"
os.environ["ONLINEMKL_WRAP_CALLEES"] = "1"
