"""Numba options, in one place.

Every compiled function (in :mod:`onlinemkl._core` and the learners' compiled modules,
:data:`COMPILED_SOURCES`) is decorated with one of the decorators below; no module passes Numba
options of its own.

* ``njit`` -- serial, nopython, cached on disk.  ``error_model="numpy"`` lets a
  division by zero produce ``inf``/``nan`` instead of raising, so the hot loops
  carry no hidden exception checks; every division that can meet a zero is
  guarded explicitly in the code.  No ``fastmath``: the mirror map, the
  proximal operators and the step sizes use ``inf``, zero-norm guards and
  q-th powers, which fast-math may rewrite.  Compiled without Numba's CPython
  wrapper (:class:`CompiledFunction`); a call from Python goes to a twin that has one.
* ``njit_sum`` / ``njit_contract`` -- the same with the few fast-math flags a
  small loop needs to vectorise: reassociation for pure accumulations (dot
  products, sums of squares), contraction for a polynomial.  Plain Numba
  throughout, except the few intrinsics of ``_core/simd.py``, each with a plain
  twin that runs instead under ``NUMBA_DISABLE_JIT=1`` (the library then runs
  as Python, for a debugger or line coverage).
* ``njit_parallel`` -- the same, with ``parallel=True`` for ``prange`` loops
  over independent outputs.  Never cached (Numba's cache of parallel functions
  is fragile across processes and thread layers).

Where the on-disk cache lives: ``NUMBA_CACHE_DIR``
if set, else a per-user cache directory (``platformdirs.user_cache_dir("onlinemkl")``,
e.g. ``~/.cache/onlinemkl`` on Linux) in a subfolder named after the onlinemkl and
Numba versions, so that an upgrade never meets a cache written by another version; in
either, a subfolder ``core-<hash of the compiled modules' sources>`` (:func:`_core_stamp`), so
that an edited checkout never meets a cache of other sources.
Numba's own default would write next to the sources, into site-packages, where the
cache outlives an uninstall, and where a read-only install with an unwritable home
leaves Numba no place at all (``cannot cache function ...: no locator``).  If the
chosen directory cannot be created or written, the cache is turned off: every new
process compiles again, and one warning (:class:`CacheWarning`) says so and how to
fix it.  ``ONLINEMKL_NO_CACHE=1`` turns the cache off without a warning.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
import types
import warnings

import numba
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher

from . import __version__

#: Environment values that turn a flag on.
_TRUE = ("1", "true", "yes")


class CacheWarning(UserWarning):
    """No writable directory for Numba's on-disk cache: compiled code is not cached."""


def _user_cache_dir() -> str:
    """The per-user cache folder of this onlinemkl + Numba pair (not created here)."""
    import platformdirs

    base = platformdirs.user_cache_dir("onlinemkl", appauthor=False)
    return os.path.join(base, f"onlinemkl-{__version__}-numba-{numba.__version__}")


#: The compiled modules' sources, relative to the package: the shared compiled layer and each
#: learner's compiled step.  ``tests/core/test_cache_dir.py`` checks that every module using these
#: decorators is listed.
COMPILED_SOURCES = (
    "_core/*.py",
    "obscure/_step.py", "obscure/_fit.py",
    "proximal/_step.py", "proximal/_prox.py", "proximal/_evict.py", "proximal/_group_steps.py",
    "proximal/_losses.py",
    "sequence/_step.py", "sequence/_chain.py",
)


def compiled_source_files() -> list:
    """The absolute paths of :data:`COMPILED_SOURCES`, sorted."""
    import glob

    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(p for pattern in COMPILED_SOURCES for p in glob.glob(os.path.join(here, pattern)))


def _core_stamp() -> str:
    """A hash of the compiled code's sources (:data:`COMPILED_SOURCES`), 12 hex digits.

    Numba checks a cached function against its own file only, but a cached function holds the
    code of the functions it calls from other files: after an edit of ``_core/kernels.py`` alone,
    the cached ``obscure/_step.py`` would run the old kernel pass on arrays laid out the new way
    (an editable install, a checkout under development).  Caching under this stamp makes any
    edit of the compiled code start a fresh cache."""
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha1()
    for path in compiled_source_files():
        with open(path, "rb") as f:
            h.update(os.path.relpath(path, here).encode() + b"\0" + f.read())
    return h.hexdigest()[:12]


def _writable_dir(path: str) -> str | None:
    """None if ``path`` exists (or could be created) and accepts a file, else why not."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # the same test Numba's locators make
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return None


def resolve_cache_dir(environ=None) -> tuple[str | None, str | None]:
    """``(directory, problem)``: where compiled code is cached, or ``(None, why not)``.

    ``(None, None)`` when ``ONLINEMKL_NO_CACHE`` asks for no cache.  Never raises: a
    missing home directory, an unwritable one or a missing ``platformdirs`` all end
    as ``(None, problem)``.
    """
    env = os.environ if environ is None else environ
    if env.get("ONLINEMKL_NO_CACHE", "").strip().lower() in _TRUE:
        return None, None
    path = env.get("NUMBA_CACHE_DIR", "")
    if not path:
        try:
            path = _user_cache_dir()
        except Exception as exc:  # no home directory, no platformdirs, ...
            return None, f"no per-user cache directory ({type(exc).__name__}: {exc})"
    wrapped = "-wrapped" if env.get("ONLINEMKL_WRAP_CALLEES", "").strip().lower() in _TRUE else ""
    try:
        path = os.path.join(os.path.abspath(os.path.expanduser(path)), f"core-{_core_stamp()}{wrapped}")
    except OSError as exc:
        return None, f"cannot read onlinemkl's compiled sources ({exc})"
    problem = _writable_dir(path)
    return (None, problem) if problem else (path, None)


#: The directory of the on-disk cache, or None if compiled code is not cached.
CACHE_DIR, _CACHE_PROBLEM = resolve_cache_dir()

#: True if serial functions are cached on disk (in :data:`CACHE_DIR`).
CACHE = CACHE_DIR is not None

#: ``ONLINEMKL_WRAP_CALLEES=1``: every serial function keeps Numba's CPython wrapper (plain
#: Numba dispatchers, no :class:`CompiledFunction`), cached in a folder of their own (the cache
#: folder's name ends in ``-wrapped``), since a wrapper-less function read from a cache must
#: never be called from Python directly.  For the test suite, which calls compiled helpers from
#: Python: there one compilation then serves those calls and the learners' steps.
WRAP_CALLEES = os.environ.get("ONLINEMKL_WRAP_CALLEES", "").strip().lower() in _TRUE

_warned = False


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside onlinemkl and the import machinery.

    The warning then names the user's line that imported or first used a learner, not
    a line of this package.  ``warnings.warn`` itself skips the import machinery's
    frames when it counts, so they are not counted here either.
    """
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2  # the caller of _warn_no_cache
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            frame = frame.f_back
            continue
        if not name.startswith(package):
            break
        frame, level = frame.f_back, level + 1
    return level


def _warn_no_cache(problem: str) -> None:
    """The one warning (a one-line message) of a process whose compiled code cannot be cached."""
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(f"onlinemkl: compiled code will not be cached ({problem}), so every new process "
                  "compiles again; set NUMBA_CACHE_DIR to a writable directory to fix this "
                  "(ONLINEMKL_NO_CACHE=1 silences this warning)", CacheWarning, stacklevel=_outside_stacklevel())


if _CACHE_PROBLEM:
    _warn_no_cache(_CACHE_PROBLEM)

SERIAL_OPTIONS = dict(nogil=True, cache=CACHE, fastmath=False, error_model="numpy")
PARALLEL_OPTIONS = dict(nogil=True, cache=False, fastmath=False, error_model="numpy", parallel=True)

#: Buffers with at least this many stored rows use the parallel kernel-row pass.  Waking a
#: worker thread costs milliseconds when the other cores are busy, so the threshold is set
#: where the idle-machine gain and the busy-machine loss are of the same size.  Lower it on a
#: dedicated multi-core machine.
PARALLEL_MIN_ROWS = 100_000


@contextlib.contextmanager
def _numba_cache_dir():
    """Numba's ``config.CACHE_DIR`` set to :data:`CACHE_DIR` while a function is decorated.

    A cached dispatcher picks its cache directory once, when it is decorated
    (``enable_caching`` builds a ``FunctionCache``, whose first locator,
    ``_UserProvidedCacheLocator``, reads ``numba.config.CACHE_DIR``).  Setting it only
    around our own decorations sends onlinemkl's cache to :data:`CACHE_DIR` without
    moving the cache of the user's other Numba functions.
    """
    saved = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = CACHE_DIR
    try:
        yield
    finally:
        numba.config.CACHE_DIR = saved


class CompiledFunction(CPUDispatcher):
    """A serial compiled function, built for calls from other compiled functions.

    Its compilations carry no CPython wrapper (Numba's ``no_cpython_wrapper``): that wrapper
    unboxes every argument from Python objects, and Numba builds, optimises and emits machine
    code for it in every compiled function, although only the entry points a learner calls
    from Python ever run it.  Leaving it out of the callees takes about a seventh off a
    learner's first compilation (``benchmarks/compile_profile.py`` shows where the time goes).

    A call from Python goes to :attr:`python_entry`, a twin of the same source with the
    wrapper (its own dispatcher, cached under the function's name with ``_py`` appended); the
    callees it reaches are the wrapper-less functions themselves, so a callee compiles once
    whether its caller runs from Python or from another compiled function.
    The engines call :attr:`python_entry` directly (:mod:`onlinemkl._lazy`), without the
    Python frame of :meth:`__call__`.
    """

    def __call__(self, *args, **kwargs):
        return self.python_entry(*args, **kwargs)

    @property
    def python_entry(self):
        """The twin with a CPython wrapper, which Python calls go to (made on first use)."""
        twin = self.__dict__.get("_python_entry")
        if twin is None:
            f = self.py_func
            copy = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
            copy.__qualname__, copy.__module__, copy.__doc__ = f.__qualname__ + "_py", f.__module__, f.__doc__
            copy.__kwdefaults__ = f.__kwdefaults__
            options = getattr(self, "_options", None)  # None in a copy unpickled elsewhere: not cached
            if options is None:
                options = {k: v for k, v in self.targetoptions.items() if k not in ("no_cpython_wrapper", "nopython")}
            twin = _compile(copy, wrapper=True, **options)
            self.__dict__["_python_entry"] = twin
        return twin


def dispatchers() -> list:
    """Every Numba dispatcher of onlinemkl's loaded modules, with the Python twins
    (:attr:`CompiledFunction.python_entry`) made so far: what a process compiled or loaded
    (``stats.cache_hits``/``cache_misses``) is the sum over these."""
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("onlinemkl."):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher) and id(value) not in found:
                found[id(value)] = value
                twin = value.__dict__.get("_python_entry")
                if twin is not None:
                    found[id(twin)] = twin
    return list(found.values())


def _compile(func, wrapper=False, **options):
    """``numba.njit(**options)(func)``; cached in :data:`CACHE_DIR` when ``options["cache"]``.

    A serial function (neither inlined nor parallel) becomes a :class:`CompiledFunction`,
    without a CPython wrapper, unless ``wrapper`` (its Python twin), :data:`WRAP_CALLEES` or
    Numba runs as Python (``NUMBA_DISABLE_JIT=1``).

    Should :data:`CACHE_DIR` have become unusable since start-up (removed, made
    read-only), Numba would either fail the import (``cannot cache function ...: no
    locator``) or fall back to its next locator, the ``__pycache__`` folder next to the
    sources in site-packages.  Either way the function is compiled without a cache
    instead, and :class:`CacheWarning` is issued.
    """
    if (wrapper or WRAP_CALLEES or numba.config.DISABLE_JIT or options.get("inline") == "always"
            or options.get("parallel")):
        make = numba.njit(**options)
    else:
        make = functools.partial(_without_wrapper, options)
    if not options.get("cache"):
        return make(func)
    try:
        with _numba_cache_dir():
            dispatcher = make(func)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
    else:
        where = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
        if where is None or os.path.abspath(where).startswith(os.path.join(CACHE_DIR, "")):
            return dispatcher
    _warn_no_cache(f"{CACHE_DIR}: not writable")
    return _compile(func, wrapper=wrapper, **dict(options, cache=False))


def _without_wrapper(options, func):
    """:class:`CompiledFunction` of ``func``: the dispatcher ``numba.njit(**options)`` would make,
    with ``no_cpython_wrapper``, and cached as Numba's decorator caches."""
    plain = numba.njit(**{k: v for k, v in options.items() if k != "cache"})(func)
    dispatcher = CompiledFunction(py_func=func, locals=plain.locals,
                                  targetoptions=dict(plain.targetoptions, no_cpython_wrapper=True))
    dispatcher._options = options
    if options.get("cache"):
        dispatcher.enable_caching()
    return dispatcher


def njit(func):
    """Serial, cached nopython compilation (the default for ``_core``)."""
    return _compile(func, **SERIAL_OPTIONS)


def njit_inline(func):
    """:func:`njit` inlined into every caller at Numba's IR level (``inline='always'``).

    Only for tiny helpers (a branch on a flag): inlining at the IR level re-types the helper
    in every caller, which costs more compile time than a call for anything larger.
    """
    return _compile(func, inline="always", **SERIAL_OPTIONS)


def njit_parallel(func):
    """Parallel (``prange``) nopython compilation; not cached."""
    return _compile(func, **PARALLEL_OPTIONS)


#: Fast-math flags that are safe for a pure accumulation (a dot product, a sum of squares):
#: reassociation lets LLVM run the sum in SIMD lanes, contraction fuses multiplies and adds.
#: No ``nnan``/``ninf``/``nsz``: an inf or NaN in the data still propagates, and no guard that
#: compares against inf, NaN or a signed zero may sit in such a function.
SUM_FLAGS = frozenset({"reassoc", "contract"})


def njit_sum(func):
    """:func:`njit` with :data:`SUM_FLAGS`: for small accumulation loops that must vectorise.

    Results agree with the plain left-to-right sum within the usual bound for a reordered
    sum, ``n * eps * sum |a_k b_k|``; the tests hold every path to that tolerance.
    """
    return _compile(func, **{**SERIAL_OPTIONS, "fastmath": set(SUM_FLAGS)})


def njit_contract(func):
    """:func:`njit` that may fuse ``a * b + c`` into one fused multiply-add (no reordering).

    For polynomial evaluations (the exponential's Horner chain): half the instructions, one
    rounding instead of two; the result is within an ulp of the unfused one.
    """
    return _compile(func, **{**SERIAL_OPTIONS, "fastmath": {"contract"}})
