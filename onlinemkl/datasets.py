"""Small benchmark data sets, offline (no download).

:func:`load_ocr_words` loads the handwritten words of Taskar et al. (2003), the data of
the OCR experiment of Martins et al. (2010, Table 1), shipped with the package
(``onlinemkl/data/ocr_letters.npz``, 0.6 MB).

:func:`digit_strings` builds a sequence-labelling task in the spirit of the
handwriting (OCR) experiment of Martins et al. (2010, section 4, Table 1):
there, each word is a sequence of 16x8 binary character images and a chain
model learns the letters and their transitions.  The OCR corpus is not
bundled with any of our dependencies, so this module composes "handwritten
digit strings" from scikit-learn's bundled 8x8 digits (``load_digits``, 1,797
images written by 43 people) instead,
with labels that follow a chosen Markov chain.
"""

from __future__ import annotations

import numbers
from importlib import resources

import numpy as np

__all__ = ["digit_strings", "digit_transition_matrix", "load_ocr_words"]

#: The OCR letters, a-z (label ``k`` of the stored array is ``OCR_LETTERS[k]``).
OCR_LETTERS = "abcdefghijklmnopqrstuvwxyz"
N_OCR_FOLDS = 10

N_DIGITS = 10
N_PIXELS = 64


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name}={value!r}: expected an integer >= {low}")
    return int(value)


def _check_float(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (low <= float(value) <= high):
        raise ValueError(f"{name}={value!r}: expected a number in [{low}, {high}]")
    return float(value)


def digit_transition_matrix(transition_strength=0.8, seed=0):
    """The Markov chain over digits that :func:`digit_strings` samples labels from.

    Each digit ``a`` has one preferred successor ``succ[a]`` (a random cyclic
    permutation of 0..9 drawn from ``seed``: no digit prefers itself, and the
    preferred successors form one cycle through all ten digits); the next digit
    is ``succ[a]`` with probability ``transition_strength`` and otherwise
    uniform over all ten digits (``succ[a]`` included).  So
    ``P[a, b] = (1 - s) / 10 + s * [b == succ[a]]``.  With ``s = 0.8`` the
    preferred successor has probability 0.82 and every other digit 0.02: a
    model that knows the previous digit can guess the next one right 82% of
    the time, one that does not only 10%.

    Returns ``(P, start)``: the 10x10 row-stochastic transition matrix and the
    start distribution (uniform).

    >>> P, start = digit_transition_matrix(0.8, seed=0)
    >>> P.shape, bool(np.allclose(P.sum(axis=1), 1.0)), round(float(P.max()), 2)
    ((10, 10), True, 0.82)
    """
    s = _check_float("transition_strength", transition_strength, 0.0, 1.0)
    rng = np.random.default_rng(np.random.SeedSequence([_seed_int(seed), 1]))
    cycle = rng.permutation(N_DIGITS)
    succ = np.empty(N_DIGITS, dtype=np.int64)
    succ[cycle] = np.roll(cycle, -1)
    P = np.full((N_DIGITS, N_DIGITS), (1.0 - s) / N_DIGITS)
    P[np.arange(N_DIGITS), succ] += s
    return P, np.full(N_DIGITS, 1.0 / N_DIGITS)


def _seed_int(seed):
    if seed is None:
        raise ValueError("seed=None: digit_strings is deterministic given an integer seed; pass one, e.g. seed=0")
    return _check_int("seed", seed, 0)


def digit_strings(n_train=200, n_test=200, length=(4, 10), noise=0.0, transition_strength=0.8, seed=0,
                  test_fraction=0.5, return_info=False):
    """"Handwritten digit strings": sequences of 8x8 digit images with Markov labels.

    In the spirit of the OCR handwriting task of Martins et al. (2010, Table 1;
    the words of Taskar et al. 2003): every sequence is a string of character
    images to be labelled jointly, and the labels follow strong first-order
    dependencies (as letters do in words), so a chain model that learns the
    transitions beats a per-character classifier.  Built offline from
    scikit-learn's bundled ``load_digits`` (1,797 images of 8x8 pixels, 16
    grey levels).

    Construction (deterministic given ``seed``):

    1. The images are split, digit by digit, into two **disjoint pools**: a
       fraction ``test_fraction`` of each digit's images for the test pool, the
       rest for the training pool.  No image appears in both a training and a
       test sequence (images are re-used *within* a split, as the OCR data
       re-uses letters written by one person).
    2. Each sequence draws its length uniformly from ``length = (min, max)``
       (inclusive), then its labels from the Markov chain of
       :func:`digit_transition_matrix` (uniform start; each digit has one
       preferred successor taken with probability ``transition_strength``,
       otherwise a uniform digit).  The chain is the same for both splits.
    3. Each position gets a random image of its digit from the split's pool;
       pixels are scaled to ``[0, 1]`` (divided by 16), then, with
       ``noise > 0``, perturbed by Gaussian noise of standard deviation
       ``noise`` and clipped to ``[0, 1]`` (a fresh draw per position, so a
       re-used image looks different each time).

    Parameters
    ----------
    n_train, n_test : int >= 0
        Number of training and test sequences.
    length : (int, int), default (4, 10)
        Minimum and maximum sequence length, ``1 <= min <= max``.
    noise : float >= 0, default 0.0
        Standard deviation of the additive pixel noise (pixels are in [0, 1]).
    transition_strength : float in [0, 1], default 0.8
        Probability of the preferred successor (0: i.i.d. uniform labels).
    seed : int >= 0, default 0
    test_fraction : float in (0, 1), default 0.5
        Share of each digit's images in the test pool.
    return_info : bool, default False
        Also return a dict with the transition matrix ``"P"``, the start
        distribution ``"start"`` and the image indices (into ``load_digits``)
        of the two pools, ``"train_pool"`` and ``"test_pool"``, and of every
        position, ``"train_images"``/``"test_images"`` (lists of int arrays).

    Returns
    -------
    X_train : list of (L_i, 64) float64 arrays
    y_train : list of lists of int (digits 0..9)
    X_test, y_test : the same for the test sequences
    info : dict, only with ``return_info=True``

    Examples
    --------
    >>> from onlinemkl.datasets import digit_strings
    >>> X_train, y_train, X_test, y_test = digit_strings(20, 10, length=(3, 6), noise=0.1, seed=0)
    >>> len(X_train), X_train[0].shape[1], len(X_train[0]) == len(y_train[0])
    (20, 64, True)
    >>> all(3 <= len(y) <= 6 for y in y_train + y_test)
    True
    """
    from sklearn.datasets import load_digits

    n_train = _check_int("n_train", n_train, 0)
    n_test = _check_int("n_test", n_test, 0)
    try:
        lo, hi = (int(v) for v in length)
    except (TypeError, ValueError):
        raise ValueError(f"length={length!r}: expected a pair (min, max) of integers, e.g. (4, 10)") from None
    if not 1 <= lo <= hi:
        raise ValueError(f"length={length!r}: expected 1 <= min <= max")
    noise = _check_float("noise", noise, 0.0, np.inf)
    P, start = digit_transition_matrix(transition_strength, seed)
    frac = _check_float("test_fraction", test_fraction, 0.0, 1.0)
    if frac in (0.0, 1.0):
        raise ValueError(f"test_fraction={test_fraction!r}: must be strictly between 0 and 1")

    images, targets = load_digits(return_X_y=True)
    images = images / 16.0
    rng = np.random.default_rng(np.random.SeedSequence([_seed_int(seed), 2]))
    train_pool, test_pool = [], []
    for d in range(N_DIGITS):
        idx = rng.permutation(np.flatnonzero(targets == d))
        n_te = int(round(frac * idx.size))
        test_pool.append(np.sort(idx[:n_te]))
        train_pool.append(np.sort(idx[n_te:]))

    cum = np.cumsum(P, axis=1)
    cum0 = np.cumsum(start)

    def sequences(n, pools, stream):
        r = np.random.default_rng(np.random.SeedSequence([seed, 3, stream]))
        X, Y, used = [], [], []
        for _ in range(n):
            L = int(r.integers(lo, hi + 1))
            labels = np.empty(L, dtype=np.int64)
            labels[0] = min(int(np.searchsorted(cum0, r.random(), side="right")), N_DIGITS - 1)
            for i in range(1, L):
                labels[i] = min(int(np.searchsorted(cum[labels[i - 1]], r.random(), side="right")), N_DIGITS - 1)
            which = np.array([pools[c][r.integers(pools[c].size)] for c in labels], dtype=np.int64)
            x = images[which].copy()
            if noise > 0:
                x = np.clip(x + noise * r.standard_normal(x.shape), 0.0, 1.0)
            X.append(np.ascontiguousarray(x))
            Y.append(labels.tolist())
            used.append(which)
        return X, Y, used

    X_train, y_train, used_train = sequences(n_train, train_pool, 0)
    X_test, y_test, used_test = sequences(n_test, test_pool, 1)
    if not return_info:
        return X_train, y_train, X_test, y_test
    info = {"P": P, "start": start, "train_pool": np.concatenate(train_pool), "test_pool": np.concatenate(test_pool),
            "train_images": used_train, "test_images": used_test}
    return X_train, y_train, X_test, y_test, info


def load_ocr_words(fold=None):
    """The OCR handwritten words (Taskar et al. 2003), one word per sequence.

    6,877 words by 150 writers, 52,152 characters; each character is a 16x8 binary image
    (128 pixels in {0, 1}, row by row) labelled with its lower-case letter.  The first
    (capital) letter of every word is left out, as in the original release.  Every word
    belongs to one of 10 cross-validation folds (Taskar et al.'s); the protocol of Martins
    et al. (2010, Table 1) trains on one fold and tests on the nine others.  The data ship
    with the package (``onlinemkl/data/``; see its README for provenance and licence).

    Parameters
    ----------
    fold : int in 0..9, a sequence of them, or None, default None
        The fold(s) whose words are returned (None: every word).

    Returns
    -------
    X : list of (L_i, 128) float64 arrays
        One array per word, one row of pixels per character (read-only views of one array).
    y : list of str
        One string per word, one letter per character (``len(y[i]) == len(X[i])``);
        :meth:`onlinemkl.SequenceMKLLabeler.fit` takes ``X`` and ``y`` as they are.
    folds : (n_words,) int64 array
        The fold of every returned word.

    Examples
    --------
    >>> from onlinemkl.datasets import load_ocr_words
    >>> X, y, folds = load_ocr_words()
    >>> len(X), sum(len(w) for w in y), X[0].shape
    (6877, 52152, (9, 128))
    >>> y[0], sorted(set(folds.tolist())) == list(range(10))
    ('ommanding', True)
    >>> X_train, y_train, _ = load_ocr_words(fold=0)
    >>> X_test, y_test, _ = load_ocr_words(fold=range(1, 10))
    >>> len(X_train), len(X_test)
    (626, 6251)
    """
    with resources.files("onlinemkl").joinpath("data", "ocr_letters.npz").open("rb") as fh:
        with np.load(fh) as data:
            pixels, labels = data["X"], data["y"]
            lengths, word_folds = data["lengths"].astype(np.int64), data["folds"].astype(np.int64)
    if fold is None:
        wanted = np.arange(N_OCR_FOLDS)
    else:
        try:
            wanted = np.atleast_1d(np.asarray(fold if not isinstance(fold, range) else list(fold)))
            ok = wanted.ndim == 1 and wanted.size > 0 and np.issubdtype(wanted.dtype, np.integer) \
                and not isinstance(fold, bool)
        except (TypeError, ValueError):
            ok = False
        if not ok or wanted.min() < 0 or wanted.max() >= N_OCR_FOLDS:
            raise ValueError(f"fold={fold!r}: expected None, an integer in 0..{N_OCR_FOLDS - 1} "
                             "or a non-empty sequence of them, e.g. fold=0 or fold=range(1, 10)")
    X_all = pixels.astype(np.float64)
    X_all.flags.writeable = False
    letters = np.array(list(OCR_LETTERS))[labels]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    keep = np.flatnonzero(np.isin(word_folds, wanted))
    X = [X_all[starts[i]:ends[i]] for i in keep]
    y = ["".join(letters[starts[i]:ends[i]]) for i in keep]
    return X, y, word_folds[keep]
