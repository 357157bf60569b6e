"""Helpers shared by the test layers.

:func:`engine_of` is the one route from a face to its engine, for the tests whose point is an
engine invariant (incremental state against recomputation, the stored rows, the compiled state):
a face's engine is private, and naming it in one place keeps the tests that depend on it easy to
find.  A test of what a user sees reads the face's public attributes (``n_support_``,
``kernel_weights_``, ``classes_``, ...) instead.
"""


def engine_of(model):
    """The engine behind a river or scikit-learn face (``None`` before a scikit-learn face is fitted)."""
    return getattr(model, "_engine", None)
