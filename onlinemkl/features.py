"""One feature map and one label map for every learner (the Python side of the boundary).

:class:`FeatureMap` turns dict examples (river streams, the sequence labeller's
dict positions) and DataFrames into float64 rows of a model's feature space;
:class:`LabelMap` turns labels (any hashable values) into the class indices the
engines learn.  Arrays need no feature map: their columns are the features.
"""

from __future__ import annotations

import numbers
import re
import zlib

import numpy as np

from ._params import Param, Rule
from ._scaling import TRIGGER as LARGE_VALUE
from ._validation import (MAX_ABS_VALUE, FeatureTypeError, FeatureValueError, check_feature_value, check_number,
                          first_out_of_range)

__all__ = ["FeatureMap", "LabelMap", "label_key", "name_key", "MAX_FEATURES", "check_feature_cap", "hashed_column"]

#: Default ``max_features`` of the dict-input learners.  Every stored example is a dense float64
#: row over all the features seen, so the cap bounds a model's memory on a stream whose feature
#: names never stop changing (ids, words, timestamps used as keys): at 10^5 features one stored
#: row is 0.8 MB and a budget of 1000 rows 0.8 GB.  Dense data sets are far narrower (the widest
#: bundled with river or scikit-learn have 10^2 - 10^4 columns; MNIST 784, gisette 5000); text or
#: id-keyed streams wider than this belong in ``feature_hashing=<width>``.
MAX_FEATURES = 100_000


def check_feature_cap(max_features, feature_hashing, ordered="arrival"):
    """Validate the ``max_features`` / ``feature_hashing`` constructor parameters of a dict-input learner."""
    check_number("max_features", max_features, low=1, integer=True, allow_none=True,
                 hint=" (None: no cap; memory then grows with every new feature name)")
    check_number("feature_hashing", feature_hashing, low=1, integer=True, allow_none=True,
                 hint=" (the number of columns names are hashed into; None: one column per name)")
    if feature_hashing is not None and ordered != "arrival":
        raise ValueError("feature_hashing is available for the per-example learners (OBSCURE, proximal MKL)")


def _check_max_features(name, value):
    check_feature_cap(value, None)
    return value


def _check_hashing(name, value):
    check_feature_cap(1, value)
    return value


#: ``max_features`` and ``feature_hashing``, rows of the per-example river faces' parameter tables.
FEATURE_CAP_PARAMS = (
    Param("max_features", Rule("int >= 1 or None", _check_max_features), MAX_FEATURES,
          "At most this many features (every stored example is a dense row over all of them): an example\n"
          "bringing new names past the cap is rejected with a ``ValueError`` listing them, the model\n"
          "unchanged.  None: no cap.  The default is far above any dense data set's width.", faces=("river",)),
    Param("feature_hashing", Rule("int >= 1 or None", _check_hashing), None,
          "None, or a width: hash every feature name into that many fixed columns (CRC-32; colliding names\n"
          "add up), for streams whose names never stop changing (ids, words).  Memory then does not depend\n"
          "on the names seen; kernel groups of names read their names' columns.", faces=("river",)),
)


def hashed_column(name, width: int) -> int:
    """The column of feature ``name`` in a hashed map of ``width`` columns: CRC-32 of its ``repr``.

    Stable across processes and platforms (unlike ``hash()``, salted per process), so a saved
    hashed model reads the same names into the same columns; ``repr`` keeps ``1`` and ``"1"`` apart.

    >>> hashed_column("colour=red", 1024), hashed_column(3, 1024) == hashed_column("3", 1024)
    (542, False)
    """
    return zlib.crc32(repr(name).encode("utf-8", "surrogatepass")) % width


def name_key(name):
    """Sort key of feature names of mixed types (``str``, ``int``, tuples, ...).

    >>> sorted([2, "a", 1], key=name_key)
    [1, 2, 'a']
    """
    return (type(name).__name__, str(name))


class FeatureMap:
    """Feature names -> columns of float64 rows.

    A feature missing from an example reads 0 (after a ``StandardScaler`` that
    is the feature's mean); a feature not in the map is dropped at prediction.
    Values are validated *before* any new column is added, so a rejected
    example leaves the map unchanged.

    Parameters
    ----------
    ordered : {'arrival', 'sorted'}, default 'arrival'
        'arrival': a new feature gets the next column, so columns never move
        (the learners whose stored examples keep their columns).  'sorted':
        columns follow the sorted names (:func:`name_key`), so a model does not
        depend on the order in which features first appeared; a new name is
        inserted at its place and :meth:`add` returns where the old columns
        went, for the engine to remap its state.
    max_features : int or None
        At most this many columns: an example bringing names past the cap is rejected
        (``ValueError`` listing them) before the map changes.
    hashing : int or None
        Hash every name into this many fixed columns (:func:`hashed_column`; colliding
        names add up): memory does not depend on the names seen.  Names are not stored.

    Examples
    --------
    >>> fm = FeatureMap()
    >>> fm.encode({"b": 2, "a": 1.5}, grow=True).tolist()
    [2.0, 1.5]
    >>> fm.row(fm.values({"a": 1.0, "z": 9.0})).tolist()
    [0.0, 1.0]
    >>> sm = FeatureMap(ordered="sorted")
    >>> sm.add(["b"]).tolist(), sm.add(["a"]).tolist(), sm.add(["a"]), sm.names
    ([], [1], None, ['a', 'b'])
    >>> FeatureMap(max_features=2).add(["a", "b", "c"])
    Traceback (most recent call last):
    ...
    ValueError: 3 new feature name(s) ('a', 'b', 'c') would take the model past max_features=2 ...
    >>> FeatureMap(hashing=4).encode({"a": 1.0, "b": 2.0, "zz": 3.0}, grow=True).shape
    (4,)
    """

    __slots__ = ("ordered", "names", "columns", "max_features", "hashing")

    def __init__(self, ordered: str = "arrival", max_features: int | None = None, hashing: int | None = None):
        if ordered not in ("arrival", "sorted"):
            raise ValueError(f"ordered={ordered!r}: choose 'arrival' or 'sorted'")
        self.ordered = ordered
        self.max_features = max_features
        self.hashing = hashing
        self.names: list = []
        self.columns: dict = {}
        if hashing is not None:
            if ordered != "arrival":
                raise ValueError("a hashed feature map has fixed columns: ordered='arrival'")
            self.names = list(range(hashing))  # the columns; names are hashed into them, never stored

    def __len__(self):
        return len(self.names)

    def lookup(self, name):
        """The column of ``name``, or None (how kernel groups of feature names find their columns)."""
        if self.hashing is not None:
            return hashed_column(name, self.hashing)
        return self.columns.get(name)

    def new_names(self, names) -> list:
        """The names of ``names`` not in the map, each once, in order (none for a hashed map)."""
        if self.hashing is not None:
            return []
        cols = self.columns
        return list(dict.fromkeys(k for k in names if k not in cols))

    def check_room(self, new: list) -> None:
        """``ValueError`` listing ``new`` if giving them columns would pass ``max_features`` (nothing changes)."""
        cap = self.max_features
        if cap is None or len(self.names) + len(new) <= cap:
            return
        shown = ", ".join(repr(k) for k in new[:10]) + (f", ... ({len(new)} in all)" if len(new) > 10 else "")
        raise ValueError(
            f"{len(new)} new feature name(s) ({shown}) would take the model past max_features={cap} "
            f"({len(self.names)} features known): the example is rejected and the model unchanged. Raise "
            "max_features, drop the features before the learner, or use feature_hashing=<width> for a stream "
            "whose feature names never stop changing (ids, words)")

    @staticmethod
    def _checked(k, v) -> float:
        """Value ``v`` of feature ``k`` off the per-value fast path (:meth:`encode_large`): checked (real,
        finite, ``|v| <= 1e50``; the error names the feature) and as a float."""
        if type(v) is float or type(v) is int:
            if not -MAX_ABS_VALUE <= v <= MAX_ABS_VALUE:  # NaN, inf or too large: raises
                check_feature_value(k, v)
            return float(v)
        return check_feature_value(k, v)

    @classmethod
    def values(cls, x: dict) -> dict:
        """``{name: float}`` of a dict example, every value checked (finite, real)."""
        return {k: cls._checked(k, v) for k, v in x.items()}

    def encode(self, x: dict, grow: bool = False) -> np.ndarray:
        """The float64 row of dict example ``x`` ('arrival' maps: the adapters' per-example path);
        with ``grow`` unseen names get columns, after every value is checked."""
        return self.encode_large(x, grow)[0]

    def encode_large(self, x: dict, grow: bool = False) -> tuple:
        """``(row, large)``: :meth:`encode`'s row, and whether a value's magnitude is above
        ``LARGE_VALUE`` (what the input scaling needs to know, found by the value checks).

        Every value is checked: real, finite, ``|v| <= 1e50`` (the error names the feature).  Plain
        ``float``/``int`` values within ``LARGE_VALUE`` pass one comparison: this runs on every
        example of a stream, where the generic ``numbers.Real`` check would cost more than a small
        model's whole compiled step.  The known names' columns are written as they come, into a new
        row (an error discards it); the new names get columns once every value has passed.
        """
        if grow and self.ordered != "arrival":
            raise ValueError("a sorted feature map grows through add(), which reports the moved columns")
        width = self.hashing
        cols = self.columns
        out = np.zeros(len(self.names) if width is None else width)
        small = LARGE_VALUE
        large = False
        new = None
        for k, v in x.items():
            t = type(v)
            if t is float and -small <= v <= small:
                pass
            elif t is int and -small <= v <= small:
                v = float(v)
            else:
                v = self._checked(k, v)
                if not -small <= v <= small:
                    large = True
            if width is not None:
                out[hashed_column(k, width)] += v  # colliding names add up (as scikit-learn's FeatureHasher)
                continue
            c = cols.get(k)
            if c is not None:
                out[c] = v
            elif grow:
                if new is None:
                    new = []
                new.append((k, v))
        if new:
            self.add([k for k, _ in new])  # ValueError past max_features: the map unchanged
            wider = np.zeros(len(self.names))
            wider[:out.shape[0]] = out
            for k, v in new:
                wider[cols[k]] = v
            out = wider
        return out, large

    def add(self, names):
        """Give columns to the names not in the map yet.

        Returns None when no name is new, and always for 'arrival' (columns
        never move); ``ValueError`` (the map unchanged) if the new names would pass
        ``max_features``; else, for 'sorted', the new column of every old one (an
        int64 array), for the engine to remap its state.
        """
        new = self.new_names(names)
        if not new:
            return None
        self.check_room(new)
        if self.ordered == "arrival":
            for k in new:
                self.columns[k] = len(self.names)
                self.names.append(k)
            return None
        old = self.names
        self.names = sorted(old + new, key=name_key)
        self.columns = {k: i for i, k in enumerate(self.names)}
        return np.array([self.columns[k] for k in old], dtype=np.int64)

    def row(self, values: dict, width: int | None = None) -> np.ndarray:
        """The float64 row of checked ``values`` (see :meth:`values`), ``width`` columns long
        (default: the map's size); names not in the map are dropped."""
        out = np.zeros(len(self.names) if width is None else width)
        n, cols = out.shape[0], self.columns
        if self.hashing is not None:
            for k, v in values.items():
                out[hashed_column(k, self.hashing)] += v
            return out
        for k, v in values.items():
            c = cols.get(k)
            if c is not None and c < n:
                out[c] = v
        return out

    def frame(self, X, width: int | None = None) -> np.ndarray:
        """A pandas DataFrame -> float64 rows: unknown columns dropped, missing ones 0.

        Raises ``TypeError`` for a non-numeric column and ``ValueError`` for a
        NaN or infinite value, naming the column.
        """
        M = np.zeros((len(X), len(self.names) if width is None else width))
        for name in X.columns:
            c = self.lookup(name)
            if c is None or c >= M.shape[1]:
                continue
            try:
                v = np.asarray(X[name], dtype=np.float64)
            except (TypeError, ValueError):
                raise FeatureTypeError(f"feature {name!r} is not numeric; encode categorical features "
                                "(e.g. river's preprocessing.OneHotEncoder) before the learner") from None
            found = first_out_of_range(v)
            if found is not None:
                (r,), value, why = found
                if not np.isfinite(value):
                    raise FeatureValueError(f"feature {name!r} has a NaN or infinite value (row {r}); impute or drop "
                                            "it before the learner")
                raise FeatureValueError(f"feature {name!r} = {value!r} (row {r}) {why}")
            M[:, c] += v  # += : names hashed into one column add up
        return M

    def restore(self, names: list) -> None:
        """Set the names of a saved map (``ValueError`` if repeated, or unsorted for 'sorted')."""
        names = list(names)
        if self.hashing is not None:
            if names != list(range(self.hashing)):
                raise ValueError(f"a map hashed into {self.hashing} columns lists the columns 0..{self.hashing - 1}")
            return
        if self.max_features is not None and len(names) > self.max_features:
            raise ValueError(f"{len(names)} feature names for max_features={self.max_features}")
        if len(set(names)) != len(names):
            raise ValueError("a feature name is listed twice")
        if self.ordered == "sorted" and names != sorted(names, key=name_key):
            raise ValueError("the feature names must be sorted")
        self.names = names
        self.columns = {k: i for i, k in enumerate(names)}


def _check_new_label(y) -> None:
    """A label must equal itself: NaN does not, so each NaN would be found nowhere and become a new class."""
    try:
        nan = bool(y != y)
    except Exception:  # a label whose comparison fails is compared by identity: it equals itself
        nan = False
    if nan:
        raise ValueError(f"label {y!r} is NaN: a NaN never equals itself, so every NaN label would become a new "
                         "class; drop the example or give it a real label")


#: Text that is a plain decimal number: a sign, digits without a leading zero, an optional fraction.
_NUMBER_TEXT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?")


def label_key(y):
    """The canonical form under which a classifier compares label ``y``.

    Every label map of a stream classifier compares labels by it (river faces, the sequence
    labeller, the server, the command line, merging), so that one class is one label whether
    it came from a CSV file (text), JSON lines or LIBSVM (numbers) or Python:

    * a number is itself, a whole number as an ``int``: ``1``, ``1.0``, ``True`` and
      ``np.int64(1)`` are ``1``;
    * text that is a plain decimal number (``"1"``, ``"+1"``, ``"1.0"``, ``" 2.50 "``; no
      exponent, no leading zero) is that number: a CSV file's ``"1"`` is a JSON line's ``1``;
    * any other value is itself (``"spam"``, ``"01"``, ``"1e3"``, a tuple).

    Examples
    --------
    >>> [label_key(v) for v in (1, 1.0, True, "1", "+1", "1.00", " 2.5 ", "01", "spam")]
    [1, 1, 1, 1, 1, 1, 2.5, '01', 'spam']
    """
    t = type(y)
    if t is str:
        text = y.strip()
        if _NUMBER_TEXT.fullmatch(text):
            value = float(text)
            return int(value) if value.is_integer() else value
        return y
    if t is int:
        return y
    if isinstance(y, str):  # a str subclass (numpy's str_)
        return label_key(str(y))
    if isinstance(y, numbers.Real) and not isinstance(y, numbers.Integral):
        try:
            value = float(y)
        except (TypeError, ValueError, OverflowError):
            return y
        return int(value) if value.is_integer() else value
    if isinstance(y, numbers.Integral):
        return int(y)
    return y


def _label_kind(y):
    """``"number"``, ``"text"`` (text that is not a number), ``"number text"`` (fits either) or None
    (another kind of value: tuples and the like are not checked)."""
    if isinstance(y, numbers.Real):
        return "number"
    if isinstance(y, str):
        return "number text" if _NUMBER_TEXT.fullmatch(y.strip()) else "text"
    return None


#: At most this many other forms of known labels are remembered (a bound on a stream of "1.0", "1.00", ...).
_ALIASES = 64


def _shown(labels) -> str:
    out = ", ".join(repr(v) for v in labels[:6])
    return out + (f", ... ({len(labels)} in all)" if len(labels) > 6 else "")


class LabelMap:
    """Labels (any hashable values) -> class indices.

    Labels are compared by :func:`label_key`: ``1``, ``1.0``, ``True``, ``"1"`` and ``"1.0"``
    are one label, named by the first form seen.  A new label must be of a kind the model
    already has: a number is refused by a classifier whose classes are all text (``'0'``, ``'1'``
    from a CSV file: the number ``5`` is not one of them, the text ``"5"`` may become one), and
    text that is not a number (``"spam"``) by one whose classes are all numbers; either would
    otherwise become a new class silently.  A new class written as text that is a number, for a
    model whose classes are numbers, is stored as that number.  NaN is rejected (``ValueError``):
    it equals nothing, not even itself.

    Streams add labels in order of first appearance (:meth:`add`); the array
    API builds the map from the sorted ``classes_`` (:meth:`from_classes`) and
    encodes whole label arrays at once (:meth:`encode`).

    Examples
    --------
    >>> lm = LabelMap()
    >>> lm.add("cat"), lm.add("dog"), lm.add("cat"), lm.labels
    (0, 1, 0, ['cat', 'dog'])
    >>> csv = LabelMap(["0", "1"])
    >>> csv.add(1), csv.add("1.0"), csv.add("2"), csv.labels
    (1, 1, 2, ['0', '1', '2'])
    >>> csv.add(5)
    Traceback (most recent call last):
    ...
    ValueError: label 5 is a number, but this model's classes are text ('0', '1', '2'): ...
    >>> LabelMap.from_classes(np.array([3, 7])).encode(np.array([7, 3, 7])).tolist()
    [1, 0, 1]
    """

    __slots__ = ("labels", "index", "classes", "_kinds", "_alias")

    def __init__(self, labels=()):
        self.labels: list = []
        self.index: dict = {}  # label_key(label) -> index
        self.classes = None  # the sorted numpy classes_ of the array API
        self._kinds: set = set()  # "number" / "text" of the labels' forms (None: no check)
        self._alias: dict = {}  # a few other forms met of known labels ("1" for the key 1) -> index
        for y in labels:
            k = self._key(y)
            if k in self.index:
                first = self.labels[self.index[k]]
                if first == y and type(first) is type(y):
                    raise ValueError(f"the label {y!r} is listed twice")
                raise ValueError(f"the labels {first!r} and {y!r} are one label (label_key: {k!r}); list each "
                                 "class once")
            self._store(y, k)

    @staticmethod
    def _key(y):
        """``label_key(y)``, hashable (``TypeError`` naming the label otherwise)."""
        k = label_key(y)
        try:
            hash(k)
        except TypeError:
            raise TypeError(f"label {y!r} is not hashable; labels must be hashable values") from None
        return k

    def _store(self, y, key) -> int:
        idx = len(self.labels)
        self.labels.append(y)
        self.index[key] = idx
        kind = _label_kind(y)
        if kind is not None:
            self._kinds.add("number" if kind == "number" else "text")
        return idx

    def _find(self, y):
        """``(index or None, key)`` of ``y``."""
        try:
            idx = self.index.get(y)  # a label in its canonical form (most streams): no conversion
        except TypeError:
            raise TypeError(f"label {y!r} is not hashable; labels must be hashable values") from None
        if idx is not None:
            return idx, y
        idx = self._alias.get(y)
        if idx is not None:
            return idx, None
        k = label_key(y)
        idx = self.index.get(k)
        if idx is not None and len(self._alias) < _ALIASES:  # a CSV file's "1" for the key 1: found at once next time
            self._alias[y] = idx
        return idx, k

    def _check_new(self, y, key):
        """Raise ``ValueError`` for a new label the map must not add: NaN, or a kind its labels lack.
        Returns the form to store: a number for number text among numeric classes, else ``y``."""
        _check_new_label(y)
        kinds = self._kinds
        kind = _label_kind(y)
        if not kinds or kind is None:
            return y
        if kind == "number text":
            return key if kinds == {"number"} else y
        if kind in kinds:
            return y
        if kind == "number":
            raise ValueError(
                f"label {y!r} is a number, but this model's classes are text ({_shown(self.labels)}): a number "
                f"that matches none of them is refused rather than made a new class. Send one of the classes, "
                f'or the new class as text ("{key}") if it is a new one')
        raise ValueError(
            f"label {y!r} is text, but this model's classes are numbers ({_shown(self.labels)}): text that is not "
            "a number is refused rather than made a new class. Send one of the classes (as a number or its text), "
            "or a number for a new class")

    @classmethod
    def from_classes(cls, classes: np.ndarray) -> LabelMap:
        """The map of sorted, unique ``classes`` (the array API's ``classes_``)."""
        out = cls(classes.tolist())
        out.classes = classes
        return out

    def __len__(self):
        return len(self.labels)

    def known(self, y) -> bool:
        """Whether ``y`` has an index; for a new label, ``ValueError`` if :meth:`add` would refuse it
        (NaN, or a kind the classes lack) and ``TypeError`` if it is not hashable."""
        idx, k = self._find(y)
        if idx is None:
            self._check_new(y, k)
        return idx is not None

    def check(self, labels) -> None:
        """Raise as :meth:`add` would on any of ``labels`` added in order; the map is not changed."""
        trial = LabelMap.__new__(LabelMap)
        trial.labels, trial.index, trial.classes = list(self.labels), dict(self.index), None
        trial._kinds, trial._alias = set(self._kinds), dict(self._alias)
        for y in labels:
            trial.add(y)

    def add(self, y) -> int:
        """The index of ``y``, given the next one if it is new (``ValueError`` as :meth:`known`)."""
        idx, k = self._find(y)
        if idx is None:
            idx = self._store(self._check_new(y, k), k)
        return idx

    def encode(self, y: np.ndarray, binary: bool = False) -> np.ndarray:
        """Indices of a label array over :meth:`from_classes`' classes (binary: -1/+1 for the
        first/second class); a label outside them is a ``ValueError`` that says how to declare it."""
        classes = self.classes
        idx = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
        unknown = classes[idx] != y
        if np.any(unknown):
            bad = y[np.argmax(unknown)]
            raise ValueError(
                f"y contains the label {bad!r}, which is not among the declared classes {classes.tolist()}; "
                "declare every label with partial_fit(X, y, classes=...) on the first call"
            )
        if binary:
            return np.where(idx == 1, 1, -1).astype(np.int64)
        return idx.astype(np.int64)
