"""One lock per model: every public model is safe to share across threads.

The compiled steps release the GIL (``nogil=True``, so that a server or a
thread pool can run *other* models side by side), which means two threads
calling ``learn_one`` on the *same* model would run its compiled step on the
same buffers at once, and the feature and label maps would grow under a step
that is reading them: torn updates, out-of-bounds writes, a crashed process.
Every public model therefore takes its own re-entrant lock (``threading.RLock``)
around each method that reads or changes its state: learning, prediction,
``get_state``/``set_state`` (and so saving), pickling and copying.  Calls on
one model from several threads run one at a time, each seeing a whole model;
different models never wait for each other.

The lock is made on first use (``dict.setdefault`` is atomic under the GIL, so
two threads racing to make it get the same one), is not a constructor
parameter (scikit-learn's ``clone`` and river's ``clone`` never see it), and
is left out of pickles and copies (each copy gets its own).
"""

from __future__ import annotations

import copy
import functools
import inspect
import threading

__all__ = ["ModelLock", "synchronized", "LOCKED_METHODS"]

#: The methods of a face (river adapter or scikit-learn estimator) that run under the model's lock
#: wherever a class defines them.  Fitted attributes (public properties whose name ends in ``_``)
#: are locked too.
LOCKED_METHODS = frozenset({
    "learn_one", "learn_many", "predict_one", "predict_proba_one", "predict_many", "predict_proba_many",
    "fit", "partial_fit", "predict", "predict_proba", "decision_function", "score", "objective", "save",
    "_get_state", "_set_state",
})

_ATTR = "_model_lock"


def _lock_of(obj) -> threading.RLock:
    try:
        return obj.__dict__[_ATTR]
    except KeyError:
        return obj.__dict__.setdefault(_ATTR, threading.RLock())


def synchronized(method):
    """``method`` run while holding its object's model lock (re-entrant: locked methods call each other)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        try:
            lock = self.__dict__[_ATTR]
        except KeyError:
            lock = self.__dict__.setdefault(_ATTR, threading.RLock())
        with lock:
            return method(self, *args, **kwargs)

    locked.__wrapped_synchronized__ = True
    return locked


class ModelLock:
    """Mixin of every public model: its :data:`LOCKED_METHODS` and fitted attributes take the model's lock.

    Subclasses need not do anything: ``__init_subclass__`` wraps the methods each class
    defines.  A pickle or copy is taken under the lock (a consistent snapshot while
    another thread learns) and holds no lock.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, value in list(cls.__dict__.items()):
            if name in LOCKED_METHODS and inspect.isfunction(value):
                if not getattr(value, "__wrapped_synchronized__", False):
                    setattr(cls, name, synchronized(value))
            elif (isinstance(value, property) and name.endswith("_") and not name.startswith("_")
                  and value.fget is not None and not getattr(value.fget, "__wrapped_synchronized__", False)):
                setattr(cls, name, property(synchronized(value.fget), value.fset, value.fdel, value.__doc__))

    def __getstate__(self):
        with _lock_of(self):
            getstate = getattr(super(), "__getstate__", None)  # object has one from Python 3.11
            state = getstate() if getstate is not None else self.__dict__
            if state is None:
                return None
            state = {k: v for k, v in state.items() if k != _ATTR}
            # A snapshot: the engine, the feature and label maps are pickled after this returns, when
            # another thread may be learning again.
            return copy.deepcopy(state)
