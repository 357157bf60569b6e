"""Test-session settings shared by ``tests/``, the doctests in ``onlinemkl/`` and ``streams/``.

The suite compiles in the caller's thread (``ONLINEMKL_BACKGROUND_COMPILE=0``, plain Numba):
one code path for every test, and no compilation thread left running between tests.
``tests/core/test_lazy.py`` runs the background path itself.
"""

import os

os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"
