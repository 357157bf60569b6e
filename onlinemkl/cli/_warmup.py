"""Compilation before the stream: ``onlinemkl warmup``, and the first step of every streaming command.

A learner's Numba code is compiled (or loaded from the on-disk cache) on its first
example.  The commands do it before they read their source instead, with a labelled
progress bar, so that a first run in a new environment shows what it is waiting for, a
socket source is not left waiting mid-stream, and the throughput (examples/s) counts
learning and predicting only.  Both use :func:`onlinemkl._compile.warmup`.
"""

from __future__ import annotations

from .. import _compile, river
from ._errors import CommandError
from ._learners import LEARNERS

#: Compile seconds above this are reported (below it the cache was warm: nothing to say).
REPORT_COMPILE_S = 1.0


def warmup_name(learner) -> str | None:
    """The :data:`onlinemkl._compile.WARMUPS` name of a learner of the command line (a river learner of
    onlinemkl, or the sequence labeller), else None.

    >>> from onlinemkl.river import OBSCUREClassifier
    >>> warmup_name(OBSCUREClassifier()), warmup_name(object())
    ('obscure', None)
    """
    cls = type(learner)
    for spec in LEARNERS.values():  # a learner of its own face (the sequence labeller)
        if spec.target == f"{cls.__module__}:{cls.__qualname__}":
            return spec.name
    for spec in LEARNERS.values():
        name = spec.target.partition(":")[2]
        if spec.target.startswith("onlinemkl.river:") and getattr(river, name, None) is cls:
            return spec.name
    return None


def progress_flag(args):
    """``--no-progress`` -> False; else None (a bar when standard error is a terminal)."""
    return False if getattr(args, "no_progress", False) else None


def compile_first(learner, args) -> float:
    """Compile ``learner``'s code (the model's final step) before the stream; the seconds taken.

    Learners the command line does not know (a custom river step) are left to compile on
    their first example: 0.0.
    """
    name = warmup_name(learner)
    if name is None:
        return 0.0
    budget = getattr(learner, "budget", None) is not None  # the variant this learner runs
    return sum(_compile.warmup([name], progress=progress_flag(args), budget=budget).values())


def compile_note(seconds: float) -> str | None:
    """What to print about a compilation of ``seconds``; None when it was quick (a warm cache)."""
    if seconds <= REPORT_COMPILE_S:
        return None
    return f"{seconds:.1f} s (first run only: cached on disk for the next runs; not in examples/s)"


def _warmup(args) -> int:
    from .. import _config  # Numba: only the warmup command needs it here

    try:
        seconds = _compile.warmup(args.learner, progress=progress_flag(args))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    width = max(len("learner"), *(len(n) for n in seconds))
    print(f"{'learner':<{width}}  {'seconds':>8}  compiled")
    for name, s in seconds.items():
        print(f"{name:<{width}}  {s:8.2f}  {_compile.WARMUPS[name][0]}")
    print(f"{'total':<{width}}  {sum(seconds.values()):8.2f}")
    if _config.CACHE:
        print(f"cache: {_config.CACHE_DIR}")
    elif _config._CACHE_PROBLEM:
        print(f"cache: off ({_config._CACHE_PROBLEM}): other processes will compile again; set NUMBA_CACHE_DIR "
              "to a writable directory")
    else:
        print("cache: off (ONLINEMKL_NO_CACHE is set): other processes will compile again")
    return 0
