"""The records compiled code takes: NamedTuples of arrays instead of long argument lists.

A compiled function takes a few of these and a few scalars (docs/architecture.md), so
a signature says what a step reads and writes: the kernel specification, the stored rows, the
query, a learner's state.  They cost nothing at run time (Numba passes a tuple's members as it
would separate arguments) and are built once per model by the Python layer, or inside compiled
code from arrays it already holds.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class KernelSpec(NamedTuple):
    """The kernels as integer codes and parameter rows (built by ``CompiledKernels.spec()``).

    ``codes[F]`` kernel kinds, ``params[F, N_PARAMS]`` their parameters (normalisation flag and
    RBF ladder included), ``kgroup[F]`` each kernel's feature group, ``granges[R, 2]`` the
    groups' column ranges, ``gptr[G + 1]`` which ranges each group owns, ``gl1[G]`` the groups'
    flag bits (see :mod:`onlinemkl._core.kernels`).
    """

    codes: np.ndarray
    params: np.ndarray
    kgroup: np.ndarray
    granges: np.ndarray
    gptr: np.ndarray
    gl1: np.ndarray


class Rows(NamedTuple):
    """Stored rows and their caches: ``S[cap, d]``, the squared group norms ``ssq[cap, G]`` and
    the self-kernel values in the stored form, kernel by kernel, ``sdiag[F, cap]``
    (``kernels.stored_diag``; a contiguous row per kernel, which the kernel pass's
    normalisation reads a block at a time)."""

    S: np.ndarray
    ssq: np.ndarray
    sdiag: np.ndarray


class Query(NamedTuple):
    """One example against the buffer: its row ``x[d]``, squared group norms ``xsq[G]`` and
    self-kernel values ``xdiag[F]`` (``kernels.prepare_query`` fills the last two)."""

    x: np.ndarray
    xsq: np.ndarray
    xdiag: np.ndarray


class Work(NamedTuple):
    """Scratch of one blocked pass (``kernels.block_work``): a block's per-group dot products,
    squared and L1 distances (``G x ROW_BLOCK`` each), and float and integer work space."""

    dots: np.ndarray
    sqds: np.ndarray
    l1s: np.ndarray
    scratch: np.ndarray
    bits: np.ndarray


class LabelledRows(NamedTuple):
    """The OBSCURE support buffer: the stored rows and caches (as :class:`Rows`), each row's
    positive and negative output ``ypos[cap]``, ``yneg[cap]`` (-1: none), its raw coefficient
    ``coef[cap, 1]`` and its time stamp ``tstamp[cap]`` (see :mod:`onlinemkl._core.buffer`)."""

    S: np.ndarray
    ssq: np.ndarray
    sdiag: np.ndarray
    ypos: np.ndarray
    yneg: np.ndarray
    coef: np.ndarray
    tstamp: np.ndarray
