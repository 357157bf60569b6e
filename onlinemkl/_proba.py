"""Class scores -> probabilities: the one mapping every classifier face uses.

The river faces (``predict_proba_one``, ``predict_proba_many``) and the scikit-learn faces
(``predict_proba``) call :func:`class_probabilities`, so the same scores give the same
probabilities, bit for bit, whichever face computed them.  The mapping is the softmax of the
class scores (a binary score ``s`` is the pair ``(-s/2, s/2)``, whose softmax is the logistic
function of ``s``): monotone in the scores, so the most probable class is the predicted one, but
calibrated only for a logistic loss.
"""

from __future__ import annotations

import numpy as np

__all__ = ["class_probabilities"]


def class_probabilities(scores, binary: bool) -> np.ndarray:
    """Rows of probabilities from class scores.

    ``scores``: shape ``(n, k)``, one score per class, or with ``binary`` shape ``(n,)``, one score
    per row whose sign picks the second class.  Returns shape ``(n, k)`` (``(n, 2)`` when binary,
    columns: the negative class, then the positive one), each row the softmax of its scores with
    the row's maximum shifted out (no overflow).
    """
    s = np.asarray(scores, dtype=np.float64)
    if binary:
        half = s / 2.0
        s = np.stack([-half, half], axis=1)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e
