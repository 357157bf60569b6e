"""Compile the learners ahead of their first example: :func:`warmup`.

A new process with an empty on-disk cache compiles a learner's Numba code when the
learner first learns or predicts, which takes long enough to look like a hang.  Calling
:func:`warmup` once (``onlinemkl warmup`` on the command line, e.g. when building a
container image) compiles every learner's entry points and writes them to the cache
(see :mod:`onlinemkl._config` for where it lives); later processes load them from there.
With a warm cache :func:`warmup` takes about as long as importing the learners.

Each learner is compiled by running it, through its public API, on a tiny synthetic data
set: the calls a user makes are exactly the compiled entry points that must be ready,
and options (losses, regularisers, eviction policies, stages) are integer codes inside
the same compiled functions, so one run covers them.  The exception is a budget (OBSCURE,
proximal MKL): with and without one are two variants (``warmup``'s ``budget``).  The parallel variants (used from
``PARALLEL_MIN_ROWS`` stored examples) are never cached (see :mod:`onlinemkl._config`),
so they are not compiled here either.

>>> from onlinemkl._compile import WARMUPS
>>> sorted(WARMUPS)  # doctest: +NORMALIZE_WHITESPACE
['nonlinear', 'obscure', 'obscure-sklearn', 'polymkl', 'proximal', 'proximal-regressor',
 'proximal-regressor-sklearn', 'proximal-sklearn', 'sequence']
"""

from __future__ import annotations

import sys
import time

from . import _config
from ._progress import BAR_DELAY_S, Ticker

#: Examples in each synthetic data set: enough for a learner to store examples, evict from a
#: budget and (OBSCURE) reach its second stage, few enough to be instant once compiled.
N_EXAMPLES = 12

def _arrays(seed=0):
    """A tiny data set: ``X`` (N_EXAMPLES x 3), three classes, and a regression target."""
    import numpy as np  # here, so that listing WARMUPS (the command's parser) stays light

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_EXAMPLES, 3))
    classes = np.array(["a", "b", "c"])[np.arange(N_EXAMPLES) % 3]
    return X, classes, X[:, 0] * X[:, 1] + X[:, 2]


def _stream(model, targets, proba):
    """``learn_one`` on every example, then ``predict_one`` (and ``predict_proba_one``)."""
    X, _, _ = _arrays()
    rows = [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]
    for x, y in zip(rows, targets):
        model.learn_one(x, y.item() if hasattr(y, "item") else y)
    model.predict_one(rows[0])
    if proba:
        model.predict_proba_one(rows[0])


def _fit_predict(model, y):
    X, _, _ = _arrays()
    model.fit(X, y).predict(X)


def _budgets(budget):
    """The budgets to compile with: a learner with a budget runs a variant of its compiled step
    with the eviction code, one without it a variant without (see ``obscure._step.obscure_step``),
    and each is compiled only where asked for.  ``budget`` None: both."""
    return [None, N_EXAMPLES // 2] if budget is None else [N_EXAMPLES // 2 if budget else None]


def _river_obscure(budget=None):
    from .river import OBSCUREClassifier

    # switch_after: reach the stochastic second stage within the tiny stream
    for b in _budgets(budget):
        _stream(OBSCUREClassifier(switch_after=N_EXAMPLES // 2, budget=b), _arrays()[1], proba=True)


def _river_proximal(budget=None):
    from .river import ProximalMKLClassifier

    # replay=2: replay takes many rows in one compiled call; the warmup must take some
    for b in _budgets(budget):
        _stream(ProximalMKLClassifier(budget=b, replay=2), _arrays()[1], proba=True)


def _river_proximal_regressor(budget=None):
    from .river import ProximalMKLRegressor

    for b in _budgets(budget):
        _stream(ProximalMKLRegressor(budget=b, replay=2), _arrays()[2], proba=False)


def _sklearn_obscure(budget=None):
    from .obscure.sklearn import OBSCUREClassifier

    _fit_predict(OBSCUREClassifier(random_state=0), _arrays()[1])


def _sklearn_proximal(budget=None):
    from .proximal.sklearn import ProximalMKLClassifier

    _fit_predict(ProximalMKLClassifier(n_epochs=1, random_state=0), _arrays()[1])


def _sklearn_proximal_regressor(budget=None):
    from .proximal.sklearn import ProximalMKLRegressor

    _fit_predict(ProximalMKLRegressor(n_epochs=1, random_state=0), _arrays()[2])


def _sequence(budget=None):
    from .sequence.sklearn import SequenceMKLLabeler

    X, _, _ = _arrays()
    model = SequenceMKLLabeler(random_state=0)
    for start in range(0, N_EXAMPLES, 4):  # three sequences of four positions
        model.learn_one(X[start:start + 4], [int(v > 0) for v in X[start:start + 4, 0]])
    model.predict_one(X[:4])


def _polymkl(budget=None):
    # The river adapter (onlinemkl.river.PolyMKLRegressor, the command line's 'polymkl')
    # runs the same engine's learn_batch and predict.
    from .polymkl.sklearn import PolyMKLRegressor

    _fit_predict(PolyMKLRegressor(degree=2, n_iter=5, random_state=0), _arrays()[2])


def _nonlinear(budget=None):
    from .nonlinear.sklearn import NonlinearKRRRegressor

    _fit_predict(NonlinearKRRRegressor(degree=2, max_iter=2, random_state=0), _arrays()[2])


#: name -> (what it compiles, how).  The names of the river learners are the command
#: line's ``--learner`` names; ``-sklearn`` marks the array (scikit-learn) API.
WARMUPS = {
    "obscure": ("river OBSCUREClassifier: learn_one, predict_one, predict_proba_one", _river_obscure),
    "proximal": ("river ProximalMKLClassifier: learn_one, predict_one, predict_proba_one", _river_proximal),
    "proximal-regressor": ("river ProximalMKLRegressor: learn_one, predict_one", _river_proximal_regressor),
    "polymkl": ("PolyMKLRegressor (and its river adapter): fit, predict", _polymkl),
    "nonlinear": ("NonlinearKRRRegressor (and its river adapter): fit, predict", _nonlinear),
    "sequence": ("SequenceMKLLabeler: learn_one, predict_one", _sequence),
    "obscure-sklearn": ("OBSCUREClassifier: fit, predict", _sklearn_obscure),
    "proximal-sklearn": ("ProximalMKLClassifier: fit, predict", _sklearn_proximal),
    "proximal-regressor-sklearn": ("ProximalMKLRegressor: fit, predict", _sklearn_proximal_regressor),
}


def compile_stats() -> dict:
    """What this process's compiled code came from: ``{"compiled": n, "loaded": m}``.

    ``compiled`` counts the signatures of onlinemkl's compiled functions that Numba compiled in
    this process (not found in the on-disk cache), ``loaded`` those it loaded from the cache.
    A process that found everything it ran in the cache reports ``compiled == 0``;
    :func:`onlinemkl.distributed.fit_ray` asks its Ray workers for this.
    """
    compiled = loaded = 0
    for dispatcher in _config.dispatchers():
        compiled += len(dispatcher.stats.cache_misses)
        loaded += len(dispatcher.stats.cache_hits)
    return {"compiled": compiled, "loaded": loaded}


def warmup(learners=None, progress=True, budget=None) -> dict:
    """Compile the learners' Numba code (or load it from the on-disk cache); per-learner seconds.

    Parameters
    ----------
    learners : iterable of str, optional
        Names from :data:`WARMUPS` (the command line's ``--learner`` names for the river
        learners, ``*-sklearn`` for the array API, ``sequence``); default: all of them.
    progress : bool or None, default True
        Show a tqdm bar on standard error, labelled with the learner being compiled and the
        elapsed time.  None: only when standard error is a terminal (tqdm's rule).
    budget : bool or None, default None
        Which variants to compile where a learner's budget selects one (OBSCURE and proximal
        MKL compile their eviction code only for a learner with a budget): None both, True or
        False only that one (the commands pass their learner's, so that a run compiles only
        what it uses).

    Returns
    -------
    dict
        ``{name: seconds}`` in the order compiled.  A learner whose code is already in the
        cache (or compiled earlier in this process) takes little more than its imports.

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones).

    Examples
    --------
    >>> from onlinemkl._compile import warmup
    >>> seconds = warmup(["obscure"], progress=False)
    >>> list(seconds)
    ['obscure']
    """
    from tqdm import tqdm

    names = list(WARMUPS) if learners is None else list(dict.fromkeys(learners))
    unknown = [n for n in names if n not in WARMUPS]
    if unknown:
        raise ValueError(f"unknown learner {unknown[0]!r} to compile; choose from {', '.join(WARMUPS)}")
    seconds = {}
    label = "compiling {} (first run only)".format
    # delay: a warm cache loads in well under BAR_DELAY_S, and then no bar is drawn at all
    bar = tqdm(total=len(names), file=sys.stderr, disable=None if progress is None else not progress,
               desc=label(names[0]) if names else None, delay=BAR_DELAY_S, dynamic_ncols=True,
               bar_format="{desc}{n_fmt}/{total_fmt} learners [{elapsed}]")
    from ._lazy import blocking

    # blocking(): compile in this thread, under the warm-up's own progress bar (no line per entry point)
    with bar, Ticker(bar), blocking():
        for name in names:
            bar.set_description(label(name), refresh=False)
            t0 = time.perf_counter()
            WARMUPS[name][1](budget)
            seconds[name] = time.perf_counter() - t0
            bar.update(1)
    return seconds
