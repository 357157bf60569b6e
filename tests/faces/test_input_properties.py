"""Property-based tests of the input-validation layer (Hypothesis).

The properties: a valid input is accepted and the model's outputs stay finite; an invalid one
raises ``ValueError`` or ``TypeError`` naming the feature or parameter at fault, and the
model's state is unchanged (its ``_get_state()`` compared before and after).  What is valid is
written here independently of the library: a feature value is a real number (``bool`` and
``numpy.bool_`` included) of magnitude at most 1e50; an array is 2-D, non-empty, numeric,
not complex, with the fitted number of columns.

Examples are few and derandomized (``derandomize=True``), so a run in CI is reproducible and
takes seconds.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from onlinemkl.features import FeatureMap
from streams import iter_array

#: The library's bound on a value's magnitude.  Every valid value keeps every output finite: the
#: bound sits below where the default kernels' powers overflow (the quadratic kernel's
#: ``(x.z + 1)^2`` is inf once ``|x|`` passes ~1.2e77).
LIMIT = 1e50

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MORE = settings(SETTINGS, max_examples=80)  # the array strategies have more shapes and dtypes to reach

# -- what is valid, written independently of the library ----------------------------------------


def valid_value(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return True
    if not isinstance(v, numbers.Real):
        return False
    if isinstance(v, numbers.Integral):
        return abs(int(v)) <= int(LIMIT)
    f = float(v)
    return math.isfinite(f) and abs(f) <= LIMIT


def valid_target(v) -> bool:
    return not isinstance(v, (bool, np.bool_)) and valid_value(v)


# -- strategies ---------------------------------------------------------------------------------

keys = st.one_of(
    st.integers(-3, 3),
    st.text(max_size=3),
    st.sampled_from(["", "é", "\U0001f642", "a b", "\x00", "0"]),
    st.tuples(st.integers(0, 2), st.text(max_size=2)),
)

special_values = st.sampled_from([
    1e200, -1e200, 1e50, -1e50, 1.0000001e50, 1e100, 5e-324, -0.0, math.nan, math.inf, -math.inf,
    10 ** 400, -(10 ** 400), 10 ** 50, 10 ** 51, 2 ** 63, None, "1.5", "", b"1", 1 + 0j,
    np.float32(1.5), np.float32(np.nan), np.float16(np.inf), np.int64(-7), np.uint64(2 ** 63),
    np.int8(-128), np.bool_(True), np.bool_(False), np.longdouble(1e200), np.float64(-0.0),
])

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-10, 10),
    st.integers(),
    st.booleans(),
    special_values,
)

examples = st.dictionaries(keys, values, min_size=1, max_size=4)


def named_in(exc, names) -> bool:
    """Whether the message of ``exc`` names one of ``names`` (as ``repr``, how the messages quote them)."""
    msg = str(exc)
    return any(repr(k) in msg for k in names)


# -- model state --------------------------------------------------------------------------------


def snapshot(model):
    state, arrays = model._get_state()
    return repr(state), {k: np.array(v, copy=True) for k, v in arrays.items()}


def assert_same_state(before, after):
    assert before[0] == after[0], "the model's state changed after a rejected input"
    assert before[1].keys() == after[1].keys()
    for k in before[1]:
        assert np.array_equal(before[1][k], after[1][k], equal_nan=True), f"array {k!r} changed"


# -- one value ----------------------------------------------------------------------------------


@SETTINGS
@given(key=keys, value=values)
def test_feature_value_accepted_or_named(key, value):
    """A value is read as its float, or rejected with a message naming its feature."""
    if valid_value(value):
        out = FeatureMap.values({key: value})
        assert list(out) == [key]
        assert math.isfinite(out[key]) and out[key] == float(value)
    else:
        with pytest.raises((ValueError, TypeError)) as info:
            FeatureMap.values({key: value})
        assert repr(key) in str(info.value)


def test_numpy_bool_is_a_feature_value_like_bool():
    """``numpy.bool_`` (what numpy arrays and pandas hand out) reads as 0/1, as ``bool`` does."""
    assert FeatureMap.values({"a": np.bool_(True), "b": np.bool_(False)}) == {"a": 1.0, "b": 0.0}


@pytest.mark.parametrize("value", [10 ** 400, "x" * 10_000, -(10 ** 1000)], ids=["int400", "str10k", "int1000"])
def test_a_huge_value_is_shown_short_in_the_message(value):
    """The message names the feature and quotes the value cut short (not 400 digits or 10^4 characters)."""
    with pytest.raises((ValueError, TypeError)) as info:
        FeatureMap.values({"salary": value})
    assert "'salary'" in str(info.value) and len(str(info.value)) < 400
    if not isinstance(value, str):
        from onlinemkl.river import ProximalMKLRegressor

        with pytest.raises(ValueError) as info:
            ProximalMKLRegressor().learn_one({"a": 1.0}, value)
        assert "y=" in str(info.value) and len(str(info.value)) < 400


# -- river faces: learn_one / predict_one on odd dicts ------------------------------------------

RIVER = ("OBSCUREClassifier", "ProximalMKLClassifier", "ProximalMKLRegressor", "PolyMKLRegressor",
         "NonlinearKRRRegressor")


def river_model(name, **params):
    import onlinemkl.river

    model = getattr(onlinemkl.river, name)(**params)
    rng = np.random.default_rng(0)
    for i in range(6):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        model.learn_one(x, ("u", "v")[i % 2] if name.endswith("Classifier") else float(rng.normal()))
    return model


def check_outputs(model, x):
    if hasattr(model, "predict_proba_one"):
        proba = model.predict_proba_one(x)
        assert all(math.isfinite(p) for p in proba.values()), proba
        assert model.predict_one(x) in ("u", "v")
    else:
        p = model.predict_one(x)
        assert isinstance(p, float) and math.isfinite(p), p


@pytest.mark.parametrize("name", RIVER)
def test_river_learn_one_odd_dicts(name):
    model = river_model(name)
    label = "u" if name.endswith("Classifier") else 1.5

    @SETTINGS
    @given(x=examples)
    def prop(x):
        bad = [k for k, v in x.items() if not valid_value(v)]
        before = snapshot(model)
        if not bad:
            trained = copy.deepcopy(model)
            trained.learn_one(x, label)
            check_outputs(trained, x)
            return
        with pytest.raises((ValueError, TypeError)) as info:
            model.learn_one(x, label)
        assert named_in(info.value, bad), str(info.value)
        assert_same_state(before, snapshot(model))
        with pytest.raises((ValueError, TypeError)) as info:
            model.predict_one(x)
        assert named_in(info.value, bad), str(info.value)

    prop()


@pytest.mark.parametrize("name", ["ProximalMKLRegressor", "PolyMKLRegressor", "NonlinearKRRRegressor"])
def test_river_regression_targets(name):
    model = river_model(name)

    @SETTINGS
    @given(y=values)
    def prop(y):
        x = {"a": 0.5, "b": -0.25}
        before = snapshot(model)
        if valid_target(y):
            trained = copy.deepcopy(model)
            trained.learn_one(x, y)
            check_outputs(trained, x)
            return
        with pytest.raises((ValueError, TypeError)) as info:
            model.learn_one(x, y)
        assert "y=" in str(info.value) or "target" in str(info.value)
        assert_same_state(before, snapshot(model))

    prop()


labels = st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=True), st.none(),
                   st.tuples(st.integers(0, 2), st.text(max_size=1)), st.booleans())


@pytest.mark.parametrize("name", ["OBSCUREClassifier", "ProximalMKLClassifier"])
def test_river_odd_labels(name):
    """Any hashable label that equals itself is a class, unless it is a number and the classes are text
    ('u', 'v': a number is refused rather than made a new class); NaN and None (no label) are rejected.
    A refused label is named in the error and leaves the model unchanged."""

    @SETTINGS
    @given(y=labels)
    def prop(y):
        model = river_model(name)
        x = {"a": 0.5, "b": -0.25}
        before = snapshot(model)
        number = isinstance(y, numbers.Real)
        if y is not None and y == y and not number:
            model.learn_one(x, y)
            proba = model.predict_proba_one(x)
            assert all(math.isfinite(p) for p in proba.values())
            return
        with pytest.raises(ValueError) as info:
            model.learn_one(x, y)
        assert "label" in str(info.value)
        assert_same_state(before, snapshot(model))

    prop()


# -- river faces: learn_many on odd DataFrames ----------------------------------------------------

frame_values = st.one_of(st.floats(-5, 5), st.sampled_from([math.nan, math.inf, 1e200, -0.0, 7, True]))


@st.composite
def frames(draw):
    n_rows = draw(st.integers(0, 4))
    names = draw(st.lists(st.sampled_from(["a", "b", 3, "é", ("t", 1)]), max_size=3, unique=True))
    data = {k: draw(st.lists(frame_values, min_size=n_rows, max_size=n_rows)) for k in names}
    frame = pd.DataFrame(data, index=range(n_rows), columns=names)
    if names and draw(st.booleans()):
        frame = frame.astype(object)
    return frame


@pytest.mark.parametrize("name", RIVER[:2] + RIVER[3:])
def test_river_learn_many_odd_frames(name):
    model = river_model(name)
    classifier = name.endswith("Classifier")

    @SETTINGS
    @given(X=frames())
    def prop(X):
        y = pd.Series(["u", "v"] * len(X))[:len(X)] if classifier else pd.Series(np.linspace(0, 1, len(X)))
        bad = [c for c in X.columns if not all(valid_value(v) for v in X[c].tolist())]
        before = snapshot(model)
        if not bad:
            trained = copy.deepcopy(model)
            trained.learn_many(X, y)
            if len(X) and len(X.columns):
                out = trained.predict_proba_many(X) if classifier else trained.predict_many(X)
                assert np.all(np.isfinite(np.asarray(out, dtype=float)))
            return
        with pytest.raises((ValueError, TypeError)) as info:
            model.learn_many(X, y)
        assert named_in(info.value, bad), str(info.value)
        assert_same_state(before, snapshot(model))

    prop()


# -- scikit-learn faces: partial_fit / predict on odd arrays ---------------------------------------

SKLEARN = ("OBSCUREClassifier", "ProximalMKLClassifier", "ProximalMKLRegressor", "PolyMKLRegressor",
           "NonlinearKRRRegressor")

array_values = st.one_of(st.floats(-5, 5), st.sampled_from([math.nan, math.inf, -math.inf, 1e200, -0.0, 1e50, 1e100]))


@st.composite
def odd_arrays(draw):
    """Arrays of 0-3 dimensions, of float, int, bool and object dtypes, C or Fortran order, or a strided view."""
    if draw(st.booleans()):  # half of them valid but for their layout or dtype: (1-4, 2), finite values
        shape = (draw(st.integers(1, 4)), 2)
        dtype = draw(st.sampled_from(["float64", "float32", "int64", "int8", "bool", "object"]))
        A = draw(hnp.arrays(np.float64, shape, elements=st.floats(-5, 5)))
    else:
        shape = draw(st.one_of(st.tuples(st.integers(0, 4), st.integers(0, 3)),
                               st.sampled_from([(3,), (0,), (2, 2, 2), ()])))
        dtype = draw(st.sampled_from(["float64", "float32", "int64", "int8", "bool", "object", "complex128"]))
        A = draw(hnp.arrays(np.float64, shape, elements=array_values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN / inf / 1e200 cast to an integer or float32
        A = A.astype(dtype)
    layout = draw(st.sampled_from(["C", "F", "strided"]))
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "strided" and A.ndim == 2:
        wide = np.zeros((A.shape[0], 2 * A.shape[1]), dtype=A.dtype)
        wide[:, ::2] = A
        A = wide[:, ::2]
    return A


def valid_rows(A, n_features) -> bool:
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] != n_features or A.dtype.kind == "c":
        return False
    F = A.astype(np.float64)
    return bool(np.all(np.abs(F) <= LIMIT))


def sklearn_model(name):
    import onlinemkl

    model = getattr(onlinemkl, name)()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    if name.endswith("Classifier"):
        model.partial_fit(X, np.arange(12) % 2, classes=[0, 1])
    else:
        model.partial_fit(X, rng.normal(size=12))
    return model


@pytest.mark.parametrize("name", SKLEARN)
def test_sklearn_partial_fit_odd_arrays(name):
    model = sklearn_model(name)
    classifier = name.endswith("Classifier")

    @MORE
    @given(X=odd_arrays())
    def prop(X):
        n = X.shape[0] if X.ndim else 0
        y = np.arange(n) % 2 if classifier else np.linspace(-1, 1, n)
        before = snapshot(model)
        if valid_rows(X, 2):
            trained = copy.deepcopy(model)
            trained.partial_fit(X, y)
            assert np.all(np.isfinite(trained.decision_function(X) if classifier else trained.predict(X)))
            return
        with pytest.raises((ValueError, TypeError)) as info:
            model.partial_fit(X, y)
        assert "X" in str(info.value), str(info.value)
        assert_same_state(before, snapshot(model))
        with pytest.raises((ValueError, TypeError)) as info:
            model.predict(X)
        assert "X" in str(info.value), str(info.value)

    prop()


@pytest.mark.parametrize("name", SKLEARN)
def test_sklearn_fit_odd_arrays(name):
    """``fit`` from scratch: any number of columns is valid; a classifier needs two classes, so two rows."""
    import onlinemkl

    cls = getattr(onlinemkl, name)
    classifier = name.endswith("Classifier")

    @MORE
    @given(X=odd_arrays())
    def prop(X):
        n = X.shape[0] if X.ndim else 0
        y = np.arange(n) % 2 if classifier else np.linspace(-1, 1, n)
        model = cls()
        ok = X.ndim == 2 and X.shape[1] >= 1 and valid_rows(X, X.shape[1]) and (n >= 2 or not classifier)
        if ok:
            model.fit(X, y)
            assert np.all(np.isfinite(model.decision_function(X) if classifier else model.predict(X)))
            return
        with pytest.raises((ValueError, TypeError)) as info:
            model.fit(X, y)
        assert "X" in str(info.value) or (classifier and "class" in str(info.value)), str(info.value)
        assert not hasattr(model, "_engine"), "a rejected fit left a fitted estimator"

    prop()


@pytest.mark.parametrize("name", ["ProximalMKLRegressor", "PolyMKLRegressor", "NonlinearKRRRegressor"])
def test_sklearn_odd_targets(name):
    model = sklearn_model(name)

    @SETTINGS
    @given(y=st.lists(array_values, min_size=3, max_size=3))
    def prop(y):
        X = np.array([[0.1, 0.2], [0.3, -0.4], [1.0, 0.5]])
        before = snapshot(model)
        if all(valid_target(v) for v in y):
            trained = copy.deepcopy(model)
            trained.partial_fit(X, y)
            assert np.all(np.isfinite(trained.predict(X)))
            return
        with pytest.raises(ValueError) as info:
            model.partial_fit(X, y)
        assert "y" in str(info.value)
        assert_same_state(before, snapshot(model))

    prop()


# -- streams.iter_array ---------------------------------------------------------------------------


@MORE
@given(X=odd_arrays())
def test_iter_array_rows(X):
    """A 2-D array streams one dict per row, NaN left out; other shapes and inf raise, naming X or the row."""
    if X.ndim != 2:
        with pytest.raises(ValueError, match="X must be 2-D"):
            iter_array(X)
        return
    F = X.astype(np.complex128) if X.dtype.kind == "c" else X
    rows = list(range(X.shape[0]))
    infinite = [i for i in rows if X.dtype.kind in "fc" and np.any(np.isinf(F[i]))]
    if X.dtype.kind == "O":
        infinite = [i for i in rows if any(isinstance(v, float) and math.isinf(v) for v in X[i])]
    if infinite:
        with pytest.raises(ValueError, match=f"row {infinite[0]}"):
            list(iter_array(X))
        return
    out = list(iter_array(X))
    assert len(out) == X.shape[0]
    for i, (x, y) in enumerate(out):
        assert y is None
        expected = {j: v for j, v in enumerate(X[i].tolist()) if not (isinstance(v, float) and v != v)}
        assert x == expected


@pytest.mark.parametrize("name", ["OBSCUREClassifier", "ProximalMKLClassifier", "ProximalMKLRegressor"])
def test_huge_valid_value_keeps_outputs_finite(name):
    """A value at the bound (1e50) is valid: learning it keeps every output finite; 1e100 is refused,
    naming the feature, and the model is unchanged."""
    model = river_model(name)
    with pytest.raises(ValueError, match="feature 'a' = 1e\\+100 is too large"):
        model.learn_one({"a": 1e100, "b": 1.0}, "u" if name.endswith("Classifier") else 1.0)
    x = {"a": 1e50, "b": 1.0}
    model.learn_one(x, "u" if name.endswith("Classifier") else 1.0)
    check_outputs(model, x)
    check_outputs(model, {"a": 0.5, "b": 0.1})


@pytest.mark.parametrize("name", ["OBSCUREClassifier", "ProximalMKLClassifier", "ProximalMKLRegressor"])
def test_a_value_at_the_bound_keeps_outputs_finite_without_scaling(name):
    """The bound holds for the kernels themselves, not only behind the learner's standardisation."""
    model = river_model(name, scale=False)
    x = {"a": 1e50, "b": 1.0}
    model.learn_one(x, "u" if name.endswith("Classifier") else 1.0)
    check_outputs(model, x)
    check_outputs(model, {"a": 0.5, "b": 0.1})


@pytest.mark.parametrize("name", [n for n in SKLEARN if n.endswith("Classifier")])
def test_partial_fit_refuses_other_classes_later_and_changes_nothing(name):
    """``classes`` on a later ``partial_fit`` call is the first call's, or an error naming both."""
    model = sklearn_model(name)
    before = snapshot(model)
    X = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"classes=\[0, 1, 2\] differs from the first call's \[0, 1\]"):
        model.partial_fit(X, [0, 1], classes=[0, 1, 2])
    assert_same_state(before, snapshot(model))
    model.partial_fit(X, [0, 1], classes=[1, 0])  # the same set, in any order
