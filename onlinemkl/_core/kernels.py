"""Kernel rows: the hot loop (first stage of the pipeline).

Every function here works from the same per-row quantities of one *feature
group*: the dot product ``x . s``, the squared Euclidean distance
``||x - s||^2`` and, only for groups that carry a Laplacian kernel, the L1
distance.  All kernels on a group are then evaluated from those numbers, so the
buffer is read once per example whatever the number of kernels
(DESIGN.md, performance model).

Every dot product (and squared group norm) is summed in one fixed order,
eight lanes of fused multiply-adds (:func:`lane_dot`, :func:`row_dot`), as
explicit LLVM vector code, so the per-row, blocked and parallel passes agree
bit for bit while the columns run eight at a time.

The squared distance comes from the cached squared norms,
``|x|^2 + |s|^2 - 2 x.s`` clipped at 0, except on groups that carry a
B1-spline kernel: there it is summed directly, ``sum_c (x_c - s_c)^2``, in the
same pass.  The expansion's rounding error (~1e-16 of the norms) is harmless
inside ``exp(-gamma d2)`` but the B1-spline takes its square root, which turns
it into an error of ~1e-8 at (near-)duplicate points; the direct sum is exact
to rounding of the distance itself.

Kernel specification arrays (built by :mod:`onlinemkl.kernels`):

``codes[F]``      kernel kind (``LINEAR`` ... ``BSPLINE``)
``params[F, 8]``  kind parameters (see :func:`kernel_value`); in column 3, 1.0 for
                  unit-diagonal normalisation; columns 4-7 the RBF ladder (``P_LADDER_*``)
``kgroup[F]``     the feature group of each kernel
``granges[R, 2]`` column ranges ``[start, stop)`` of all groups, concatenated
``gptr[G + 1]``   group ``g`` owns ``granges[gptr[g]:gptr[g + 1]]``
``gl1[G]``        per-group flags (bits): ``GROUP_L1`` where the group needs the
                  L1 distance (a Laplacian kernel), ``GROUP_SQDIST`` where its
                  squared distance is summed directly (a B1-spline kernel),
                  ``GROUP_DOT`` where a kernel reads the dot product (linear,
                  polynomial; a ``GROUP_SQDIST`` group without it skips the dots)
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from .._config import njit, njit_inline, njit_parallel

LINEAR = 0
POLYNOMIAL = 1
RBF = 2
LAPLACIAN = 3
BSPLINE = 4

#: Constants of :func:`exp_neg` (Cody-Waite reduction by ln 2, then a degree-13 Taylor polynomial).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2^52: adding and subtracting it rounds to the nearest integer
#: Below this exponent :func:`exp_neg` returns 0 (``exp(-708) = 3.3e-308``).
EXP_FLOOR = -708.0

#: Columns of a kernel's parameter row ``params[j]``: three kind-specific parameters
#: (:func:`kernel_value`), the normalisation flag, then the ladder (see :func:`ladder_value`).
P_NORMALIZE = 3
P_LADDER_K = 4  # k >= 2: K_j = K_base^k; 0: computed directly
P_LADDER_BASE = 5  # the base kernel's index (< j, on the same group, itself direct)
P_LADDER_GAMMA = 6  # the base kernel's gamma (the per-row path evaluates the base itself)
P_LADDER_LO = 7  # base values below exp(EXP_FLOOR / k) give 0 (no subnormal numbers on the way)
N_PARAMS = 8
#: The ladder exponents: each has its own compiled chain (:func:`_ladder8`).  k = 100 costs 6
#: squarings and 2 products, 0.27 vs ~0.75 ns a value for an exponential.
LADDER_KS = tuple(range(2, 17)) + (20, 25, 32, 50, 64, 100, 128)

#: Bits of the per-group flags ``gl1[g]``.
GROUP_L1 = 1
GROUP_SQDIST = 2
GROUP_DOT = 4


@intrinsic
def _int64_bits_as_float64(typingctx, bits):
    """Reinterpret an int64's bits as a float64 (an LLVM ``bitcast``: free, and it vectorises)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding (LLVM's ``llvm.fma``: one instruction on any x86-64 with FMA3, vectorised).

    Exact IEEE fused multiply-add, so the result is the same on every machine that has the
    instruction (and on one without it, where LLVM calls libm's ``fma``).  Numba contracts
    nothing by itself without ``fastmath``; this is an explicit, deterministic choice.
    """
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@njit
def exp_neg(x):
    """``exp(x)`` for ``x <= 0``, within 1 ulp, in straight-line arithmetic that LLVM vectorises.

    The RBF and Laplacian kernels spend most of a kernel row in ``exp``; libm's
    scalar ``exp`` is a call per element that no loop vectorises (Numba's
    SVML path is off without an SVML-patched LLVM), while this polynomial
    runs 8 lanes at a time in the blocked loops (~4x faster per element than
    libm's exp in the same loop on the build machine, no ``fastmath``).  ``x = k ln2 + r`` with
    ``|r| <= ln2 / 2`` (Cody-Waite, two-part ln 2), ``exp(r)`` by its Taylor
    polynomial of degree 13 (truncation < 1e-17 relative), times ``2^k`` built
    from its exponent bits.  The polynomial runs as a Horner chain of fused multiply-adds
    (:func:`fma`: half the instructions and half the dependency chain of separate
    multiplies and adds, ~1.6x faster per element, and at most 1 ulp from libm over
    ``[-708, 0]``, 0.08 ulp on average).  Arguments above 0 are treated as 0 (kernels never pass one);
    below :data:`EXP_FLOOR` the result is 0 instead of a subnormal number
    (absolute error < 3.3e-308).  Every compiled kernel evaluation (per row,
    blocked, parallel, and the precomputed matrices of ``fit``) uses it, so
    those paths agree bit for bit (the BLAS prediction path,
    ``WeightedKernelSum``, uses it too; its sums run in another order).
    """
    x0 = x if x < 0.0 else 0.0
    xc = x0 if x0 > EXP_FLOOR else EXP_FLOOR
    kf = (xc * _LOG2E + _ROUND) - _ROUND
    r = (xc - kf * _LN2_HI) - kf * _LN2_LO
    q = 1.0 / 6227020800.0
    q = fma(q, r, 1.0 / 479001600.0)
    q = fma(q, r, 1.0 / 39916800.0)
    q = fma(q, r, 1.0 / 3628800.0)
    q = fma(q, r, 1.0 / 362880.0)
    q = fma(q, r, 1.0 / 40320.0)
    q = fma(q, r, 1.0 / 5040.0)
    q = fma(q, r, 1.0 / 720.0)
    q = fma(q, r, 1.0 / 120.0)
    q = fma(q, r, 1.0 / 24.0)
    q = fma(q, r, 1.0 / 6.0)
    q = fma(q, r, 0.5)
    q = fma(q, r, 1.0)
    q = fma(q, r, 1.0)
    v = q * _int64_bits_as_float64((np.int64(kf) + 1023) << 52)  # 2^k, k in [-1022, 0]
    return v if x0 >= EXP_FLOOR else 0.0


def _all_f64_arrays(*tys):
    """Typing guard of the vector intrinsics below: every argument a float64 array."""
    return all(isinstance(t, types.Array) and t.dtype == types.float64 for t in tys)


def _byte_pointer(context, builder, aty, aval, off):
    """An ``i8*`` to byte ``off`` of the data of array ``aval`` (Numba type ``aty``)."""
    from llvmlite import ir

    arr = context.make_array(aty)(context, builder, aval)
    return builder.gep(builder.bitcast(arr.data, ir.IntType(8).as_pointer()), [off])


@intrinsic
def _borrowed(typingctx, a):
    """``a`` itself (same data, shape, strides and type), as an alias that owns no reference.

    Numba takes a reference on every array argument when a function starts and drops it when
    the function returns: an atomic increment and decrement each (``NRT_incref``/``NRT_decref``),
    and on x86 every atomic is a locked instruction that first waits for all pending stores of
    the loop before it.  A block loop calling a few functions per block of rows with a dozen
    arrays between them paid ~20% of the fused score pass at 10^4 x 16 for it (``perf``).  The
    alias made here has a null ``meminfo`` (as ``numba.carray`` views have), so every reference
    count on it, in the function that made it and in all it calls, is a null check.  Only for
    arrays that outlive every use of the alias: a function's own arguments, or scratch arrays
    that are used again after the loop the alias is used in.  Never returned or stored.
    """
    if not isinstance(a, types.Array):
        return None
    sig = a(a)

    def codegen(context, builder, signature, args):
        from numba.core import cgutils

        arr = context.make_array(signature.args[0])(context, builder, args[0])
        out = context.make_array(signature.return_type)(context, builder)
        ndim = signature.args[0].ndim
        context.populate_array(out, data=arr.data, shape=cgutils.unpack_tuple(builder, arr.shape, ndim),
                               strides=cgutils.unpack_tuple(builder, arr.strides, ndim),
                               itemsize=arr.itemsize, meminfo=None)
        return out._getvalue()

    return sig, codegen


@intrinsic
def _row(typingctx, a, i):
    """Row ``i`` of a 2-D array as a 1-D view that owns no reference (a null ``meminfo``).

    Numba's own ``a[i]`` takes a reference on the parent's memory (an atomic increment) and
    drops it after its last use (an atomic decrement); on x86 each is a locked instruction,
    which also waits for every pending store of the loop before it to reach the cache.  The
    hot block loops build a few such views per kernel and block: measured with ``perf`` at
    10^4 x 16, 5 kernels, ~20% of the fused score pass ran in ``NRT_incref``/``NRT_decref``.
    A view from here is a plain (pointer, shape, stride) record, as ``numba.carray`` makes,
    and every reference count on it is a null check.  It must not outlive ``a`` or leave
    compiled code (the callers use it as an argument of a call within ``a``'s lifetime).
    """
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(i, types.Integer)):
        return None
    rty = types.Array(a.dtype, 1, "C" if a.layout == "C" else "A", readonly=not a.mutable)
    sig = rty(a, i)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        av, iv = args
        arr = context.make_array(signature.args[0])(context, builder, av)
        shape = cgutils.unpack_tuple(builder, arr.shape, 2)
        strides = cgutils.unpack_tuple(builder, arr.strides, 2)
        idx = context.cast(builder, iv, signature.args[1], types.intp)
        i8p = ir.IntType(8).as_pointer()
        data = builder.gep(builder.bitcast(arr.data, i8p), [builder.mul(idx, strides[0])])
        out = context.make_array(signature.return_type)(context, builder)
        context.populate_array(out, data=builder.bitcast(data, arr.data.type), shape=[shape[1]],
                               strides=[strides[1]], itemsize=arr.itemsize, meminfo=None)
        return out._getvalue()

    return sig, codegen


#: Lanes of the dot products' fixed summation order (see :func:`lane_dot`).
DOT_LANES = 8


@intrinsic
def _dot8(typingctx, a, a_off, a_step, b, b_off, b_step, n):
    """``sum_k a_k b_k`` over ``n`` float64, ``a_k`` at byte ``a_off + k a_step`` of ``a``'s data (``b``
    likewise), in the order of :func:`_dot_lanes_ref`, as explicit ``<8 x double>`` LLVM vectors.

    Element ``k < n - n % 8`` goes to lane ``k % 8`` by a fused multiply-add; the lanes are
    then added as ``((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`` and the last
    ``n % 8`` products follow one by one, by fused multiply-adds.  Unit strides load whole
    vectors; other strides assemble the same vectors element by element, so the result
    does not depend on the layout.  Every operation is IEEE with one rounding and LLVM
    reorders none of them (no fast-math flags): the result equals the scalar reference
    bit for bit on any machine.
    """
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)
            and a.dtype == types.float64 and b.dtype == types.float64):
        return None
    sig = types.float64(a, types.intp, types.intp, b, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        av, ao, astep, bv, bo, bstep, nn = args
        aa = context.make_array(signature.args[0])(context, builder, av)
        ba = context.make_array(signature.args[3])(context, builder, bv)
        i8p = ir.IntType(8).as_pointer()
        dbl = ir.DoubleType()
        vt = ir.VectorType(dbl, 8)
        ap = builder.gep(builder.bitcast(aa.data, i8p), [ao])
        bp = builder.gep(builder.bitcast(ba.data, i8p), [bo])
        vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        sfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(dbl, [dbl, dbl, dbl]), "llvm.fma.f64")
        eight = ir.Constant(nn.type, 8)
        nv = builder.sdiv(nn, eight)
        acc_ptr = cgutils.alloca_once_value(builder, ir.Constant(vt, [0.0] * 8))

        def element(base, step, k):
            return builder.load(builder.bitcast(builder.gep(base, [builder.mul(k, step)]), dbl.as_pointer()))

        def gathered(base, step, k0):
            v = ir.Constant(vt, ir.Undefined)
            for lane in range(8):
                e = element(base, step, builder.add(k0, ir.Constant(nn.type, lane)))
                v = builder.insert_element(v, e, ir.Constant(ir.IntType(32), lane))
            return v

        def contiguous_loop():
            with cgutils.for_range(builder, nv) as loop:
                off = builder.mul(loop.index, ir.Constant(nn.type, 64))
                va = builder.load(builder.bitcast(builder.gep(ap, [off]), vt.as_pointer()), align=8)
                vb = builder.load(builder.bitcast(builder.gep(bp, [off]), vt.as_pointer()), align=8)
                builder.store(builder.call(vfma, [va, vb, builder.load(acc_ptr)]), acc_ptr)

        if signature.args[0].layout == "C" and signature.args[3].layout == "C":
            # C-contiguous types: the last axis has unit stride, known at compile time
            astep = bstep = eight
            contiguous_loop()
        else:
            contiguous = builder.and_(builder.icmp_signed("==", astep, eight), builder.icmp_signed("==", bstep, eight))
            with builder.if_else(contiguous) as (then, otherwise):
                with then:
                    contiguous_loop()
                with otherwise:
                    with cgutils.for_range(builder, nv) as loop:
                        k0 = builder.mul(loop.index, eight)
                        va = gathered(ap, astep, k0)
                        vb = gathered(bp, bstep, k0)
                        builder.store(builder.call(vfma, [va, vb, builder.load(acc_ptr)]), acc_ptr)
        acc = builder.load(acc_ptr)
        lane = [builder.extract_element(acc, ir.Constant(ir.IntType(32), k)) for k in range(8)]
        t = builder.fadd(builder.fadd(builder.fadd(lane[0], lane[4]), builder.fadd(lane[2], lane[6])),
                         builder.fadd(builder.fadd(lane[1], lane[5]), builder.fadd(lane[3], lane[7])))
        t_ptr = cgutils.alloca_once_value(builder, t)
        start = builder.mul(nv, eight)
        with cgutils.for_range_slice(builder, start, nn, ir.Constant(nn.type, 1), inc=True) as (k, _):
            builder.store(builder.call(sfma, [element(ap, astep, k), element(bp, bstep, k), builder.load(t_ptr)]),
                          t_ptr)
        return builder.load(t_ptr)

    return sig, codegen


#: Shape of :func:`_dot8_grid`'s block of dot products: up to this many rows of ``a`` ...
GRID_A = 2
#: ... against up to this many rows of ``b``, all in one pass (8 independent vector accumulators).
GRID_B = 4


@intrinsic
def _dot8_grid(typingctx, a, a_off, a_row, na, b, b_off, b_row, nb, n):
    """Up to ``GRID_A x GRID_B`` dot products in one pass, each in :func:`_dot8`'s order, bit for bit.

    Entry ``GRID_B r + c`` of the returned tuple is the dot product of the ``n`` contiguous
    float64 at byte ``a_off + r a_row`` of ``a`` and those at byte ``b_off + c b_row`` of ``b``,
    for ``r < na <= GRID_A`` and ``c < nb <= GRID_B``; entries outside are 0.  The caller
    guarantees unit strides along the ``n`` elements.  One loop loads each vector of ``a``'s and
    ``b``'s rows once and feeds eight independent accumulators: a single dot product is a chain
    of fused multiply-adds, each waiting on the last (4 cycles apiece), while eight chains keep
    both FMA units busy.  Each accumulator is :func:`_dot8`'s lanes, reduced by the same tree,
    with the same tail, so every entry equals :func:`_dot8` on the same rows exactly.
    """
    if not _all_f64_arrays(a, b):
        return None
    ret = types.UniTuple(types.float64, GRID_A * GRID_B)
    sig = ret(a, types.intp, types.intp, types.intp, b, types.intp, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        av, ao, arow, na_, bv, bo, brow, nb_, nn = args
        dbl = ir.DoubleType()
        vt = ir.VectorType(dbl, 8)
        ity = nn.type
        vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        sfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(dbl, [dbl, dbl, dbl]), "llvm.fma.f64")

        def rows(base, step, count, k):
            # row pointers; rows past ``count`` alias row 0 (computed, then discarded)
            out = []
            for r in range(k):
                valid = builder.icmp_signed("<", ir.Constant(ity, r), count)
                roff = builder.select(valid, builder.mul(ir.Constant(ity, r), step), ir.Constant(ity, 0))
                out.append((builder.gep(base, [roff]), valid))
            return out

        ar = rows(_byte_pointer(context, builder, signature.args[0], av, ao), arow, na_, GRID_A)
        br = rows(_byte_pointer(context, builder, signature.args[4], bv, bo), brow, nb_, GRID_B)
        accs = [[cgutils.alloca_once_value(builder, ir.Constant(vt, [0.0] * 8)) for _ in br] for _ in ar]
        nv = builder.sdiv(nn, ir.Constant(ity, 8))
        with cgutils.for_range(builder, nv) as loop:
            off = builder.mul(loop.index, ir.Constant(ity, 64))
            va = [builder.load(builder.bitcast(builder.gep(p, [off]), vt.as_pointer()), align=8) for p, _ in ar]
            vb = [builder.load(builder.bitcast(builder.gep(p, [off]), vt.as_pointer()), align=8) for p, _ in br]
            for r in range(GRID_A):
                for c in range(GRID_B):
                    builder.store(builder.call(vfma, [va[r], vb[c], builder.load(accs[r][c])]), accs[r][c])

        def element(p, k):
            return builder.load(builder.bitcast(builder.gep(p, [builder.mul(k, ir.Constant(ity, 8))]),
                                                dbl.as_pointer()))

        sums = []
        for r in range(GRID_A):
            row = []
            for c in range(GRID_B):
                acc = builder.load(accs[r][c])
                lane = [builder.extract_element(acc, ir.Constant(ir.IntType(32), k)) for k in range(8)]
                t = builder.fadd(builder.fadd(builder.fadd(lane[0], lane[4]), builder.fadd(lane[2], lane[6])),
                                 builder.fadd(builder.fadd(lane[1], lane[5]), builder.fadd(lane[3], lane[7])))
                row.append(cgutils.alloca_once_value(builder, t))
            sums.append(row)
        start = builder.mul(nv, ir.Constant(ity, 8))
        with cgutils.for_range_slice(builder, start, nn, ir.Constant(ity, 1), inc=True) as (k, _):
            ea = [element(p, k) for p, _ in ar]
            eb = [element(p, k) for p, _ in br]
            for r in range(GRID_A):
                for c in range(GRID_B):
                    builder.store(builder.call(sfma, [ea[r], eb[c], builder.load(sums[r][c])]), sums[r][c])
        vals = []
        for r in range(GRID_A):
            for c in range(GRID_B):
                valid = builder.and_(ar[r][1], br[c][1])
                vals.append(builder.select(valid, builder.load(sums[r][c]), ir.Constant(dbl, 0.0)))
        return context.make_tuple(builder, signature.return_type, vals)

    return sig, codegen


#: Kernels per pass of :func:`_signed_grid` (by ``GRID_B`` outputs: up to 20 accumulators).
SIGNED_A = 5


@intrinsic
def _signed_grid(typingctx, kv, k_off, k_row, nk, coef, ypos, yneg, i0, c0, nc, m):
    """:func:`accumulate_block`'s dense sums, the signed coefficients made in registers.

    Entry ``GRID_B a + c`` of the returned tuple is the dot product of kernel row ``a`` (``m``
    contiguous float64 at byte ``k_off + a k_row`` of ``kv``, ``a < nk <= SIGNED_A``) with the
    weights of output ``c0 + c`` (``c < GRID_B``), ``w_c(t) = coef[i0 + t, 0] * (int(ypos[i0 + t]
    == c0 + c) - int(yneg[i0 + t] == c0 + c))``: exactly ``+-coef`` or a zero, computed as that
    scalar formula (an integer difference, converted, times the coefficient).  Entries of
    kernels past ``nk`` are 0, and with ``nc = 1`` (one output) so are those of the other
    outputs; with ``nc > 1`` all ``GRID_B`` outputs are computed (those past the model's are 0).  Each entry is :func:`_dot8` of the weights with the kernel row,
    bit for bit (the same lanes, tree and tail).  The weights are made eight rows per vector
    and feed ``nk x GRID_B`` independent accumulators in one pass over the block.  This
    replaced a pass writing the weights to scratch plus one ``_dot8_grid`` pass per two
    kernels reading them back: at 10^4 x 16, 5 kernels, 3 outputs, 0.9 -> 0.5 ns a row.  One
    loop per kernel count (a ``switch`` on ``nk``) and one for a single output, so binary
    models do a quarter of the work (a loop per output count too cost 4.6 s more compilation
    on a first call for 0.1 ns a row at 3 outputs).  The caller
    guarantees contiguous ``coef[:, 0]``, ``ypos``, ``yneg`` and kernel rows.
    """
    if not (_all_f64_arrays(kv, coef) and isinstance(ypos, types.Array) and isinstance(yneg, types.Array)
            and ypos.dtype == types.int64 and yneg.dtype == types.int64):
        return None
    ret = types.UniTuple(types.float64, SIGNED_A * GRID_B)
    sig = ret(kv, types.intp, types.intp, types.intp, coef, ypos, yneg, types.intp, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        kvv, ko, krow, nk_, cv, pv, nv_, i0v, c0v, nc_, mm = args
        ity = mm.type
        dbl = ir.DoubleType()
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        vt = ir.VectorType(dbl, 8)
        it = ir.VectorType(i64, 8)
        vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        sfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(dbl, [dbl, dbl, dbl]), "llvm.fma.f64")
        kp = _byte_pointer(context, builder, signature.args[0], kvv, ko)
        cp, pp, np_ = (builder.bitcast(context.make_array(signature.args[k])(context, builder, v).data, t.as_pointer())
                       for k, v, t in ((4, cv, dbl), (5, pv, i64), (6, nv_, i64)))
        eight = ir.Constant(ity, 8)
        nv = builder.sdiv(mm, eight)
        start = builder.mul(nv, eight)
        cs = [builder.add(c0v, ir.Constant(ity, c)) for c in range(GRID_B)]
        csv = []
        for c in range(GRID_B):
            v = ir.Constant(it, ir.Undefined)
            for lane in range(8):
                v = builder.insert_element(v, cs[c], ir.Constant(i32, lane))
            csv.append(v)
        krows = [builder.gep(kp, [builder.mul(ir.Constant(ity, a), krow)]) for a in range(SIGNED_A)]
        result = cgutils.alloca_once_value(builder, ir.Constant(ir.ArrayType(dbl, SIGNED_A * GRID_B),
                                                                [0.0] * (SIGNED_A * GRID_B)))

        def weights(t, lanes, nc):
            i = builder.add(i0v, t)
            ft, xt = (vt, it) if lanes == 8 else (dbl, i64)

            def load(p, elem_t):
                q = builder.gep(p, [i])
                return builder.load(builder.bitcast(q, xt.as_pointer() if elem_t is i64 else ft.as_pointer()),
                                    align=8)

            w, yp, yn = load(cp, dbl), load(pp, i64), load(np_, i64)
            out = []
            for c in range(nc):
                cc = csv[c] if lanes == 8 else cs[c]
                sgn = builder.sub(builder.zext(builder.icmp_signed("==", yp, cc), xt),
                                  builder.zext(builder.icmp_signed("==", yn, cc), xt))
                out.append(builder.fmul(w, builder.sitofp(sgn, ft)))
            return out

        def emit(na, nc):
            accs = [[cgutils.alloca_once_value(builder, ir.Constant(vt, [0.0] * 8)) for _ in range(nc)]
                    for _ in range(na)]
            with cgutils.for_range(builder, nv) as loop:
                t = builder.mul(loop.index, eight)
                ws = weights(t, 8, nc)
                off = builder.mul(loop.index, ir.Constant(ity, 64))
                for a in range(na):
                    va = builder.load(builder.bitcast(builder.gep(krows[a], [off]), vt.as_pointer()), align=8)
                    for c in range(nc):
                        builder.store(builder.call(vfma, [va, ws[c], builder.load(accs[a][c])]), accs[a][c])
            sums = []
            for a in range(na):
                row = []
                for c in range(nc):
                    acc = builder.load(accs[a][c])
                    lane = [builder.extract_element(acc, ir.Constant(i32, k)) for k in range(8)]
                    s = builder.fadd(builder.fadd(builder.fadd(lane[0], lane[4]), builder.fadd(lane[2], lane[6])),
                                     builder.fadd(builder.fadd(lane[1], lane[5]), builder.fadd(lane[3], lane[7])))
                    row.append(cgutils.alloca_once_value(builder, s))
                sums.append(row)
            with cgutils.for_range_slice(builder, start, mm, ir.Constant(ity, 1), inc=True) as (t, _):
                ws = weights(t, 1, nc)
                for a in range(na):
                    e = builder.load(builder.bitcast(builder.gep(krows[a], [builder.mul(t, eight)]), dbl.as_pointer()))
                    for c in range(nc):
                        builder.store(builder.call(sfma, [e, ws[c], builder.load(sums[a][c])]), sums[a][c])
            arr = builder.load(result)
            for a in range(na):
                for c in range(nc):
                    arr = builder.insert_value(arr, builder.load(sums[a][c]), GRID_B * a + c)
            builder.store(arr, result)

        done = builder.append_basic_block("signed.done")
        one = builder.icmp_signed("==", nc_, ir.Constant(nc_.type, 1))
        sw = builder.switch(nk_, done)
        for na in range(1, SIGNED_A + 1):
            case = builder.append_basic_block(f"signed.k{na}")
            sw.add_case(ir.Constant(nk_.type, na), case)
            builder.position_at_end(case)
            with builder.if_else(one) as (single, several):
                with single:  # one output (binary models): a quarter of the work
                    emit(na, 1)
                with several:
                    emit(na, GRID_B)
            builder.branch(done)
        builder.position_at_end(done)
        arr = builder.load(result)
        vals = [builder.extract_value(arr, k) for k in range(SIGNED_A * GRID_B)]
        return context.make_tuple(builder, signature.return_type, vals)

    return sig, codegen


@intrinsic
def _dot8_rows(typingctx, x, x_off, S, s_off, s_row, m, n, out, o_off, nrm, n_off, n_row, xg, sq, q_off):
    """``out[t] = 0.0 + x . S_t`` for ``t < m - m % 8``, eight rows at a time, each in :func:`_dot8`'s order.

    With the dot products, the squared distances as :func:`block_quantities` defines them:
    ``sq[t] = max(0, (xg + nrm_t) - 2 out[t])`` (0 also for NaN), with ``nrm_t`` at byte
    ``n_off + t n_row`` of ``nrm`` (the stored squared norms) and ``sq[t]`` at byte ``q_off +
    8 t``; in Numba that loop did not vectorise (LLVM could not rule out overlaps).

    ``x``'s ``n`` contiguous float64 start at byte ``x_off``; row ``t`` of ``S`` at byte ``s_off +
    t s_row`` (contiguous along the row); ``out[t]`` is written at byte ``o_off + 8 t`` of ``out``.
    Returns the number of rows done (the caller finishes the last ``m % 8`` with :func:`row_dot`).
    Each of the eight rows has its own ``<8 x double>`` accumulator fed by the same vector of
    ``x``; the eight sets of lanes are then reduced together, by shuffles that pair exactly the
    lanes :func:`_dot8`'s tree pairs (``l_k + l_{k+4}``, then ``+`` two apart, then neighbours),
    which leaves the eight dot products in one vector: 7 vector additions for eight rows instead
    of 7 scalar ones per row.  The tail elements follow by fused multiply-adds in order, and
    ``0.0 +`` (as :func:`group_row_dot`'s sum) turns a ``-0.0`` into ``0.0``.  Every entry
    equals :func:`row_dot` on its row, bit for bit.
    """
    if not _all_f64_arrays(x, S, out, nrm, sq):
        return None
    sig = types.intp(x, types.intp, S, types.intp, types.intp, types.intp, types.intp, out, types.intp,
                     nrm, types.intp, types.intp, types.float64, sq, types.intp)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        xv, xo, sv, so, srow, mm, nn, ov, oo, nv_, no, nrow, xg, qv, qo = args
        ity = nn.type
        dbl = ir.DoubleType()
        vt = ir.VectorType(dbl, 8)
        i32 = ir.IntType(32)
        vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        xp, sp, op, npb, qpb = (_byte_pointer(context, builder, signature.args[k], v, o)
                                for k, v, o in ((0, xv, xo), (2, sv, so), (7, ov, oo), (9, nv_, no), (13, qv, qo)))
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

        # row and norm offsets of the eight rows of a block (loop invariants, computed once)
        srow8 = builder.mul(srow, eight)
        nrow8 = builder.mul(nrow, eight)
        roff = [builder.mul(ir.Constant(ity, r), srow) for r in range(8)]
        noff = [builder.mul(ir.Constant(ity, r), nrow) for r in range(8)]
        xgv = ir.Constant(vt, ir.Undefined)
        for r in range(8):
            xgv = builder.insert_element(xgv, xg, ir.Constant(i32, r))

        def emit(nvc, packed=False):
            # a short row: x's vectors loaded once for all blocks (x is never written here; LLVM
            # cannot tell, and would reload them after every store)
            xks = [] if nvc is None else [
                builder.load(builder.bitcast(builder.gep(xp, [ir.Constant(ity, 64 * kk)]), vt.as_pointer()), align=8)
                for kk in range(nvc)]
            with cgutils.for_range(builder, nblocks) as blk:
                if packed:  # the eight rows are 8 * nvc consecutive vectors: constant offsets
                    base = builder.gep(sp, [builder.mul(blk.index, ir.Constant(ity, 512 * nvc))])
                    rows = [builder.gep(base, [ir.Constant(ity, 64 * nvc * r)]) for r in range(8)]
                else:
                    base = builder.gep(sp, [builder.mul(blk.index, srow8)])
                    rows = [builder.gep(base, [roff[r]]) for r in range(8)]
                if nvc is None:
                    for a in accs:
                        builder.store(zero, a)
                    with cgutils.for_range(builder, nv) as loop:
                        off = builder.mul(loop.index, ir.Constant(ity, 64))
                        xk = builder.load(builder.bitcast(builder.gep(xp, [off]), vt.as_pointer()), align=8)
                        for r in range(8):
                            sk = builder.load(builder.bitcast(builder.gep(rows[r], [off]), vt.as_pointer()),
                                              align=8)
                            builder.store(builder.call(vfma, [xk, sk, builder.load(accs[r])]), accs[r])
                    A = [builder.load(a) for a in accs]
                else:  # a short row: the vectors of the row unrolled (a loop of 1-4 turns costs ~30%)
                    A = [zero] * 8
                    for kk in range(nvc):
                        off = ir.Constant(ity, 64 * kk)
                        xk = xks[kk]
                        for r in range(8):
                            sk = builder.load(builder.bitcast(builder.gep(rows[r], [off]), vt.as_pointer()),
                                              align=8)
                            A[r] = builder.call(vfma, [xk, sk, A[r]])
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
                dv = builder.fadd(zero, builder.load(res))
                builder.store(dv, builder.bitcast(dst, vt.as_pointer()), align=8)
                # squared distances: (xg + nrm_t) - 2 dot_t, negatives (rounding) and NaN -> 0
                if packed:  # contiguous norms (one group): one vector load
                    nv8 = builder.load(builder.bitcast(builder.gep(npb, [builder.mul(blk.index, ir.Constant(ity, 64))]),
                                                       vt.as_pointer()), align=8)
                else:
                    nv8 = ir.Constant(vt, ir.Undefined)
                    nbase = builder.gep(npb, [builder.mul(blk.index, nrow8)])
                    for r in range(8):
                        e = builder.load(builder.bitcast(builder.gep(nbase, [noff[r]]), dbl.as_pointer()))
                        nv8 = builder.insert_element(nv8, e, ir.Constant(i32, r))
                d2 = builder.fsub(builder.fadd(xgv, nv8), builder.fmul(ir.Constant(vt, [2.0] * 8), dv))
                d2 = builder.select(builder.fcmp_ordered(">", d2, zero), d2, zero)
                qdst = builder.gep(qpb, [builder.mul(blk.index, ir.Constant(ity, 64))])
                builder.store(d2, builder.bitcast(qdst, vt.as_pointer()), align=8)

        done = builder.append_basic_block("rows.done")
        generic = builder.append_basic_block("rows.generic")
        sw = builder.switch(nv, generic)
        for nvc in (1, 2, 3, 4):
            case = builder.append_basic_block(f"rows.nv{nvc}")
            sw.add_case(ir.Constant(ity, nvc), case)
            builder.position_at_end(case)
            # the common layout (one group of all the columns): rows back to back, norms contiguous
            packed = builder.and_(builder.icmp_signed("==", srow, ir.Constant(ity, 64 * nvc)),
                                  builder.icmp_signed("==", nrow, eight))
            with builder.if_else(packed) as (then, otherwise):
                with then:
                    emit(nvc, True)
                with otherwise:
                    emit(nvc)
            builder.branch(done)
        builder.position_at_end(generic)
        emit(None)
        builder.branch(done)
        builder.position_at_end(done)
        return builder.mul(nblocks, eight)

    return sig, codegen


@intrinsic
def _gather8(typingctx, dst, d_off, src, s_off, s_step, m, multiply):
    """``dst[t] = src[t]`` (or ``dst[t] * src[t]`` when ``multiply``) for ``t < m - m % 8``, where ``src[t]``
    is the float64 at byte ``s_off + t s_step`` of ``src`` (a strided column) and ``dst[t]`` the one at
    byte ``d_off + 8 t`` of ``dst``; returns the number done.  Eight elements per vector, assembled
    from scalar loads: LLVM did not vectorise these loops in Numba (strided reads beside writes it
    could not prove apart); with this, the proximal accumulation went 5.2 -> 2.6 ns a row.  A copy
    or one IEEE product each: the same numbers as the scalar loop.
    """
    if not _all_f64_arrays(dst, src):
        return None
    sig = types.intp(dst, types.intp, src, types.intp, types.intp, types.intp, types.boolean)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        dv, do, sv, so, sstep, mm, mul = args
        ity = mm.type
        dbl = ir.DoubleType()
        vt = ir.VectorType(dbl, 8)
        dp = _byte_pointer(context, builder, signature.args[0], dv, do)
        sp = _byte_pointer(context, builder, signature.args[2], sv, so)
        nv = builder.sdiv(mm, ir.Constant(ity, 8))
        mul_bit = context.cast(builder, mul, signature.args[6], types.boolean)
        mul_bit = builder.icmp_unsigned("!=", mul_bit, ir.Constant(mul_bit.type, 0))

        def loop(multiply):
            with cgutils.for_range(builder, nv) as lp:
                v = ir.Constant(vt, ir.Undefined)
                for lane in range(8):
                    t = builder.add(builder.mul(lp.index, ir.Constant(ity, 8)), ir.Constant(ity, lane))
                    e = builder.load(builder.bitcast(builder.gep(sp, [builder.mul(t, sstep)]), dbl.as_pointer()))
                    v = builder.insert_element(v, e, ir.Constant(ir.IntType(32), lane))
                dst_p = builder.bitcast(builder.gep(dp, [builder.mul(lp.index, ir.Constant(ity, 64))]), vt.as_pointer())
                if multiply:
                    v = builder.fmul(builder.load(dst_p, align=8), v)
                builder.store(v, dst_p, align=8)

        with builder.if_else(mul_bit) as (then, otherwise):
            with then:
                loop(True)
            with otherwise:
                loop(False)
        return builder.mul(nv, ir.Constant(ity, 8))

    return sig, codegen


@njit
def _dot_lanes_ref(a, B, i, c0, c1):
    """``a[c0:c1] . B[i, c0:c1]`` in :func:`_dot8`'s order, in scalar code: the reference the tests
    hold the vector path to, bit for bit."""
    n = c1 - c0
    m = n - n % DOT_LANES
    l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = 0.0
    for k in range(c0, c0 + m, DOT_LANES):
        l0 = fma(a[k], B[i, k], l0)
        l1 = fma(a[k + 1], B[i, k + 1], l1)
        l2 = fma(a[k + 2], B[i, k + 2], l2)
        l3 = fma(a[k + 3], B[i, k + 3], l3)
        l4 = fma(a[k + 4], B[i, k + 4], l4)
        l5 = fma(a[k + 5], B[i, k + 5], l5)
        l6 = fma(a[k + 6], B[i, k + 6], l6)
        l7 = fma(a[k + 7], B[i, k + 7], l7)
    t = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
    for k in range(c0 + m, c1):
        t = fma(a[k], B[i, k], t)
    return t


@njit_inline
def lane_dot(a, b, c0, c1):
    """``a[c0:c1] . b[c0:c1]`` for 1-D arrays, in the fixed lane order every kernel pass shares.

    The order (eight lanes of fused multiply-adds, a fixed tree, then the tail) is part of
    the definition: the per-row, blocked and parallel passes, the group norms and the
    eviction updates all compute dot products through this function or :func:`row_dot`, so
    they agree bit for bit, and ``x . x`` here equals the squared norm ``group_sqnorms``
    stores (the squared distance of a row to itself is exactly 0).  It runs as
    ``<8 x double>`` vectors (:func:`_dot8`); :func:`_dot_lanes_ref` is the same order in
    scalar code (the tests' reference).
    """
    return _dot8(a, c0 * a.strides[0], a.strides[0], b, c0 * b.strides[0], b.strides[0], c1 - c0)


@njit_inline
def row_dot(x, S, i, c0, c1):
    """``x[c0:c1] . S[i, c0:c1]`` in :func:`lane_dot`'s order (``S`` 2-D)."""
    return _dot8(x, c0 * x.strides[0], x.strides[0], S, i * S.strides[0] + c0 * S.strides[1], S.strides[1], c1 - c0)


@njit_inline
def group_row_dot(x, S, i, granges, r0, r1):
    """The dot product of ``x`` and row ``i`` over the column ranges ``granges[r0:r1]`` (ranges in order)."""
    acc = 0.0
    for r in range(r0, r1):
        acc += row_dot(x, S, i, granges[r, 0], granges[r, 1])
    return acc


@njit_inline
def ladder_value(v, k, lo):
    """``v^k`` by squaring, for an RBF kernel on a ladder: ``exp(-k g s) = exp(-g s)^k``.

    When a kernel set holds Gaussian kernels whose gammas are integer multiples of an earlier
    one's on the same group (the default set's ``gamma_scale`` of 0.1, 1 and 10 are: 10x and
    100x), the narrower ones are powers of the widest one's values: a few multiplications
    each instead of an exponential (``CompiledKernels`` finds the ladders).  The powers
    ``v^(2^b)`` are multiplied in, lowest bit first; :func:`ladder_block` runs the same
    operations over a block, so the per-row and blocked values are the same bits.  A base
    value below ``lo = exp(EXP_FLOOR / k)`` gives 0 (where ``exp_neg`` of the kernel's own
    argument is 0 too), which keeps every intermediate power a normal number.  Relative
    error: about ``k + log2 k`` ulps of the base's, e.g. 2.5e-14 for ``k = 100``, the same
    order as the rounding of the argument ``g s`` itself feeds into a direct exponential.
    """
    c = v if v >= lo else 0.0
    r = 1.0
    first = True
    while True:
        if k & 1:
            r = c if first else r * c
            first = False
        k >>= 1
        if k == 0:
            return r
        c = c * c


@intrinsic
def _ladder8(typingctx, base, b_off, out, o_off, m, k, lo):
    """:func:`ladder_value` on ``m - m % 8`` contiguous values, eight per ``<8 x double>`` vector.

    Base values at byte ``b_off`` of ``base``, results at byte ``o_off`` of ``out``; returns the
    number done (0 when ``k`` is not in :data:`LADDER_KS`).  One loop per exponent in
    :data:`LADDER_KS`, chosen by a ``switch`` on ``k``: each is the straight chain of
    :func:`ladder_value` for that ``k`` (the flush, the squarings, the products, in the same
    order: the same bits), in registers.  Specialised because generic code computes products
    it then discards, and those underflow (a microcode assist each: 5x slower on the build
    machine for base values near 0.01 at ``k = 100``); Numba passes over whole blocks cost a
    load, a store and a scratch allocation per operation and ran no faster than the
    exponential they replace.
    """
    if not _all_f64_arrays(base, out):
        return None
    sig = types.intp(base, types.intp, out, types.intp, types.intp, types.intp, types.float64)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils

        bv, bo, ov, oo, mm, kk, lo = args
        ity = mm.type
        vt = ir.VectorType(ir.DoubleType(), 8)
        bp = _byte_pointer(context, builder, signature.args[0], bv, bo)
        op = _byte_pointer(context, builder, signature.args[2], ov, oo)
        lov = ir.Constant(vt, ir.Undefined)
        for lane in range(8):
            lov = builder.insert_element(lov, lo, ir.Constant(ir.IntType(32), lane))
        zero = ir.Constant(vt, [0.0] * 8)
        nv = builder.sdiv(mm, ir.Constant(ity, 8))
        done = cgutils.alloca_once_value(builder, ir.Constant(ity, 0))
        end = builder.append_basic_block("ladder.end")
        other = builder.append_basic_block("ladder.other")
        sw = builder.switch(kk, other)
        for kv in LADDER_KS:
            block = builder.append_basic_block(f"ladder.k{kv}")
            sw.add_case(ir.Constant(ity, kv), block)
            builder.position_at_end(block)
            with cgutils.for_range(builder, nv) as loop:
                off = builder.mul(loop.index, ir.Constant(ity, 64))
                v = builder.load(builder.bitcast(builder.gep(bp, [off]), vt.as_pointer()), align=8)
                c = builder.select(builder.fcmp_ordered(">=", v, lov), v, zero)
                r = None
                e = kv
                while True:  # ladder_value's loop, unrolled for this k
                    if e & 1:
                        r = c if r is None else builder.fmul(r, c)
                    e >>= 1
                    if e == 0:
                        break
                    c = builder.fmul(c, c)
                builder.store(r, builder.bitcast(builder.gep(op, [off]), vt.as_pointer()), align=8)
            builder.store(builder.mul(nv, ir.Constant(ity, 8)), done)
            builder.branch(end)
        builder.position_at_end(other)
        builder.branch(end)
        builder.position_at_end(end)
        return builder.load(done)

    return sig, codegen


@njit
def ladder_block(base, m, k, lo, out, o0):
    """``out[o0 + t] = ladder_value(base[o0 + t], k, lo)`` for ``t < m``, the same bits: eight
    values at a time by :func:`_ladder8` when both rows are contiguous, the rest one by one."""
    t = 0
    if base.strides[0] == 8 and out.strides[0] == 8:
        t = _ladder8(base, o0 * 8, out, o0 * 8, m, k, lo)
    for t in range(t, m):
        out[o0 + t] = ladder_value(base[o0 + t], k, lo)


@njit_inline
def ladder_base(p, j):
    """The row of values kernel ``j`` is computed from: its ladder's base, or ``j`` itself."""
    return int(p[P_LADDER_BASE]) if p[P_LADDER_K] >= 2.0 else j


@njit
def kernel_value(code, p, dot, sqd, l1):
    """Raw (unnormalised) kernel value of one kind from the shared quantities.

    ``p`` is the kernel's parameter row: polynomial ``(degree, offset, scale)``,
    RBF ``gamma`` (``exp(-gamma ||x-z||^2)``), Laplacian ``gamma``
    (``exp(-gamma ||x-z||_1)``, as scikit-learn's ``laplacian_kernel``),
    B1-spline ``h`` (``max(0, 1 - ||x-z|| / h)``, Martins et al. Table 1).
    """
    if code == LINEAR:
        return dot
    elif code == POLYNOMIAL:
        base = p[2] * dot + p[1]
        deg = int(p[0])
        out = 1.0
        for _ in range(deg):
            out *= base
        return out
    elif code == RBF:
        if p[P_LADDER_K] >= 2.0:
            return ladder_value(exp_neg(-p[P_LADDER_GAMMA] * sqd), int(p[P_LADDER_K]), p[P_LADDER_LO])
        return exp_neg(-p[0] * sqd)
    elif code == LAPLACIAN:
        return exp_neg(-p[0] * l1)
    else:  # BSPLINE
        v = 1.0 - np.sqrt(sqd) / p[0]
        return v if v > 0.0 else 0.0


@njit
def normalise(v, rx, rs):
    """Unit-diagonal normalisation ``K(x,z) / sqrt(K(x,x) K(z,z))`` as ``(v * rs) * rx``.

    ``rx``, ``rs`` are the stored diagonals of a normalised kernel, ``1 / sqrt(K(x,x))`` (0 where
    ``K(x,x)`` is not positive: the value is then 0), see :func:`stored_diag`.  Two multiplies
    a row instead of a square root and a division: in the blocked pass at 10^4 x 16 a
    normalised linear kernel went 0.97 -> 0.33 ns a row (the gather of the stored column
    included).  Within 3 ulps of the division (tested).
    """
    return (v * rs) * rx


@njit_inline
def stored_diag(raw, normalized):
    """What the buffer (``sdiag``) and a query (``xdiag``) hold for kernel ``j``: the raw
    ``K_j(x, x)``, or for a normalised kernel its reciprocal square root ``1 / sqrt(K_j(x, x))``,
    0 where ``K_j(x, x)`` is not positive (or NaN).  Positive exactly where the raw value is,
    which is all :func:`effective_diag` asks."""
    if normalized != 0.0:
        return 1.0 / np.sqrt(raw) if raw > 0.0 else 0.0
    return raw


@njit
def group_sqnorms(x, granges, gptr, out):
    """Squared norm of ``x`` restricted to each feature group (:func:`lane_dot`'s order)."""
    G = gptr.shape[0] - 1
    for g in range(G):
        acc = 0.0
        for r in range(gptr[g], gptr[g + 1]):
            acc += lane_dot(x, x, granges[r, 0], granges[r, 1])
        out[g] = acc


@njit
def self_kernels(x, codes, params, kgroup, gsq, out):
    """``K_j(x, x)`` for every kernel in the stored form (:func:`stored_diag`: raw, or the
    reciprocal square root for a normalised kernel), the diagonal used by normalisation and norms."""
    for j in range(codes.shape[0]):
        out[j] = stored_diag(kernel_value(codes[j], params[j], gsq[kgroup[j]], 0.0, 0.0), params[j, P_NORMALIZE])


@njit
def row_quantities(x, xsq, S, i, ssq, granges, gptr, gl1, dots, sqds, l1s):
    """Dot products, squared and L1 distances of ``x`` and buffer row ``i`` per group."""
    G = gptr.shape[0] - 1
    for g in range(G):
        acc1 = 0.0
        acc2 = 0.0
        use_l1 = (gl1[g] & GROUP_L1) != 0
        direct = (gl1[g] & GROUP_SQDIST) != 0
        use_dot = not direct or (gl1[g] & GROUP_DOT) != 0
        acc = group_row_dot(x, S, i, granges, gptr[g], gptr[g + 1]) if use_dot else 0.0
        if direct or use_l1:
            for r in range(gptr[g], gptr[g + 1]):
                for c in range(granges[r, 0], granges[r, 1]):
                    e = x[c] - S[i, c]
                    if direct:
                        acc2 += e * e
                    if use_l1:
                        acc1 += abs(e)
        dots[g] = acc
        if direct:
            sqds[g] = acc2
        else:
            d2 = xsq[g] + ssq[i, g] - 2.0 * acc
            sqds[g] = d2 if d2 > 0.0 else 0.0
        l1s[g] = acc1


@njit
def prepare_query(x, codes, params, kgroup, granges, gptr, xsq, xdiag):
    """The per-query quantities every row function needs: group norms and ``K_j(x, x)``."""
    group_sqnorms(x, granges, gptr, xsq)
    self_kernels(x, codes, params, kgroup, xsq, xdiag)


@njit
def refresh_row_caches(S, n, codes, params, kgroup, granges, gptr, ssq, sdiag):
    """``ssq[:n]`` and ``sdiag[:n]`` recomputed from the stored rows ``S[:n]`` (:func:`prepare_query`
    row by row): they are derived from the rows, so a restored model does not trust a file's
    copies (files from before :func:`stored_diag` hold raw diagonals for normalised kernels)."""
    for i in range(n):
        prepare_query(S[i], codes, params, kgroup, granges, gptr, ssq[i], sdiag[i])


@njit
def effective_diag(stored, normalized):
    """``K_j(x, x)`` as the model sees it, from the stored diagonal (:func:`stored_diag`): 1 for a
    normalised kernel (0 where its diagonal is not positive), else the raw value itself."""
    if normalized != 0.0:
        return 1.0 if stored > 0.0 else 0.0
    return stored


#: Rows per block of the blocked passes: the per-group quantities and the kernel
#: values of a block ((3 G + F) x ROW_BLOCK floats, 64 KB for one group and five
#: kernels) stay in L1/L2 while every kernel of the group reads them, and the
#: per-block cost of the calls (kernel by kernel) is spread over many rows.
#: Measured on the build machine (OBSCURE scores, 5 kernels): 64 -> 256 rows ~30%
#: faster, 256 -> 512 another 7-10%, 512 -> 1024 ~10%.  Again once the block loops
#: stopped counting references (_borrowed): learn at 10^4 x 16, 256 rows 51 µs,
#: 512 43, 1024 39, 2048 39.
ROW_BLOCK = 1024


@njit
def direct_block(x, S, i0, m, granges, r0, r1, dots, sqds):
    """For rows ``i0 .. i0+m-1`` of a ``GROUP_SQDIST`` group over the column ranges ``granges[r0:r1]``:
    ``dots[t] = x . S_{i0+t}`` (:func:`group_row_dot`) and ``sqds[t] = sum_c (x_c - S_{i0+t,c})^2``
    summed directly (:func:`sqdist_block`), as :func:`row_quantities` computes them."""
    for t in range(m):
        dots[t] = group_row_dot(x, S, i0 + t, granges, r0, r1)
    sqdist_block(x, S, i0, m, granges, r0, r1, sqds)


@njit
def sqdist_block(x, S, i0, m, granges, r0, r1, sqds):
    """``sqds[t] = sum_c (x_c - S_{i0+t,c})^2`` alone (a ``GROUP_SQDIST`` group no kernel reads the dots of)."""
    t = 0
    while t + 4 <= m:
        i = i0 + t
        q0 = 0.0
        q1 = 0.0
        q2 = 0.0
        q3 = 0.0
        for r in range(r0, r1):
            for c in range(granges[r, 0], granges[r, 1]):
                xc = x[c]
                e0 = xc - S[i, c]
                e1 = xc - S[i + 1, c]
                e2 = xc - S[i + 2, c]
                e3 = xc - S[i + 3, c]
                q0 += e0 * e0
                q1 += e1 * e1
                q2 += e2 * e2
                q3 += e3 * e3
        sqds[t] = q0
        sqds[t + 1] = q1
        sqds[t + 2] = q2
        sqds[t + 3] = q3
        t += 4
    while t < m:
        i = i0 + t
        q0 = 0.0
        for r in range(r0, r1):
            for c in range(granges[r, 0], granges[r, 1]):
                e0 = x[c] - S[i, c]
                q0 += e0 * e0
        sqds[t] = q0
        t += 1


@njit
def block_quantities(x, xsq, S, i0, m, ssq, granges, gptr, gl1, dots, sqds, l1s):
    """:func:`row_quantities` for the ``m`` buffer rows ``i0 .. i0+m-1`` at once.

    ``dots[g, t]``, ``sqds[g, t]``, ``l1s[g, t]`` for row ``i0 + t``.  The dot
    products are :func:`group_row_dot`'s (eight-lane vectors), the direct sums run
    over the columns in the same order as :func:`row_quantities`, so the numbers
    are identical to it, bit for bit.
    """
    G = gptr.shape[0] - 1
    for g in range(G):
        r0 = gptr[g]
        r1 = gptr[g + 1]
        if (gl1[g] & GROUP_SQDIST) != 0:
            if (gl1[g] & GROUP_DOT) != 0:
                direct_block(x, S, i0, m, granges, r0, r1, _row(dots, g), _row(sqds, g))
            else:
                sqdist_block(x, S, i0, m, granges, r0, r1, _row(sqds, g))
                for t in range(m):
                    dots[g, t] = 0.0
        else:
            if r1 - r0 == 1:  # one column range (the common case): no loop over ranges per row
                c0 = granges[r0, 0]
                c1 = granges[r0, 1]
                t0 = 0
                if x.strides[0] == 8 and S.strides[1] == 8 and dots.strides[1] == 8 and sqds.strides[1] == 8:
                    # eight rows at a time, distances included, the same numbers (see _dot8_rows)
                    t0 = _dot8_rows(x, c0 * 8, S, i0 * S.strides[0] + c0 * 8, S.strides[0], m, c1 - c0,
                                    dots, g * dots.strides[0], ssq, i0 * ssq.strides[0] + g * ssq.strides[1],
                                    ssq.strides[0], xsq[g], sqds, g * sqds.strides[0])
                for t in range(t0, m):
                    dots[g, t] = 0.0 + row_dot(x, S, i0 + t, c0, c1)
            else:
                t0 = 0
                for t in range(m):
                    dots[g, t] = group_row_dot(x, S, i0 + t, granges, r0, r1)
            xg = xsq[g]
            for t in range(t0, m):
                d2 = xg + ssq[i0 + t, g] - 2.0 * dots[g, t]
                sqds[g, t] = d2 if d2 > 0.0 else 0.0
        if (gl1[g] & GROUP_L1) != 0:
            for t in range(m):
                i = i0 + t
                a1 = 0.0
                for r in range(r0, r1):
                    for c in range(granges[r, 0], granges[r, 1]):
                        a1 += abs(x[c] - S[i, c])
                l1s[g, t] = a1
        else:
            for t in range(m):
                l1s[g, t] = 0.0


@njit
def block_values(j, code, p, dots, sqds, l1s, m, xdiag_j, sdiag, i0, out, o0, base):
    """Kernel ``j``'s values on a block: ``out[o0 + t] = K_j(x, S_{i0+t})`` for ``t < m``.

    The kind is dispatched once per block, not once per row, and each loop
    has a straight body; the formulas are those of :func:`kernel_value` and
    :func:`normalise`, so the values are identical to the per-row functions.
    ``base`` holds the block's values of kernel :func:`ladder_base` at the same offsets
    (computed before: a ladder's base has a lower index); read only by a ladder kernel.
    """
    if code == LINEAR:
        for t in range(m):
            out[o0 + t] = dots[t]
    elif code == POLYNOMIAL:
        deg = int(p[0])
        p1 = p[1]
        p2 = p[2]
        # Degrees 1-3 as straight loops that vectorise; the products are those of
        # kernel_value's loop (1 * b = b exactly), so the bits are the same.
        if deg == 2:
            for t in range(m):
                base = p2 * dots[t] + p1
                out[o0 + t] = base * base
        elif deg == 3:
            for t in range(m):
                base = p2 * dots[t] + p1
                out[o0 + t] = (base * base) * base
        elif deg == 1:
            for t in range(m):
                out[o0 + t] = p2 * dots[t] + p1
        else:
            for t in range(m):
                base = p2 * dots[t] + p1
                v = 1.0
                for _ in range(deg):
                    v *= base
                out[o0 + t] = v
    elif code == RBF:
        if p[P_LADDER_K] >= 2.0:
            ladder_block(base, m, int(p[P_LADDER_K]), p[P_LADDER_LO], out, o0)
        else:
            ng = -p[0]
            for t in range(m):
                out[o0 + t] = exp_neg(ng * sqds[t])
    elif code == LAPLACIAN:
        ng = -p[0]
        for t in range(m):
            out[o0 + t] = exp_neg(ng * l1s[t])
    else:  # BSPLINE
        h = p[0]
        for t in range(m):
            v = 1.0 - np.sqrt(sqds[t]) / h
            out[o0 + t] = v if v > 0.0 else 0.0
    if p[3] != 0.0:
        # normalise(): times the stored rows' reciprocal roots, eight at a time from sdiag's
        # strided column (_gather8: LLVM vectorises no loop that reads it while writing ``out``),
        # then times the query's, a loop that vectorises
        t0 = 0
        if out.strides[0] == 8:
            t0 = _gather8(out, o0 * 8, sdiag, i0 * sdiag.strides[0] + j * sdiag.strides[1], sdiag.strides[0], m,
                          True)
        for t in range(t0, m):
            out[o0 + t] = out[o0 + t] * sdiag[i0 + t, j]
        for t in range(m):
            out[o0 + t] = out[o0 + t] * xdiag_j


@njit
def kernel_row_block(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr, gl1,
                     dots, sqds, l1s, out, o0):
    """``out[j, o0 + t] = K_j(x, S_{i0+t})`` for ``t < m`` (one block): the block's shared per-group
    quantities (:func:`block_quantities`), then every kernel's values from them (:func:`block_values`).

    Every blocked pass over the buffer (rows, scores, proximal scores and eviction) goes through
    here, so they agree bit for bit.  Callers in a block loop pass :func:`_borrowed` aliases (no
    reference counting per block); the kernel rows handed on are :func:`_row` views.
    """
    block_quantities(x, xsq, S, i0, m, ssq, granges, gptr, gl1, dots, sqds, l1s)
    for j in range(codes.shape[0]):
        g = kgroup[j]
        block_values(j, codes[j], _row(params, j), _row(dots, g), _row(sqds, g), _row(l1s, g), m, xdiag[j],
                     sdiag, i0, _row(out, j), o0, _row(out, ladder_base(params[j], j)))


@njit
def kernel_row(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1, out):
    """Kernel values of ``x`` against buffer rows ``0..n-1``: ``out[j, i] = K_j(x, S_i)``.

    ``xsq``/``xdiag`` come from :func:`prepare_query`; ``ssq[n, G]`` are the
    rows' squared group norms and ``sdiag[n, F]`` their self-kernel values (:func:`stored_diag`).
    One pass over the buffer in blocks of :data:`ROW_BLOCK` rows.
    """
    G = gptr.shape[0] - 1
    dots_own = np.empty((G, ROW_BLOCK))
    sqds_own = np.empty((G, ROW_BLOCK))
    l1s_own = np.empty((G, ROW_BLOCK))
    B = _borrowed  # the arguments outlive the call, the scratch arrays the loop (see kernel_scores)
    x, xsq, xdiag, S, ssq, sdiag, out = B(x), B(xsq), B(xdiag), B(S), B(ssq), B(sdiag), B(out)
    codes, params, kgroup, granges, gptr, gl1 = B(codes), B(params), B(kgroup), B(granges), B(gptr), B(gl1)
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr, gl1,
                         B(dots_own), B(sqds_own), B(l1s_own), out, i0)


@njit
def kernel_row_block_own_scratch(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr, gl1,
                                 out, o0):
    """:func:`kernel_row_block` with scratch of its own: the per-block body of the passes over
    threads.  The scratch is passed as is (an alias of it would be its last use, and Numba
    would free it before the call)."""
    G = gptr.shape[0] - 1
    kernel_row_block(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr, gl1,
                     np.empty((G, ROW_BLOCK)), np.empty((G, ROW_BLOCK)), np.empty((G, ROW_BLOCK)), out, o0)


@njit_parallel
def kernel_row_parallel(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1, out):
    """:func:`kernel_row` with blocks of rows spread over threads (identical results)."""
    for b in numba.prange((n + ROW_BLOCK - 1) // ROW_BLOCK):
        i0 = b * ROW_BLOCK
        kernel_row_block_own_scratch(x, xsq, xdiag, S, ssq, sdiag, i0, min(ROW_BLOCK, n - i0), codes, params,
                                     kgroup, granges, gptr, gl1, out, i0)


#: Up to this many outputs (columns of the score array), scores shared by all kernels
#: (one coefficient per stored row) are accumulated densely, by :func:`accumulate_block`.
#: Its cost grows with the outputs (every row, every output, ``GRID_B`` at a time), the
#: row-by-row scatter's does not: measured at 10^4 rows, 5 kernels, ns a row, dense vs
#: scatter: 4 outputs 1.1 vs 3.8, 8: 2.4 vs 3.6, 12: 3.2 vs 3.4, 16: 3.8 vs 3.4, 24: 6.2 vs 3.2.
DENSE_OUTPUTS = 12


@njit_inline
def dense_accumulation(coef, g_out):
    """Whether :func:`accumulate_block`'s dense, vectorised order applies (every path decides alike)."""
    return coef.shape[1] == 1 and g_out.shape[1] <= DENSE_OUTPUTS


@njit
def accumulate_block(kv, t0, m, coef, i0, ypos, yneg, ws, g_out):
    """``g_out[j, c] += sum_{t < m} kv[j, t0 + t] * coef[i0 + t, 0] * s_c(i0 + t)`` for every kernel and output.

    ``s_c(i) = 1`` if ``ypos[i] = c``, ``-1`` if ``yneg[i] = c``, else 0.  Dense: with the
    weights ``w_c = coef * s_c`` (exactly ``+-coef`` or a zero) each ``g_out[j, c]`` gains
    :func:`_dot8`'s lane-order dot product of kernel ``j``'s values with ``w_c``: eight rows
    per vector fused multiply-add, instead of two read-modify-writes of ``g_out`` per row and
    kernel that wait on each other whenever consecutive rows share a class.  The order (per
    block of rows, lanes within the block) is part of the definition: the fused pass
    (:func:`kernel_scores`), the parallel path (:func:`accumulate_scores`) and ``fit``'s gather
    all go through this function with blocks aligned at multiples of :data:`ROW_BLOCK`, so
    they agree bit for bit.  On contiguous arrays (every caller's) :func:`_signed_grid` makes
    the weights in registers and runs up to ``SIGNED_A`` kernels by ``GRID_B`` outputs per
    pass (every entry is :func:`_dot8`'s, bit for bit): at 10^4 x 16, 5 kernels, 3 outputs,
    0.5 ns a row (5.3 for the first plain loops).  Other layouts take the plain loops, with
    the same numbers, writing the weights to ``ws``, scratch of shape ``(nw, >= m)``, ``nw``
    outputs at a time; the vector path wants ``nw >= GRID_B`` (the tests use fewer rows to
    take the plain loops).
    """
    C = g_out.shape[1]
    F = kv.shape[0]
    if (kv.strides[1] == 8 and ws.strides[1] == 8 and ws.shape[0] >= GRID_B and coef.strides[0] == 8
            and ypos.strides[0] == 8 and yneg.strides[0] == 8):
        for c0 in range(0, C, GRID_B):
            nc = min(GRID_B, C - c0)
            # every (kernel, output) pair of SIGNED_A kernels in one pass, the weights made in registers
            for j0 in range(0, F, SIGNED_A):
                nj = min(SIGNED_A, F - j0)
                r = _signed_grid(kv, j0 * kv.strides[0] + t0 * 8, kv.strides[0], nj, coef, ypos, yneg, i0, c0, nc, m)
                for a in range(nj):
                    for c in range(nc):
                        g_out[j0 + a, c0 + c] += r[GRID_B * a + c]
        return
    nw = ws.shape[0]
    for c0 in range(0, C, nw):
        nc = min(nw, C - c0)
        for c in range(nc):
            for t in range(m):
                i = i0 + t
                # arithmetic, not a branch: random classes would mispredict one
                ws[c, t] = coef[i, 0] * (int(ypos[i] == c0 + c) - int(yneg[i] == c0 + c))
        for j in range(F):
            for c in range(nc):
                g_out[j, c0 + c] += _dot8(kv, j * kv.strides[0] + t0 * kv.strides[1], kv.strides[1],
                                          ws, c * ws.strides[0], ws.strides[1], m)


@njit
def kernel_scores(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1,
                  coef, ypos, yneg, g_out):
    """The fused hot loop: per-kernel scores of ``x`` in one pass over the buffer.

    ``g_out[j, c] = sum_i coef[i, j or 0] * ([ypos_i = c] - [yneg_i = c]) * K_j(S_i, x)``:
    the scores ``theta^j . phi_j(x, c)`` of every kernel ``j`` and output ``c``
    under the raw (unscaled) coefficients.  ``coef`` has one column (a
    coefficient shared by all kernels, OBSCURE) or ``F`` columns (one per
    kernel group, proximal MKL).  ``yneg_i = -1`` means "no negative part"
    (binary and regression models).  ``xsq``/``xdiag`` come from :func:`prepare_query`.

    The buffer is read once, in blocks of :data:`ROW_BLOCK` rows: the shared
    per-group quantities of a block, then each kernel's values from them, then
    the block's contribution to the scores: :func:`accumulate_block`'s dense
    order when the coefficient is shared and outputs are few
    (:func:`dense_accumulation`), else a scatter over the rows in order.  Either
    way the result equals :func:`accumulate_scores` on the same kernel row, bit
    for bit.
    """
    G = gptr.shape[0] - 1
    F = codes.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    dense = dense_accumulation(coef, g_out)
    g_out[:, :] = 0.0
    dots_own = np.empty((G, ROW_BLOCK))
    sqds_own = np.empty((G, ROW_BLOCK))
    l1s_own = np.empty((G, ROW_BLOCK))
    kv_own = np.empty((F, ROW_BLOCK))
    ws_own = np.empty((GRID_B if dense else 0, ROW_BLOCK))
    # The block loop passes aliases that own no reference (_borrowed): no atomic reference count
    # per call.  The arguments outlive this call; the scratch arrays outlive the loop, because
    # the loop uses them (Numba frees a variable after its last use, here the loop's exit).
    B = _borrowed
    x, xsq, xdiag, S, ssq, sdiag = B(x), B(xsq), B(xdiag), B(S), B(ssq), B(sdiag)
    codes, params, kgroup, granges, gptr, gl1 = B(codes), B(params), B(kgroup), B(granges), B(gptr), B(gl1)
    coef, ypos, yneg, g_out = B(coef), B(ypos), B(yneg), B(g_out)
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kv = B(kv_own)
        kernel_row_block(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr, gl1,
                         B(dots_own), B(sqds_own), B(l1s_own), kv, 0)
        if dense:
            accumulate_block(kv, 0, m, coef, i0, ypos, yneg, B(ws_own), g_out)
            continue
        # Rows outer, kernels inner: the F accumulations are independent chains
        # (consecutive rows of one class would otherwise serialise on g_out[j, c]).
        for t in range(m):
            i = i0 + t
            cp = ypos[i]
            cn = yneg[i]
            for j in range(F):
                v = kv[j, t] * coef[i, j * per_kernel]
                g_out[j, cp] += v
                if cn >= 0:
                    g_out[j, cn] -= v


@njit_parallel
def kernel_scores_parallel(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1,
                           coef, ypos, yneg, g_out):
    """:func:`kernel_scores` with its blocks spread over threads, the same numbers.

    Each block's sums (:func:`accumulate_block`'s) go to a slot of their own, then the slots
    are added in block order, which is the serial pass's sequence of additions: identical
    results, without writing the ``F x n`` kernel row and reading it back (the parallel row,
    :func:`kernel_row_parallel` + :func:`accumulate_scores`, ran at 0.55-0.95x the serial fused
    pass at 10^4-3x10^5 rows of 16 features in one benchmark run, 0.97-1.29x in another; this
    pass, 1.7-2.1x from 10^5 rows).  Only the dense accumulation
    (:func:`dense_accumulation`); the caller takes the parallel row otherwise.
    """
    F = codes.shape[0]
    C = g_out.shape[1]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    parts = np.zeros((n_blocks, F, C))
    for b in numba.prange(n_blocks):
        i0 = b * ROW_BLOCK
        m = min(ROW_BLOCK, n - i0)
        kv = np.empty((F, ROW_BLOCK))
        kernel_row_block_own_scratch(x, xsq, xdiag, S, ssq, sdiag, i0, m, codes, params, kgroup, granges, gptr,
                                     gl1, kv, 0)
        accumulate_block(kv, 0, m, coef, i0, ypos, yneg, np.empty((GRID_B, ROW_BLOCK)), parts[b])
    g_out[:, :] = 0.0
    for b in range(n_blocks):
        for j in range(F):
            for c in range(C):
                g_out[j, c] += parts[b, j, c]


@njit
def accumulate_scores(K, n, coef, ypos, yneg, g_out):
    """Scores from a precomputed kernel row ``K[F, n]`` (same sums, same order as
    :func:`kernel_scores`, blocks included, so the parallel path gives identical numbers)."""
    F = K.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    g_out[:, :] = 0.0
    if dense_accumulation(coef, g_out):
        ws = np.empty((GRID_B, ROW_BLOCK))
        B = _borrowed  # no reference counting per block (see kernel_scores)
        Kb, coefb, yposb, ynegb, gb = B(K), B(coef), B(ypos), B(yneg), B(g_out)
        for i0 in range(0, n, ROW_BLOCK):
            accumulate_block(Kb, i0, min(ROW_BLOCK, n - i0), coefb, i0, yposb, ynegb, B(ws), gb)
        return
    for i in range(n):
        cp = ypos[i]
        cn = yneg[i]
        for j in range(F):
            v = K[j, i] * coef[i, j * per_kernel]
            g_out[j, cp] += v
            if cn >= 0:
                g_out[j, cn] -= v


@njit
def values_from_products(dots, xsq, zsq, l1, use_l1, sqd, use_sqd, js, codes, params, xdiag, zdiag, symmetric, out):
    """Every kernel ``j in js`` of one group from its matrix of dot products (batch path).

    ``dots[a, i] = x_a . z_i`` (a BLAS product), ``xsq``/``zsq`` the squared group
    norms, ``l1`` the L1 distances (read only if ``use_l1``), ``sqd`` the squared
    distances summed directly (read only if ``use_sqd``, the groups flagged
    ``GROUP_SQDIST``; otherwise they come from the norms and ``dots``), ``xdiag[a, j]`` /
    ``zdiag[i, j]`` the self-kernel values in the stored form (:func:`stored_diag`).  Writes ``out[j, a, i]`` row by
    row with :func:`block_values` (the formulas of the per-example pass).
    ``symmetric``: the queries are the stored rows themselves (a training
    set's own kernel matrices, ``dots`` symmetric): only ``i >= a`` is computed
    and mirrored, which gives the same numbers (every formula is symmetric in
    its two arguments) at half the cost.
    """
    nq = dots.shape[0]
    ns = dots.shape[1]
    d2 = np.empty(ns)
    zero = np.zeros(ns)
    for a in range(nq):
        i0 = a if symmetric else 0
        xa = xsq[a]
        if use_sqd:
            for i in range(i0, ns):
                d2[i] = sqd[a, i]
        else:
            for i in range(i0, ns):
                v = xa + zsq[i] - 2.0 * dots[a, i]
                d2[i] = v if v > 0.0 else 0.0
        m = ns - i0
        for k in range(js.shape[0]):
            j = js[k]
            block_values(j, codes[j], params[j], dots[a, i0:], d2[i0:], l1[a, i0:] if use_l1 else zero[i0:], m,
                         xdiag[a, j], zdiag, i0, out[j, a], i0, out[ladder_base(params[j], j), a])
    if symmetric:
        T = 64
        for k in range(js.shape[0]):
            j = js[k]
            for b0 in range(0, nq, T):
                for c0 in range(b0, ns, T):
                    for a in range(b0, min(b0 + T, nq)):
                        for i in range(max(c0, a + 1), min(c0 + T, ns)):
                            out[j, i, a] = out[j, a, i]


@njit
def stored_self_kernels(gsq, js, codes, params, out):
    """``out[a, j] = K_j(x_a, x_a)`` in the stored form (:func:`stored_diag`) from the squared group
    norms ``gsq[a]``: the batch counterpart of :func:`self_kernels`."""
    for a in range(gsq.shape[0]):
        for k in range(js.shape[0]):
            j = js[k]
            out[a, j] = stored_diag(kernel_value(codes[j], params[j], gsq[a], 0.0, 0.0), params[j, P_NORMALIZE])


@njit
def weighted_sum_prep(dots, xsq, zsq, l1, use_l1, sqd, use_sqd, ojs, ejs, codes, params, xdiag, zinv, w, acc):
    """``acc[a, i] += sum_j w_j K_j(x_a, z_i)`` over one group's kernels (the batch path).

    Row by row: the squared distances, then every kernel with :func:`block_values`'
    formulas in straight loops, the RBF and Laplacian ones with :func:`exp_neg`
    (vectorised) accumulated straight into ``acc`` (no array of exponents goes to
    memory and back; up to three RBF kernels share one pass over the distances; a ladder's
    kernels come from their base's exponentials, :func:`ladder_block`).  RBF and Laplacian
    kernels have a unit raw diagonal, so their normalisation is the identity.  A normalised kernel's value is
    ``(w_j rx) K_j(x, z) zinv[j, i]`` with ``rx`` the query's and ``zinv[j, i]`` the stored row's
    diagonal in the stored form, ``1/sqrt(K_j(., .))`` (:func:`stored_diag`; 0 where the diagonal
    is not positive): two multiplications per pair, equal to :func:`normalise` to a few ulps
    (this path sums in another order anyway).  ``l1``/``use_l1`` and ``sqd``/``use_sqd`` as in :func:`values_from_products`.
    """
    nq = dots.shape[0]
    ns = dots.shape[1]
    d2 = np.empty(ns)
    tmp = np.empty(ns)
    zero = np.zeros(ns)
    zero2 = np.zeros((1, 1))
    params_raw = params.copy()
    params_raw[:, 3] = 0.0
    is_lap = np.zeros(ejs.shape[0], dtype=np.bool_)
    for k in range(ejs.shape[0]):
        is_lap[k] = codes[ejs[k]] == LAPLACIAN
    rbf = ejs[~is_lap]
    lap = ejs[is_lap]
    # ladders (see ladder_value): each base's exponentials once, its ladder kernels from them
    nr = rbf.shape[0]
    in_ladder = np.zeros(nr, dtype=np.bool_)
    for k in range(nr):
        j = rbf[k]
        if params[j, P_LADDER_K] >= 2.0:
            in_ladder[k] = True
            for k2 in range(nr):
                if rbf[k2] == int(params[j, P_LADDER_BASE]):
                    in_ladder[k2] = True
    lad = rbf[in_ladder]
    rbf = rbf[~in_ladder]
    eb = np.empty(ns)
    # linear and polynomial kernels (degree <= 3) two at a time in one pass; the rest alone
    is_dot = np.zeros(ojs.shape[0], dtype=np.bool_)
    for k in range(ojs.shape[0]):
        j = ojs[k]
        is_dot[k] = codes[j] == LINEAR or (codes[j] == POLYNOMIAL and params[j, 0] in (1.0, 2.0, 3.0))
    dotk = ojs[is_dot]
    other = ojs[~is_dot]
    # squared distances in d2: computed per query when an RBF kernel needs them (with use_sqd the
    # RBF loops read sqd[a] directly), copied from sqd[a] / computed when a B-spline kernel does
    need_d2 = not use_sqd and (rbf.shape[0] > 0 or lad.shape[0] > 0)
    for k in range(other.shape[0]):
        need_d2 = need_d2 or codes[other[k]] == BSPLINE
    d2m = np.empty((1, ns))
    d2 = d2m[0]
    for a in range(nq):
        xa = xsq[a]
        # the linear and polynomial kernels, two per pass over dots[a]
        k = 0
        while k < dotk.shape[0]:
            j0 = dotk[k]
            j1 = dotk[k + 1] if k + 1 < dotk.shape[0] else -1
            _dot_kernels_pass(dots, a, ns, codes, params, xdiag, zinv, w, j0, j1, acc)
            k += 2
        if need_d2:
            if use_sqd:
                for i in range(ns):
                    d2[i] = sqd[a, i]
            else:
                for i in range(ns):
                    v = xa + zsq[i] - 2.0 * dots[a, i]
                    d2[i] = v if v > 0.0 else 0.0
        for k in range(other.shape[0]):
            j = other[k]
            # raw values (column 3 of params_raw is 0), then the normalisation factors
            block_values(j, codes[j], params_raw[j], dots[a], d2, l1[a] if use_l1 else zero, ns, 0.0, zero2, 0,
                         tmp, 0, tmp)  # no RBF kernel here: no ladder
            wx = _norm_weight(w[j], params[j, 3], xdiag[a, j])
            if params[j, 3] != 0.0:
                zj = zinv[j]
                for i in range(ns):
                    acc[a, i] += wx * (tmp[i] * zj[i])
            else:
                for i in range(ns):
                    acc[a, i] += wx * tmp[i]
        # RBF kernels three (then two, then one) at a time: one pass over the distances and acc
        src = sqd if use_sqd else d2m
        r = a if use_sqd else 0
        k = 0
        ne = rbf.shape[0]
        while k + 3 <= ne:
            j0, j1, j2 = rbf[k], rbf[k + 1], rbf[k + 2]
            g0, g1, g2 = -params[j0, 0], -params[j1, 0], -params[j2, 0]
            w0, w1, w2 = w[j0], w[j1], w[j2]
            for i in range(ns):
                v = src[r, i]
                acc[a, i] += (w0 * exp_neg(g0 * v) + w1 * exp_neg(g1 * v)) + w2 * exp_neg(g2 * v)
            k += 3
        if k + 2 <= ne:
            j0, j1 = rbf[k], rbf[k + 1]
            g0, g1 = -params[j0, 0], -params[j1, 0]
            w0, w1 = w[j0], w[j1]
            for i in range(ns):
                v = src[r, i]
                acc[a, i] += w0 * exp_neg(g0 * v) + w1 * exp_neg(g1 * v)
            k += 2
        if k < ne:
            j0 = rbf[k]
            g0 = -params[j0, 0]
            w0 = w[j0]
            for i in range(ns):
                acc[a, i] += w0 * exp_neg(g0 * src[r, i])
        for kb in range(lad.shape[0]):
            jb = lad[kb]
            if params[jb, P_LADDER_K] >= 2.0:
                continue  # a ladder kernel: done with its base
            gb = -params[jb, 0]
            wb = w[jb]
            for i in range(ns):
                e = exp_neg(gb * src[r, i])
                eb[i] = e
                acc[a, i] += wb * e
            for kl in range(lad.shape[0]):
                jl = lad[kl]
                if params[jl, P_LADDER_K] >= 2.0 and int(params[jl, P_LADDER_BASE]) == jb:
                    ladder_block(eb, ns, int(params[jl, P_LADDER_K]), params[jl, P_LADDER_LO], tmp, 0)
                    wl = w[jl]
                    for i in range(ns):
                        acc[a, i] += wl * tmp[i]
        for k in range(lap.shape[0]):
            j = lap[k]
            ng = -params[j, 0]
            wj = w[j]
            for i in range(ns):
                acc[a, i] += wj * exp_neg(ng * l1[a, i])


@njit_inline
def _norm_weight(wj, normalized, rx):
    """``w_j / sqrt(K_j(x, x))`` for a normalised kernel (``rx``, the query's stored diagonal, is
    that reciprocal root: :func:`stored_diag`), else ``w_j``."""
    if normalized != 0.0:
        return wj * rx
    return wj


@njit_inline
def _dot_kernel(code, p, dot):
    """A linear or polynomial (degree 1-3) kernel's raw value, as :func:`block_values` computes it."""
    if code == LINEAR:
        return dot
    base = p[2] * dot + p[1]
    if p[0] == 2.0:
        return base * base
    if p[0] == 3.0:
        return (base * base) * base
    return base


@njit
def _dot_kernels_pass(dots, a, ns, codes, params, xdiag, zinv, w, j0, j1, acc):
    """``acc[a, i] += w_j0 K_j0 + w_j1 K_j1`` for two linear/polynomial kernels in one pass over ``dots[a]``
    (``j1 = -1``: one kernel); a normalised kernel multiplies by ``zinv[j, i]`` (see :func:`weighted_sum_prep`)."""
    w0 = _norm_weight(w[j0], params[j0, 3], xdiag[a, j0])
    n0 = params[j0, 3] != 0.0
    p0 = params[j0]
    c0 = codes[j0]
    z0 = zinv[j0]
    if j1 < 0:
        for i in range(ns):
            v = _dot_kernel(c0, p0, dots[a, i])
            acc[a, i] += w0 * (v * z0[i] if n0 else v)
        return
    w1 = _norm_weight(w[j1], params[j1, 3], xdiag[a, j1])
    n1 = params[j1, 3] != 0.0
    p1 = params[j1]
    c1 = codes[j1]
    z1 = zinv[j1]
    for i in range(ns):
        d = dots[a, i]
        v0 = _dot_kernel(c0, p0, d)
        v1 = _dot_kernel(c1, p1, d)
        acc[a, i] += w0 * (v0 * z0[i] if n0 else v0) + w1 * (v1 * z1[i] if n1 else v1)
