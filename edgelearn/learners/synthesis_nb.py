"""SynthesisNB: sample-synthesis incremental naive Bayes (SSBOIL, seed 004),
as docs/learners.md reads it; with ``num=0``, a plain incremental Gaussian
naive Bayes."""

from __future__ import annotations

import math

import numpy as np

from ..constraints import Boolean, Interval, OneOf, Options
from ..kernels import naive_bayes as NB
from ..kernels import synthesis_nb as K
from ..kernels.rng import new_state
from .base import Learner, softmax_proba

#: A slot enters the likelihood once every class has seen it this often.
_MIN_COUNT = 2
#: Step of the running error rate that scales synthesis (a half-life of about 69
#: learned instances).
_ERROR_STEP = 0.01


class SynthesisNB(Learner):
    """Incremental Gaussian naive Bayes that learns synthetic instances after
    each mistake (Liu and Liu 2018, "SSBOIL").

    Per class and per channel it keeps a running mean and variance with an
    observation count, per class an instance count; an instance is scored
    by ``log P(c) + sum_s log N(z_s; mean[c, s], var[c, s])`` over the
    channels it carries (a channel missing from the instance is left out,
    never taken for 0).  For each labelled instance ``(x, y)``: predict with
    the model as it is; learn ``(x, y)``; if the prediction was wrong, also
    learn ``num`` synthetic instances ``r c_y + (1 - r) x``, ``r ~ U[0, 1)``,
    over the channels x carries (``c_y`` the centroid of class y's real
    instances); then fold x into ``c_y``.  ``num=0`` is the same naive
    Bayes without synthesis.  The paper's learner is
    ``SynthesisNB(half_life=None, error_scaled=False)``.

    Parameters
    ----------
    num
        Synthetic instances learned after a mistake (the paper's 5); 0 for
        plain naive Bayes.
    error_scaled
        Beyond the paper (on by default): learn ``round(num * max(0, 1 - 2
        e))`` synthetic instances after a mistake instead of ``num``, ``e``
        the running error rate of the learned instances (exponentially
        weighted, step 0.01).  Under label noise a mistake is more often
        the label's fault than the model's, and synthesis toward the
        labelled class's centroid then amplifies the noise: at an error rate
        near 1/2 (labels the model cannot beat) it stops.  ``False``: the
        paper's ``num`` after every mistake.
    half_life
        ``None`` (the paper): every instance counts alike, for ever.  A
        number of observations: the means, variances and centroids forget
        exponentially with this half-life per class (the step
        ``max(1 / n, 1 - 2 ** (-1 / half_life))`` of
        ``edgelearn.kernels.naive_bayes``) and the class counts decay by the
        same factor per learned instance, so the model follows a drifting
        concept.  Beyond the paper; the default 300 and ``error_scaled``
        were chosen on development streams of ``tools/results_synthesis.py``
        (seeds 100-103, which its page never reports), where together they
        put SynthesisNB above River's ``PAClassifier(C=0.01, mode=1)`` at
        10-40% label noise (``python tools/results_synthesis.py
        --tune-defaults``).
    var_floor
        Smallest variance a class-conditional Gaussian may have, in the
        units the learner sees (z, unit variance, with ``standardize``): a
        channel constant within a class (a binary sensor) would otherwise
        have an infinite density and decide alone.
    n_classes
        2 for a binary learner (labels True/1/+1 and False/0/-1, predictions
        True/False); more for a multiclass one (any hashable labels, at most
        ``n_classes`` distinct, indexed in order of first appearance).
    capacity
        Channel slots (the fixed size of every array).
    evict_after
        A channel absent for this many instances may give its slot away.
    standardize
        Learn on the channel space's z values (True) or on the raw values.
    seed
        Seed of the learner's own generator (the synthesis draws r).

    Decisions beyond docs/learners.md: a channel enters the likelihood only
    once every class seen so far has observed it twice (a variance needs
    two values), and then for every class alike; the variance is the
    population variance (as River's and scikit-learn's ``GaussianNB``); a
    model with no class yet scores the positive class (binary) or none
    (multiclass), and the step judges its mistake against that score (what it
    *predicts* then is the rule of ``learners/base.py``: False or None); there is no
    synthesis before class y has a centroid.  The decision score is the log-odds ``log P(True | x) -
    log P(False | x)`` (binary) or the log-likelihood gap between the best
    and the runner-up class (multiclass); 0 while a class is missing.
    It wants every label: ``decide_one`` always asks.

    Memory bound: ``16 * rows * (3 * capacity + 1) + 8 * (rows + capacity + 2)``
    bytes (``rows = n_classes``: the naive Bayes and the centroids, each an
    instance count per class and a count, mean and variance per class and
    slot; the scores, the synthetic instance, the generator state, the running
    error rate), plus 64
    bytes per class label (``n_classes`` of them, two when binary), plus its
    ChannelSpace.

    Examples
    --------
    >>> import random
    >>> from edgelearn import SynthesisNB
    >>> rng = random.Random(0)
    >>> model = SynthesisNB(num=5, seed=1)
    >>> correct = 0
    >>> for i in range(2000):
    ...     occupied = rng.random() < 0.4
    ...     x = {"co2": rng.gauss(800 if occupied else 500, 120), "light": rng.gauss(300 if occupied else 40, 90)}
    ...     if rng.random() < 0.2:
    ...         del x["light"]  # a sensor that drops out now and then
    ...     y = occupied if rng.random() > 0.1 else not occupied  # 10% label noise
    ...     correct += model.predict_one(x) == y
    ...     model.learn_one(x, y)
    >>> round(correct / 2000, 3)
    0.851
    """

    tasks = frozenset({"binary", "multiclass"})
    _parameter_constraints = {
        "num": Interval(int, 0, None),
        "error_scaled": Boolean(),
        "half_life": OneOf(Options(None), Interval(float, 0, None, closed="right")),
        "var_floor": Interval(float, 0, None, closed="right"),
        "n_classes": Interval(int, 2, None),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "standardize": Boolean(),
        "seed": Interval(int, 0, 2**64 - 1),
    }

    def __init__(
        self,
        num: int = 5,
        error_scaled: bool = True,
        half_life: float | None = 300.0,
        var_floor: float = 0.01,
        n_classes: int = 2,
        capacity: int = 256,
        evict_after: int = 1000,
        standardize: bool = True,
        seed: int = 0,
    ):
        self._set_params(locals())
        self._scale = bool(standardize)
        self._init_channels(capacity, evict_after)
        rows = n_classes
        self.class_count = np.zeros(rows, dtype=np.float64)
        self.count = np.zeros((rows, capacity), dtype=np.int64)
        self.mean = np.zeros((rows, capacity), dtype=np.float64)
        self.var = np.zeros((rows, capacity), dtype=np.float64)
        self.centroid_class_count = np.zeros(rows, dtype=np.float64)
        self.centroid_count = np.zeros((rows, capacity), dtype=np.int64)
        self.centroid = np.zeros((rows, capacity), dtype=np.float64)
        self.centroid_var = np.zeros((rows, capacity), dtype=np.float64)
        self.rng_state = new_state(seed)
        self._scores = np.zeros(rows, dtype=np.float64)
        self._synthetic = np.zeros(capacity, dtype=np.float64)
        self._init_targets(n_classes)
        self._forget = 0.0 if half_life is None else 1.0 - 2.0 ** (-1.0 / half_life)
        self._var_floor = float(var_floor)
        self.error_rate = np.zeros(1, dtype=np.float64)  # of the learned instances, for error_scaled

    def _score(self, slots, z):
        NB.joint_log_likelihood(
            slots, z, len(slots), self.class_count, self.count, self.mean, self.var,
            self._var_floor, _MIN_COUNT, self._scores,
        )
        best, runner = NB.top_two(self._scores)
        scores = self._scores
        if self.binary:
            both = math.isfinite(scores[0]) and math.isfinite(scores[1])
            return best != 0, float(scores[1] - scores[0]) if both else 0.0
        return best, float(scores[best] - scores[runner]) if runner >= 0 else 0.0

    def _proba(self, margin: float):
        """The naive Bayes posterior of the classes (the softmax of the joint
        log-likelihoods, priors included): calibrated as far as the naive
        independence and Gaussian assumptions hold, typically overconfident when
        channels are correlated. A class with no instance yet has probability 0."""
        if self.binary:
            return float(softmax_proba(self._scores, 2)[1])
        return softmax_proba(self._scores, len(self.targets.labels))

    def learn(self, slots, z, y) -> None:
        """Learn label ``y`` of the instance ``(slots, z)`` (from
        :meth:`decide_one`), with the model as it is now."""
        if self.binary:
            c, default = int(self.targets.sign(y) > 0), 1
        else:
            c, default = self.targets.index(y), -1
        num = self.num
        if self.error_scaled:
            num = int(round(num * max(0.0, 1.0 - 2.0 * float(self.error_rate[0]))))
        wrong = K.learn(
            slots, z, len(slots), c, default, num, self._forget, self._var_floor, _MIN_COUNT,
            self.class_count, self.count, self.mean, self.var,
            self.centroid_class_count, self.centroid_count, self.centroid, self.centroid_var,
            self._scores, self._synthetic, self.rng_state,
        )
        self.error_rate[0] += (float(wrong) - self.error_rate[0]) * _ERROR_STEP

    def _forget_slot(self, slot: int) -> None:
        NB.forget_slot(slot, self.count, self.mean, self.var)
        NB.forget_slot(slot, self.centroid_count, self.centroid, self.centroid_var)

    # -- state ----------------------------------------------------------------

    _LEARNED = (
        "class_count", "count", "mean", "var",
        "centroid_class_count", "centroid_count", "centroid", "centroid_var", "rng_state", "error_rate",
    )

    @classmethod
    def from_state(cls, state: dict):
        """Rebuild from :meth:`to_state`'s output.  A state saved before
        ``error_scaled`` existed learned ``num`` after every mistake: it loads so."""
        if "error_scaled" not in state.get("params", {}):
            state = {**state, "params": {**state["params"], "error_scaled": False}}
        return super().from_state(state)

    def _load_learned(self, learned: dict) -> None:
        # States saved before error_scaled existed have no error rate: it starts at 0.
        super()._load_learned({"error_rate": np.zeros(1), **learned})
