"""Parameter tables (``onlinemkl._params``): one declaration per parameter, from which each face's
signature, docstring and validation are built."""

import inspect

import numpy as np
import pytest

import onlinemkl
import onlinemkl.river
from onlinemkl._params import FACES, Bool, Choice, Int, Param, Real, Table, face

#: The learners with a river and a scikit-learn face, both built from one table.
TABLED = [("NonlinearKRRRegressor", "onlinemkl.nonlinear.engine"), ("PolyMKLRegressor", "onlinemkl.polymkl.engine"),
          ("OBSCUREClassifier", "onlinemkl.obscure.engine"), ("ProximalMKLClassifier", "onlinemkl.proximal._setup"),
          ("ProximalMKLRegressor", "onlinemkl.proximal._setup")]
MINIBATCH = TABLED[:2]


def faces_of(name):
    return {"sklearn": getattr(onlinemkl, name), "river": getattr(onlinemkl.river, name)}


@pytest.mark.parametrize("name, module", TABLED)
def test_each_face_takes_the_table_rows_with_their_defaults(name, module):
    table = faces_of(name)["sklearn"]._params
    for face_name, cls in faces_of(name).items():
        assert cls._params is table
        sig = inspect.signature(cls.__init__).parameters
        rows = table.for_face(face_name)
        assert list(sig)[1:] == [p.name for p in rows]
        for p in rows:
            assert sig[p.name].default == p.default_for(face_name)
        doc = inspect.getdoc(cls)
        assert "{parameters}" not in doc
        for p in rows:
            assert f"\n{p.name} : {p.rule.describe()}, default={p.default_for(face_name)!r}\n" in doc


@pytest.mark.parametrize("name, module", TABLED)
def test_a_default_that_differs_between_faces_is_shown_on_both(name, module):
    table = faces_of(name)["sklearn"]._params
    both = [p for p in table if p.fit_default is not None and set(FACES) <= set(p.faces)
            and p.default_for("sklearn") != p.default_for("river")]
    # OBSCURE's faces agree on every default; the others' batch fit takes some of its own
    assert bool(both) == (name != "OBSCUREClassifier"), [p.name for p in both]
    for p in both:
        assert f"Default on the river face: ``{p.default!r}``" in inspect.getdoc(faces_of(name)["sklearn"])
        assert (f"Default on the scikit-learn face (batch ``fit``): ``{p.fit_default!r}``"
                in inspect.getdoc(faces_of(name)["river"]))


@pytest.mark.parametrize("name, module", MINIBATCH)
def test_both_faces_refuse_a_bad_value_naming_the_parameter_and_its_rule(name, module):
    river_cls, sk_cls = faces_of(name)["river"], faces_of(name)["sklearn"]
    X = np.random.default_rng(0).normal(size=(20, 3))
    for bad in ({"degree": 0}, {"eta": -1.0}, {"standardize": "yes"}, {"budget": 0}, {"lam": -1.0}):
        (key, value), = bad.items()
        rule = sk_cls._params[key].rule.describe()
        with pytest.raises((ValueError, TypeError), match=f"{key}={value!r}"):
            river_cls(**bad)
        with pytest.raises((ValueError, TypeError), match=f"{key}={value!r}") as info:
            sk_cls(**bad).fit(X, X[:, 0])
        assert rule in str(info.value) or "choose one of" in str(info.value) or key == "lam"


@pytest.mark.parametrize("name, module", MINIBATCH)
def test_cloning_keeps_every_parameter(name, module):
    from sklearn.base import clone

    sk = faces_of(name)["sklearn"](degree=3, budget=33)
    assert clone(sk).get_params() == sk.get_params()
    rv = faces_of(name)["river"](degree=3, budget=33, batch_size=5)
    assert rv.clone()._get_params() == rv._get_params()


#: A value each per-example learner's table refuses, per parameter (the error must name it).
BAD_VALUES = {"p": 3.0, "lam": -1.0, "C": 0.0, "eta": -0.5, "switch_after": 0, "pegasos": "yes", "budget": 0,
              "eviction": "newest", "loss": "squared_hinge", "replay": -1, "replay_window": 0, "scale": "sometimes",
              "regularizer": "l3", "q": 2.5, "sigma": -1.0, "l1_ratio": -1.0, "schedule": "cosine", "eta0": 0.0,
              "gamma": -1.0, "average": "no", "group_steps": "random", "epsilon": -0.1, "cost": -1.0,
              "stage1_epochs": -1, "stage2_epochs": "many", "n_epochs": 0, "max_features": 0,
              "feature_hashing": 0, "seed": 1.5, "random_state": 1.5, "kernels": "rbf",
              "explicit_groups": "all", "group_weights": 3.0}


def _sequence_face():
    return {"sklearn": onlinemkl.SequenceMKLLabeler}


@pytest.mark.parametrize("name", ["OBSCUREClassifier", "ProximalMKLClassifier", "ProximalMKLRegressor",
                                  "SequenceMKLLabeler"])
def test_every_row_of_a_per_example_learner_refuses_a_bad_value_by_name(name):
    """Each parameter of the table is checked by its rule on every face: a bad value raises a
    ``ValueError``/``TypeError`` that names it (river: at construction; scikit-learn: at ``fit``)."""
    faces = _sequence_face() if name == "SequenceMKLLabeler" else faces_of(name)
    X = np.random.default_rng(0).normal(size=(12, 3))
    y = np.arange(12) % 2 if "Regressor" not in name else X[:, 0]
    for face_name, cls in faces.items():
        for row in cls._params.for_face(face_name):
            bad = BAD_VALUES[row.name]
            with pytest.raises((TypeError, ValueError), match=f"{row.name}"):
                if face_name == "river":
                    cls(**{row.name: bad})
                elif name == "SequenceMKLLabeler":
                    cls(**{row.name: bad}).fit([X[:4], X[4:]], [y[:4].tolist(), y[4:].tolist()])
                else:
                    cls(**{row.name: bad}).fit(X, y)


def test_the_sequence_labeller_is_built_from_its_table():
    from onlinemkl.sequence.engine import PARAMS

    cls = onlinemkl.SequenceMKLLabeler
    assert cls._params is PARAMS
    sig = inspect.signature(cls.__init__).parameters
    assert list(sig)[1:] == [p.name for p in PARAMS.for_face("sklearn")]
    doc = inspect.getdoc(cls)
    for p in PARAMS:
        assert f"\n{p.name} : {p.rule.describe()}, default={p.default!r}\n" in doc


def test_constraints_check_and_describe():
    assert Int(1, 4).check("d", 3) == 3 and Int(1, 4).describe() == "int in 1..4"
    assert Int(low=1, none=True).check("b", None) is None and Int(low=1, none=True).describe() == "int >= 1 or None"
    for bad in (True, 2.0, "2", 0, 5):
        with pytest.raises((TypeError, ValueError), match=r"^d="):
            Int(1, 4).check("d", bad)
    assert Real(low=0.0, low_open=True).describe() == "float > 0"
    for bad in (0.0, -1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises((TypeError, ValueError), match=r"^eta="):
            Real(low=0.0, low_open=True).check("eta", bad)
    assert Choice(("l2", "l1")).check("norm", "l1") == "l1"
    with pytest.raises(ValueError, match="norm=1: choose one of 'l2', 'l1'"):
        Choice(("l2", "l1")).check("norm", 1)
    assert Bool().check("flag", np.bool_(True)) is True
    with pytest.raises(TypeError, match=r"flag=1: expected a bool \(True or False\)"):
        Bool().check("flag", 1)


def test_a_table_refuses_a_name_twice_or_a_name_that_is_not_an_identifier():
    with pytest.raises(ValueError, match="twice"):
        Table(Param("a", Bool(), True, "x"), Param("a", Bool(), False, "y"))
    for bad in ("a b", "class", "1a"):
        with pytest.raises(ValueError, match="identifiers"):
            Table(Param(bad, Bool(), True, "x"))


def test_face_builds_an_init_that_stores_every_argument_and_runs_the_setup():
    table = Table(Param("a", Int(low=0), 1, "A."), Param("b", Bool(), True, "B.", faces=("river",)),
                  Param("c", Real(), 0.5, "C.", fit_default=2.5))

    @face(table, "sklearn", setup="_ready")
    class Est:
        """An estimator.

        {parameters}
        """

        def _ready(self):
            self.ready = (self.a, self.c)

    e = Est(a=3)
    assert (e.a, e.c, e.ready) == (3, 2.5, (3, 2.5)) and not hasattr(e, "b")
    assert list(inspect.signature(Est.__init__).parameters) == ["self", "a", "c"]
    doc = inspect.getdoc(Est)
    assert "a : int >= 0, default=1\n    A." in doc and "c : float, default=2.5" in doc and "b :" not in doc
