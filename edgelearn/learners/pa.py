"""Passive-aggressive classifiers PA, PA-I and PA-II: the baselines."""

from __future__ import annotations

import numpy as np

from ..constraints import Boolean, Interval, Options
from ..kernels import pa as K
from .arrays import ArrayReplay, binary_signs, run_columns, user_predictions
from .base import Learner, logistic_proba
from .mergeable import Mergeable


class PA(Mergeable, Learner):
    """Binary passive-aggressive classifier (Crammer et al. 2006).

    ``mode`` 0 is PA, 1 is PA-I (step capped at C), 2 is PA-II (soft step
    ``loss / (||x||^2 + 1 / (2C))``).  With ``standardize=False`` it learns on
    the raw values and reproduces River's ``linear_model.PAClassifier`` with
    the same ``C``, ``mode`` and ``learn_intercept``, prediction for
    prediction (a margin of exactly 0 predicts False, as River does).  With
    ``standardize=True`` it learns on the channel space's z values, which is
    what a sensor stream with channels in different units needs.

    Merging (:mod:`edgelearn.learners.mergeable`): a group model averages its
    learners' weights, each channel's weight weighted by the readings that
    learner saw of that channel (the intercept by all its readings); a
    contribution is the change since the last one in that count and in count x
    weight, so the group's average holds each learner's latest weights once.

    Labels are any two values (True/False, 1/0, +1/-1, "yes"/"no"...);
    predictions are in those labels.  It wants every label: ``decide_one``
    always asks.

    Memory bound: ``8 * (capacity + 1) + 128`` bytes (weights, intercept, its
    two labels at 64 bytes each) plus its ChannelSpace.

    Parameters
    ----------
    C
        Aggressiveness: the largest step of an update (PA-I), or the softness of
        PA-II; unused by PA (mode 0).
    mode
        0: PA, 1: PA-I (the step capped at C), 2: PA-II.
    learn_intercept
        Learn a bias beside the weights.
    standardize
        Learn on each channel's z value (true) or its raw value (false: River's
        ``PAClassifier``, prediction for prediction).
    capacity
        Channel slots (the fixed size of its arrays).
    evict_after
        A channel absent for this many instances may give its slot away.

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

    tasks = frozenset({"binary"})
    capabilities = frozenset({"array_loop", "merge"})
    _shared_summed = ("intercept_weighted", "intercept_count")
    _shared_flip = ("weighted_weight", "intercept_weighted")
    _parameter_constraints = {
        "C": Interval(float, 0, None, closed="right"),
        "mode": Options(0, 1, 2),
        "learn_intercept": Boolean(),
        "standardize": Boolean(),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
    }

    def __init__(
        self,
        C: float = 1.0,
        mode: int = 1,
        learn_intercept: bool = True,
        standardize: bool = True,
        capacity: int = 256,
        evict_after: int = 1000,
    ):
        self._set_params(locals())
        self._scale = bool(standardize)
        self._init_channels(capacity, evict_after)
        self._init_targets(2)
        self.w = np.zeros(capacity, dtype=np.float64)
        self.intercept = np.zeros(1, dtype=np.float64)

    def weights(self) -> dict:
        """Weights by channel name (for inspection)."""
        names = self.channels
        return {names.name_of(s): float(self.w[s]) for s in range(names.n_assigned) if names.name_of(s) is not None}

    def _score(self, slots, z):
        q = float(K.margin(slots, z, len(slots), self.w, self.intercept))
        return q > 0.0, q

    def _proba(self, margin: float) -> float:
        """P(positive) is the logistic of the margin ``w . x + b``: monotone in
        the margin (so ROC AUC is meaningful) but not calibrated; PA's margin is
        a hinge-loss score, not a log-odds."""
        return logistic_proba(margin)

    def learn(self, slots, z, y) -> None:
        K.learn(slots, z, len(slots), self.targets.sign(y), self.w, self.intercept, float(self.C), self.mode, self.learn_intercept)

    def _forget_slot(self, slot: int) -> None:
        K.forget_slot(slot, self.w)

    _LEARNED = ("w", "intercept")

    # -- merging (edgelearn.learners.mergeable) ---------------------------------

    def _shared_structure(self) -> dict:
        return {"standardize": self.standardize}

    @classmethod
    def _shared_columns(cls, structure: dict) -> dict:
        return {"weighted_weight": 1}

    def _shared_by_slot(self) -> dict:
        return {"weighted_weight": (self.channels.count * self.w)[:, None]}

    def _shared_model_wide(self) -> dict:
        t = float(self.channels.t)
        return {"intercept_weighted": t * self.intercept[:1], "intercept_count": np.array([t])}

    def _load_shared(self, placed: list, part: dict, totals: dict) -> None:
        for i, s in placed:
            n = float(part["n"][i])
            self.w[s] = float(part["weighted_weight"][i]) / n if n > 0 else 0.0
        count = float(totals["intercept_count"][0])
        self.intercept[0] = float(totals["intercept_weighted"][0]) / count if count > 0 else 0.0
        # The intercept's count (the readings observed) goes on where the group's
        # left off; the group's channels count as seen now.
        self.channels.t = int(round(count))
        for _, s in placed:
            self.channels.last_seen[s] = self.channels.t

    def replay_arrays(self, X: np.ndarray, y, active: bool = True,
                      feature_names: list | None = None) -> ArrayReplay:
        """The prequential loop over the rows of ``X`` (NaN: missing) and their
        labels ``y`` in jitted code (``edgelearn.replay`` checks the arguments):
        the predictions, asks and final state of :func:`edgelearn.prequential`
        over the same rows as dicts. PA wants every label (``active`` changes
        nothing)."""
        from ..kernels import replay as loops

        space = self.channels
        n = X.shape[0]
        pred = np.empty(n, dtype=np.int64)
        margins = np.empty(n, dtype=np.float64)
        knew_labels = self.targets.learned_any
        signs = binary_signs(self.targets, y)

        def loop(column_map):
            loops.pa_loop(
                X, signs, *column_map, space.count, space.mean, space.var, space.last_seen,
                space.forget, space.eps, space.z_max, space.evict_after, self._scale,
                self.w, self.intercept, float(self.C), self.mode, self.learn_intercept, pred, margins,
            )

        seconds = run_columns(self, feature_names, loop)
        asked = np.ones(n, dtype=bool)
        return ArrayReplay(user_predictions(self, pred, asked, False, knew_labels), asked, seconds)
