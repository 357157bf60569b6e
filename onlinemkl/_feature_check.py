"""Does an example have the feature names the model was trained on?

A river model predicts from whatever dict it is given: a feature it never saw is
ignored and a feature it knows that is absent reads as 0 (the training mean after a
``StandardScaler``).  A renamed column, a typo or a label column left among the
features therefore gives plausible, wrong predictions with no sign of trouble.
:class:`FeatureCheck` names both kinds so that ``onlinemkl predict`` and the server
can refuse such an example (both have a flag to allow it).

An absent feature is reported only if the model expects it in every example: behind a
river ``StandardScaler`` (which counts the examples each feature appeared in), a feature
present in every training example; without one, every known feature, except for a model
whose features are numbers (trained from LIBSVM files, where a zero is left out).  A
feature that came and went in training (sparse or late features) may be absent.

>>> from river import preprocessing
>>> from onlinemkl.river import ProximalMKLRegressor
>>> model = preprocessing.StandardScaler() | ProximalMKLRegressor()
>>> model.learn_one({"age": 30.0, "height": 1.8}, 1.0)
>>> check = FeatureCheck(model)
>>> check.message({"age": 31.0, "height": 1.7}) is None
True
>>> for part in check.message({"age": 31.0, "hieght": 1.7}).split("; "):
...     print(part)
unknown feature 'hieght' (not seen in training: it would be ignored)
missing feature 'height' (in every training example, it would read as 0, the training mean after the scaler)
"""

from __future__ import annotations

__all__ = ["FeatureCheck"]

#: river steps before the learner that keep every feature's name (so the learner's names are the input's).
_NAME_KEEPING = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "AdaptiveStandardScaler",
                 "Normalizer")
#: At most this many names are listed in a message.
_SHOWN = 8


def _names(kind, names, why):
    shown = ", ".join(map(repr, names[:_SHOWN])) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
    return f"{kind} feature{'s' if len(names) != 1 else ''} {shown} ({why})"


class FeatureCheck:
    """The feature names a fitted model knows, and the unknown and missing names of an example.

    ``model`` is a river model: an onlinemkl river learner, or a pipeline whose steps
    before the learner keep the features' names (river's scalers).  For anything else
    (another river model, a feature-hashing learner, a pipeline that renames features)
    the names are not knowable and every example passes.  The known names are read from
    the model at each call (a learning model gains features), cached while their
    number does not change.
    """

    def __init__(self, model, sparse=None):
        steps = list(getattr(model, "steps", {}).values()) if hasattr(model, "steps") else [model]
        self._learner = steps[-1] if steps else None
        self._scaled = len(steps) > 1
        # river's StandardScaler counts the examples each feature appeared in.
        self._counts = getattr(steps[0], "counts", None) if len(steps) > 1 else None
        if any(type(s).__name__ not in _NAME_KEEPING for s in steps[:-1]):
            self._learner = None
        if self._learner is not None and getattr(self._learner, "feature_hashing", None):
            self._learner = None  # the model keeps hashed columns, not names
        self._sparse = sparse
        self._cache = (-1, frozenset(), False)

    def known(self):
        """The names the model has learnt (a frozenset), or None when they cannot be known or none is."""
        if self._learner is None:
            return None
        cols = getattr(getattr(self._learner, "_features", None), "columns", None)
        if not cols:
            return None
        if len(cols) != self._cache[0]:
            names = frozenset(cols)
            numbered = all(isinstance(k, int) and not isinstance(k, bool) for k in names)
            self._cache = (len(cols), names, numbered)
        return self._cache[1]

    def problems(self, x, missing_ok=()) -> tuple:
        """``(unknown, missing)``: the names of ``x`` the model never saw, and the names it knows
        that ``x`` lacks (empty for a sparse model), except those in ``missing_ok`` (missing
        values the source marked, e.g. empty cells); both empty when the names cannot be known."""
        known = self.known()
        if known is None:
            return [], []
        unknown = [k for k in x if k not in known]
        sparse = self._cache[2] if self._sparse is None else self._sparse
        missing = []
        if not sparse and len(x) - len(unknown) < len(known):
            missing = [k for k in known if k not in x and k not in missing_ok]
            counts = self._counts
            if counts:
                most = max(counts.values())
                missing = [k for k in missing if counts.get(k, 0) == most]  # present in every example
            missing.sort(key=str)
        return unknown, missing

    def message(self, x, missing_ok=()):
        """None if ``x`` has exactly the model's features (but those in ``missing_ok``), else what
        differs (one line)."""
        unknown, missing = self.problems(x, missing_ok)
        if not unknown and not missing:
            return None
        parts = []
        if unknown:
            parts.append(_names("unknown", unknown, "not seen in training: it would be ignored"
                                if len(unknown) == 1 else "not seen in training: they would be ignored"))
        if missing:
            zero = "0, the training mean after the scaler" if self._scaled else "0"
            every = "in every training example, " if self._counts else ""
            parts.append(_names("missing", missing, f"{every}{'it' if len(missing) == 1 else 'they'} would read "
                                                    f"as {zero}"))
        return "; ".join(parts)
