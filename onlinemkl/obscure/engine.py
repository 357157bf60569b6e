"""The OBSCURE engine: state and per-example steps (Orabona, Jie & Caputo 2012).

:class:`ObscureEngine` owns the state (plain numpy arrays) and makes exactly one
compiled call per example; the two faces over it are the scikit-learn estimator
(:class:`onlinemkl.OBSCUREClassifier`) and the river classifier
(:class:`onlinemkl.river.OBSCUREClassifier`).  Like every engine it imports
neither scikit-learn nor river, so a river pipeline starts without paying
scikit-learn's import.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _config
from .._buffer import EVICTION, SupportBuffer
from .._core.state import LabelledRows, Query, Rows
from .._lazy import lazy_module
from .._params import Bool, Choice, Param, Rule, Table, number
from .._scaling import SCALE_PARAM
from .._validation import check_number
from ..engine import BufferEngine, collect_arrays, normalised, restore_arrays, split_hyper, state_rule
from ..kernel_arrays import CompiledKernels, StoredRows, WeightedKernelSum, block_kernels, resolve_group_columns
from ..features import FEATURE_CAP_PARAMS
from ..kernels import KERNELS_RULE, check_kernels
from .. import _replay
from .._replay import DEFAULT_WINDOW, NO_MERGE, SEED_PARAMS, ReplayMemory, check_replay

#: The fewest examples per chunk of :meth:`ObscureEngine.fit_pass_blocked` (a smaller chunk
#: spends its time in per-call overhead; the cache limit is exceeded rather than go below).
MIN_CHUNK = 64

#: Examples per chunk of an epoch on :meth:`ObscureEngine._fit_pass_sums`' path (fewer where
#: ``cache_bytes`` asks).  A chunk computes its kernel values among themselves (``C^2``) however
#: few of its examples are updated, while the updated examples' rows cost the same in any
#: chunking, so small chunks are the fast ones: ``fit`` on river's Shuttle (14,000 rows, one BLAS
#: thread) takes 0.54 s at 64 against 0.86 s at the largest chunk the cache allows, with the same
#: accuracy; 16 and 32 take as long as 64.
SUMS_CHUNK = 64

#: The most examples per chunk of :meth:`ObscureEngine.fit_pass_blocked` (``fit`` with a budget
#: past the kernel cache; fewer where ``cache_bytes`` asks, never fewer than :data:`MIN_CHUNK`):
#: the same reason, with the block's values against the stored rows (``C U``) beside ``C^2``.
#: Shuttle with ``budget=500`` takes 1.4 s at 128 against 6.3 s at the largest chunk; 64 is
#: faster with a small budget and slower with a large one.
BLOCKED_CHUNK = 128

_ck = lazy_module("onlinemkl._core.kernels")
_co = lazy_module("onlinemkl.obscure._step")
_cof = lazy_module("onlinemkl.obscure._fit")
_cs = lazy_module("onlinemkl._core.scores")

__all__ = ["ObscureEngine", "PARAMS", "default_p", "default_eta", "EVICTION", "hinge_losses", "resolve_params",
           "AUTO_SWITCH_CLEAN_RUN", "check_switch_after"]


def default_p(n_kernels: int) -> float:
    """The authors' default: ``q = 2 ln F`` (at least 2), ``p = q / (q - 1)``.

    >>> round(default_p(5), 3)
    1.451
    >>> default_p(2)
    2.0
    """
    q = max(2.0, 2.0 * math.log(n_kernels))
    return q / (q - 1.0)


def default_eta(n_kernels: int, q: float) -> float:
    """The authors' stage-1 step ``eta = F^(-2/q)``."""
    return float(n_kernels) ** (-2.0 / q)


#: The order argument of a single example's step through ``obscure_run``.
_ONE = np.zeros(1, dtype=np.int64)


def resolve_params(kernels, p):
    """``(kernels, p)``: the kernels checked (:func:`~onlinemkl.kernels.check_kernels`) and ``p=None``
    resolved to the authors' default for their number (:func:`default_p`)."""
    kernels = check_kernels(kernels)
    return kernels, (default_p(len(kernels)) if p is None else p)


class ObscureEngine(BufferEngine):
    """The state and the per-example steps of OBSCURE (internal; use the estimators).

    State is plain numpy: the support buffer, the raw squared norms
    ``theta_sq``, and the small arrays that the compiled step reads and updates in place
    (indices in :mod:`onlinemkl.obscure._step`): the real-valued settings ``hyper``, the
    integer ones ``ihyper``, and the counters ``istate``/``fstate``.

    Protocol (:mod:`onlinemkl.engine`): ``learn(row, label)`` with ``label`` an
    output index (multiclass) or +-1 (binary); ``scores_one(row)``,
    ``scores_many(rows)``; ``get_state``/``set_state``.
    """

    def __init__(self, kernels, p, eta, lam, budget, eviction, pegasos, binary, R=None, C=1.0, replay=0,
                 replay_window=1000, seed=0, replay_many=None, clean_run=None, few_classes=None):
        self._remember_init(locals())
        self.ck = CompiledKernels(kernels)
        F = self.ck.n_kernels
        self.p = float(p)
        self.q = self.p / (self.p - 1.0) if self.p > 1.0 else math.inf
        self.hyper = np.zeros(_co.N_HYPER)
        self.hyper[_co.H_Q] = self.q
        self.hyper[_co.H_ETA] = self._resolved("eta", default_eta(F, self.q) if eta is None else float(eta))
        #: ``switch_after='auto'``: the clean run (examples without a margin error) that starts stage 2.
        self.clean_run = self._resolved("clean_run", AUTO_SWITCH_CLEAN_RUN if clean_run is None else int(clean_run))
        # lam = None: set to 1 / (C N) when stage 2 starts, N = examples seen by then.
        self.hyper[_co.H_LAM] = 0.0 if lam is None else lam
        self.C = float(C)
        self.hyper[_co.H_R] = math.inf if R is None else R
        self.ihyper = np.zeros(_co.N_IHYPER, dtype=np.int64)
        self.ihyper[_co.IH_STAGE] = 1
        self.ihyper[_co.IH_PEGASOS] = 1 if pegasos else 0
        self.ihyper[_co.IH_BUDGET] = 0 if budget is None else budget
        self.ihyper[_co.IH_POLICY] = EVICTION[eviction]
        self.ihyper[_co.IH_BINARY] = 1 if binary else 0
        self.ihyper[_co.IH_NCLASS] = 1 if binary else 0
        self.istate = np.zeros(_co.N_ISTATE, dtype=np.int64)
        self.fstate = np.zeros(_co.N_FSTATE)
        self.fstate[_co.F_SCALE] = 1.0
        self.theta_sq = np.zeros(F)
        self.buf = SupportBuffer(F, self.ck.n_groups, 1, budget=budget)
        self.n_features = 0
        self.g = np.zeros((F, 2))
        self.scores = np.zeros(2)
        self.krow = np.zeros((F, 0))
        self._y1 = np.zeros(1, dtype=np.int64)  # the label of a single step, reused
        # used by stream_step (under a budget, > 2 classes: stored rows while the buffer has room)
        self.replay = ReplayMemory(replay, replay_window, seed, steps_many=replay_many,
                                   few_classes=self._resolved("few_classes", _replay.FEW_CLASSES
                                                              if few_classes is None else int(few_classes)))

    # -- shape management (Python side, rare) -------------------------------------------

    @property
    def binary(self) -> bool:
        return self.ihyper[_co.IH_BINARY] != 0

    @property
    def n_outputs(self) -> int:
        return 1 if self.binary else int(self.ihyper[_co.IH_NCLASS])

    @property
    def n_support(self) -> int:
        return int(self.istate[_co.I_N])

    @property
    def stage(self) -> int:
        return int(self.ihyper[_co.IH_STAGE])

    def set_features(self, n_features: int, lookup=None) -> None:
        """Declare ``n_features`` columns (grows, never shrinks); recompute the groups."""
        if n_features < self.n_features:
            raise ValueError("the number of features cannot shrink")
        self.n_features = n_features
        self.buf.ensure_columns(n_features)
        self.ck.set_columns(resolve_group_columns(self.ck.groups, n_features, lookup))

    def set_n_classes(self, n_classes: int) -> None:
        if self.binary:
            return
        self.ihyper[_co.IH_NCLASS] = n_classes
        if self.g.shape[1] < n_classes:
            cap = max(n_classes, 2 * self.g.shape[1])
            self.g = np.zeros((self.ck.n_kernels, cap))
            self.scores = np.zeros(cap)

    # -- per example ------------------------------------------------------------------

    @property
    def radius(self):
        """Stage 2's radius ``R`` (None before the switch, where it is not yet known)."""
        R = float(self.hyper[_co.H_R])
        return None if math.isinf(R) else R

    @property
    def updates(self) -> int:
        """Steps with a non-zero subgradient so far."""
        return int(self.istate[_co.I_UPDATES])

    @property
    def clock(self) -> int:
        """Steps taken so far, replayed ones included (the stored rows' time stamps)."""
        return int(self.istate[_co.I_CLOCK])

    @property
    def evictions(self) -> int:
        """Stored rows dropped so far to keep within the budget (0 without one)."""
        return int(self.istate[_co.I_EVICTIONS])

    def learn(self, x: np.ndarray, y: int, merge: np.ndarray = NO_MERGE):
        """One step; ``x`` float64 contiguous of length ``n_features``; ``y`` output index or +-1.

        ``merge``: ``[slot, time stamp]`` of the row already holding ``x`` (replay), else
        ``[-1, -1]``.  Returns ``(loss, yhat, updated, slot)``."""
        n = self.n_support
        self.buf.ensure_rows(n + 1)
        b = self.buf
        mode = _co.FUSED
        if n >= _config.PARALLEL_MIN_ROWS:
            spec = self.ck.spec()
            q = Query(x, np.empty(self.ck.n_groups), np.empty(self.ck.n_kernels))
            _ck.prepare_query(x, spec, q.xsq, q.xdiag)
            rows = Rows(b.S, b.ssq, b.sdiag_t)
            if self.g.shape[1] <= _cs.DENSE_OUTPUTS:  # the fused pass over threads: the scores into g
                _cs.kernel_scores_parallel(q, rows, n, spec, b.coef, b.ypos, b.yneg, self.g)
                mode = _co.SCORES_GIVEN
            else:  # many classes: the parallel kernel row, then the scatter in row order
                if self.krow.shape[1] < b.capacity:
                    self.krow = np.zeros((self.ck.n_kernels, b.capacity))
                _ck.kernel_row_parallel(q, rows, n, spec, self.krow)
                _cs.accumulate_scores(self.krow, n, b.coef, b.ypos, b.yneg, self.g)
                mode = _co.SCORES_GIVEN
        return self._step(x, y, mode, merge)

    def stream_learn(self, x: np.ndarray, yi: int, switch_after):
        """One streaming step: learn ``x``, replay after a margin error, then the stage switch.

        Replay (:mod:`onlinemkl._replay`): if the step made a margin error, take
        ``self.replay.steps`` more steps (``steps_many`` once more than three classes are known:
        :meth:`~onlinemkl._replay.ReplayMemory.steps_for`) on examples drawn from the
        reservoir of past ones, then offer ``x`` to the reservoir.  With a budget and more than two
        classes, while the buffer has room, the steps run on stored rows drawn from the buffer, each
        adding to its own row only (LaSVM's "reprocess": the reservoir's replay would store examples
        again for other rival classes, and 'least_impact' keeps the rows stored before the buffer
        fills, so those repeats would stay); with two classes a replayed example always adds to its
        row, so until the buffer is full replay is the unbudgeted one.  Once
        it is full the steps are drawn from the reservoir, and a replayed update not added to its
        example's row takes the row eviction frees, its contribution first projected onto a kept row
        (:func:`~onlinemkl.obscure._step.make_room`): replay then adjusts the kept rows'
        coefficients (the proximal classifier's rule).  ``switch_after``: an
        int N switches to stage 2 after N examples (of the stream; replayed steps do not count);
        'auto' switches once stage-1 updates stop, i.e. after the engine's ``clean_run``
        (:data:`AUTO_SWITCH_CLEAN_RUN`) consecutive steps without a margin error (the streaming form
        of the authors' rule "stop stage 1 after an epoch without margin errors"); None never switches.
        ``R`` comes from the stage-1 solution and the mean online hinge loss of stage 1 (the running
        estimate of the training loss).
        """
        out = self.learn(x, yi)
        mem = self.replay
        slot = out[3]
        stamp = self.buf.tstamp[slot] if slot >= 0 else -1
        if mem.steps > 0 and self.istate[_co.I_CLEAN_RUN] == 0:
            if self.n_outputs > 2 and self.buf.budget is not None and self.buf.has_room(self.n_support):
                self.replay_stored_rows()
            elif mem.size:
                self.replay_steps(mem.steps_for(self.n_outputs))
                if slot >= 0 and self.buf.tstamp[slot] != stamp:  # a replayed step evicted x's row
                    slot = -1
        mem.add(x, yi, slot, self.buf.tstamp)
        if self.stage != 1 or switch_after is None:
            return out
        if switch_after == "auto":
            # A clean run only counts once stage 1 has learnt something: a one-class prefix has no
            # margin errors either, and switching then would start stage 2 from nothing.
            switch = self.istate[_co.I_CLEAN_RUN] >= self.clean_run and self.istate[_co.I_UPDATES] > 0
        else:
            switch = mem.seen >= switch_after
        if switch:
            self.switch_to_stage2()
        return out

    def replay_steps(self, steps: int) -> None:
        """``steps`` replay steps on examples drawn from the reservoir, in one compiled call.

        The draws do not depend on the steps, so they are made first; each step then adds to
        the row already holding its example where it can and updates the reservoir's row hint
        (``merge``), as :meth:`learn` one step at a time would.  A buffer large enough for the
        parallel kernel pass takes the steps one by one through :meth:`learn` (where a call's
        cost is nothing beside its pass over the buffer).
        """
        mem = self.replay
        order = mem.draw(steps)
        rows, labels, where = mem.held(self.n_features)
        n = self.n_support
        if n + steps >= _config.PARALLEL_MIN_ROWS:
            for j in order:
                _, _, updated, slot = self.learn(rows[j], labels[j], where[2 * j:2 * j + 2])
                if updated:  # stored anew, or added to its row: the row to add to next time
                    where[2 * j], where[2 * j + 1] = slot, self.buf.tstamp[slot]
            return
        self.buf.ensure_rows(n + steps)
        self._run(order, rows, labels, _co.REPLAY, where)

    def replay_stored_rows(self) -> None:
        """Replay under a budget: ``replay.steps`` steps on stored rows drawn uniformly, each adding
        to its own row or making no update (LaSVM's "reprocess"), in one compiled call.

        A row's label is its class (multiclass) or its coefficient's sign (binary: the
        coefficient carries the label).  The draws, and the rows, labels and time stamps they
        pick, do not depend on the steps (a binding step never stores or evicts a row, and adds
        to a coefficient with its own sign), so they are all read first; each step is then the
        one :meth:`learn` would take with the binding hint ``[slot, stamp, 1]``.  A buffer large
        enough for the parallel kernel pass takes the steps one by one through :meth:`learn`.
        """
        n = self.n_support
        slots = self.replay.stored_rows(n, self.n_outputs)
        if slots.shape[0] == 0:
            return
        b, d = self.buf, self.n_features
        X = np.ascontiguousarray(b.S[slots, :d])
        if self.binary:
            labels = np.where(b.coef[slots, 0] > 0.0, 1, -1).astype(np.int64)
        else:
            labels = b.ypos[slots].astype(np.int64)
        hints = np.empty(2 * slots.shape[0], dtype=np.int64)
        hints[0::2], hints[1::2] = slots, b.tstamp[slots]
        if n >= _config.PARALLEL_MIN_ROWS:
            for j in range(slots.shape[0]):
                self.learn(X[j], labels[j], np.array([hints[2 * j], hints[2 * j + 1], 1], dtype=np.int64))
            return
        b.ensure_rows(n + 1)  # as learn's: a binding step stores nothing, but learn makes room first
        self._run(np.arange(slots.shape[0], dtype=np.int64), X, labels, _co.REPLAY_BOUND, hints)

    def _arguments(self):
        """``(buf, spec, st, eviction)`` of the compiled entry points: the records
        (:class:`~onlinemkl._core.state.LabelledRows`, :class:`~onlinemkl._core.state.KernelSpec`,
        :class:`~onlinemkl.obscure._step.ObscureState`) as plain tuples of their fields in order,
        as every engine hands state to compiled code (:func:`~onlinemkl.engine.plain`; the entry
        points name them back), and the eviction policy, None without a budget (that variant is
        compiled without the eviction code).  :meth:`records` builds the same as named records;
        the tuples are built directly here, a step's cost on a small buffer, and a test holds them
        to :meth:`records`."""
        b = self.buf
        buf = (b.S, b.ssq, b.sdiag_t, b.ypos, b.yneg, b.coef, b.tstamp)
        st = (self.theta_sq, self.istate, self.fstate, self.hyper, self.ihyper, self.g, self.scores)
        eviction = int(self.ihyper[_co.IH_POLICY]) if self.ihyper[_co.IH_BUDGET] > 0 else None
        return buf, self.ck.arrays(), st, eviction

    def records(self):
        """``(buf, spec, st)``: the state as the named records the compiled step reads."""
        b = self.buf
        return (LabelledRows(b.S, b.ssq, b.sdiag_t, b.ypos, b.yneg, b.coef, b.tstamp), self.ck.spec(),
                _co.ObscureState(self.theta_sq, self.istate, self.fstate, self.hyper, self.ihyper, self.g,
                                 self.scores))

    def _run(self, order, X, Yi, mode, merge=NO_MERGE):
        """``obscure._step.obscure_run``: learning, prediction and replay's steps."""
        buf, spec, st, eviction = self._arguments()
        return _co.obscure_run(order, X, Yi, buf, spec, st, mode, merge, eviction)

    def _fit_run(self, order, X, Yi, Kt, sv_index, merge, sums=None):
        """``obscure._fit.obscure_fit_run``: ``fit``'s steps over kernel matrices ``Kt`` (and the
        training examples' class sums ``sums``, or None)."""
        buf, spec, st, eviction = self._arguments()
        return _cof.obscure_fit_run(order, X, Yi, (Kt, sv_index), buf, spec, st, merge, eviction, sums)

    def _step(self, x, y, mode, merge=NO_MERGE):
        """One example through :meth:`_run`; returns ``(loss, yhat, updated, slot)``."""
        self._y1[0] = y
        return self._run(_ONE, x[None, :], self._y1, mode, merge)[1:]

    def _merge_table(self, n: int) -> np.ndarray:
        """``fit``'s ``[slot, stamp]`` per training example (``-1``: none yet), so that a later
        update of an example with the same class pair adds to its row (see ``obscure_run``).

        Empty under a budget: which row eviction drops depends on the rows, and a budget's
        eviction order is kept as the one-example-at-a-time loop has it.
        """
        rows = 0 if self.ihyper[_co.IH_BUDGET] > 0 else n
        return np.full((rows, 2), -1, dtype=np.int64)

    def fit_pass_precomputed(self, X: np.ndarray, yi: np.ndarray, block_rows: int = 0):
        """A function running steps on training indices with precomputed kernel matrices.

        The matrices ``K_j(X, X)`` come from one BLAS product per feature group
        (the authors' toolbox precomputes them too); each step then gathers its
        kernel row instead of recomputing it.  Same results as per-example steps, within
        rounding.  Without a budget, the per-kernel class scores of every training example are
        kept up to date beside them (``obscure_fit_run``'s ``G``: ``F x C x N`` values), so a
        step reads its scores instead of summing over the stored rows.

        ``block_rows > 0``: the matrices are kept in float32 (half the memory; LIBSVM's kernel
        cache keeps single precision too) and computed ``block_rows`` rows at a time, so that
        only those rows' float64 work arrays exist beside them.  The steps then read kernel
        values rounded to about 1e-7 relative: the same algorithm, not the same bits.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        yi = np.ascontiguousarray(yi, dtype=np.int64)
        if block_rows > 0:
            # each block of rows against itself and the later rows, mirrored: half the kernel values
            Kt = np.empty((self.ck.n_kernels, X.shape[0], X.shape[0]), dtype=np.float32)
            for s in range(0, X.shape[0], block_rows):
                e = min(s + block_rows, X.shape[0])
                Kt[:, s:e, s:] = block_kernels(X[s:e], X[s:], self.ck)
                Kt[:, e:, s:e] = Kt[:, s:e, e:].transpose(0, 2, 1)
        else:
            Kt = block_kernels(X, X, self.ck)
        sv_index = np.zeros(0, dtype=np.int64)
        state = {"sv": sv_index}
        # the class sums start from an empty buffer; a budget's evictions move other rows' coefficients
        sums = None
        n_out = max(self.n_outputs, 1)
        if self.ihyper[_co.IH_BUDGET] == 0 and self.n_support == 0 and (self.binary or int(yi.max()) < n_out):
            sums = np.zeros((self.ck.n_kernels, n_out, X.shape[0]))

        where = self._merge_table(X.shape[0]).ravel()

        def run(order):
            order = np.ascontiguousarray(order, dtype=np.int64)
            need = self.n_support + order.shape[0]
            self.buf.ensure_rows(need)
            b = self.buf
            if state["sv"].shape[0] < b.capacity:
                sv = np.zeros(b.capacity, dtype=np.int64)
                sv[: state["sv"].shape[0]] = state["sv"]
                state["sv"] = sv
            return self._fit_run(order, X, yi, Kt, state["sv"], where, sums)[0]

        def train_scores():
            """Scores of every training example from ``Kt`` (no kernel recomputation): from the
            class sums where they are kept, else the stored rows' coefficients are summed per
            training index, then one matrix product per kernel."""
            n = self.n_support
            a = np.empty(self.ck.n_kernels)
            _co.mirror_weights(self.theta_sq, self.q, a)
            if sums is not None:
                return np.einsum("j,jcv->vc", a, sums) * self.fstate[_co.F_SCALE]
            Mi = np.zeros((X.shape[0], self.n_outputs))
            np.add.at(Mi, state["sv"][:n], self.coefficient_matrix() * self.fstate[_co.F_SCALE])
            out = np.zeros((X.shape[0], self.n_outputs))
            rows = block_rows if block_rows > 0 else X.shape[0]
            for s in range(0, X.shape[0], rows):  # float32 matrices: a float64 copy of a block at a time
                for j in range(self.ck.n_kernels):
                    out[s:s + rows] += a[j] * (Kt[j, s:s + rows].astype(np.float64, copy=False) @ Mi)
            return out

        run.train_scores = train_scores
        run.class_sums, run.kernel_matrices, run.sv_index = sums, Kt, lambda: state["sv"]  # for tests
        return run

    def fit_pass_blocked(self, X: np.ndarray, yi: np.ndarray, cache_bytes: int):
        """:meth:`fit_pass_precomputed`'s ``run``, with kernel blocks bounded by ``cache_bytes``.

        For training sets whose full kernel matrices do not fit: the order is cut into chunks
        of ``C`` examples, and each chunk gets the kernel values ``K_j(X[chunk], X[cols])``
        with ``cols`` the chunk itself followed by the distinct training examples stored in
        the buffer, one BLAS product per feature group (``F C (C + U)`` floats and the
        group's products beside them, ``U`` the distinct stored examples, kept under
        ``cache_bytes``; ``C`` at most :data:`BLOCKED_CHUNK`).  The steps then gather their
        kernel rows from that block as the precomputed path does, so the model is the same as
        one example at a time: only the kernel values come from BLAS products instead of a
        loop over the buffer per step, and an example stored several times is computed once.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        yi = np.ascontiguousarray(yi, dtype=np.int64)
        if self._fresh_for_sums(yi):
            return self._fit_pass_sums(X, yi, cache_bytes)
        F = self.ck.n_kernels
        state = {"sv": np.zeros(0, dtype=np.int64)}  # training index of each stored row
        where = self._merge_table(X.shape[0])

        def chunk_rows(u, left):
            # the largest C with (F + 3) C (C + u) 8 <= cache_bytes, at least MIN_CHUNK (the F
            # kernel blocks and block_kernels' per-group products, norms and distances), at most
            # BLOCKED_CHUNK
            c = (-u + math.sqrt(u * u + 4.0 * cache_bytes / (8.0 * (F + 3)))) / 2.0
            return int(min(left, BLOCKED_CHUNK, max(MIN_CHUNK, c)))

        def run(order):
            order = np.ascontiguousarray(order, dtype=np.int64)
            errors, pos = 0, 0
            while pos < order.shape[0]:
                n = self.n_support
                sv = state["sv"][:n]
                stored = np.unique(sv)
                C = chunk_rows(stored.shape[0], order.shape[0] - pos)
                idx = order[pos:pos + C]
                Kt = block_kernels(X[idx], X[np.concatenate((idx, stored))], self.ck)
                self.buf.ensure_rows(n + C)
                local = np.zeros(self.buf.capacity, dtype=np.int64)
                local[:n] = C + np.searchsorted(stored, sv)
                merge = where[idx].ravel() if where.shape[0] else NO_MERGE
                errors += self._fit_run(np.arange(C, dtype=np.int64), X[idx], yi[idx], Kt, local, merge)[0]
                if where.shape[0]:
                    where[idx] = merge.reshape(C, 2)
                loc = local[: self.n_support]
                from_chunk = loc < C
                state["sv"] = np.where(from_chunk, idx[np.where(from_chunk, loc, 0)],
                                       stored[np.where(from_chunk, 0, loc - C)] if stored.shape[0]
                                       else 0)
                pos += C
            return errors

        run.train_scores = lambda: self.scores_many(X)
        return run

    def _fresh_for_sums(self, yi: np.ndarray) -> bool:
        """Whether ``fit`` can keep the class sums of every training example (``obscure_fit_run``'s
        ``G``): no budget (an eviction moves other rows' coefficients), an empty buffer (the sums
        start from nothing) and labels within the outputs."""
        return (self.ihyper[_co.IH_BUDGET] == 0 and self.n_support == 0
                and (self.binary or int(yi.max()) < max(self.n_outputs, 1)))

    def _fit_pass_sums(self, X: np.ndarray, yi: np.ndarray, cache_bytes: int):
        """:meth:`fit_pass_blocked`'s ``run`` over the class sums of every training example.

        The per-kernel class scores of every training example (``G``, ``F x C x N`` values) are
        kept, and each chunk of the order runs through ``obscure_fit_chunk`` with only the
        chunk's kernel values among themselves; then the chunk's updated examples get their
        kernel rows against the training set (one BLAS block) and ``G`` its updates (two rows of
        ``G`` per update).  An epoch computes ``N`` kernel rows of its updated examples where
        :meth:`fit_pass_blocked` computes every example's row against the stored ones and sums
        over the stored rows at every step.  Chunks are :data:`SUMS_CHUNK` examples (fewer if
        their block of rows and ``block_kernels``' per-group products beside it would pass
        ``cache_bytes``); the training rows' norms and self-kernels are computed once
        (:class:`~onlinemkl.kernel_arrays.StoredRows`).  The model is the one of per-example
        steps, within rounding.
        """
        N, F = X.shape[0], self.ck.n_kernels
        n_out = max(self.n_outputs, 1)
        sums = np.zeros((F, n_out, N))
        where = self._merge_table(N).ravel()
        chunk = int(max(1, min(N, SUMS_CHUNK, cache_bytes // (8 * (F + 3) * N))))
        pending = (np.zeros((chunk, 3), dtype=np.int64), np.zeros(chunk))
        training = StoredRows(X, self.ck)  # the training rows' norms and self-kernels, once per fit

        def run(order):
            order = np.ascontiguousarray(order, dtype=np.int64)
            updates = 0
            for pos in range(0, order.shape[0], chunk):
                idx = order[pos:pos + chunk]
                Xc = X[idx]
                Kc = block_kernels(Xc, Xc, self.ck)
                self.buf.ensure_rows(self.n_support + idx.shape[0])
                buf, spec, st, _ = self._arguments()
                done, n_pend = _cof.obscure_fit_chunk(idx, X, yi, Kc, sums, buf, spec, st, where, pending)
                updates += done
                if n_pend:
                    u, row_of = np.unique(idx[pending[0][:n_pend, 0]], return_inverse=True)
                    rows = block_kernels(X[u], X, self.ck, training)
                    _cof.add_pending_sums(sums, rows, row_of.astype(np.int64), pending, n_pend)
            return updates

        def train_scores():
            a = np.empty(F)
            _co.mirror_weights(self.theta_sq, self.q, a)
            return np.einsum("j,jcv->vc", a, sums) * self.fstate[_co.F_SCALE]

        run.train_scores = train_scores
        run.class_sums = sums  # for tests
        return run

    def scores_one(self, x: np.ndarray) -> np.ndarray:
        """The output scores of one row (no update).

        A model with no stored example scores every row 0 exactly: answered here, so that the
        first prediction of a new process never waits for the compiled pass (:mod:`onlinemkl._lazy`)."""
        if self.n_support == 0:
            return np.zeros(self.n_outputs)
        self._step(x, 0, _co.PREDICT)
        return self.scores[: self.n_outputs].copy()

    # -- batch --------------------------------------------------------------------------

    def kernel_weights(self) -> np.ndarray:
        """Normalised ``||w^j||`` (sums to 1; uniform before any update)."""
        a = np.empty(self.ck.n_kernels)
        _co.mirror_weights(self.theta_sq, self.q, a)
        return normalised(a * np.sqrt(np.maximum(self.theta_sq, 0.0)))

    def coefficient_matrix(self) -> np.ndarray:
        """Per stored example, its coefficient on each output: ``(n_support, n_outputs)``."""
        n = self.n_support
        b = self.buf
        M = np.zeros((n, self.n_outputs))
        rows = np.arange(n)
        M[rows, b.ypos[:n]] += b.coef[:n, 0]
        neg = b.yneg[:n] >= 0
        M[rows[neg], b.yneg[:n][neg]] -= b.coef[:n, 0][neg]
        return M

    def scores_many(self, X: np.ndarray, block: int = 2048) -> np.ndarray:
        """Scores of many examples with BLAS products (``predict_many`` path)."""
        n = self.n_support
        out = np.zeros((X.shape[0], self.n_outputs))
        if n == 0 or X.shape[0] == 0:
            return out
        a = np.empty(self.ck.n_kernels)
        _co.mirror_weights(self.theta_sq, self.q, a)
        M = self.coefficient_matrix() * self.fstate[_co.F_SCALE]
        b = self.buf
        S = b.S[:n, : self.n_features]
        # Blocks small enough for the work arrays to stay in cache (``block`` caps them).
        rows = min(block, WeightedKernelSum.rows_per_block(n, self.ck.n_kernels))
        kw = WeightedKernelSum(S, b.ssq[:n], b.sdiag[:n], self.ck, a, min(rows, X.shape[0]))
        for start in range(0, X.shape[0], rows):
            out[start:start + rows] = kw(X[start:start + rows]) @ M  # (sum_j a_j K_j) M
        return out

    def w_norm_p(self) -> float:
        """``||w||_{2,p} = (1/q) ||theta||_{2,q}``."""
        return self.fstate[_co.F_SCALE] * _co.group_qnorm(self.theta_sq, self.q) / self.q

    def switch_to_stage2(self, R: float | None = None) -> None:
        """Start stage 2 with radius ``R`` (default: from the stage-1 solution and its mean online loss)."""
        if self.hyper[_co.H_LAM] == 0.0:
            # N: the examples of the stream so far (replayed steps are not new examples), or the
            # steps taken when nothing went through stream_step
            N = self.replay.seen or int(self.istate[_co.I_CLOCK])
            self.hyper[_co.H_LAM] = 1.0 / (self.C * max(N, 1))
        if R is None:
            R = self.radius_from_loss(self.fstate[_co.F_LOSS_SUM] / max(self.fstate[_co.F_LOSS_N], 1.0))
        if not R > 0:
            # Nothing learnt yet (e.g. a one-class prefix): R = 0 would freeze stage 2 (s_t = inf,
            # eta_t = 0).  sqrt(2 / lambda) always bounds ||w*|| since f(w*) <= f(0) = 1.
            R = math.sqrt(2.0 / self.hyper[_co.H_LAM])
        self.hyper[_co.H_R] = R
        self.ihyper[_co.IH_STAGE] = 2
        self.istate[_co.I_T] = 0
        self.fstate[_co.F_S] = 0.0

    def radius_from_loss(self, mean_loss: float) -> float:
        """``R^2 = ||w||_{2,p}^2 + 2 mean_loss / lambda``, capped at ``2 / lambda`` (Alg. 1 output)."""
        lam = self.hyper[_co.H_LAM]
        r2 = self.w_norm_p() ** 2 + 2.0 * mean_loss / lam
        return math.sqrt(min(r2, 2.0 / lam))

    def recompute_theta_sq(self) -> np.ndarray:
        """``||raw theta^j||^2`` recomputed from the buffer (O(n^2); for tests)."""
        b = self.buf
        buf = LabelledRows(b.S, b.ssq, b.sdiag_t, b.ypos, b.yneg, b.coef, b.tstamp)
        return _co.theta_sq_from_buffer(buf, self.n_support, self.ck.spec(), max(self.n_outputs, 1))

    # -- state (the onlinemkl.engine protocol) ------------------------------------------

    #: The arrays of the state (dotted paths); ``krow`` is scratch and is not saved.
    _STATE_ARRAYS = ("hyper", "ihyper", "istate", "fstate", "theta_sq", "g", "scores") + BufferEngine._BUFFER_ARRAYS \
        + BufferEngine._KERNEL_ARRAYS + ReplayMemory.STATE_ARRAYS

    def get_state(self):
        """``(params, arrays)``: every array of the state, and the scalars beside them."""
        params = {"n_features": int(self.n_features), "p": self.p, "C": self.C,
                  "kernels_resolved": bool(self.ck._resolved), "krow_shape": list(self.krow.shape),
                  **self._kernel_state()}
        return params, collect_arrays(self, self._STATE_ARRAYS)

    def set_state(self, params, arrays, strict=True):
        """Restore a state onto an engine built with the same parameters.

        Every shape and index is checked against the others, so that the
        compiled code never reads or writes out of bounds: a ``ValueError``
        says which rule a (corrupted or crafted) state breaks.  (``strict``: see
        :class:`onlinemkl.engine.Engine`; OBSCURE's rules are all structural.)
        """
        self._check_kernel_state(params, state_rule("OBSCURE"))
        if float(params["p"]) != self.p:
            raise ValueError(f"the saved p={params['p']!r} differs from the parameters' p={self.p!r}")
        floats = {_co.H_Q: 0, _co.H_ETA: 1, _co.H_LAM: 2, _co.H_R: 3}  # where a state without ihyper has them
        ints = {_co.IH_STAGE: 4, _co.IH_PEGASOS: 5, _co.IH_BUDGET: 6, _co.IH_POLICY: 7, _co.IH_BINARY: 8,
                _co.IH_NCLASS: 9}
        arrays = split_hyper(arrays, floats, ints, state_rule("OBSCURE"))
        restore_arrays(self, arrays, self._STATE_ARRAYS)
        self.n_features = int(params["n_features"])
        self.C = float(params["C"])
        self.ck._resolved = bool(params["kernels_resolved"])
        krow_shape = tuple(int(v) for v in params["krow_shape"])
        if len(krow_shape) != 2 or krow_shape[0] != self.ck.n_kernels or not 0 <= krow_shape[1] <= self.buf.capacity:
            raise ValueError(f"krow shape {krow_shape} does not fit {self.ck.n_kernels} kernels and a buffer of "
                             f"{self.buf.capacity} rows")  # checked before allocating: a crafted file asks for GBs
        self.krow = np.zeros(krow_shape)
        self._check_state()
        self._refresh_row_caches()

    def _check_state(self):
        """Raise ``ValueError`` unless the arrays are consistent with each other and with the kernels."""
        F = self.ck.n_kernels
        b, ck, h, s = self.buf, self.ck, self.hyper, self.ihyper
        need = state_rule("OBSCURE")
        for name, arr, shape in (("hyper", h, (_co.N_HYPER,)), ("ihyper", s, (_co.N_IHYPER,)),
                                 ("istate", self.istate, (_co.N_ISTATE,)),
                                 ("fstate", self.fstate, (_co.N_FSTATE,)), ("theta_sq", self.theta_sq, (F,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        ck.check_restored(need)
        need(h[_co.H_Q] == self.q, f"q={h[_co.H_Q]!r} does not match p={self.p!r}")
        need(s[_co.IH_STAGE] in (1, 2), f"stage {s[_co.IH_STAGE]!r} is not 1 or 2")
        need(s[_co.IH_BINARY] in (0, 1), "the binary flag is not 0 or 1")
        need(s[_co.IH_POLICY] in tuple(EVICTION.values()), f"unknown eviction code {s[_co.IH_POLICY]!r}")
        budget = 0 if b.budget is None else b.budget
        need(s[_co.IH_BUDGET] == budget, f"budget {s[_co.IH_BUDGET]!r} differs from the parameter {b.budget!r}")
        self._check_buffer(need, 1)
        n = self.n_support
        C = self.scores.shape[0]
        need(C >= 1 and self.g.shape == (F, C), f"g {self.g.shape} and scores {self.scores.shape} disagree")
        n_class = s[_co.IH_NCLASS]
        need(0 <= n_class <= C, f"{n_class!r} classes for {C} score slots")
        n_out = max(self.n_outputs, 1)
        need(bool(np.all((b.ypos[:n] >= 0) & (b.ypos[:n] < n_out))), "a stored example's class is out of range")
        need(bool(np.all((b.yneg[:n] >= -1) & (b.yneg[:n] < n_out))), "a stored example's rival is out of range")
        self.replay.check(need, self.n_features, lambda y: (np.abs(y) == 1) if self.binary else ((y >= 0) & (y < n_out)))
        self._check_groups(ck, need)


def hinge_losses(scores: np.ndarray, y_idx: np.ndarray, binary: bool) -> np.ndarray:
    """Hinge (binary, ``y`` in +-1) or Crammer-Singer hinge losses of score rows."""
    if binary:
        return np.maximum(0.0, 1.0 - y_idx * scores[:, 0])
    n = scores.shape[0]
    s = scores.copy()
    sy = s[np.arange(n), y_idx]
    s[np.arange(n), y_idx] = -np.inf
    return np.maximum(0.0, 1.0 - (sy - s.max(axis=1)))


#: ``switch_after='auto'``: stage 2 starts after this many consecutive examples without a margin error.
AUTO_SWITCH_CLEAN_RUN = 500


def check_switch_after(value):
    """``switch_after``: an int >= 1, 'auto' or None."""
    if value is None or value == "auto":
        return value
    return check_number("switch_after", value, low=1, integer=True,
                        hint=" (or 'auto', or None for stage 1 only)")


def _check_epochs(name, value):
    if value == "auto":
        return value
    return check_number(name, value, low=0, integer=True, hint=" (or 'auto')")


def _check_replay(name, value):
    check_replay(value, 1)
    return value


#: OBSCURE's parameters: both faces' signatures and Parameters sections, and their validation.
PARAMS = Table(
    Param("kernels", KERNELS_RULE, None,
          "The kernels to combine; None uses :func:`onlinemkl.kernels.default_kernels` (three RBF\n"
          "bandwidths, linear and quadratic; meant for standardised inputs), and on the scikit-learn face\n"
          ":func:`onlinemkl.kernels.default_fit_kernels` (one more RBF bandwidth).  On the river face, kernel\n"
          "groups are tuples of feature *names*; a feature that first appears mid-stream joins the kernels\n"
          "on all features (``group=None``) and any group that names it; relative bandwidths\n"
          "(``gamma=None``, ``h=None``) are resolved when a kernel's group first has features."),
    Param("p", number("float in (1, 2] or None",
              low=1.0, high=2.0, low_open=True, allow_none=True,
              hint=" (OBSCURE needs 1 < p <= 2; use p close to 1, e.g. 1.01, for sparse kernel weights)"), None,
          "The group norm ``||w||_{2,p}``.  Near 1 gives sparse kernel weights, 2 the plain sum of\n"
          "kernels.  None: the authors' ``q = 2 ln F``, ``p = q/(q-1)``."),
    Param("lam", number("float > 0 or None", low=0.0, low_open=True, allow_none=True), None,
          "Regularisation ``lambda`` of the objective ``lambda/2 ||w||_{2,p}^2 + mean loss``.  None:\n"
          "``1 / (C N)`` with ``N`` the training set's size in ``fit``, or the number of examples seen when\n"
          "stage 2 starts in one pass."),
    Param("C", number("float > 0", low=0.0, low_open=True), 1.0,
          "The SVM-style constant used when ``lam`` is None."),
    Param("eta", number("float > 0 or None", low=0.0, low_open=True, allow_none=True), None,
          "Stage-1 step size; None: the authors' ``F^(-2/q)``."),
    Param("stage1_epochs", Rule("int >= 0 or 'auto'", _check_epochs), "auto",
          "Epochs of stage 1 in ``fit`` (it stops early after an epoch without margin errors).  'auto': 5\n"
          "with up to three classes, 20 with more.",
          faces=("sklearn",)),
    Param("stage2_epochs", Rule("int >= 0 or 'auto'", _check_epochs), "auto",
          "Epochs of stage 2 in ``fit`` (0: stage 1 only).  'auto': 5 with up to three classes, none with\n"
          "more: a multiclass step moves two classes' weights, so with many classes stage 1's epochs, each\n"
          "over every example, reach the accuracy of 5 + 10 epochs in a half to a third of the time.",
          faces=("sklearn",)),
    Param("switch_after", Rule("int >= 1, 'auto' or None", lambda name, v: check_switch_after(v)), "auto",
          "One pass (``learn_one``, ``partial_fit``): when stage 2 starts.  An int: after that many\n"
          "examples; 'auto': once stage-1 updates stop (500 consecutive examples without a margin error;\n"
          "a noisy stream may never switch); None: stage 1 only.  The radius ``R`` then comes from the\n"
          "stage-1 norm and the mean online hinge loss of stage 1."),
    Param("pegasos", Bool(), False, "Stage 2 with ``s_t = 0``: the paper's Pegasos-MKL baseline."),
    Param("budget", number("int >= 1 or None", low=1, integer=True, allow_none=True), None,
          "Maximum stored examples (None: unbounded; memory grows with the number of updates).  With\n"
          "replay on, a reservoir of up to ``replay_window`` past examples is kept beside them\n"
          "(``replay=0``: none)."),
    Param("eviction", Choice(tuple(EVICTION)), "least_impact",
          "Which stored example a full buffer drops: the one whose removal changes the predictor least\n"
          "(the newest of those tied), or the oldest (a sliding window, for drifting streams).  Either way\n"
          "its contribution is first projected onto the stored example with the same class pair that keeps\n"
          "most of it (one coefficient for all kernels, fitted in the kernels' weighted sum); only the\n"
          "residual is lost."),
    Param("loss", Choice(("auto", "hinge", "multiclass_hinge")), "auto",
          "'hinge': the binary hinge loss (two classes; on the river face, True/False labels, river's\n"
          "binary convention); 'multiclass_hinge': the Crammer-Singer hinge, labels any hashable values.\n"
          "'auto': in ``fit`` and ``partial_fit``, binary for two classes and Crammer-Singer for more; on the\n"
          "river face, where labels appear one at a time and their number is never known, Crammer-Singer."),
    Param("replay", Rule("int >= 0 or 'auto'", _check_replay), "auto",
          "One pass: after a margin error, this many extra steps on past examples drawn from a reservoir\n"
          "of ``replay_window`` of them (0: off; ``fit`` runs epochs instead).  'auto': 5, 10 once more\n"
          "than three classes are known (0 with a budget and ``eviction='oldest'``).  With a budget and more\n"
          "than two classes, while the buffer has room, on stored examples instead, each step adding to its\n"
          "own stored row or to nothing (no row spent on a repeat); once it is full, from the reservoir, an\n"
          "update taking the row eviction frees."),
    Param("replay_window", number("int >= 1", low=1, integer=True), DEFAULT_WINDOW,
          "Past examples kept for replay (a uniform sample of the stream; fewer when rows are very wide, at\n"
          "most 2^20 values in all)."),
    *FEATURE_CAP_PARAMS,
    *SEED_PARAMS,
    SCALE_PARAM,
)
