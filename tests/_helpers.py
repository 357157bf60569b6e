"""Helpers shared by the test layers.

:func:`engine_of` is the one route from a face to its engine, for the tests whose point is an
engine invariant (incremental state against recomputation, the stored rows, the compiled state):
a face's engine is private, and naming it in one place keeps the tests that depend on it easy to
find.  A test of what a user sees reads the face's public attributes (``n_support_``,
``kernel_weights_``, ``classes_``, ...) instead.

:func:`rewrite_meta` copies a model file with its ``meta.json`` edited, for the tests of files written
by other versions or edited by hand.
"""

import json
import zipfile


def engine_of(model):
    """The engine behind a river or scikit-learn face (``None`` before a scikit-learn face is fitted)."""
    return getattr(model, "_engine", None)


def rewrite_meta(src, dst, edit):
    """Copy a model file with its meta.json edited by ``edit(meta)``."""
    with zipfile.ZipFile(src) as zin:
        entries = {n: zin.read(n) for n in zin.namelist()}
    meta = json.loads(entries.pop("meta.json"))
    edit(meta)
    with zipfile.ZipFile(dst, "w") as zout:
        for n, data in entries.items():
            zout.writestr(n, data)
        zout.writestr("meta.json", json.dumps(meta))
    return dst
