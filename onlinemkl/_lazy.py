"""Compilation of the compiled modules' entry points on first use, in a background thread.

A new process with an empty compile cache needs tens of seconds of Numba compilation before a
learner's first compiled step.  The first call of an entry point of a compiled module
(:mod:`onlinemkl._core` and each learner's ``_step``/``_fit``) with a new signature starts that
compilation in a background thread and waits for it; the compiled function then replaces the
stand-in, so every later call goes straight to Numba.  A
warm cache loads within :data:`LOAD_WAIT_S`; a compilation that takes longer says so (on a
terminal a progress line with what is compiling and for how long).

Nothing runs as Python while a compilation is under way: a learning call, and any prediction
that reads the learnt model, waits for the compiled code.  So the same script gives the same
model and the same predictions, bit for bit, whatever the state of the cache (running the
source as Python agrees with the compiled code within rounding only: the compiled sums run
in SIMD lanes, and in online learning one last bit decides whether a margin error triggers
an update).  Answers that are exact without compiled code stay instant: the engines answer a
prediction of a model that has learnt nothing (all scores zero) themselves.  Waiting in a
thread rather than compiling in the caller's keeps the caller responsive to Ctrl-C and lets a
process that ends early finish the compilation at exit, so that the next run starts compiled.

``ONLINEMKL_BACKGROUND_COMPILE=0`` compiles in the caller's thread instead (plain Numba); the
test suite runs that way, and ``tests/core/test_lazy.py`` tests this module.  :func:`blocking` does
the same for a block (:func:`onlinemkl.warmup` uses it).

Caveat: as with any thread, a process that forks while a compilation runs (``multiprocessing``
with the ``fork`` start method) hands its child a held compiler lock; call :func:`wait` before
forking.
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
from ._progress import Ticker
from ._split import cached, split

__all__ = ["lazy_module", "blocking", "wait", "enabled", "stats", "LOAD_WAIT_S"]

log = logging.getLogger("onlinemkl")

#: Seconds a first call waits for its background job before it announces the compilation: a
#: cache load (the usual case after the first run) ends well within it, and shows nothing.
LOAD_WAIT_S = 1.0

_lock = threading.RLock()
_blocking_depth = 0
_jobs: list["_Job"] = []
_counts = {"compiled_in_background": 0}


def enabled() -> bool:
    """True if first calls compile in a background thread (see the module docstring)."""
    if _blocking_depth or numba.config.DISABLE_JIT:
        return False
    return os.environ.get("ONLINEMKL_BACKGROUND_COMPILE", "1").strip().lower() not in ("0", "false", "no")


@contextlib.contextmanager
def blocking():
    """Within the block, a first call compiles in the caller's thread (plain Numba behaviour)."""
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

    A compilation still runs at exit only if its caller was interrupted (Ctrl-C while it
    waited): the next run then starts compiled.  A second Ctrl-C skips the wait, and so does a
    process without a cache (``_config.CACHE`` false: a read-only install,
    ``ONLINEMKL_NO_CACHE``), whose compiled code would be thrown away.
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
    """Entry points compiled in the background so far, and how many compilations still run."""
    return dict(_counts, compiling=sum(not j.done.is_set() for j in _jobs))


def _in_cache(dispatcher) -> bool:
    """True unless the dispatcher surely has nothing in the on-disk cache (no index file).

    Only then is a first call worth :data:`LOAD_WAIT_S` of silence: with an empty cache the
    progress line appears at once.
    """
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)  # Numba internals
    except AttributeError:  # no cache (ONLINEMKL_NO_CACHE), or another Numba: wait, to be safe
        return getattr(dispatcher, "_cache", None) is not None and dispatcher._cache.__class__.__name__ != "NullCache"


def _cached(dispatcher, sig) -> bool:
    """True if the on-disk cache holds the dispatcher's code for ``sig`` (unsure: :func:`_in_cache`).

    A first compilation splits only then (:mod:`onlinemkl._split`): a helper process for code the
    cache already holds would cost a warm start its start-up."""
    found = cached(dispatcher, sig)
    return _in_cache(dispatcher) if found is None else found


class _Job:
    """One background compilation of one entry point for one signature."""

    def __init__(self, entry: "_Entry", sig: tuple, args: tuple):
        self.entry, self.sig, self.args = entry, sig, args
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
            cold = not _cached(self.entry.dispatcher, self.sig)
            with split(self.entry.parts_of if cold else None, self.args):
                self.entry.dispatcher.compile(self.sig)
            self.args = None
            _counts["compiled_in_background"] += 1
        except BaseException as exc:  # the caller then compiles in its own thread and raises it
            log.debug("background compilation of %s failed: %r", self.entry.name, exc)
        finally:
            self.done.set()
            self._close_bar()

    def announce(self, at_exit=False):
        """Say what is compiling, on a terminal as a progress line with the elapsed time."""
        from tqdm import tqdm

        what = ("finishing the compilation of {} for the next runs (Ctrl-C skips)" if at_exit else
                "compiling {} (first run only)").format(self.entry.name)
        log.info("%s", what)
        with _lock:
            if self.done.is_set() or self._bar is not None:
                return
            self._bar = tqdm(total=1, file=sys.stderr, disable=None, dynamic_ncols=True, leave=False,
                             desc=f"onlinemkl: {what}", bar_format="{desc} [{elapsed}]")
            self._ticker = Ticker(self._bar).__enter__()

    def _close_bar(self):
        with _lock:
            if self._bar is not None:
                self._ticker.__exit__(None, None, None)
                self._bar.close()
                self._bar = None


class _Entry:
    """A compiled entry point whose first call compiles in a background thread and waits."""

    def __init__(self, proxy: "LazyModule", name: str, dispatcher: Dispatcher, parts_of=None):
        self.proxy, self.name, self._dispatcher = proxy, name, dispatcher
        self.parts_of = parts_of  # the parts a helper process may compile (onlinemkl._split)
        self.job = None

    @property
    def dispatcher(self) -> Dispatcher:
        """What Python calls go to: a :class:`~onlinemkl._config.CompiledFunction`'s twin with a
        CPython wrapper (made on first use), else the dispatcher itself."""
        return getattr(self._dispatcher, "python_entry", self._dispatcher)

    def _compiled(self):
        """The dispatcher, from now on called directly (the proxy's attribute is replaced)."""
        setattr(self.proxy, self.name, self.dispatcher)
        return self.dispatcher

    def __call__(self, *args):
        if not enabled():
            if self.parts_of is not None:
                sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
                if sig not in self.dispatcher.overloads and not _cached(self.dispatcher, sig):
                    with split(self.parts_of, args):
                        self.dispatcher.compile(sig)
            return self._compiled()(*args)
        sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        if sig in self.dispatcher.overloads:
            return self._compiled()(*args)
        with _lock:
            if self.job is None:
                self.job = _Job(self, sig, args)
                self.job.start()
            job = self.job
        if job.sig == sig and not job.done.wait(LOAD_WAIT_S if _in_cache(self.dispatcher) else 0.0):
            job.announce()
            job.done.wait()
        # compiled now (or, for another signature or a failed job, compiles here, as plain Numba)
        return self._compiled()(*args)


class LazyModule(types.SimpleNamespace):
    """A compiled module whose compiled functions start as :class:`_Entry` stand-ins.

    Every other attribute (constants, record types) is the module's own object.  Once an
    entry point's compilation is done, its attribute here *is* the Numba dispatcher, so the
    engines' calls pay nothing for this module after the first one.
    """

    def __init__(self, module: types.ModuleType):
        super().__init__(**{k: v for k, v in vars(module).items() if not k.startswith("__")})
        parts = getattr(module, "COMPILE_PARTS", {})
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and not value.targetoptions.get("parallel"):
                setattr(self, name, _Entry(self, name, value, parts.get(name)))


_modules: dict[str, LazyModule] = {}


def lazy_module(name: str) -> LazyModule:
    """The :class:`LazyModule` of the compiled module ``name`` (a full dotted name such as
    ``"onlinemkl.obscure._step"``; one per module and process)."""
    with _lock:
        if name not in _modules:
            _modules[name] = LazyModule(importlib.import_module(name))
        return _modules[name]
