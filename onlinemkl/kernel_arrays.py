"""Kernels as the arrays compiled code reads, and kernel blocks by BLAS (the Python side).

:class:`CompiledKernels` turns kernel objects (:mod:`onlinemkl.kernels`) and a
feature index into the integer-coded arrays of :mod:`onlinemkl._core.kernels`;
:func:`resolve_group_columns` finds each feature group's columns;
:func:`block_kernels` and :class:`WeightedKernelSum` compute kernel values of
many rows at once with BLAS products, for the batch prediction paths.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ._core.state import KernelSpec, Rows
from ._lazy import lazy_module

_cb = lazy_module("onlinemkl._core.batch")
_ck = lazy_module("onlinemkl._core.kernels")

__all__ = ["CompiledKernels", "resolve_group_columns", "block_kernels", "StoredRows", "WeightedKernelSum"]


class CompiledKernels:
    """The integer-coded arrays the compiled code reads for a list of kernels.

    Built at the boundary from the kernel objects and the current feature
    index (group columns can grow when new features appear in a stream).

    ``gl1[g]`` holds the group's flag bits (the name predates all but the
    first): ``GROUP_L1`` when a Laplacian kernel needs the L1 distance,
    ``GROUP_SQDIST`` when a B1-spline kernel needs the squared distance summed
    directly rather than expanded from the norms, ``GROUP_DOT`` when a linear
    or polynomial kernel reads the dot product (see
    :mod:`onlinemkl._core.kernels`).  ``gfrozen[g]`` is True once group ``g``
    has had columns: its kernels' relative bandwidths are resolved and kept
    from then on, even when new features later join the group.
    """

    __slots__ = ("kernels", "groups", "codes", "params", "kgroup", "granges", "gptr", "gl1", "gfrozen")

    def __init__(self, kernels: Sequence):
        self.kernels = tuple(kernels)
        # Kernels that read the same feature group share one group (one pass).
        self.groups: list = []
        kgroup = []
        for k in self.kernels:
            if k.group not in self.groups:
                self.groups.append(k.group)
            kgroup.append(self.groups.index(k.group))
        F = len(self.kernels)
        self.codes = np.array([k.code for k in self.kernels], dtype=np.int64)
        self.kgroup = np.array(kgroup, dtype=np.int64)
        self.params = np.zeros((F, _ck.N_PARAMS))
        self.params[:, _ck.P_NORMALIZE] = [1.0 if k.normalize else 0.0 for k in self.kernels]
        self.gl1 = self._group_flags()
        self.granges = np.zeros((0, 2), dtype=np.int64)
        self.gptr = np.zeros(len(self.groups) + 1, dtype=np.int64)
        self.gfrozen = np.zeros(len(self.groups), dtype=bool)

    def _group_flags(self) -> np.ndarray:
        flags = np.zeros(len(self.groups), dtype=np.int64)
        for k in self.kernels:
            g = self.groups.index(k.group)
            if k.code == _ck.LAPLACIAN:
                flags[g] |= _ck.GROUP_L1
            elif k.code == _ck.BSPLINE:
                flags[g] |= _ck.GROUP_SQDIST
            elif k.code in (_ck.LINEAR, _ck.POLYNOMIAL):
                flags[g] |= _ck.GROUP_DOT
        return flags

    @property
    def _resolved(self) -> bool:
        """True once every group's parameters are frozen (the single flag the learners save).

        Setting it restores the per-group state from that flag: True freezes
        every group; False freezes the groups that have columns now, which is
        exactly what :meth:`set_columns` leaves behind once ``granges``/``gptr``
        are restored (so set it after them).
        """
        return bool(np.all(self.gfrozen))

    @_resolved.setter
    def _resolved(self, value):
        if value:
            self.gfrozen = np.ones(len(self.groups), dtype=bool)
        else:
            self.gfrozen = np.diff(np.asarray(self.gptr)) > 0

    @property
    def n_kernels(self) -> int:
        return len(self.kernels)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def set_columns(self, group_columns: Sequence[np.ndarray]):
        """Set each group's columns; resolve a group's relative bandwidths when it first has columns.

        A group's parameters are frozen from the first call that gives it
        columns: features that join it later (a stream's new feature on a
        group of all features, a named feature that appears late) do not move
        its bandwidths, which the stored examples' norms were computed with.
        A group still without columns is resolved again at every call.
        """
        ranges, ptr = [], [0]
        for cols in group_columns:
            ranges.extend(_to_ranges(np.asarray(cols, dtype=np.int64)))
            ptr.append(len(ranges))
        self.granges = np.array(ranges, dtype=np.int64).reshape(-1, 2)
        self.gptr = np.array(ptr, dtype=np.int64)
        for j, k in enumerate(self.kernels):
            g = self.kgroup[j]
            if not self.gfrozen[g]:
                self.params[j, :3] = k.resolved_params(len(group_columns[g]))
        self.gfrozen = self.gfrozen | np.array([len(c) > 0 for c in group_columns], dtype=bool)
        self.find_ladders()

    def find_ladders(self) -> None:
        """Set the ladder columns of ``params`` from the resolved gammas (see ``_core.kernels.ladder_value``).

        An RBF kernel ``j`` goes on a ladder when an earlier RBF kernel ``b`` on the same group,
        itself computed directly, has ``gamma_j = k gamma_b`` for an integer ``k`` in
        ``LADDER_KS`` (2 to 16, 20, 25, 32, 50, 64, 100, 128; to 8 ulps: ``0.1 / d`` times 10
        need not round to ``1 / d``); the smallest such ``k`` wins.  Then ``K_j = K_b^k`` by
        squaring, a few multiplications instead of an exponential.  The columns are derived
        data: recomputed whenever the gammas change or are restored, never trusted from a file.
        """
        p = self.params
        p[:, _ck.P_LADDER_K:] = 0.0
        eps = np.finfo(np.float64).eps
        for j in range(len(self.kernels)):
            gj = p[j, 0]
            if self.codes[j] != _ck.RBF or not gj > 0.0:
                continue
            best = None
            for b in range(j):
                gb = p[b, 0]
                if (self.codes[b] != _ck.RBF or self.kgroup[b] != self.kgroup[j] or not gb > 0.0
                        or p[b, _ck.P_LADDER_K] != 0.0):
                    continue
                ratio = float(gj) / float(gb)  # Python floats: inf without a warning
                if not 1.5 < ratio < 2 * _ck.LADDER_KS[-1]:  # also keeps round() away from inf
                    continue
                k = round(ratio)
                if k in _ck.LADDER_KS and abs(gj - k * gb) <= 8.0 * eps * gj and (best is None or k < best[0]):
                    best = (k, b)
            if best is not None:
                k, b = best
                p[j, _ck.P_LADDER_K] = k
                p[j, _ck.P_LADDER_BASE] = b
                p[j, _ck.P_LADDER_GAMMA] = p[b, 0]
                p[j, _ck.P_LADDER_LO] = math.exp(_ck.EXP_FLOOR / k)

    def arrays(self):
        return self.codes, self.params, self.kgroup, self.granges, self.gptr, self.gl1

    def spec(self) -> KernelSpec:
        """The arrays as the record compiled code takes (:class:`onlinemkl._core.state.KernelSpec`)."""
        return KernelSpec(self.codes, self.params, self.kgroup, self.granges, self.gptr, self.gl1)

    def refresh_row_caches(self, S: np.ndarray, n: int, ssq: np.ndarray, sdiag: np.ndarray) -> None:
        """Recompute a restored buffer's per-row caches (squared group norms ``ssq[n, G]``, diagonals
        ``sdiag[F, n]``, kernel by kernel as the buffer holds them) from its first ``n`` rows; call
        after the shapes are checked (:meth:`check_restored`)."""
        _ck.refresh_row_caches(Rows(S, ssq, sdiag), n, self.spec())

    def check_restored(self, need, what: str = "ck") -> None:
        """Check arrays restored from a file against ``kernels``: shapes, and the kernel codes,
        groups, flags and normalisation a fresh compilation gives.  Then recomputes the ladder
        columns from the restored gammas (derived data, never trusted from a file).
        ``need(ok, rule)`` raises the caller's error; ``what`` names this object in its messages."""
        F, G = self.n_kernels, self.n_groups
        for name, arr, shape in (("codes", self.codes, (F,)), ("params", self.params, (F, _ck.N_PARAMS)),
                                 ("kgroup", self.kgroup, (F,)), ("gl1", self.gl1, (G,)),
                                 ("gptr", self.gptr, (G + 1,))):
            need(arr.shape == shape, f"{what}.{name} has shape {arr.shape}, expected {shape}")
        fresh = CompiledKernels(self.kernels)
        need(np.array_equal(self.codes, fresh.codes) and np.array_equal(self.kgroup, fresh.kgroup)
             and np.array_equal(self.gl1, fresh.gl1)
             and np.array_equal(self.params[:, _ck.P_NORMALIZE], fresh.params[:, _ck.P_NORMALIZE]),
             f"the {what} kernel codes and groups do not match the kernels (the kernels parameter, or the "
             "kernels the state records)")
        self.find_ladders()  # derived from the restored gammas, not read from the file


def _to_ranges(cols: np.ndarray) -> list[tuple[int, int]]:
    """Sorted column indices -> list of contiguous ``[start, stop)`` ranges."""
    if cols.size == 0:
        return []
    cols = np.unique(cols)
    breaks = np.nonzero(np.diff(cols) != 1)[0]
    starts = np.concatenate(([cols[0]], cols[breaks + 1]))
    stops = np.concatenate((cols[breaks] + 1, [cols[-1] + 1]))
    return list(zip(starts.tolist(), stops.tolist()))


def resolve_group_columns(groups, n_features: int, lookup=None) -> list[np.ndarray]:
    """Column indices of each group: ``None`` -> all columns, names via ``lookup``."""
    out = []
    for group in groups:
        if group is None:
            out.append(np.arange(n_features, dtype=np.int64))
            continue
        cols = []
        for f in group:
            if lookup is not None:
                c = lookup(f)
                if c is None:
                    continue  # a named feature not seen yet: it joins the group when it appears
            else:
                if isinstance(f, bool) or not isinstance(f, (int, np.integer)):
                    raise ValueError(
                        f"kernel group {group!r}: {f!r} is not a column index; with arrays, "
                        "groups are tuples of integer columns"
                    )
                c = int(f)
                if not 0 <= c < n_features:
                    raise ValueError(
                        f"kernel group {group!r}: column {c} is out of range for {n_features} features"
                    )
            cols.append(c)
        out.append(np.array(sorted(cols), dtype=np.int64))
    return out


def _group_columns(ck, g):
    """The columns of group ``g``: a slice when they are one contiguous range, else an index array."""
    ranges = ck.granges[ck.gptr[g]:ck.gptr[g + 1]]
    if len(ranges) == 1:
        return slice(int(ranges[0][0]), int(ranges[0][1]))
    return np.concatenate([np.arange(a, b) for a, b in ranges] or [np.zeros(0, np.int64)]).astype(np.int64)


def _l1_distances(Xg, Zg):
    """Pairwise L1 distances, blocked to keep the temporary (rows x cols x features) small."""
    l1 = np.empty((Xg.shape[0], Zg.shape[0]))
    step = max(1, 2**20 // max(1, Zg.shape[0] * max(1, Zg.shape[1])))
    for a in range(0, Xg.shape[0], step):
        l1[a:a + step] = np.abs(Xg[a:a + step, None, :] - Zg[None, :, :]).sum(axis=2)
    return l1


def _sq_distances(Xg, Zg):
    """Pairwise squared distances summed from the differences (exact at (near-)duplicates, unlike
    ``|x|^2 + |z|^2 - 2 x.z``): for the groups flagged ``GROUP_SQDIST`` (a B1-spline kernel)."""
    from scipy.spatial.distance import cdist

    return cdist(Xg, Zg, "sqeuclidean")


def _group_quantities(X, Z, cols, flags, stored=None):
    """One group's products between the rows of ``X`` and ``Z``; ``stored``: ``Z``'s group
    columns and squared norms already taken (:class:`StoredRows`)."""
    Xg = np.ascontiguousarray(X[:, cols])
    if stored is not None:
        Zg, zsq = stored
    else:
        Zg = Xg if Z is X else np.ascontiguousarray(Z[:, cols])
    dots = Xg @ Zg.T  # X @ X.T is a symmetric (syrk) product
    xsq = np.einsum("ij,ij->i", Xg, Xg)
    if stored is None:
        zsq = xsq if Z is X else np.einsum("ij,ij->i", Zg, Zg)
    l1 = _l1_distances(Xg, Zg) if flags & _ck.GROUP_L1 else None
    sqd = _sq_distances(Xg, Zg) if flags & _ck.GROUP_SQDIST else None
    return dots, l1, sqd, xsq, zsq


class StoredRows:
    """What :func:`block_kernels` computes of its stored rows ``S`` alone: each group's columns
    (contiguous), their squared norms and every kernel's self-value in the stored form.

    For callers that take many blocks of queries against the same rows (``fit``'s chunks against
    the training set): made once, these are not recomputed per block.  The values are the ones
    :func:`block_kernels` computes without it, bit for bit.
    """

    def __init__(self, S: np.ndarray, ck: CompiledKernels):
        self.S = S
        self.diag = np.zeros((S.shape[0], ck.n_kernels))
        self.groups = []
        for g in range(ck.n_groups):
            js = np.nonzero(ck.kgroup == g)[0].astype(np.int64)
            Zg = np.ascontiguousarray(S[:, _group_columns(ck, g)])
            zsq = np.einsum("ij,ij->i", Zg, Zg)
            _cb.stored_self_kernels(zsq, js, ck.codes, ck.params, self.diag)
            self.groups.append((Zg, zsq))


def block_kernels(Xq: np.ndarray, S: np.ndarray, ck: CompiledKernels, stored: StoredRows | None = None) -> np.ndarray:
    """Kernel values ``out[j, a, i] = K_j(Xq_a, S_i)`` with BLAS matrix products.

    The batch counterpart of the compiled kernel row: one matrix product per
    feature group, shared by every kernel on that group; the kernel values,
    normalisation included, are then computed from it in one compiled pass
    (:func:`onlinemkl._core.batch.values_from_products`).  Pass the same
    array as ``Xq`` and ``S`` for a training set's own kernel matrices (one
    symmetric product).  ``stored``: :class:`StoredRows` of ``S`` (made once for many
    calls against the same ``S``; the values are the same).
    """
    F = ck.n_kernels
    nq, ns = Xq.shape[0], S.shape[0]
    out = np.empty((F, nq, ns))
    codes, params, spec = ck.codes, ck.params, ck.spec()
    xdiag = np.zeros((nq, F))
    if stored is not None and stored.S is not S:
        raise ValueError("stored: the StoredRows of another array than S")
    zdiag = xdiag if S is Xq else (stored.diag if stored is not None else np.zeros((ns, F)))
    none = np.zeros((1, 1))
    for g in range(ck.n_groups):
        js = np.nonzero(ck.kgroup == g)[0].astype(np.int64)
        dots, l1, sqd, xsq, zsq = _group_quantities(Xq, S, _group_columns(ck, g), int(ck.gl1[g]),
                                                    None if stored is None else stored.groups[g])
        _cb.stored_self_kernels(xsq, js, codes, params, xdiag)
        if S is not Xq and stored is None:
            _cb.stored_self_kernels(zsq, js, codes, params, zdiag)
        prod = _cb.GroupProducts(np.ascontiguousarray(dots), xsq, zsq, none if l1 is None else l1,
                                 none if sqd is None else sqd)
        _cb.values_from_products(prod, l1 is not None, sqd is not None, js, spec, xdiag, zdiag, S is Xq, out)
    return out


class WeightedKernelSum:
    """``sum_j w_j K_j(Xq_a, S_i)`` for blocks of queries against fixed stored rows (batch prediction).

    The stored rows' squared group norms ``ssq`` and self-kernel values ``sdiag`` (in the
    stored form, :func:`onlinemkl._core.kernels.stored_diag`) are the buffer's own (the numbers
    the per-example pass uses).
    Per block and group: one BLAS product, then one compiled pass that turns
    the dot products and distances into every kernel's weighted values.  Work arrays are allocated once and reused across
    blocks (fresh multi-megabyte arrays cost page faults on every block).
    """

    def __init__(self, S, ssq, sdiag, ck: CompiledKernels, w, block_rows: int):
        self.S, self.ck, self.w = S, ck, np.ascontiguousarray(w, dtype=np.float64)
        self.spec = ck.spec()
        # the stored rows' diagonals, (F, ns): contiguous per kernel; a normalised kernel's are
        # already the reciprocal roots its normalisation multiplies by (stored_diag)
        self.zinv = np.ascontiguousarray(np.asarray(sdiag).T)
        self.groups = []
        for g in range(ck.n_groups):
            js = np.nonzero(ck.kgroup == g)[0]
            cols = _group_columns(ck, g)
            self.groups.append((g, cols, js.astype(np.int64), np.ascontiguousarray(ssq[:, g]),
                                S[:, cols] if isinstance(cols, slice) else np.ascontiguousarray(S[:, cols])))
        ns = S.shape[0]
        self.acc = np.empty((block_rows, ns))
        self.xdiag = np.zeros((block_rows, ck.n_kernels))
        self.none = np.zeros((1, 1))  # stands for an absent l1 / sqd matrix

    @staticmethod
    def rows_per_block(ns: int, n_kernels: int, target_bytes: int = 1 << 25) -> int:
        """Query rows per block so that the block's work arrays (``(1 + F) x rows x ns`` floats) stay
        near ``target_bytes``: blocks large enough for BLAS to run its products at full speed,
        small enough to stay in memory."""
        return int(max(8, min(4096, target_bytes // max(1, 8 * ns * (1 + n_kernels)))))

    def __call__(self, Xq):
        b = Xq.shape[0]
        acc = self.acc[:b]
        acc[:] = 0.0
        ck = self.ck
        for g, cols, js, zsq, Sg in self.groups:
            Xg = np.ascontiguousarray(Xq[:, cols])
            dots = np.ascontiguousarray(Xg @ Sg.T)
            xsq = np.einsum("ij,ij->i", Xg, Xg)
            flags = int(ck.gl1[g])
            l1 = _l1_distances(Xg, Sg) if flags & _ck.GROUP_L1 else None
            sqd = _sq_distances(Xg, Sg) if flags & _ck.GROUP_SQDIST else None
            xdiag = self.xdiag[:b]
            _cb.stored_self_kernels(xsq, js, ck.codes, ck.params, xdiag)
            prod = _cb.GroupProducts(dots, xsq, zsq, self.none if l1 is None else l1,
                                     self.none if sqd is None else sqd)
            _cb.weighted_sum_prep(prod, l1 is not None, sqd is not None, js, self.spec, xdiag, self.zinv, self.w, acc)
        return acc
