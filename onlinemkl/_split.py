"""A first compilation split over two processes: a helper process compiles part of the call tree.

Numba compiles an entry point's call tree in one thread, so a cold start uses one core.  An
entry point may name *parts* of its tree (callees with the signature it calls them with) that a
helper process compiles at the same time into the shared on-disk cache (:mod:`onlinemkl._config`);
when this process's compilation reaches a part, it waits for the helper to finish that part and
loads it from the cache, as it would on a warm cache.  The compiled code is the same either way
(a function loaded from the cache brings its optimised code for the caller to link, exactly as a
function compiled in the process does), so the results are too.

A part is listed by its compiled step module in ``COMPILE_PARTS``: ``{entry name: function}``,
the function taking the entry point's arguments and returning ``[(dispatcher, argument types)]``
in the order the helper should compile them, or a :class:`Plan` that also names the parts this
process compiles *before* the entry point.  Numba compiles a callee when the caller's typing
reaches its call, so a plain list can only hand the helper what this process reaches last; the
first-reached callee (the score pass, the largest subtree of every step) would stay here, with
this process waiting for nothing.  A plan turns that round: the helper starts on the
first-reached subtree while this process compiles the late parts ahead of time, and the entry
point's typing then finds both done.  A helper part may also be another entry point's Python
twin (:attr:`~onlinemkl._config.CompiledFunction.python_entry`: the prediction pass, compiled
while this process compiles the learning step).  A wrong type only costs time: this process then
finds no code for its own signature and compiles the part itself.

Robustness: a helper that cannot start, fails, crashes, writes to another cache or takes longer
than :data:`PART_TIMEOUT_S` for a part is given up on (and ended), and this process compiles what
it still needs itself; the helper is ended (by its process id) once the entry point is compiled.  Only
with an on-disk cache, at least two usable cores, compiled code (not ``NUMBA_DISABLE_JIT``) and
``ONLINEMKL_SPLIT_COMPILE`` not ``0``; the test suite turns it off (one code path), and
``tests/core/test_split.py`` tests it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pickle
import subprocess
import sys
import threading
from typing import NamedTuple

import numba

from . import _config

log = logging.getLogger("onlinemkl")

#: Seconds this process waits for the helper to finish one part before it ends the helper and
#: compiles that part and the others itself.
PART_TIMEOUT_S = 120.0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def enabled() -> bool:
    """True if a first compilation may hand parts of its tree to a helper process."""
    if os.environ.get("ONLINEMKL_SPLIT_COMPILE", "1").strip().lower() in ("0", "false", "no"):
        return False
    return _config.CACHE and not numba.config.DISABLE_JIT and _cores() >= 2


def cached(dispatcher, sig):
    """Whether the on-disk cache holds the dispatcher's code for ``sig``; None if it cannot tell."""
    try:  # Numba internals: the index the cache would look ``sig`` up in
        cache = dispatcher._cache
        return cache._index_key(tuple(sig), dispatcher.targetctx.codegen()) in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 -- no cache, or another Numba
        return None


class Plan(NamedTuple):
    """A first compilation's split: ``helper``, the ``(dispatcher, argument types)`` a helper process
    compiles, in order; ``here``, those this process compiles before the entry point."""

    helper: list
    here: list


def _address(dispatcher) -> tuple:
    """``(module, name, twin)``: where the helper finds ``dispatcher`` (``twin``: it is the Python
    twin of the module's ``name``, :attr:`~onlinemkl._config.CompiledFunction.python_entry`)."""
    f = dispatcher.py_func
    twin = getattr(importlib.import_module(f.__module__), f.__name__, None) is not dispatcher
    return f.__module__, f.__name__, twin


class _Helper:
    """The helper process and a thread that reads which parts it has finished."""

    def __init__(self, parts):
        self.done = [threading.Event() for _ in parts]
        self.exited = threading.Event()
        payload = pickle.dumps({"cache_dir": _config.CACHE_DIR,
                                "parts": [_address(d) + (tuple(sig),) for d, sig in parts]})
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, ONLINEMKL_SPLIT_COMPILE="0", ONLINEMKL_BACKGROUND_COMPILE="0",
                   NUMBA_CACHE_DIR=os.path.dirname(_config.CACHE_DIR),
                   PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
        self.proc = subprocess.Popen([sys.executable, "-c", "from onlinemkl._split import main; main()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=package_root, close_fds=True)  # this onlinemkl first
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.close()
        except OSError:  # the helper died at once: its reader releases every part
            pass
        self.reader = threading.Thread(target=self._read, daemon=True, name="onlinemkl-split-compile")
        self.reader.start()

    def _read(self):
        try:
            for line in self.proc.stdout:
                word = line.split()
                if len(word) == 2 and word[0] == b"done" and word[1].isdigit() and int(word[1]) < len(self.done):
                    self.done[int(word[1])].set()
        finally:
            self.exited.set()
            for event in self.done:  # a part the helper never finished: compile it here
                event.set()

    def wait(self, i) -> None:
        """Wait for part ``i``; a helper too slow for it is ended, and this process compiles the rest."""
        if not self.done[i].wait(PART_TIMEOUT_S):
            log.debug("the compile helper took too long for part %d; compiling the rest here", i)
            self.proc.kill()  # its reader then sees the end of its output and releases every part
            self.exited.wait(5.0)

    def stop(self):
        """End the helper (a part it still compiles is no longer needed) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(5.0)
        self.proc.stdout.close()


class _AwaitHelper:
    """A dispatcher's cache whose lookup of a planned signature first waits for the helper."""

    def __init__(self, cache, helper, waits):
        self._inner, self._helper, self._waits = cache, helper, waits

    def load_overload(self, sig, target_context):
        i = self._waits.get(tuple(sig))
        if i is not None:
            self._helper.wait(i)
        return self._inner.load_overload(sig, target_context)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@contextlib.contextmanager
def split(parts_of, args):
    """Within the block, a compilation of the entry point called with ``args`` finds the parts that
    ``parts_of(*args)`` names compiled by a helper process (see the module docstring).

    ``parts_of`` None, or splitting not :func:`enabled`: a plain block.  Never raises for the
    helper's sake: a plan that cannot be made, or a helper that cannot start, leaves the block plain.
    """
    if parts_of is None or not enabled():
        yield
        return
    try:
        plan = parts_of(*args)
        if not isinstance(plan, Plan):
            plan = Plan(list(plan), [])
        parts, here = ([(d, tuple(sig)) for d, sig in listed if tuple(sig) not in d.overloads and not cached(d, sig)]
                       for listed in plan)
        helper = _Helper(parts) if parts else None
    except Exception as exc:  # noqa: BLE001 -- the helper is an optimisation only
        log.debug("no compile helper: %r", exc)
        parts, here, helper = [], [], None
    if helper is None:
        yield
        return
    patched = {}
    for i, (disp, sig) in enumerate(parts):
        if id(disp) not in patched:
            patched[id(disp)] = (disp, disp._cache, {})  # Numba internals: the dispatcher's cache
        patched[id(disp)][2][sig] = i
    for disp, cache, waits in patched.values():
        disp._cache = _AwaitHelper(cache, helper, waits)
    try:
        for disp, sig in here:  # while the helper compiles the first-reached parts
            try:
                disp.compile(sig)
            except Exception as exc:  # noqa: BLE001 -- the entry point compiles what it needs itself
                log.debug("could not compile %s ahead: %r", disp.py_func.__name__, exc)
        yield
    finally:
        for disp, cache, _ in patched.values():
            disp._cache = cache
        helper.stop()


def main():
    """The helper: compile the parts read from standard input into the cache, in order, saying
    ``done <i>`` after each; exit 3 if its cache is not the parent's."""
    job = pickle.load(sys.stdin.buffer)
    if _config.CACHE_DIR != job["cache_dir"]:
        sys.exit(3)
    for i, (module, name, twin, sig) in enumerate(job["parts"]):
        try:
            dispatcher = getattr(importlib.import_module(module), name)
            (dispatcher.python_entry if twin else dispatcher).compile(sig)
        except Exception as exc:  # noqa: BLE001 -- the parent compiles this part itself
            log.debug("the compile helper could not compile %s.%s: %r", module, name, exc)
        sys.stdout.write(f"done {i}\n")
        sys.stdout.flush()
