"""onlinemkl: online multiple kernel learning."""

__version__ = "0.1.0"

from .obscure import OBSCUREClassifier  # noqa: E402

__all__ = ["OBSCUREClassifier", "__version__"]
