"""The engines: one per learner, each with the protocol of :mod:`onlinemkl.engine`.

``obscure`` (OBSCURE), ``proximal`` (online proximal MKL, classifier and
regressor), ``sequence`` (the sequence labeller), ``polymkl`` (polynomial-kernel
MKL) and ``nonlinear`` (the non-linear kernel combination KRR), with
``_window`` holding what the two mini-batch engines share.  Each module holds
its learner's state, its calls into :mod:`onlinemkl._core` and the validation
of the parameters its faces share; none imports scikit-learn or river.
"""
