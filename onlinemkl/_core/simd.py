"""The few hand-vectorised loops of the core, each beside its plain twin.

The rest of ``_core`` is plain Numba.  A loop lives here only where LLVM's own vectoriser
leaves an end-to-end gain of at least 15% on the table (docs/architecture.md; the A/B
is in ``benchmarks/results/ab_simd*.md``).  Each entry has

* an ``@intrinsic`` that takes the *owning* arrays plus byte offsets (Numba keeps every array
  alive for the call, so no alias without an owner is ever made), behind an ``njit`` wrapper
  that checks the layout and every bound before it hands over, and finishes what the vector
  code leaves (a remainder of rows) with the twin;
* a plain twin, the same computation as a loop: what ``NUMBA_DISABLE_JIT=1`` runs, what any
  layout the wrapper does not accept takes, and what the tests hold the intrinsic to.

Under ``NUMBA_DISABLE_JIT`` the public names are the twins themselves: an ``@intrinsic``
cannot run as Python.
"""

from __future__ import annotations

import numba
from numba import types
from numba.extending import intrinsic

from .._config import njit_contract

#: Rows per vector pass of :func:`dots_block`.
LANES = 8


@njit_contract
def dots_block_plain(x, S, i0, m, c0, c1, out):
    """``out[t] = x[c0:c1] . S[i0 + t, c0:c1]`` for ``t < m``: :func:`dots_block`'s plain twin.

    Eight rows at a time, columns inner: eight independent sums side by side (a group holds few
    columns, often 5-50, so a sum vectorised along the columns spends its time in the horizontal
    reduction and the remainder loop).
    """
    Sb = S[i0:i0 + m]
    xc_ = x[c0:c1]
    d = c1 - c0
    m8 = m - m % 8
    for t in range(0, m8, 8):
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        for c in range(d):
            xc = xc_[c]
            cc = c0 + c
            a0 += xc * Sb[t, cc]
            a1 += xc * Sb[t + 1, cc]
            a2 += xc * Sb[t + 2, cc]
            a3 += xc * Sb[t + 3, cc]
            a4 += xc * Sb[t + 4, cc]
            a5 += xc * Sb[t + 5, cc]
            a6 += xc * Sb[t + 6, cc]
            a7 += xc * Sb[t + 7, cc]
        out[t] = a0
        out[t + 1] = a1
        out[t + 2] = a2
        out[t + 3] = a3
        out[t + 4] = a4
        out[t + 5] = a5
        out[t + 6] = a6
        out[t + 7] = a7
    for t in range(m8, m):
        acc = 0.0
        for c in range(d):
            acc += xc_[c] * Sb[t, c0 + c]
        out[t] = acc


@intrinsic
def _dot8_rows(typingctx, x, x_off, S, s_off, s_row, m, n, out):
    """``out[t] = x . S_t`` for ``t < m - m % 8``, eight rows per pass; returns the rows done.

    ``x``'s ``n`` contiguous float64 start at byte ``x_off`` of ``x``'s data; row ``t`` of ``S``
    at byte ``s_off + t s_row`` (contiguous along the row); ``out[t]`` is ``out``'s ``t``-th
    (contiguous) entry.  The caller (:func:`dots_block`) has checked every bound.

    Each of the eight rows has its own ``<8 x double>`` accumulator fed by the same vector of
    ``x`` (multiply-adds, ``n // 8`` of them per row); the eight sets of lanes are then reduced
    together by shuffles (lanes ``k`` and ``k + 4``, then two apart, then neighbours), which
    leaves the eight dot products in one vector: 7 vector additions for eight rows instead of
    7 scalar ones per row, the reduction that LLVM's vectoriser does not find.  The last
    ``n % 8`` columns follow by multiply-adds of the eight rows side by side.
    """
    arrays = (x, S, out)
    if not all(isinstance(a, types.Array) and a.dtype == types.float64 for a in arrays):
        return None
    sig = types.intp(x, types.intp, S, types.intp, types.intp, types.intp, types.intp, out)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        xv, xo, sv, so, srow, mm, nn, ov = args
        xa = context.make_array(signature.args[0])(context, builder, xv)
        sa = context.make_array(signature.args[2])(context, builder, sv)
        oa = context.make_array(signature.args[7])(context, builder, ov)
        ity = nn.type
        i8p = ir.IntType(8).as_pointer()
        dbl = ir.DoubleType()
        vt = ir.VectorType(dbl, 8)
        i32 = ir.IntType(32)
        # fmuladd: a fused multiply-add where the machine has one, else a multiply and an add
        vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                              "llvm.fmuladd.v8f64")
        xp = builder.gep(builder.bitcast(xa.data, i8p), [xo])
        sp = builder.gep(builder.bitcast(sa.data, i8p), [so])
        op = builder.bitcast(oa.data, i8p)
        zero = ir.Constant(vt, [0.0] * 8)
        eight = ir.Constant(ity, 8)
        nv = builder.sdiv(nn, eight)
        nblocks = builder.sdiv(mm, eight)
        accs = [cgutils.alloca_once_value(builder, zero) for _ in range(8)]
        res = cgutils.alloca_once_value(builder, zero)

        def shuffle(a, b, lanes):
            return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(i32, 8), lanes))

        def pair(a, b, lo, hi):
            return builder.fadd(shuffle(a, b, lo), shuffle(a, b, hi))

        with cgutils.for_range(builder, nblocks) as blk:
            first = builder.mul(blk.index, eight)
            rows = [builder.gep(sp, [builder.mul(builder.add(first, ir.Constant(ity, r)), srow)]) for r in range(8)]
            for a in accs:
                builder.store(zero, a)
            with cgutils.for_range(builder, nv) as loop:
                off = builder.mul(loop.index, ir.Constant(ity, 64))
                xk = builder.load(builder.bitcast(builder.gep(xp, [off]), vt.as_pointer()), align=8)
                for r in range(8):
                    sk = builder.load(builder.bitcast(builder.gep(rows[r], [off]), vt.as_pointer()), align=8)
                    builder.store(builder.call(vfma, [xk, sk, builder.load(accs[r])]), accs[r])
            A = [builder.load(a) for a in accs]
            # lanes k and k+4 of each row: rows (2q, 2q+1) -> one vector [u_2q,0..3, u_2q+1,0..3]
            P = [pair(A[2 * q], A[2 * q + 1], [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])
                 for q in range(4)]
            # u_0 + u_2 and u_1 + u_3 of each row: [v_r0, v_r1] for four rows per vector
            Q = [pair(P[2 * h], P[2 * h + 1], [0, 1, 4, 5, 8, 9, 12, 13], [2, 3, 6, 7, 10, 11, 14, 15])
                 for h in range(2)]
            builder.store(pair(Q[0], Q[1], [0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 15]), res)
            start = builder.mul(nv, eight)
            with cgutils.for_range_slice(builder, start, nn, ir.Constant(ity, 1), inc=True) as (k, _):
                koff = builder.mul(k, eight)
                xe = builder.load(builder.bitcast(builder.gep(xp, [koff]), dbl.as_pointer()))
                xb = ir.Constant(vt, ir.Undefined)
                sg = ir.Constant(vt, ir.Undefined)
                for r in range(8):
                    lane = ir.Constant(i32, r)
                    xb = builder.insert_element(xb, xe, lane)
                    se = builder.load(builder.bitcast(builder.gep(rows[r], [koff]), dbl.as_pointer()))
                    sg = builder.insert_element(sg, se, lane)
                builder.store(builder.call(vfma, [xb, sg, builder.load(res)]), res)
            dst = builder.gep(op, [builder.mul(blk.index, ir.Constant(ity, 64))])
            builder.store(builder.load(res), builder.bitcast(dst, vt.as_pointer()), align=8)
        return builder.mul(nblocks, eight)

    return sig, codegen


@njit_contract
def _dots_block_vector(x, S, i0, m, c0, c1, out):
    """:func:`dots_block` compiled: :func:`_dot8_rows` where the layout allows, the twin for the rest."""
    done = 0
    if (x.strides[0] == 8 and S.strides[1] == 8 and out.strides[0] == 8 and 0 <= c0 and c0 <= c1
            and c1 <= x.shape[0] and c1 <= S.shape[1] and 0 <= i0 and 0 <= m and i0 + m <= S.shape[0]
            and m <= out.shape[0]):
        done = _dot8_rows(x, c0 * 8, S, i0 * S.strides[0] + c0 * 8, S.strides[0], m, c1 - c0, out)
    if done < m:
        dots_block_plain(x, S, i0 + done, m - done, c0, c1, out[done:])


#: ``dots_block(x, S, i0, m, c0, c1, out)``: ``out[t] = x[c0:c1] . S[i0 + t, c0:c1]`` for ``t < m``
#: (``x``, ``out`` 1-D, ``S`` 2-D float64).  Compiled: :func:`_dot8_rows`; as Python: the twin.
dots_block = dots_block_plain if numba.config.DISABLE_JIT else _dots_block_vector
