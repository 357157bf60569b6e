"""Boundary checks shared by every learner: the compiled code never sees bad input."""

from __future__ import annotations

import inspect
import math
import numbers
import reprlib

import numpy as np

#: The largest magnitude a feature value (or regression target) may have.  The learners square
#: values and sum the squares (group norms, distances to every stored example), raise their inner
#: products to a power (the default set's quadratic kernel computes ``(x . x)^2``, which overflows
#: float64 once ``|x|`` passes about 1e77), and a ``StandardScaler`` in front keeps a running
#: variance.  At 1e50 a degree-2 kernel over a billion features, and a squared distance summed over
#: a window of millions of rows, stay finite; no measured quantity comes near it.
MAX_ABS_VALUE = 1e50

TOO_LARGE = ("is too large: a value's magnitude must be at most 1e50 (the kernels square it and raise "
              "products of it to a power, a StandardScaler sums its square); rescale it (e.g. log1p, or other units) or "
              "drop the example")


class FeatureValueError(ValueError):
    """A feature value the learners refuse (NaN, infinite, or of magnitude above :data:`MAX_ABS_VALUE`);
    the message names the feature."""


class FeatureTypeError(TypeError):
    """A feature value that is not a real number; the message names the feature."""


#: Appended by the river learners to a feature value error: in a pipeline the value may come out
#: of a step before the learner, not from the example the user passed.
UPSTREAM_HINT = ("; if a transformer precedes this learner in a pipeline, the value may have come out of it "
                 "rather than from your data (a StandardScaler that learnt one NaN or a value near 1e155 "
                 "gives NaN for that feature on every later example): put onlinemkl.river.Guard() first in "
                 "the pipeline to refuse such an example before any step learns it")


def with_upstream_hint(exc: Exception) -> Exception:
    """``exc`` (a :class:`FeatureValueError` or :class:`FeatureTypeError`) again, with :data:`UPSTREAM_HINT`."""
    return type(exc)(f"{exc}{UPSTREAM_HINT}")


_SHORT = reprlib.Repr()
_SHORT.maxlong = _SHORT.maxstring = _SHORT.maxother = 60


def shown(value) -> str:
    """``repr(value)`` cut to about 60 characters (an int of 400 digits, a long string), for messages."""
    return _SHORT.repr(value)


def init_args(obj, args: dict) -> dict:
    """The constructor arguments of ``obj``'s class picked from ``args`` (``locals()`` in ``__init__``)."""
    names = inspect.signature(type(obj).__init__).parameters
    return {k: args[k] for k in names if k != "self"}


def store_params(obj, args: dict) -> None:
    """Keep each constructor argument as the attribute of the same name (the scikit-learn and
    river convention ``get_params``, cloning and :mod:`onlinemkl.persist` rely on); call first
    thing in ``__init__`` with ``locals()``."""
    for k, v in init_args(obj, args).items():
        setattr(obj, k, v)


def check_number(name, value, *, low=None, high=None, low_open=False, high_open=False, integer=False,
                 allow_none=False, hint=""):
    """Validate a numeric hyper-parameter; the message names it, the rule and the fix."""
    if value is None and allow_none:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name}={value!r}: expected {'an integer' if integer else 'a number'}{hint}")
    v = int(value) if integer else float(value)
    if not integer and not math.isfinite(v):
        raise ValueError(f"{name}={value!r}: must be finite{hint}")
    if low is not None and (v < low or (low_open and v == low)):
        raise ValueError(f"{name}={value!r}: must be {'>' if low_open else '>='} {low}{hint}")
    if high is not None and (v > high or (high_open and v == high)):
        raise ValueError(f"{name}={value!r}: must be {'<' if high_open else '<='} {high}{hint}")
    return v


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name}={value!r}: choose one of {', '.join(repr(c) for c in choices)}")
    return value


def float_array(name, value) -> np.ndarray:
    """``value`` as a float64 array; complex values are a ``ValueError`` and non-numeric ones a
    ``TypeError``/``ValueError`` (as numpy raises them), each naming ``name``."""
    try:
        A = np.asarray(value)
        if A.dtype.kind == "c":
            raise ValueError(f"{name}: Complex data not supported; {name} holds complex numbers, pass real ones "
                             f"(e.g. {name}.real)")
        return A.astype(np.float64, copy=False)
    except TypeError as exc:
        raise TypeError(f"{name} must be numeric (float-convertible): {exc}") from None
    except ValueError as exc:
        if "Complex" in str(exc):
            raise
        raise ValueError(f"{name} must be numeric (float-convertible): {exc}") from None


def check_rows(X, name="X", n_features=None, owner="the model"):
    """A finite float64 C-contiguous 2-D array; errors say what is wrong and where.

    Messages follow scikit-learn's wording where its estimator checks look for it; ``owner``
    (the estimator's class name) appears in the feature-count error.
    """
    if hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} is a scipy sparse matrix; sparse input is not supported: pass a dense "
                        f"array ({name}.toarray()), or use a river adapter with dict features")
    A = float_array(name, X)
    if A.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features); got a 1-D array of shape {A.shape}. "
            "Reshape your data: a single sample with X.reshape(1, -1), a single feature with X.reshape(-1, 1)"
        )
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 samples); pass at least one sample")
    if A.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={A.shape}) while a minimum of 1 is required; "
                         "pass at least one feature column")
    found = first_out_of_range(A)
    if found is not None:
        (r, c), v, why = found
        if not math.isfinite(v):
            raise ValueError(
                f"{name} contains NaN or infinite values (first at row {r}, column {c}: {v}); "
                "impute or drop them before learning"
            )
        raise ValueError(f"{name}[{r}, {c}] = {v!r} {why}")
    if n_features is not None and A.shape[1] != n_features:
        raise ValueError(
            f"{name} has {A.shape[1]} features, but {owner} is expecting {n_features} features as input; "
            "pass the same columns in the same order"
        )
    return writeable_contiguous(A)


def writeable_contiguous(A: np.ndarray) -> np.ndarray:
    """``A`` C-contiguous and writeable (a copy only if it is not): Numba types a read-only array
    apart from a writeable one, so a read-only input (a memory map, a broadcast view) would
    compile every compiled function it reaches once more (seconds) for the same arithmetic."""
    A = np.ascontiguousarray(A)
    return A if A.flags.writeable else A.copy()


def check_target(y, n_rows, name="y", what="value"):
    """A 1-D target with one value per row; a column vector is ravelled with scikit-learn's warning."""
    if y is None:
        raise ValueError(f"this estimator requires y to be passed, but the target {name} is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        from sklearn.exceptions import DataConversionWarning

        warnings.warn(f"A column-vector {name} was passed when a 1d array was expected; it is ravelled "
                      f"(pass {name}.ravel() to silence this)", DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-D with one {what} per row of X ({n_rows} rows); got shape {y.shape}")
    return y


def check_feature_value(name, value):
    """One feature value of a dict example: a finite real number of magnitude at most :data:`MAX_ABS_VALUE`.

    ``bool`` and ``numpy.bool_`` (what a boolean numpy array or DataFrame column hands out) read as 0/1,
    as they do in an array."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if not isinstance(value, numbers.Real):
        raise FeatureTypeError(
            f"feature {name!r} = {shown(value)} is not a number; encode categorical features "
            "(e.g. river's preprocessing.OneHotEncoder) before the learner"
        )
    if isinstance(value, numbers.Integral) and not -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
        raise FeatureValueError(f"feature {name!r} = {shown(value)} {TOO_LARGE}")  # before float(): it may overflow
    v = float(value)
    if not math.isfinite(v):
        raise FeatureValueError(f"feature {name!r} = {shown(value)} is not finite; impute or drop it before the learner")
    if not -MAX_ABS_VALUE <= v <= MAX_ABS_VALUE:
        raise FeatureValueError(f"feature {name!r} = {shown(value)} {TOO_LARGE}")
    return v


def check_example(x: dict) -> None:
    """Raise for the first value of dict example ``x`` that :func:`check_feature_value` rejects.

    The boundary check of the command line and the server, run on the raw example *before* the
    pipeline: the steps in front of the learner (a ``StandardScaler``) keep running statistics
    that one overflowing value would poison for good (in a river pipeline of your own,
    :class:`onlinemkl.river.Guard` does it as the pipeline's first step).
    """
    lim = MAX_ABS_VALUE
    for k, v in x.items():
        t = type(v)
        if (t is float or t is int) and -lim <= v <= lim:
            continue
        check_feature_value(k, v)


def check_target_value(y, what="a regression target"):
    """A regression target: a finite real number (not a bool) of magnitude at most :data:`MAX_ABS_VALUE`."""
    if isinstance(y, bool) or not isinstance(y, numbers.Real):
        raise ValueError(f"y={shown(y)}: {what} must be a finite number")
    if isinstance(y, numbers.Integral) and not -MAX_ABS_VALUE <= y <= MAX_ABS_VALUE:
        raise ValueError(f"y={shown(y)}: {what} {TOO_LARGE}")
    v = float(y)
    if not math.isfinite(v):
        raise ValueError(f"y={shown(y)}: {what} must be a finite number")
    if not -MAX_ABS_VALUE <= v <= MAX_ABS_VALUE:
        raise ValueError(f"y={shown(y)}: {what} {TOO_LARGE}")
    return v


def first_out_of_range(A: np.ndarray):
    """``None`` if every value of ``A`` is finite with magnitude at most :data:`MAX_ABS_VALUE`, else
    ``(index, value, why)`` of the first one that is not (one pass over ``A``)."""
    bad = ~(np.abs(A) <= MAX_ABS_VALUE)  # NaN compares False: caught too
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    v = float(A[idx])
    return idx, v, ("is NaN or infinite" if not math.isfinite(v) else TOO_LARGE)
