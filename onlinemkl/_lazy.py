"""Background compilation: a learner answers from its first call while Numba compiles.

A new process with an empty compile cache needs 10-20 s of Numba compilation before a
learner's first compiled step (most of it Numba's own typing and lowering, which no
optimisation level removes).  Instead of blocking, the first call of an entry point of
:mod:`onlinemkl._core` with a new signature starts that compilation in a background thread
and runs the *same source* as Python meanwhile: a copy of ``onlinemkl._core`` imported with
``numba.config.DISABLE_JIT`` (the code ``NUMBA_DISABLE_JIT=1`` runs, tested end to end by
``tests/test_nojit.py``).  When the compilation ends, the compiled function replaces the
stand-in and every later call goes straight to it; a warm cache loads within
:data:`LOAD_WAIT_S` and never runs Python at all.

What a user sees: a river pipeline predicts within seconds of its first example, faster
once the compilation is done; on a terminal a progress line says what is compiling and for
how long.  The Python stand-in is slow (about 1-3 ms per example on a few hundred stored
examples), so a call whose arrays hold more than :data:`PYTHON_MAX_ELEMENTS` values (a
scikit-learn ``fit`` over a kernel matrix, a large buffer) waits for the compilation
instead, as it would without this module.

Results while compiling agree with the compiled code's within rounding, not bit for bit
(the compiled sums run in SIMD lanes).  ``ONLINEMKL_BACKGROUND_COMPILE=0`` turns the
background path off (every first call compiles and waits, as plain Numba does); the test
suite runs that way so that its bit-for-bit checks see one code path, and
``tests/test_lazy.py`` tests this module.  :func:`blocking` turns it off for a block
(:func:`onlinemkl.warmup` uses it: warming up means compiling).

Caveat: as with any thread, a process that forks while a compilation runs (``multiprocessing``
with the ``fork`` start method) hands its child a held compiler lock; call
:func:`wait` before forking.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import sys
import threading
import types

import numba
from numba.core.dispatcher import Dispatcher

from . import _config

__all__ = ["lazy_module", "blocking", "wait", "enabled", "stats", "LOAD_WAIT_S", "PYTHON_MAX_ELEMENTS"]

log = logging.getLogger("onlinemkl")

#: Seconds a first call waits for its background job before running Python: a cache load
#: (the usual case after the first run) ends well within it, so warm runs never run Python.
LOAD_WAIT_S = 1.0

#: A call whose array arguments hold more values than this waits for the compilation
#: instead of running as Python (where it would take seconds or minutes).
PYTHON_MAX_ELEMENTS = 200_000

#: The package name of the Python copy of ``onlinemkl._core``.
PYTHON_PACKAGE = "onlinemkl._core_python"

_lock = threading.RLock()
_blocking_depth = 0
_jobs: list["_Job"] = []
_counts = {"python_calls": 0, "compiled_in_background": 0}


def enabled() -> bool:
    """True if first calls compile in the background (see the module docstring)."""
    if _blocking_depth or numba.config.DISABLE_JIT:
        return False
    return os.environ.get("ONLINEMKL_BACKGROUND_COMPILE", "1").strip().lower() not in ("0", "false", "no")


@contextlib.contextmanager
def blocking():
    """Within the block, a first call compiles and waits for it (plain Numba behaviour)."""
    global _blocking_depth
    with _lock:
        _blocking_depth += 1
    try:
        yield
    finally:
        with _lock:
            _blocking_depth -= 1


def wait(timeout=None) -> bool:
    """Wait for every background compilation started so far; False if ``timeout`` ran out."""
    for job in list(_jobs):
        if not job.done.wait(timeout):
            return False
    return True


def _finish_at_exit():
    """At exit, let running compilations finish, so that they reach the cache.

    Otherwise a script shorter than the compilation would never leave compiled code behind,
    and every run would start as Python again.  Ctrl-C skips the wait (the cache then stays
    empty for the entry points still compiling), and so does a process without a cache
    (``_config.CACHE`` false: a read-only install, ``ONLINEMKL_NO_CACHE``), whose compiled code
    would be thrown away: it exits as soon as its own work is done.
    """
    running = [j for j in _jobs if not j.done.is_set()]
    if not running or not _config.CACHE:
        return  # without an on-disk cache the compiled code would be thrown away: exit now
    for job in running:
        job.announce(at_exit=True)
    try:
        wait()
    except KeyboardInterrupt:
        pass


def stats() -> dict:
    """Calls answered by the Python stand-in and entry points compiled in the background."""
    return dict(_counts, compiling=sum(not j.done.is_set() for j in _jobs))


def _python_module(name: str) -> types.ModuleType:
    """``onlinemkl._core.<name>`` imported again as plain Python (Numba's jit disabled).

    The copy lives in its own package, :data:`PYTHON_PACKAGE`, whose path is ``_core``'s,
    so the modules' relative imports resolve to the Python copies as well.
    """
    with _lock:
        package = sys.modules.get(PYTHON_PACKAGE)
        if package is None:
            from . import _core

            package = types.ModuleType(PYTHON_PACKAGE, "onlinemkl._core run as Python")
            package.__path__ = list(_core.__path__)
            package.__package__ = PYTHON_PACKAGE
            sys.modules[PYTHON_PACKAGE] = package
        saved = numba.config.DISABLE_JIT
        numba.config.DISABLE_JIT = True  # numba.njit returns the plain function while this holds
        try:
            return importlib.import_module(f"{PYTHON_PACKAGE}.{name}")
        finally:
            numba.config.DISABLE_JIT = saved


def _elements(args) -> int:
    """How many values the array arguments (also inside tuples) hold."""
    total = 0
    for a in args:
        if isinstance(a, tuple):
            total += _elements(a)
        else:
            total += getattr(a, "size", 0)
    return total


def _in_cache(dispatcher) -> bool:
    """True unless the dispatcher surely has nothing in the on-disk cache (no index file).

    Only then is a first call worth :data:`LOAD_WAIT_S` of waiting: an empty cache would make
    every entry point of a learner wait in turn for nothing.
    """
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)  # Numba internals
    except AttributeError:  # no cache (ONLINEMKL_NO_CACHE), or another Numba: wait, to be safe
        return getattr(dispatcher, "_cache", None) is not None and dispatcher._cache.__class__.__name__ != "NullCache"


class _Job:
    """One background compilation of one entry point for one signature."""

    def __init__(self, entry: "_Entry", sig: tuple):
        self.entry, self.sig = entry, sig
        self.done = threading.Event()
        self._bar = None
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"onlinemkl-compile-{entry.name}")

    def start(self):
        if not _jobs:
            atexit.register(_finish_at_exit)
        _jobs.append(self)
        self.thread.start()

    def _run(self):
        try:
            self.entry.dispatcher.compile(self.sig)
            _counts["compiled_in_background"] += 1
        except BaseException as exc:  # the next call compiles in the foreground and raises it
            log.debug("background compilation of %s failed: %r", self.entry.name, exc)
        finally:
            self.done.set()
            self._close_bar()

    def announce(self, at_exit=False):
        """Say what is compiling, on a terminal as a progress line with the elapsed time."""
        from tqdm import tqdm

        from ._compile import _Ticker

        what = ("finishing the compilation of {} for the next runs (Ctrl-C skips)" if at_exit else
                "compiling {} in the background (first run only)").format(self.entry.name)
        log.info("%s", what)
        with _lock:
            if self.done.is_set() or self._bar is not None:
                return
            self._bar = tqdm(total=1, file=sys.stderr, disable=None, dynamic_ncols=True, leave=False,
                             desc=f"onlinemkl: {what}", bar_format="{desc} [{elapsed}]")
            self._ticker = _Ticker(self._bar).__enter__()

    def _close_bar(self):
        with _lock:
            if self._bar is not None:
                self._ticker.__exit__(None, None, None)
                self._bar.close()
                self._bar = None


class _Entry:
    """A compiled entry point whose first call compiles in the background."""

    def __init__(self, proxy: "LazyModule", name: str, dispatcher: Dispatcher):
        self.proxy, self.name, self.dispatcher = proxy, name, dispatcher
        self.job = None

    def _compiled(self):
        """The dispatcher, from now on called directly (the proxy's attribute is replaced)."""
        setattr(self.proxy, self.name, self.dispatcher)
        return self.dispatcher

    def __call__(self, *args):
        if not enabled():
            return self._compiled()(*args)
        job = self.job
        if job is None:
            sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
            if sig in self.dispatcher.overloads:
                return self._compiled()(*args)
            with _lock:
                if self.job is None:
                    self.job = _Job(self, sig)
                    self.job.start()
                job = self.job
            if job.done.wait(LOAD_WAIT_S if _in_cache(self.dispatcher) else 0.0):
                return self._compiled()(*args)
            job.announce()
        if job.done.is_set() or _elements(args) > PYTHON_MAX_ELEMENTS:
            job.done.wait()
            return self._compiled()(*args)
        _counts["python_calls"] += 1
        return getattr(self.proxy.python_module(), self.name)(*args)


class LazyModule(types.SimpleNamespace):
    """A ``_core`` module whose compiled functions start as :class:`_Entry` stand-ins.

    Every other attribute (constants, record types) is the module's own object.  Once an
    entry point's compilation is done, its attribute here *is* the Numba dispatcher, so the
    engines' calls pay nothing for this module after the first run.
    """

    def __init__(self, module: types.ModuleType, python_module=None):
        super().__init__(**{k: v for k, v in vars(module).items() if not k.startswith("__")})
        short = module.__name__.rsplit(".", 1)[-1]
        #: () -> the module's Python copy (imported on the first call that needs it)
        self.python_module = python_module or (lambda: _python_module(short))
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and not value.targetoptions.get("parallel"):
                setattr(self, name, _Entry(self, name, value))


_modules: dict[str, LazyModule] = {}


def lazy_module(name: str) -> LazyModule:
    """The :class:`LazyModule` of ``onlinemkl._core.<name>`` (one per module and process)."""
    with _lock:
        if name not in _modules:
            _modules[name] = LazyModule(importlib.import_module(f"onlinemkl._core.{name}"))
        return _modules[name]
