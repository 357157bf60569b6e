"""Sequence labelling with online proximal MKL (Martins et al., structured outputs).

The learner's modules, from the compiled step up:

- ``_step``: the compiled structured step (loss-augmented Viterbi or forward-backward over
  ``_chain``, then the proximal step of :mod:`onlinemkl.proximal`);
- ``engine``: :class:`~onlinemkl.sequence.engine.SequenceEngine`;
- ``sklearn``: the face :class:`SequenceMKLLabeler` (``fit`` on lists of sequences, ``learn_one``).

The public class is imported on first use (PEP 562): the river face does not import
scikit-learn, and the engine imports neither face.
"""

from .._exports import lazy_exports

_LAZY = {
    "SequenceMKLLabeler": ".sklearn",
}

__all__ = ["SequenceMKLLabeler"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
