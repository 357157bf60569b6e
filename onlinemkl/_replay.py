"""Replay: a bounded reservoir of past examples, revisited after each margin error.

One pass of an online kernel learner takes one step per example, where the authors'
batch toolbox takes up to five epochs; that gap is most of what one pass loses to a
batch SVM, and most of what a mistake-driven learner loses early in a stream to a
nearest-neighbour model.  Replay spends part of the speed margin on it: the learner
keeps a uniform sample of the stream (reservoir sampling, at most ``window`` rows) and,
after each example on which it made a margin error, takes ``steps`` more steps on
examples drawn from that sample.  Streams it already classifies with margin cost
nothing extra; hard streams get up to ``steps`` extra passes over the support buffer per
mistake.

The memory is plain arrays (``rows``, ``labels``, ``counters``), part of the learner's
state: saved, loaded and pickled with it, so a model continues identically after a
round trip.  Its random numbers come from a SplitMix64 generator whose state is one of
those counters (no global or hidden RNG state).
"""

from __future__ import annotations

import numpy as np

from ._params import Param, Rule
from ._validation import check_number

__all__ = ["ReplayMemory", "check_replay", "many_class_steps", "replay_seed", "river_seed", "NO_MERGE",
           "DEFAULT_STEPS", "MANY_CLASSES_STEPS", "FEW_CLASSES", "DEFAULT_WINDOW", "MAX_VALUES"]

#: Extra steps after a margin error (``replay='auto'``) and rows kept
#: (``replay_window=``).  The window holds a stream of a few thousand examples whole, so replay
#: reaches every example: with many classes and few examples of each, a smaller sample leaves
#: most of a class's examples out of every replayed step (docs/defaults.md).
DEFAULT_STEPS = 5
DEFAULT_WINDOW = 5000
#: ``replay='auto'`` of OBSCURE: :data:`MANY_CLASSES_STEPS` steps once more than :data:`FEW_CLASSES`
#: classes have been seen (see :func:`many_class_steps`).
MANY_CLASSES_STEPS = 10
FEW_CLASSES = 3

#: The reservoir holds at most this many values (8 MiB of float64) whatever ``window`` says:
#: with very many features it keeps fewer rows rather than more memory.
MAX_VALUES = 1 << 20

_MASK = (1 << 64) - 1

#: The ``merge`` hint of a step whose example no support row holds (``[slot, time stamp]``;
#: see ``obscure._step.obscure_step`` and ``proximal._step.fobos_step``).  A third entry 1 makes
#: it binding: the step adds to that row or does not update at all (replay under a budget).
NO_MERGE = np.array([-1, -1], dtype=np.int64)


def check_replay(replay, replay_window, budget=None, buffer_replay=True, eviction="least_impact",
                 full_replay=False) -> int:
    """Validate ``replay`` ('auto' or an int >= 0) and ``replay_window`` (an int >= 1); the steps.

    ``'auto'``: :data:`DEFAULT_STEPS`.  Under a budget, OBSCURE and the proximal classifier
    (``full_replay=True``) replay their reservoir once the buffer is full
    (:meth:`~onlinemkl.obscure.engine.ObscureEngine.stream_learn`,
    :meth:`~onlinemkl.proximal.engine.ProximalEngine.replays_now`): a small buffer is better
    spent on distinct examples than on the repeats a reservoir's replay would store while it
    has room; before that, OBSCURE's replayed steps adjust stored rows only, with more than two
    classes (with two, a replayed example always adds to its own row: no repeats, so OBSCURE
    replays its reservoir from the start).  With
    ``eviction='oldest'`` 'auto' is 0 for both (a sliding window drops the rows replay has made
    heavy), and for any other learner under a budget (``buffer_replay=False``: the proximal
    regressor).
    """
    if replay != "auto":
        check_number("replay", replay, low=0, integer=True,
                     hint=" (extra steps after a margin error; 0 turns replay off; or 'auto')")
    check_number("replay_window", replay_window, low=1, integer=True, hint=" (past examples kept for replay)")
    if replay == "auto":
        return DEFAULT_STEPS if budget is None or ((full_replay or buffer_replay) and eviction != "oldest") else 0
    return int(replay)


def many_class_steps(replay, steps: int) -> int | None:
    """The steps after a margin error once more than :data:`FEW_CLASSES` classes are known, or None
    for "as with few" (:meth:`ReplayMemory.steps_for`); ``steps``: :func:`check_replay`'s answer.

    ``'auto'`` (OBSCURE): :data:`MANY_CLASSES_STEPS` wherever it replays at all.  A multiclass step
    moves the weight vectors of two classes only (the true one and the highest-scoring wrong
    one), so with many classes each class gets fewer of the replayed updates; ``fit``'s
    ``stage1_epochs='auto'`` takes four times the epochs past three classes for the same reason.  An int
    ``replay`` is used for any number of classes.
    """
    return MANY_CLASSES_STEPS if replay == "auto" and steps > 0 else None


def replay_seed(random_state) -> int:
    """The replay generator's seed from a ``random_state``: the int itself, else 0 (reproducible)."""
    return int(random_state) if isinstance(random_state, (int, np.integer)) else 0


def river_seed(seed) -> int:
    """The replay generator's seed from a river face's ``seed`` (an int, or None for 0).

    None gives seed 0, as the scikit-learn faces' ``random_state=None`` does for the draws: the
    replay draws are the only randomness of a stream learner, and a default run that repeats
    itself keeps results and saved models comparable.  Pass an int for another draw sequence.
    """
    check_number("seed", seed, integer=True, allow_none=True, hint=" (an int, or None)")
    return replay_seed(seed)


def _splitmix64(state: int) -> tuple[int, int]:
    """``(new_state, value)``: one SplitMix64 draw (Steele, Lea & Flood 2014), in Python ints."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


class ReplayMemory:
    """A reservoir of at most ``window`` past examples and the replay schedule.

    ``counters`` holds ``[examples offered, generator state]`` (uint64).  ``steps = 0``
    keeps no rows (replay off) but still counts the examples.  Labels are class indices
    (int64), or regression targets with ``float_labels``.  ``where[j]`` is the learner's
    ``[slot, time stamp]`` of the support row holding example ``j`` (``[-1, -1]``: none), a
    hint the learner checks before it adds a replayed update to that row instead of storing
    the example again (OBSCURE; see ``obscure._step.obscure_step``).

    A learner with a budget may also draw its replayed examples among its stored rows
    (:meth:`stored_rows`; OBSCURE with more than two classes while its buffer has room, each
    step adding to the row it came from: LaSVM's "reprocess" step, Bordes et al. 2005).  The
    reservoir is bounded by
    ``window`` rows (and :data:`MAX_VALUES`) beside the budget's.
    """

    #: The arrays of the state, as dotted paths from the owning engine.
    STATE_ARRAYS = ("replay.rows", "replay.labels", "replay.counters", "replay.where")

    def __init__(self, steps: int, window: int, seed: int = 0, float_labels: bool = False,
                 steps_many: int | None = None, few_classes: int = FEW_CLASSES):
        self.steps, self.window = int(steps), int(window)
        self.steps_many = self.steps if steps_many is None else int(steps_many)
        self.few_classes = int(few_classes)
        self.rows = np.zeros((0, 0))
        self.labels = np.zeros(0, dtype=np.float64 if float_labels else np.int64)
        self.counters = np.array([0, _splitmix64(int(seed) & _MASK)[1]], dtype=np.uint64)
        self.where = np.zeros((0, 2), dtype=np.int64)
        self._labels_all = self._where_all = None  # what labels/where are views of (see _append)

    @property
    def seen(self) -> int:
        """Examples offered to :meth:`add` so far (the stream's length, replays not counted)."""
        return int(self.counters[0])

    @property
    def size(self) -> int:
        """Rows held now."""
        return min(self.seen, self.labels.shape[0])

    def capacity(self, n_features: int) -> int:
        """Rows the reservoir may hold: ``window``, fewer for very wide rows (:data:`MAX_VALUES`)."""
        return max(1, min(self.window, MAX_VALUES // max(n_features, 1)))

    def _draw(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (the 64-bit draw reduced modulo ``n``; ``n`` is small)."""
        state, value = _splitmix64(int(self.counters[1]))
        self.counters[1] = state
        return value % n

    def steps_for(self, n_classes: int) -> int:
        """Steps after a margin error for a learner that knows ``n_classes`` classes (1: binary):
        ``steps``, or ``steps_many`` past ``few_classes`` (:data:`FEW_CLASSES`; see :func:`many_class_steps`)."""
        return self.steps_many if n_classes > self.few_classes else self.steps

    def stored_rows(self, n_support: int, n_classes: int = 1) -> np.ndarray:
        """:meth:`steps_for` ``n_classes`` uniform draws of a stored row among the first
        ``n_support`` (replay on stored rows); none (and no draw) when nothing is stored."""
        return self.draw(self.steps_for(n_classes), n_support) if n_support else np.zeros(0, dtype=np.int64)

    def add(self, x: np.ndarray, y, slot: int = -1, stamps=None) -> None:
        """Offer one example (reservoir sampling: every example so far is held with equal chance);
        ``slot``: the support row holding it (-1: none), ``stamps`` the buffer's time stamps."""
        seen = self.seen
        self.counters[0] = seen + 1
        if self.steps <= 0:
            return
        d = x.shape[0]
        cap = self.capacity(max(d, self.rows.shape[1]))
        if self.labels.shape[0] > cap:  # rows got wider: keep the first cap (still a uniform sample)
            self.rows, self.labels, self.where = self.rows[:cap].copy(), self.labels[:cap].copy(), self.where[:cap].copy()
        self.widen(d)
        held = self.labels.shape[0]
        if held < cap:  # still filling: append (grow by doubling, up to cap)
            if held == self.rows.shape[0]:
                grown = np.zeros((min(cap, max(8, 2 * held)), self.rows.shape[1]))
                grown[:held] = self.rows[:held]
                self.rows = grown
            self._append(y)
            row = held
        else:
            row = self._draw(seen + 1)
            if row >= held:
                return
            self.labels[row] = y
        if slot >= 0:
            self.where[row, 0] = slot
            self.where[row, 1] = stamps[slot]
        else:
            self.where[row] = -1
        self.rows[row, :d] = x
        self.rows[row, d:] = 0.0

    def _append(self, y) -> None:
        """One more held label (and row hint): ``labels``/``where`` are views of the first ``held``
        entries of arrays allocated with the rows' capacity, so that appending costs no copy."""
        held = self.labels.shape[0]
        lab, where = self._labels_all, self._where_all
        if lab is None or self.labels.base is not lab or self.where.base is not where or lab.shape[0] <= held:
            size = max(self.rows.shape[0], held + 1)
            lab = np.zeros(size, dtype=self.labels.dtype)
            lab[:held] = self.labels
            where = np.full((size, 2), -1, dtype=np.int64)
            where[:held] = self.where
            self._labels_all, self._where_all = lab, where
        lab[held] = y
        self.labels, self.where = lab[:held + 1], where[:held + 1]

    def widen(self, n_features: int) -> None:
        """Rows of at least ``n_features`` columns (new features: the old rows read 0 there)."""
        if self.rows.shape[1] < n_features:
            wider = np.zeros((self.rows.shape[0], n_features))
            wider[:, :self.rows.shape[1]] = self.rows
            self.rows = wider

    def sample(self, n_features: int) -> tuple[np.ndarray, int | float, int]:
        """A held example drawn uniformly: ``(row of n_features values, label, its index j)``."""
        j = self._draw(self.size)
        row = self.rows[j]
        if row.shape[0] < n_features:
            row = np.concatenate([row, np.zeros(n_features - row.shape[0])])
        return row[:n_features], self.labels[j].item(), j

    def draw(self, k: int, size: int | None = None) -> np.ndarray:
        """The indices of ``k`` held examples drawn uniformly (those :meth:`sample` would draw ``k``
        times), for a learner that takes its replay steps in one compiled call; ``size``: draw
        in ``[0, size)`` instead (stored rows, :meth:`stored_rows`)."""
        size = self.size if size is None else size
        state = int(self.counters[1])
        out = np.empty(k, dtype=np.int64)
        for t in range(k):  # _draw's steps, with the generator state kept in a Python int meanwhile
            state, value = _splitmix64(state)
            out[t] = value % size
        self.counters[1] = state
        return out

    def held(self, n_features: int):
        """``(rows, labels, where)`` of the held examples, ``rows`` C-contiguous with exactly
        ``n_features`` columns (widened first if new features arrived since the last :meth:`add`)
        and ``where`` flattened to ``[slot, stamp, slot, stamp, ...]``; all views of the memory's
        own arrays, so that a compiled replay updates the row hints in place."""
        self.widen(n_features)
        size = self.size
        rows = self.rows[:size]
        if rows.shape[1] != n_features:  # wider than the features (a crafted state): a copy
            rows = np.ascontiguousarray(rows[:, :n_features])
        return rows, self.labels[:size], self.where[:size].reshape(-1)

    def check(self, need, n_features: int, label_ok) -> None:
        """``need`` every rule a consistent memory keeps (for a restored state)."""
        need(self.rows.ndim == 2 and self.labels.ndim == 1 and self.counters.shape == (2,)
             and self.where.shape == (self.labels.shape[0], 2),
             "replay arrays have the wrong number of dimensions, counters or row hints")
        held = self.labels.shape[0]
        need(held <= self.rows.shape[0] and held <= max(self.window, 0) and held <= self.seen,
             f"replay holds {held} labels for {self.rows.shape[0]} rows, window {self.window}, "
             f"{self.seen} examples seen")
        need(self.rows.shape[1] <= max(n_features, 0) or held == 0,
             f"replay rows have {self.rows.shape[1]} columns for {n_features} features")
        need(bool(np.all(np.isfinite(self.rows[:held]))), "replay rows hold NaN or infinite values")
        need(bool(np.all(label_ok(self.labels))), "a replayed example's label is out of range")


def _check_seed(name, value):
    check_number(name, value, integer=True, allow_none=True, hint=" (an int, or None)")
    return value


#: ``seed`` (river's name) and ``random_state`` (scikit-learn's): the same seed under each
#: library's name, rows of the per-example learners' parameter tables.
SEED_PARAMS = (
    Param("random_state", Rule("int or None", _check_seed), None,
          "Seed of the random example order in ``fit`` and of the replay draws (None: 0 for the draws,\n"
          "so that ``partial_fit`` stays reproducible).  The river face calls it ``seed``.",
          faces=("sklearn",)),
    Param("seed", Rule("int or None", _check_seed), None,
          "Seed of the replay draws, the model's only randomness.  None: seed 0, so that a run repeats\n"
          "itself; an int: another sequence of draws.  The scikit-learn face calls it ``random_state``.",
          faces=("river",)),
)
