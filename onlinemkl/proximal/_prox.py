"""Group proximal operators for online proximal MKL (Martins et al., Prop. 1 and Algs. 2, 4).

Every regulariser here depends on ``theta`` only through the group norms
``b_k = ||theta_k||``.  Prop. 1 then says the proximal step on ``theta`` is::

    b'  = prox_{lam psi}(b)                  (a problem in R^P, one entry per group)
    theta_k <- theta_k * (b'_k / b_k)        (0 when b_k = 0)

so this module only ever sees the vector ``b`` (float64, ``b_k >= 0``) and the
step's regularisation ``lam = eta_t * lambda >= 0``.  Each operator writes the
new norms into a caller-supplied ``out`` and returns nothing.  Every operator
first reads what it needs from ``b`` and then writes ``out`` elementwise, so
``out`` may be ``b`` itself (in-place use is allowed).

Accuracy: the thresholding operators compute ``b_k - tau``, so a new norm
carries an absolute error of a few ``eps * max(b)``; that is the conditioning
of the problem (the prox is 1-Lipschitz and ``b`` itself comes from square
roots of accumulated sums), so a tiny surviving norm under a huge ``lam`` is
only accurate in that absolute sense.  The non-sparse root is accurate to
about ``eps / (q - 1)`` relative.

Operators (``prox`` of ``lam * R`` with ``R`` written on the group norms):

* ``PROX_NONE`` (0): ``R = 0``, identity.
* ``PROX_SQ_L21`` (1): ``R = 0.5 (sum_k b_k)^2`` (MKL, eq. 7), :func:`prox_sq_l21`.
* ``PROX_WEIGHTED_SQ_L1`` (2): ``R = 0.5 (sum_k d_k b_k)^2`` (App. F), :func:`prox_weighted_sq_l1`.
* ``PROX_L21`` (3): ``R = sum_k b_k`` (group lasso), :func:`prox_l21`.
* ``PROX_SPARSE_GROUP_LASSO`` (4): ``R = sum_k b_k + param ||theta||_1``; the
  group part here (:func:`prox_l21`), the l1 part by the caller (below).
* ``PROX_NONSPARSE_Q`` (5): ``R = 0.5 sum_k b_k^q`` (Kloft et al.), :func:`prox_nonsparse_q`.
* ``PROX_ELASTIC_NET`` (6): ``R = sum_k b_k + (sigma/2) sum_k b_k^2``, :func:`prox_elastic_net`.

Sparse group lasso, ``R = sum_k ||theta_k|| + param * ||theta||_1`` (the
paper's ``sigma ||theta||_{2,1} + (1 - sigma) ||theta||_1`` up to rescaling
``lambda``, with ``param = (1 - sigma) / sigma``): the exact
prox is the elementwise soft-threshold at ``lam * param`` (:func:`prox_l1_within`,
applied by the caller on the explicit groups, whose coordinates it holds)
followed by the group soft-threshold at ``lam`` on the new norms.  This
composition is exact, not an approximation (Friedman et al. 2010; the paper's
"two proximal steps"): let ``u = soft(v, lam1)`` and ``w = u * max(0, 1 - lam2/||u||)``.
Then ``v - u`` is in ``lam1 * d||.||_1(u)``, and because ``w`` is a non-negative
multiple of ``u`` (same signs where nonzero, and ``d||.||_1(0)`` is the whole
box), ``d||.||_1(u)`` is contained in ``d||.||_1(w)``; also ``u - w`` is in
``lam2 * d||.||_2(w)``.  Adding the two, ``v - w`` is in
``lam1 d||.||_1(w) + lam2 d||.||_2(w)``, which is the optimality condition of
``min_w 0.5||w - v||^2 + lam1||w||_1 + lam2||w||_2``.  The order matters: group
step first and l1 second is not the prox of the sum in general.  On implicit
(kernel) groups the coordinates are not available, so only the group part
applies there.

Readings of the PDF-extracted paper (re-derived from its proofs):

* Alg. 2 / Alg. 4: ``rho`` is the *largest* ``j`` whose condition holds; we
  scan all ``j`` and keep the last one, exactly as written, instead of stopping
  at the first failure.  The test ``y_j - lam S_j / (1 + lam A_j) > 0`` is
  evaluated multiplied by ``1 + lam A_j >= 1``, so it needs no division.
* Alg. 4 outputs ``x_r = d_r * soft(u_0, tau)_r`` with ``u_0r = x_0r / d_r``;
  we use the equivalent ``x_r = max(0, x_0r - d_r tau)`` and the sums
  ``sum a_r u_0r = sum d_r x_0r``, which need no division, so a group with
  ``d_r = 0`` (the paper allows ``d >= 0``) is simply unpenalised (its key
  ``u_0r`` is ``+inf``, it always belongs to the support and adds nothing to
  the sums).  ``d_r < 0`` is treated as 0.
* Non-sparse: the paper's Sec. 3 line reads ``x - x0 + lambda eta_t q x^(q-1) = 0``
  for ``R = 0.5 sum_k ||theta_k||^q``.  The derivative of ``0.5 x^q`` is
  ``0.5 q x^(q-1)``, so the stationarity condition of
  ``min_x 0.5 (x - x0)^2 + lam 0.5 x^q`` is ``x - x0 + lam (q/2) x^(q-1) = 0``;
  we use that (the paper's line drops the 1/2, i.e. it is the equation for
  ``R = sum ||theta_k||^q``).  Check: for ``q = 2`` it gives ``x0 / (1 + lam)``,
  the paper's own prox of ``(lam/2)||x||^2`` (Sec. 3.1).
"""

from __future__ import annotations

import numpy as np

from .._config import njit

PROX_NONE = 0
PROX_SQ_L21 = 1
PROX_WEIGHTED_SQ_L1 = 2
PROX_L21 = 3
PROX_SPARSE_GROUP_LASSO = 4  # group part only; within-group l1 is the caller's (prox_l1_within)
PROX_NONSPARSE_Q = 5
PROX_ELASTIC_NET = 6

# Safeguards of the non-sparse scalar solver.
NONSPARSE_MAX_ITER = 100
NONSPARSE_RTOL = 1e-15


@njit
def argsort_groups(keys):
    """Indices that sort ``keys`` ascending (stable; NaN last), by insertion.

    The prox operators sort one value per group, a few dozen at most, once per step: insertion
    is as fast there as a library sort, and compiles in a fraction of the time of Numba's
    quicksort (which every proximal learner would otherwise compile on its first run).
    """
    P = keys.shape[0]
    order = np.empty(P, dtype=np.int64)
    for i in range(P):
        order[i] = i
    for i in range(1, P):
        k = order[i]
        v = keys[k]
        j = i - 1
        while j >= 0 and (keys[order[j]] > v or (keys[order[j]] != keys[order[j]] and v == v)):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = k
    return order


@njit
def prox_sq_l21(b, lam, out):
    """Prox of ``lam * 0.5 * (sum_k b_k)^2`` on the group norms (Algorithm 2).

    KKT: every surviving group is shrunk by the same ``tau = lam * sum_k b'_k``,
    and a group survives iff ``b_k > tau``.  Sorting ``b`` descending into
    ``y`` and assuming the support is the top ``j`` groups gives
    ``tau_j = lam S_j / (1 + j lam)`` with ``S_j = y_1 + ... + y_j``;
    ``rho`` is the largest ``j`` with ``y_j > tau_j``.  ``b' = max(0, b - tau_rho)``.
    With ``b != 0`` the largest group always survives (``y_1 > lam y_1 / (1 + lam)``):
    squared l1 shrinks but never empties the model.
    """
    P = b.shape[0]
    order = argsort_groups(b)  # ascending; walked from the end (descending order)
    prefix_sum = 0.0
    tau = 0.0  # stays 0 if no j qualifies (b == 0): out = b
    for j in range(1, P + 1):
        y_j = b[order[P - j]]
        prefix_sum += y_j
        denom = 1.0 + j * lam  # >= 1: no zero guard needed
        # y_j - lam S_j / denom > 0, multiplied through by denom > 0
        if y_j * denom - lam * prefix_sum > 0.0:
            tau = lam * prefix_sum / denom
    for k in range(P):
        v = b[k] - tau
        out[k] = v if v > 0.0 else 0.0


@njit
def prox_weighted_sq_l1(b, d, lam, out):
    """Prox of ``lam * 0.5 * (sum_k d_k b_k)^2`` on the group norms (Algorithm 4).

    Appendix F's change of variables ``a_r = d_r^2``, ``u_0r = b_r / d_r``
    turns it into Alg. 2 with weights: sort the keys ``u_0`` descending,
    ``A_j = sum a``, ``S_j = sum a u_0 = sum d b`` over the top ``j``,
    ``tau_j = lam S_j / (1 + lam A_j)``, ``rho`` the largest ``j`` with
    ``u_0(j) > tau_j``, and ``b'_r = d_r max(0, u_0r - tau) = max(0, b_r - d_r tau)``.
    With ``d = 1`` every quantity (order, sums, test) is the one of
    :func:`prox_sq_l21`, so the two agree exactly.  ``d_r <= 0``: unpenalised.
    """
    P = b.shape[0]
    keys = np.empty(P)
    for k in range(P):
        # u_0k = b_k / d_k; a group without weight is never thresholded (key +inf)
        keys[k] = b[k] / d[k] if d[k] > 0.0 else np.inf
    order = argsort_groups(keys)  # ascending; walked from the end
    weight_sum = 0.0  # A_j = sum_{r<=j} d_(r)^2
    weighted_sum = 0.0  # S_j = sum_{r<=j} d_(r) b_(r) = sum a_(r) u_0(r)
    tau = 0.0
    for j in range(1, P + 1):
        k = order[P - j]
        d_k = d[k] if d[k] > 0.0 else 0.0
        weight_sum += d_k * d_k
        weighted_sum += d_k * b[k]
        denom = 1.0 + lam * weight_sum  # >= 1
        if keys[k] * denom - lam * weighted_sum > 0.0:
            tau = lam * weighted_sum / denom
    for k in range(P):
        d_k = d[k] if d[k] > 0.0 else 0.0
        v = b[k] - d_k * tau
        out[k] = v if v > 0.0 else 0.0


@njit
def prox_l21(b, lam, out):
    """Group lasso, prox of ``lam * sum_k b_k``: ``b' = max(0, b - lam)``."""
    for k in range(b.shape[0]):
        v = b[k] - lam
        out[k] = v if v > 0.0 else 0.0


@njit
def prox_l1_within(v, lam, out):
    """Elementwise soft-threshold ``sgn(v) max(0, |v| - lam)`` (prox of ``lam ||v||_1``).

    The within-group step of the sparse group lasso, applied to the
    coordinates of explicit groups *before* the group step (see the module
    docstring for why that order gives the exact prox of the sum).
    """
    for i in range(v.shape[0]):
        x = v[i]
        if x > lam:
            out[i] = x - lam
        elif x < -lam:
            out[i] = x + lam
        else:
            out[i] = 0.0


@njit
def nonsparse_q_root(b_k, lam, q):
    """The root ``x`` in ``[0, b_k]`` of ``x - b_k + lam (q/2) x^(q-1) = 0`` (``q > 1``).

    Always iterates (no closed form), so tests can compare it with ``q = 2``.
    Newton is run on ``s = log x``: ``H(s) = e^s + c e^((q-1)s) - b_k`` with
    ``c = lam q / 2`` is increasing and convex in ``s`` for every ``q > 1``, so
    Newton started to the right of the root (``H > 0``) decreases monotonically
    to it with no overshoot, and the iterate never leaves ``(0, b_k]``.  The
    start ``min(b_k, (b_k/c)^(1/(q-1)))`` is an upper bound of the root (from
    ``c x^(q-1) = b_k - x <= b_k``) and keeps ``c x^(q-1) <= b_k`` so each step
    moves ``s`` by at most 1 (no underflow of ``exp``).  When the root is far
    below ``b_k`` this start is within a few units of it in ``log x`` (where a
    Newton step in ``x`` from ``b_k`` would crawl).  Stops at a relative step
    of ``1e-15``, at ``H <= 0`` (the root, within rounding) or when rounding
    stops the decrease.
    """
    if b_k <= 0.0:
        return 0.0
    c = 0.5 * lam * q
    if c <= 0.0:
        return b_k  # no penalty
    x = b_k
    bound = (b_k / c) ** (1.0 / (q - 1.0))  # c > 0; may be inf (then b_k wins) or 0
    if bound < x:
        x = bound
    if x <= 0.0:
        return 0.0  # root below the smallest double
    for _ in range(NONSPARSE_MAX_ITER):
        x_pow = x ** (q - 1.0)
        H = x - b_k + c * x_pow
        if H <= 0.0:
            break
        dH = x + (q - 1.0) * c * x_pow  # dH/ds > 0 since x > 0
        x_new = x * np.exp(-H / dH)
        if x_new >= x:
            break  # rounding stopped the monotone decrease
        done = (x - x_new) <= NONSPARSE_RTOL * x
        x = x_new
        if done or x <= 0.0:
            break
    return x


@njit
def prox_nonsparse_q(b, lam, q, out):
    """Prox of ``lam * 0.5 * sum_k b_k^q`` (non-sparse MKL), separable per group.

    Each group solves ``x - b_k + lam (q/2) x^(q-1) = 0`` on ``[0, b_k]`` (see
    the module docstring for the constant).  ``q = 2`` has the closed form
    ``b / (1 + lam)``; ``q > 1`` otherwise uses :func:`nonsparse_q_root`.
    ``q <= 1`` (rejected at the boundary) falls back to the ``q -> 1`` limit,
    the group soft-threshold at ``lam / 2``, the only convex member there.
    """
    P = b.shape[0]
    if q == 2.0:
        scale = 1.0 / (1.0 + lam)  # lam >= 0: denominator >= 1
        for k in range(P):
            out[k] = b[k] * scale
    elif q <= 1.0:
        half = 0.5 * lam
        for k in range(P):
            v = b[k] - half
            out[k] = v if v > 0.0 else 0.0
    else:
        for k in range(P):
            out[k] = nonsparse_q_root(b[k], lam, q)


@njit
def prox_elastic_net(b, lam, sigma, out):
    """Prox of ``lam * (sum_k b_k + (sigma/2) sum_k b_k^2)``: ``max(0, b - lam) / (1 + lam sigma)``.

    Stationarity of ``0.5 (x - b)^2 + lam x + lam sigma x^2 / 2`` at ``x > 0``:
    ``x (1 + lam sigma) = b - lam``.  ``sigma < 0`` (rejected at the boundary)
    is treated as 0, which also keeps the denominator >= 1.
    """
    s = sigma if sigma > 0.0 else 0.0
    scale = 1.0 / (1.0 + lam * s)
    for k in range(b.shape[0]):
        v = b[k] - lam
        out[k] = v * scale if v > 0.0 else 0.0


@njit
def prox_group_norms(code, b, lam, param, weights, out):
    """Dispatch by integer ``code`` (``PROX_*``) inside compiled code; writes ``out``.

    ``param`` is ``q`` for ``PROX_NONSPARSE_Q`` and ``sigma`` for
    ``PROX_ELASTIC_NET`` (ignored otherwise; for the sparse group lasso the l1
    weight is used by the caller's :func:`prox_l1_within`, and the group part
    here thresholds at ``lam``).  ``weights`` are the ``d_k`` of
    ``PROX_WEIGHTED_SQ_L1`` (ignored otherwise, but must be a float64 array).
    ``PROX_NONE`` and unknown codes copy ``b`` (never raise in ``_core``).
    """
    if code == PROX_SQ_L21:
        prox_sq_l21(b, lam, out)
    elif code == PROX_WEIGHTED_SQ_L1:
        prox_weighted_sq_l1(b, weights, lam, out)
    elif code == PROX_L21 or code == PROX_SPARSE_GROUP_LASSO:
        prox_l21(b, lam, out)
    elif code == PROX_NONSPARSE_Q:
        prox_nonsparse_q(b, lam, param, out)
    elif code == PROX_ELASTIC_NET:
        prox_elastic_net(b, lam, param, out)
    else:
        for k in range(b.shape[0]):
            out[k] = b[k]


@njit
def group_scale_factors(b, b_new, out):
    """Prop. 1's rescaling ``out_k = b_new_k / b_k``; 0 when ``b_k == 0`` (the group is zero)."""
    for k in range(b.shape[0]):
        out[k] = b_new[k] / b[k] if b[k] > 0.0 else 0.0
