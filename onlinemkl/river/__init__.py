"""river adapters: the only part of onlinemkl that imports river.

Each adapter is a river estimator (``learn_one``/``predict_one`` on dicts) over
the same compiled engine as the array API, so it composes with river's
pipelines::

    from river import preprocessing
    from onlinemkl.river import OBSCUREClassifier
    model = preprocessing.StandardScaler() | OBSCUREClassifier()
"""

from ._obscure import OBSCUREClassifier
from ._proximal import ProximalMKLClassifier, ProximalMKLRegressor
from ._minibatch import NonlinearKRRRegressor, PolyMKLRegressor

__all__ = [
    "OBSCUREClassifier",
    "ProximalMKLClassifier",
    "ProximalMKLRegressor",
    "PolyMKLRegressor",
    "NonlinearKRRRegressor",
]
