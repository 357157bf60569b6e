"""Every learner with its defaults over a grid of river's synthetic streams and awkward variants.

Each case is one prequential run (predict, then learn, example by example; the scikit-learn
faces predict a mini-batch of :data:`BATCH` rows, then ``partial_fit`` it) of one learner on one
generator at one seed, with one variant of the stream.  Asserted: no exception on the (valid)
input, finite outputs, and a score better than the trivial prequential baseline computed at the
same positions: for regression a mean absolute error below the running mean's, for
classification an accuracy above the majority class's (the class seen most often so far).

The variants (:data:`VARIANTS`) stress the input layer and the learners' numerics: a river
``StandardScaler`` in front (or not; the scikit-learn faces get scikit-learn's, fitted batch by
batch), regression targets multiplied by 1e-3 or 1e6 (each error compared with the baseline's
on the same scale), a constant and a duplicated feature added, every row twice in a row, one
class only for the first hundred rows (the other classes' rows held back, then the stream goes
on), and an abrupt concept switch halfway (the features swap roles).  The full product of
learners, generators, seeds and variants would take minutes, so each seed gets a scaled or raw
input (by parity) and one variant in rotation, the rotation shifted per generator: every
generator runs at :data:`N_SEEDS` seeds, and every (input, variant) pair meets several
generators.  The mini-batch regressors (a solver per mini-batch, most of the module's time) run
each case on one face: the river face at the first half of the seeds, the scikit-learn face at
the second.

Streams are :data:`N_ROWS` = 300 rows (about nine mini-batches of 32), Agrawal's 600 (:data:`ROWS`).  Shorter streams make the
comparison a coin toss: on 192 rows PolyMKL loses to the running mean on FriedmanDrift at seeds
that it wins on 300, and the hard classification generators (LED, Waveform, RandomRBF) need about
a hundred examples before any learner beats the majority class.  Longer streams cost more than the
module's minute: a per-example learner's step grows with the examples it stores.  Generators that
give (nearly) one class, or that no learner here beats the majority of in 300 rows (Agrawal's
functions 7 and 9, RandomTree), are left out: the comparison would say nothing about robustness.

:data:`KNOWN_WEAK` lists the cases that fail today, each for a stated reason; they are marked
``xfail(strict=False)`` there and nowhere else.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from river import preprocessing
from river.datasets import synth

# Every case is an accuracy comparison on a data set: `-m "not accuracy"` skips the grid.
pytestmark = pytest.mark.accuracy

N_ROWS = 300
#: Generators whose streams are longer: Agrawal's classes are crisp rules on one or two of nine raw
#: attributes (an age band, a salary threshold), which a smooth kernel over all nine standardised
#: features needs about 600 examples to find (at 300, function 0 is at the majority class's
#: accuracy behind a StandardScaler too).
ROWS = {"Agrawal": 600}
N_SEEDS = 10
BATCH = 32  # rows per partial_fit of the scikit-learn faces (the river mini-batch faces' default batch_size)

# -- the cases that fail today, each with its reason: (face, learner, generator, seed) -------------

#: Agrawal's function 4 at seed 4 with every row twice: 300 distinct examples, four in five of one
#: class, the other given by bands of age, salary and loan.  Predicted a batch of 32 before learning
#: it, no learner here beats the majority class on it: a batch SVC on the mean of the default
#: kernels refitted on all the rows before each batch reaches 0.789 against 0.796, these faces 0.775
#: and 0.764 (the proximal face 0.771 learning each distinct row once, and 0.796 on rows standardised
#: by the whole stream's statistics: neither the duplicates nor ``scale='auto'`` is the cause).  The
#: river faces pass the same rows only because a test-then-train run predicts each second copy right
#: after learning the first: on the first copies they reach 0.743 and 0.760 against the majority's
#: 0.773.
_AGRAWAL_DUP = ("Agrawal's function 4 with every row twice (300 distinct examples, 80% one class) in batches of 32: "
                "at the majority class's accuracy for a refitted batch SVC too")
KNOWN_WEAK: dict = {
    ("sklearn", "OBSCUREClassifier", "Agrawal", 4): _AGRAWAL_DUP,  # duplicated rows: 0.775 vs 0.796
    ("sklearn", "ProximalMKLClassifier", "Agrawal", 4): _AGRAWAL_DUP,  # duplicated rows: 0.764 vs 0.796
}

# -- streams ------------------------------------------------------------------------------------


def _one_hot(x):
    """Mv's categorical features one-hot encoded (the learners take numbers only)."""
    out = {}
    for k, v in x.items():
        if isinstance(v, str):
            out[f"{k}={v}"] = 1.0
        else:
            out[k] = v
    return out


REGRESSION = {
    "Friedman": lambda s: synth.Friedman(seed=s),
    "FriedmanDrift": lambda s: synth.FriedmanDrift(drift_type="gra", position=(N_ROWS // 3, 2 * N_ROWS // 3), seed=s),
    "Planes2D": lambda s: synth.Planes2D(seed=s),
    "Mv": lambda s: ((_one_hot(x), y) for x, y in synth.Mv(seed=s)),
}

CLASSIFICATION = {
    # functions 7 and 9 give (nearly) one class: nothing to beat the majority with
    "Agrawal": lambda s: synth.Agrawal(classification_function=(0, 1, 2, 3, 4, 5, 6, 8)[s % 8], seed=s),
    "SEA": lambda s: synth.SEA(variant=s % 4, seed=s),
    "Hyperplane": lambda s: synth.Hyperplane(seed=s, n_features=10),
    "RandomRBF": lambda s: synth.RandomRBF(seed_model=s, seed_sample=s, n_classes=3),
    "Sine": lambda s: synth.Sine(classification_function=s % 4, seed=s),
    "LED": lambda s: synth.LED(seed=s, noise_percentage=0.1),
    "Waveform": lambda s: synth.Waveform(seed=s),
    "STAGGER": lambda s: synth.STAGGER(classification_function=s % 3, seed=s),
    "Mixed": lambda s: synth.Mixed(classification_function=s % 2, seed=s),
}


def _take(it, n):
    return list(itertools.islice(iter(it), n))


def _one_class_first(make, seed, n, rows=100):
    """The first ``rows`` examples of one class (the first one drawn), then the held-back ones and the rest."""
    it = iter(make(seed))
    head, held = [], []
    first = None
    while len(head) < rows:
        x, y = next(it)
        if first is None:
            first = y
        (head if y == first else held).append((x, y))
    return (head + held + _take(it, n))[:n]


def _drift(make, seed, n):
    """A concept switch halfway: the second half's features take each other's places."""
    rows = _take(make(seed), n)
    keys = sorted({k for x, _ in rows for k in x}, key=str)
    perm = keys[1:] + keys[:1]
    half = n // 2
    return rows[:half] + [({perm[keys.index(k)]: v for k, v in x.items()}, y) for x, y in rows[half:]]


#: the variants besides scaling; 'y*' apply to regression only, 'one_class_first' to classification only
VARIANTS = ("plain", "const_dup", "dup_rows", "drift", "y*1e-3", "y*1e6", "one_class_first")


def variants_for(task):
    drop = "one_class_first" if task == "regression" else "y*"
    return [v for v in VARIANTS if not v.startswith(drop)]


@functools.lru_cache(maxsize=None)
def stream(task, generator, seed, variant, n=N_ROWS):
    """The list of ``(x, y)`` of one case (made once per module run: the learners only read it)."""
    make = (REGRESSION if task == "regression" else CLASSIFICATION)[generator]
    if variant == "one_class_first":
        return _one_class_first(make, seed, n)
    if variant == "drift":
        return _drift(make, seed, n)
    if variant == "dup_rows":
        rows = _take(make(seed), n // 2)
        return [r for r in rows for _ in (0, 1)]
    rows = _take(make(seed), n)
    if variant == "const_dup":
        first = next(iter(rows[0][0]))
        return [({**x, "const": 3.0, "dup": x[first]}, y) for x, y in rows]
    if variant.startswith("y*"):
        scale = float(variant[2:])
        return [(x, y * scale) for x, y in rows]
    return rows


def cases(task):
    """``(generator, seed, scaled, variant)`` of the grid (see the module docstring)."""
    names = list(REGRESSION if task == "regression" else CLASSIFICATION)
    var = variants_for(task)
    for g, name in enumerate(names):
        for seed in range(N_SEEDS):
            yield name, seed, bool(seed % 2), var[(seed // 2 + g) % len(var)]


# -- learners -----------------------------------------------------------------------------------

RIVER_CLASSIFIERS = ("OBSCUREClassifier", "ProximalMKLClassifier")
RIVER_REGRESSORS = ("ProximalMKLRegressor", "PolyMKLRegressor", "NonlinearKRRRegressor")


def river_model(name, scaled):
    import onlinemkl.river

    model = getattr(onlinemkl.river, name)()
    return preprocessing.StandardScaler() | model if scaled else model


def sklearn_model(name):
    import onlinemkl

    return getattr(onlinemkl, name)()


# -- prequential runs ---------------------------------------------------------------------------


def _finite_proba(proba, where):
    assert all(math.isfinite(v) for v in proba.values()), f"non-finite probabilities {proba} at {where}"


def run_river(task, name, rows, scaled):
    """(learner's score, baseline's score): MAEs for regression, accuracies for classification.

    A mini-batch regressor's predictions change only when a mini-batch completes (after its
    first one), so from then on they are made with ``predict_many`` a mini-batch at a time,
    at the same positions as a ``predict_one`` loop would (the scaler in front, if any, frozen
    over the mini-batch).
    """
    model = river_model(name, scaled)
    if task == "classification":
        hits = base = 0
        seen: dict = {}
        for i, (x, y) in enumerate(rows):
            p = model.predict_one(x)
            _finite_proba(model.predict_proba_one(x), f"row {i}")
            hits += p == y
            base += bool(seen) and max(seen, key=seen.get) == y
            model.learn_one(x, y)
            seen[y] = seen.get(y, 0) + 1
        return hits / len(rows), base / len(rows)
    learner = model[-1] if scaled else model
    batch = getattr(learner, "batch_size", 1)
    err = base = total = 0.0
    i = 0
    while i < len(rows):
        chunk = rows[i:i + batch] if i >= batch > 1 else rows[i:i + 1]
        if len(chunk) > 1:  # the scaler per example: river's transform_many takes only str column names
            xs = [model[0].transform_one(x) for x, _ in chunk] if scaled else [x for x, _ in chunk]
            preds = learner.predict_many(pd.DataFrame(xs).fillna(0.0)).tolist()  # absent features read 0
        else:
            preds = [model.predict_one(chunk[0][0])]
        for (x, y), p in zip(chunk, preds):
            assert isinstance(p, float) and math.isfinite(p), f"prediction {p!r} at row {i}"
            err += abs(p - y)
            base += abs((total / i if i else 0.0) - y)
            model.learn_one(x, y)
            total += y
            i += 1
    return err / len(rows), base / len(rows)


def _arrays(rows):
    keys = sorted({k for x, _ in rows for k in x}, key=str)
    X = np.array([[float(x.get(k, 0.0)) for k in keys] for x, _ in rows])
    return X, [y for _, y in rows]


def run_sklearn(task, name, rows, scaled):
    """As :func:`run_river` for a scikit-learn face fed by ``partial_fit`` on mini-batches of :data:`BATCH`
    rows; the first batch (nothing learnt yet) is scored by neither the learner nor the baseline."""
    from sklearn.preprocessing import StandardScaler

    model = sklearn_model(name)
    X, ys = _arrays(rows)
    scaler = StandardScaler() if scaled else None
    classes = sorted(set(ys), key=str) if task == "classification" else None
    if classes is not None and len(classes) < 2:
        pytest.skip("one class in the whole stream")
    score = base = 0.0
    history: list = []
    scored = 0
    for start in range(0, len(rows), BATCH):
        Xb, yb = X[start:start + BATCH], ys[start:start + BATCH]
        if scaler is not None:
            scaler.partial_fit(Xb)
            Xb = scaler.transform(Xb)
        if start:
            pred = model.predict(Xb)
            if task == "regression":
                assert np.all(np.isfinite(pred)), f"non-finite predictions {pred}"
                mean = float(np.mean(history))
                score += float(np.sum(np.abs(pred - np.asarray(yb))))
                base += float(np.sum(np.abs(mean - np.asarray(yb))))
            else:
                assert np.all(np.isfinite(model.decision_function(Xb))), "non-finite decision values"
                score += float(np.sum(pred == np.asarray(yb, dtype=object)))
                values, counts = np.unique(np.asarray(history, dtype=object).astype(str), return_counts=True)
                majority = values[np.argmax(counts)]
                base += float(np.sum(np.asarray(yb, dtype=object).astype(str) == majority))
            scored += len(yb)
        if task == "classification":
            model.partial_fit(Xb, np.asarray(yb), classes=np.asarray(classes))
        else:
            model.partial_fit(Xb, np.asarray(yb, dtype=np.float64))
        history.extend(yb)
    return score / scored, base / scored


#: the slow learners (a solver per mini-batch): each case runs on one face, the river face at the
#: first half of the seeds and the scikit-learn face at the second
ONE_FACE_PER_CASE = ("PolyMKLRegressor", "NonlinearKRRRegressor")


def _params(task, learners):
    out = []
    for name in learners:
        for generator, seed, scaled, variant in cases(task):
            faces = ("river", "sklearn")
            if name in ONE_FACE_PER_CASE:
                faces = faces[seed >= N_SEEDS // 2:][:1]
            for face in faces:
                key = (face, name, generator, seed)
                marks = []
                if key in KNOWN_WEAK:
                    marks = [pytest.mark.xfail(reason=KNOWN_WEAK[key], strict=False)]
                case_id = f"{face}-{name}-{generator}-{seed}-{'scaled' if scaled else 'raw'}-{variant}"
                out.append(pytest.param(face, name, generator, seed, scaled, variant, marks=marks, id=case_id))
    return out


def check_case(task, face, name, generator, seed, scaled, variant):
    rows = stream(task, generator, seed, variant, n=ROWS.get(generator, N_ROWS))
    run = run_river if face == "river" else run_sklearn
    score, baseline = run(task, name, rows, scaled)
    if task == "regression":
        assert math.isfinite(score) and score < baseline, \
            f"prequential MAE {score:.6g} not below the running mean's {baseline:.6g}"
    else:
        assert score > baseline, f"prequential accuracy {score:.4f} not above the majority class's {baseline:.4f}"


@pytest.mark.parametrize("face, name, generator, seed, scaled, variant",
                         _params("regression", RIVER_REGRESSORS))
def test_regression_grid(face, name, generator, seed, scaled, variant):
    check_case("regression", face, name, generator, seed, scaled, variant)


@pytest.mark.parametrize("face, name, generator, seed, scaled, variant",
                         _params("classification", RIVER_CLASSIFIERS))
def test_classification_grid(face, name, generator, seed, scaled, variant):
    check_case("classification", face, name, generator, seed, scaled, variant)
