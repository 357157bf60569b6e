"""Sequence labelling with online proximal MKL (Martins et al., structured outputs).

The learner's modules, from the compiled step up:

- ``_step``: the compiled structured step (loss-augmented Viterbi or forward-backward over
  ``_chain``, then the proximal step of :mod:`onlinemkl.proximal`);
- ``engine``: :class:`~onlinemkl.sequence.engine.SequenceEngine`;
- ``sklearn``: the face :class:`SequenceMKLLabeler` (``fit`` on lists of sequences, ``learn_one``).

The public class is imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

import importlib

_LAZY = {
    "SequenceMKLLabeler": ".sklearn",
}

__all__ = ["SequenceMKLLabeler"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
