"""Test-session settings shared by ``tests/``, the doctests in ``onlinemkl/`` and ``streams/``.

The suite compiles in the foreground (``ONLINEMKL_BACKGROUND_COMPILE=0``): with an empty
cache the background path would run some first calls as Python, whose results agree with
the compiled code's within rounding only, and the suite's bit-for-bit checks (save, load,
predict) must see one code path.  ``tests/test_lazy.py`` runs the background path itself.
"""

import os

os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"
