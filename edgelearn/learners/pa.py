"""Passive-aggressive classifiers PA, PA-I and PA-II: the baselines."""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_choice, check_number
from ..kernels import pa as K
from .base import Learner, binary_sign


class PA(Learner):
    """Binary passive-aggressive classifier (Crammer et al. 2006).

    ``mode`` 0 is PA, 1 is PA-I (step capped at C), 2 is PA-II (soft step
    ``loss / (||x||^2 + 1 / (2C))``).  With ``standardize=False`` it learns on
    the raw values and reproduces River's ``linear_model.PAClassifier`` with
    the same ``C``, ``mode`` and ``learn_intercept``, prediction for
    prediction (a margin of exactly 0 predicts False, as River does).  With
    ``standardize=True`` it learns on the channel space's z values, which is
    what a sensor stream with channels in different units needs.

    Labels are True/1/+1 or False/0/-1; predictions are True/False.  It wants
    every label: ``decide_one`` always asks.

    Memory bound: ``8 * (capacity + 1)`` bytes plus its ChannelSpace.

    Examples
    --------
    >>> import random
    >>> from edgelearn import PA
    >>> rng = random.Random(0)
    >>> model = PA(C=0.1, mode=1)
    >>> correct = 0
    >>> for i in range(1000):
    ...     x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 5)}
    ...     y = x["a"] + x["b"] / 5 > 0
    ...     correct += model.predict_one(x) == y
    ...     model.learn_one(x, y)
    >>> correct / 1000
    0.975
    """

    def __init__(
        self,
        C: float = 1.0,
        mode: int = 1,
        learn_intercept: bool = True,
        standardize: bool = True,
        capacity: int = 256,
        evict_after: int = 1000,
    ):
        owner = type(self).__name__
        check_number("C", C, owner, 0, None, low_open=True)
        check_choice("mode", mode, owner, (0, 1, 2))
        check_bool("learn_intercept", learn_intercept, owner)
        check_bool("standardize", standardize, owner)
        check_number("capacity", capacity, owner, 1, None, integer=True)
        check_number("evict_after", evict_after, owner, 1, None, integer=True)
        self.C = C
        self.mode = mode
        self.learn_intercept = learn_intercept
        self.standardize = standardize
        self.capacity = capacity
        self.evict_after = evict_after

        self._scale = bool(standardize)
        self._init_channels(capacity, evict_after)
        self.w = np.zeros(capacity, dtype=np.float64)
        self.intercept = np.zeros(1, dtype=np.float64)

    def weights(self) -> dict:
        """Weights by channel name (for inspection)."""
        names = self.channels
        return {names.name_of(s): float(self.w[s]) for s in range(names.n_assigned) if names.name_of(s) is not None}

    def _score(self, slots, z):
        q = float(K.margin(slots, z, len(slots), self.w, self.intercept))
        return q > 0.0, q

    def learn(self, slots, z, y) -> None:
        K.learn(slots, z, len(slots), binary_sign(y, "PA"), self.w, self.intercept, float(self.C), self.mode, self.learn_intercept)

    def _forget_slot(self, slot: int) -> None:
        K.forget_slot(slot, self.w)

    _LEARNED = ("w", "intercept")
