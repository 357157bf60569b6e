"""``_core/simd.py``: each intrinsic against its plain twin and against numpy.

The intrinsic and the twin sum in different orders (eight lanes and a tree, against a running
sum), so they agree within the bound of a reordered sum, ``(d + 2) eps sum_c |x_c s_c|``,
not bit for bit; numpy's ``@`` is held to the same bound.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from onlinemkl._core import kernels as ck
from onlinemkl._core import simd

EPS = np.finfo(float).eps


@numba.njit(cache=False)
def _vector_rows(x, S, i0, m, c0, c1, out):
    """The intrinsic alone (no twin for the remainder): how many rows it did."""
    return simd._dot8_rows(x, c0 * 8, S, i0 * S.strides[0] + c0 * 8, S.strides[0], m, c1 - c0, out)


def _data(n_rows, d, seed):
    rng = np.random.default_rng(seed)
    # mixed magnitudes, so that the order of the sum shows in the last bits
    S = rng.normal(size=(n_rows, d)) * np.exp(rng.normal(size=d) * 3)
    x = rng.normal(size=d)
    return x, S


def _check(got, x, S, i0, m, c0, c1):
    block = S[i0:i0 + m, c0:c1]
    exact = np.array([float(np.sum(np.longdouble(x[c0:c1]) * np.longdouble(r))) for r in block])
    bound = (c1 - c0 + 2) * EPS * (np.abs(block) @ np.abs(x[c0:c1]))
    assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / np.maximum(bound, 1e-300))
    assert np.all(np.abs(block @ x[c0:c1] - exact) <= bound)  # numpy, to the same bound


@pytest.mark.parametrize("d", list(range(1, 71)))
def test_eight_row_dots_match_twin_and_numpy_for_every_width(d):
    x, S = _data(203, d + 3, d)
    for i0, m, c0 in ((0, 203, 0), (5, 61, 3), (17, 8, 1), (200, 3, 2), (1, 0, 0)):
        c1 = c0 + d
        m = min(m, 203 - i0)
        got = np.full(m + 4, 7.0)
        simd.dots_block(x, S, i0, m, c0, c1, got)
        twin = np.full(m + 4, 7.0)
        simd.dots_block_plain(x, S, i0, m, c0, c1, twin)
        assert np.all(got[m:] == 7.0) and np.all(twin[m:] == 7.0)  # nothing past m written
        _check(got[:m], x, S, i0, m, c0, c1)
        _check(twin[:m], x, S, i0, m, c0, c1)
        bound = 2 * (d + 2) * EPS * (np.abs(S[i0:i0 + m, c0:c1]) @ np.abs(x[c0:c1]))
        assert np.all(np.abs(got[:m] - twin[:m]) <= bound)


@pytest.mark.parametrize("m", [0, 1, 7, 8, 9, 15, 16, 17, 31, 999, 1000])
def test_the_intrinsic_does_whole_groups_of_eight_and_writes_nothing_else(m):
    x, S = _data(1100, 40, m)
    for i0, c0, c1 in ((0, 0, 16), (3, 5, 21), (50, 2, 40), (1, 7, 8)):
        out = np.full(1010, 7.0)
        done = _vector_rows(x, S, i0, m, c0, c1, out)
        assert done == m - m % 8
        assert np.all(out[done:] == 7.0)
        _check(out[:done], x, S, i0, done, c0, c1)


def test_the_kernel_pass_over_several_blocks_matches_numpy():
    """``block_quantities``'s dots through the intrinsic, block after block (rows not a multiple
    of 8 or of the block), one column range starting past column 0."""
    from onlinemkl.kernel_arrays import CompiledKernels, resolve_group_columns
    from onlinemkl._core.state import Query, Rows
    from onlinemkl.kernels import Linear

    rng = np.random.default_rng(1)
    n, d = 2 * ck.ROW_BLOCK + 13, 23
    S = rng.normal(size=(n + 5, d))
    x = rng.normal(size=d)
    kernels = CompiledKernels([Linear(group=tuple(range(4, 21)))])
    kernels.set_columns(resolve_group_columns(kernels.groups, d))
    spec = kernels.spec()
    q = Query(x, np.empty(1), np.empty(1))
    ck.prepare_query(x, spec, q.xsq, q.xdiag)
    ssq = np.array([[r[4:21] @ r[4:21]] for r in S])
    out = np.zeros((1, n + 5))
    ck.kernel_row(q, Rows(S, ssq, np.ones((1, n + 5))), n, spec, out)
    _check(out[0, :n], x, S, 0, n, 4, 21)
    assert np.all(out[0, n:] == 0.0)


def test_layouts_the_intrinsic_does_not_take_go_to_the_twin():
    x, S = _data(120, 60, 2)
    for Sv, xv in ((S[:, ::2], x[::2]), (np.asfortranarray(S[:, :30]), x[:30])):
        got = np.zeros(100)
        simd.dots_block(np.ascontiguousarray(xv), Sv, 4, 100, 1, 29, got)
        _check(got, np.ascontiguousarray(xv), np.ascontiguousarray(Sv), 4, 100, 1, 29)
    strided_out = np.zeros((50, 2))[:, 1]
    simd.dots_block(x, S, 0, 50, 0, 60, strided_out)
    _check(strided_out, x, S, 0, 50, 0, 60)
