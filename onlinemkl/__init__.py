"""onlinemkl: online multiple kernel learning."""

__version__ = "0.1.0"

from .nonlinear import NonlinearKRRRegressor  # noqa: E402
from .obscure import OBSCUREClassifier  # noqa: E402
from .persist import load  # noqa: E402
from .polymkl import PolyMKLRegressor  # noqa: E402
from .proximal import ProximalMKLClassifier, ProximalMKLRegressor  # noqa: E402
from .sequence import SequenceMKLLabeler  # noqa: E402

__all__ = [
    "OBSCUREClassifier",
    "ProximalMKLClassifier",
    "ProximalMKLRegressor",
    "SequenceMKLLabeler",
    "PolyMKLRegressor",
    "NonlinearKRRRegressor",
    "load",
    "__version__",
]
