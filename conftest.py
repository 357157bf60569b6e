"""Test-session settings shared by ``tests/``, the doctests in ``onlinemkl/`` and ``streams/``.

The suite compiles in the caller's thread (``ONLINEMKL_BACKGROUND_COMPILE=0``, plain Numba)
and in this process only (``ONLINEMKL_SPLIT_COMPILE=0``): one code path for every test, and no
compilation thread or helper process left running between tests.  ``tests/core/test_lazy.py``
runs the background path itself, ``tests/core/test_split.py`` the helper process.
"""

import os

os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"
os.environ["ONLINEMKL_SPLIT_COMPILE"] = "0"
