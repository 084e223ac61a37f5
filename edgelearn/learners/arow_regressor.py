"""AROWRegressor: a virtual sensor.  Online regression with intervals that hold,
asking for the reference readings it needs, on streams whose channels come and go.
Beyond the seed papers; the papers it builds on are in the class docstring."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..constraints import Boolean, Interval
from ..kernels import arow as arow_kernels
from ..kernels import arow_regression as K
from ..kernels.rng import new_state
from .arow import bin_edges
from .arrays import RowsPass, RowsResult, row_buffers
from .base import Decision, Learner
from .belief_sharing import belief_by_slot, belief_columns, load_belief
from .mergeable import Mergeable

#: Variance of a weight never learned (only its ratio to ``r`` matters).
_PRIOR_VAR = 1.0


class AROWRegressor(Mergeable, Learner):
    """Diagonal AROW regression on a channel-wise additive model, with a conformal
    interval and reference requests held at a rate.

    The model is ActiveAROW's (:class:`~edgelearn.ActiveAROW`): a Gaussian belief
    ``w ~ N(W, diag(S))`` over the weights of the standardized channels, each
    channel's centred bin code (``n_bins``) and an intercept; a missing channel
    adds nothing.  What changes is the loss and what is built on the belief.

    * **Learning** is AROW for regression (Vaits & Crammer, "Re-adapting the
      regularization of weights for non-stationary regression", ALT 2011, the
      squared-loss form of Crammer, Kulesza & Dredze, NIPS 2009): with ``m`` the
      belief's prediction and ``v = x' S x`` its variance, ``beta = 1 / (v + r)``,
      ``w += (y - yhat) beta S x``, ``S -= beta S^2 x^2``.  On a full covariance
      this is recursive least squares with a prior; on the diagonal each channel
      moves in proportion to the model's uncertainty about it, so a channel that
      appears (variance 1) learns at once, one that vanishes keeps its weight and
      variance until it returns, and a recycled slot starts over.  This is what
      River's ``PARegressor`` lacks when a feature appears (River #585): its
      step is the whole residual over ``||x||^2``, whatever the feature's history.
    * **Drift**: each moved variance stays at ``variance_floor`` or above, ARCOR's
      lower bound on the covariance (the same ALT 2011 paper), so the model keeps
      a bounded step when a metal-oxide sensor drifts with temperature and
      humidity; the noise variance forgets at ``noise_half_life`` references.
    * **Outliers**: a reference whose residual is beyond ``reject`` standard
      deviations (as the intervals calibrate them), when the one before it was
      not, is a spike: its interval's verdict counts, nothing is learned from it
      (:attr:`n_rejected`; two in a row are a change, and are learned).  Any other
      residual is clipped to ``huber`` sds before anything learns from it
      (Huber's influence bound; Huber 1964): the weights, the noise estimate, the
      references' statistics and the error feedback move a bounded amount.
    * **The predictive spread** is the belief's, in the target's units: AROW's
      update is recursive least squares on a diagonal with ``r`` the noise variance
      in units of the prior's, so the predictive variance is ``sigma2 (1 + v / r)``
      with ``sigma2`` the noise variance estimated from the references' (clipped)
      residuals.
    * **Channels that are absent** but known (seen within ``evict_after``
      readings) add the variance of their term over their own distribution to
      the prediction's: a reading that lost a sensor gets a wider interval, and its
      residual teaches the present channels as much less (its noise is larger).
    * **Error feedback**: a virtual sensor's errors persist, so the model's
      residual on the last reference, ``d`` readings ago, shifts the prediction by
      ``c_d e`` and shrinks its variance by ``1 - rho_d^2``, with ``c_d`` and
      ``rho_d`` learned from consecutive references' residuals ``d`` apart (a
      bucket per lag, ``n_lags`` of them, shrunk toward 0): the soft sensors' bias
      update (Kadlec, Gabrys & Strandt, "Data-driven soft sensors in the process
      industry", Comput. Chem. Eng. 2009) with its gain learned per lag.  Where
      errors do not persist it stays near 0.  A late reference counts as learned
      at the reading where it arrives.
    * **The interval** ``yhat -+ q sd`` holds by conformal calibration on the
      references: ``q`` is the split-conformal quantile of the normalized scores
      ``|y - yhat| / sd`` of the last ``calibration_window`` references (normalized
      conformal regression; Papadopoulos et al. 2002, Lei et al. 2018), at a level
      ``1 - alpha_t`` that adaptive conformal inference moves after each reference,
      ``alpha_t += aci_gamma (alpha - miss)`` (Gibbs & Candes, "Adaptive
      conformal inference under distribution shift", NeurIPS 2021), so the long-run
      miss rate is ``alpha = 1 - coverage`` whatever the drift.  Beyond the paper:
      a level the window cannot reach gives its largest score (a finite interval,
      where the paper gives the whole line), and until the window holds enough
      scores ``q`` is the normal quantile of ``coverage``.  Normalized scores are
      what lets the selected references (asked where the interval is wide)
      calibrate every reading's interval.  :attr:`coverage` counts the references'
      verdicts.
    * **Asking for references** where the interval is widest relative to its
      history: with ``u = exp(mean log sd - log sd)`` (below 1: wider than usual;
      the mean over the readings observed, at ``width_half_life``), the reference
      is asked for with probability ``1 / (1 + (u / threshold)^p)``
      (ActiveAROW's rule, :func:`~edgelearn.kernels.arow.draw_query`), and
      ``threshold`` adapts after every reading so that a ``target_query_rate``
      share is asked (:func:`~edgelearn.kernels.arow.adapt_threshold`); a token
      bucket (``target_query_rate`` earned per reading, at most ``burst`` held)
      grants the questions, so ``n`` readings are never asked more than
      ``target_query_rate n`` times.  A rate of 1.0 asks for every reference.  A reading whose channels are new or rarely
      learned has a large ``v``, hence a wide interval, and is asked for.
    * **Merging** (a fleet's virtual sensors, :mod:`edgelearn.learners.mergeable`):
      the belief is shared as ActiveAROW's (each weight's precision above the
      prior and precision x mean, by channel name; bin counts).  The prediction
      is ``offset + W x + b``, and each learner's offset is its own first
      reference, so the intercept is shared in the target's units: its
      precision above the prior ``P = 1 / Sb - 1``, ``(offset + b) / Sb`` and,
      for each learner that has an offset, 1 and the offset.  The group's
      offset is the (weighted) mean of its members' offsets ``o``, and its
      intercept ``(sum (offset + b) / Sb - o (count + sum P)) / (1 + sum P)``:
      the precision-weighted mean of the members' intercepts around ``o``
      (one member's group gives back its ``offset + b`` exactly).  A learner
      started from the group takes ``o`` as its first reference.  What the
      references taught of the noise, the interval's calibration and the error
      feedback stays each learner's own.

    Parameters
    ----------
    r
        AROW's regularization: the noise variance in units of a new weight's prior
        variance (1).  The larger, the smaller and more cautious each step.
    n_bins
        Bins per channel of the additive part (ActiveAROW's): 0 is a linear model.
    variance_floor
        No moved variance falls below this (of the prior 1): 0 is plain AROW.
    coverage
        The intervals' stated coverage, in (0, 1).
    calibration_window
        Scores of the last this many references calibrate the interval.
    aci_gamma
        Adaptive conformal inference's step: 0 keeps the level at ``1 - coverage``.
    huber
        A reference's residual is clipped to this many (calibrated) sds.
    reject
        A reference this many sds off, alone, is a spike and is not learned.
    noise_half_life
        The noise variance estimate forgets at this many references.
    target_query_rate
        The share of references asked for; 1.0 asks for every one.
    query_power
        Sharpness ``p`` of the query rule.
    budget_gain
        Speed of the rate control.
    burst
        The most questions the token bucket holds (asked in a row after a calm).
    width_half_life
        The history of the interval's width spans about this many readings.
    n_lags
        Lag buckets of the error feedback (16 exact lags, then one per doubling:
        24 reach 4096 readings); 0 turns it off.
    learn_intercept
        Learn an intercept (a constant feature, starting at variance 1).
    capacity
        Channel slots (the fixed size of every array).
    evict_after
        A channel absent for this many readings may give its slot away.
    seed
        Seed of the learner's own generator for query decisions.

    Defaults: ``r = 0.003``, ``variance_floor = 0.6``, ``n_bins = 0``, ``huber = 8``,
    ``reject = 10`` were chosen by ``python tools/results_regression.py --tune`` (its
    grid over ``r``, the floor, bins and ``huber``) on seeds 1000-1001 of the soft-sensor
    tasks other than the held-out one, by the mean over tasks of MAE over River's
    ``StandardScaler | LinearRegression`` given every reference; earlier grids of the
    same command (``r`` from 0.003 to 1, the floor from 0.1 to 0.9, ``reject`` 6 or 10,
    ``noise_half_life`` 100 or 500) led there.  The grid prefers the fastest tracking it
    was offered: a small ``r`` and a high floor make every reference move the model
    almost to it, and the error feedback carries the rest; on a relation that does not
    drift a larger ``r`` learns better (the example below).  The rest were set before
    any run: ``aci_gamma = 0.005`` is Gibbs & Candes's, ``query_power`` and
    ``budget_gain`` are ActiveAROW's, the window of 256, the half-lives of 500, 24 lags
    and a burst of 8 are round numbers.

    Memory bound: with ``F = capacity * (1 + n_bins)`` features, ``16 F + 16`` bytes
    for the belief (means and variances, intercept), ``12 F`` of feature scratch,
    ``8 capacity n_bins + 8 max(n_bins - 1, 0)`` for the bin frequencies and edges,
    ``16 calibration_window`` for the score ring and its sorting scratch, ``32
    n_lags`` for the lag table, ``capacity`` bytes of scratch, ``8 * 21`` of
    statistics and 8 of generator state, plus the ChannelSpace.  At the defaults
    (``capacity = 256``, no bins): 41,152 bytes; with 8 bins, 114,936.

    Examples
    --------
    >>> import random
    >>> from edgelearn import AROWRegressor
    >>> def run(model):
    ...     rng = random.Random(1)
    ...     inside = asked = err = 0
    ...     for i in range(3000):
    ...         t, h = rng.gauss(20, 3), rng.gauss(50, 10)
    ...         x = {"t": t, "h": h} if rng.random() > 0.2 else {"h": h}
    ...         y = 400 + 30 * t + 2 * h + rng.gauss(0, 10)
    ...         d = model.decide_one(x)
    ...         if i >= 1000:
    ...             err += abs(d.label - y)
    ...             inside += d.extra["lower"] <= y <= d.extra["upper"]
    ...         if d.ask:
    ...             asked += 1
    ...             model.learn(d.slots, d.z, y)
    ...     print(f"asked {asked / 3000:.0%}, MAE {err / 2000:.0f}, covered {inside / 2000:.0%}")
    >>> run(AROWRegressor(target_query_rate=0.2, seed=3))
    asked 20%, MAE 37, covered 90%
    >>> run(AROWRegressor(target_query_rate=0.2, seed=3, r=1.0, variance_floor=0.3))
    asked 20%, MAE 22, covered 87%

    The defaults follow drifting soft sensors (see below); on a relation that does not
    move, as here, a larger ``r`` and a lower floor learn it better.
    """

    tasks = frozenset({"regression"})
    capabilities = frozenset({"label_rate", "log_loop", "batch_pass", "merge"})
    _shared_summed = ("intercept_precision", "intercept_precision_mean", "offset_count", "offset_sum")
    asks_selectively = True
    _parameter_constraints = {
        "r": Interval(float, 0, None, closed="right"),
        "n_bins": Interval(int, 0, None),
        "variance_floor": Interval(float, 0, _PRIOR_VAR, closed="left"),
        "coverage": Interval(float, 0, 1, closed="neither"),
        "calibration_window": Interval(int, 1, None),
        "aci_gamma": Interval(float, 0, None),
        "huber": Interval(float, 0, None, closed="right"),
        "reject": Interval(float, 0, None, closed="right"),
        "noise_half_life": Interval(float, 0, None, closed="right"),
        "target_query_rate": Interval(float, 0, 1, closed="right"),
        "query_power": Interval(float, 0, None, closed="right"),
        "budget_gain": Interval(float, 0, None, closed="right"),
        "burst": Interval(float, 1, None),
        "width_half_life": Interval(float, 0, None, closed="right"),
        "n_lags": Interval(int, 0, None),
        "learn_intercept": Boolean(),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "seed": Interval(int, 0, 2**64 - 1),
    }

    def __init__(
        self,
        r: float = 0.003,
        n_bins: int = 0,
        variance_floor: float = 0.6,
        coverage: float = 0.9,
        calibration_window: int = 256,
        aci_gamma: float = 0.005,
        huber: float = 8.0,
        reject: float = 10.0,
        noise_half_life: float = 500.0,
        target_query_rate: float = 0.2,
        query_power: float = 5.0,
        budget_gain: float = 0.5,
        burst: float = 8.0,
        width_half_life: float = 500.0,
        n_lags: int = 24,
        learn_intercept: bool = True,
        capacity: int = 256,
        evict_after: int = 1000,
        seed: int = 0,
    ):
        self._set_params(locals())
        self._init_channels(capacity, evict_after)
        self._init_targets(task="regression")
        features = capacity * (1 + n_bins)
        self.W = np.zeros((1, features), dtype=np.float64)
        self.S = np.full((1, features), _PRIOR_VAR, dtype=np.float64)
        self.b = np.zeros(1, dtype=np.float64)
        self.Sb = np.full(1, _PRIOR_VAR if learn_intercept else 0.0, dtype=np.float64)
        self._edges = bin_edges(n_bins)
        self.bin_freq = np.zeros((capacity, n_bins), dtype=np.float64)
        self._feature_slots = np.zeros(features, dtype=np.int32)
        self._feature_z = np.zeros(features, dtype=np.float64)
        self.scores = np.zeros(calibration_window, dtype=np.float64)
        self._sorted = np.zeros(calibration_window, dtype=np.float64)
        self._present = np.zeros(capacity, dtype=np.int8)
        self.stats = np.zeros(K.N_STATS, dtype=np.float64)
        self.stats[K.ALPHA_T] = 1.0 - coverage
        self.stats[K.GAUSS_Q] = NormalDist().inv_cdf(0.5 + coverage / 2.0)
        self.stats[K.QUANT] = self.stats[K.GAUSS_Q]
        self.stats[K.THRESHOLD] = 1.0
        self.stats[K.LAST_T] = -1.0
        self.lags = np.zeros((n_lags, 4), dtype=np.float64)
        self.rng_state = new_state(seed)
        self._noise_forget = 1.0 - 2.0 ** (-1.0 / noise_half_life)
        self._width_forget = 1.0 - 2.0 ** (-1.0 / width_half_life)

    # -- what the learner reports ------------------------------------------------

    @property
    def n_references(self) -> int:
        """References learned so far."""
        return int(self.stats[K.N_REF])

    @property
    def coverage_counts(self) -> tuple[int, int]:
        """``(inside, scored)``: the references learned inside the interval the model
        gave them when they were learned, out of those that had one (all but the
        first two)."""
        return int(self.stats[K.N_COVERED]), int(self.stats[K.N_SCORED])

    @property
    def realized_coverage(self) -> float:
        """The share of scored references inside their interval (NaN before one)."""
        inside, scored = self.coverage_counts
        return inside / scored if scored else math.nan

    @property
    def n_rejected(self) -> int:
        """References not learned: spikes beyond ``reject`` sds (see **Outliers**)."""
        return int(self.stats[K.N_REJECTED])

    @property
    def noise_sd(self) -> float:
        """The estimated noise standard deviation of the references (NaN before it is known)."""
        return math.sqrt(self.stats[K.SIGMA2]) if self.stats[K.N_NOISE] >= 1 else math.nan

    @property
    def current_threshold(self) -> float:
        """The query threshold as the rate control has left it."""
        return float(self.stats[K.THRESHOLD])

    # -- the protocol ---------------------------------------------------------------

    def _arrays_in(self, t: int):
        """The kernels' model arguments; ``t`` is the index of the reading at hand."""
        space = self.channels
        return (self._edges, self.bin_freq, self.capacity, self._feature_slots, self._feature_z,
                self.W, self.S, self.b, self.Sb, self.stats, space.count, space.last_seen, t,
                space.evict_after, self._present, self.lags)

    def _observe(self, slots, z) -> None:
        # every observed reading moves its channels' bin frequencies (ActiveAROW's rule)
        arow_kernels.count_bins(slots, z, len(slots), self._edges, self.bin_freq,
                                self.channels.count, self.channels.forget)

    def decide_one(self, x: dict) -> Decision:
        """Observe ``x``, predict it with its interval, and decide once whether to
        ask for its reference."""
        slots, z = self.channels.observe(x, True)
        self._observe(slots, z)
        yhat, sd, lower, upper, asked = K.decide(
            slots, z, len(slots), *self._arrays_in(self.channels.t - 1), self.r,
            float(self.query_power),
            self.rng_state, float(self.target_query_rate), float(self.budget_gain),
            self._width_forget, float(self.burst))
        return Decision(yhat, sd, bool(asked), slots, z, {"lower": lower, "upper": upper})

    def _score(self, slots, z):
        yhat, sd, _, _ = K.predict(slots, z, len(slots), *self._arrays_in(self.channels.t), self.r)
        return yhat, sd

    def _proba(self, margin: float):
        raise TypeError(f"{type(self).__name__} is a regressor: it has no class probabilities.")

    def predict_one(self, x: dict) -> float:
        """The prediction for ``x``, learning nothing (the offset, 0.0, before any reference)."""
        slots, z = self.channels.transform(x, True)
        return float(self._score(slots, z)[0])

    def predict_interval_one(self, x: dict) -> tuple[float, float, float]:
        """``(prediction, lower, upper)`` for ``x``, learning nothing; the interval is
        the whole line until two references have been learned."""
        slots, z = self.channels.transform(x, True)
        yhat, _, lower, upper = K.predict(slots, z, len(slots), *self._arrays_in(self.channels.t),
                                          self.r)
        return yhat, lower, upper

    def learn(self, slots, z, y) -> None:
        """Learn reference ``y`` (a finite number) of the reading whose features are
        ``(slots, z)`` (from :meth:`decide_one`), with the model as it is now."""
        y = self.targets.value(y)
        K.learn(slots, z, len(slots), y, *self._arrays_in(self.channels.t - 1), self.scores,
                self._sorted, self.r, self.variance_floor, self.huber, self.reject, 1.0 - self.coverage,
                self.aci_gamma, self._noise_forget, self._noise_forget)

    def _forget_slot(self, slot: int) -> None:
        arow_kernels.forget_slot(slot, self.W, self.S, _PRIOR_VAR)
        arow_kernels.forget_bins(slot, self.bin_freq, self.capacity, self.W, self.S, _PRIOR_VAR)

    def run_rows(self, rows: RowsPass) -> RowsResult:
        """A stream's rows through one jitted loop (the ``"log_loop"`` and
        ``"batch_pass"`` capabilities), with the predictions, intervals, reference
        requests, learning and final state of :meth:`decide_one` and :meth:`learn`
        reading by reading (``kernels/log_replay_regression.py``'s
        ``arow_regressor_log_loop``, which runs the per-message path's kernels row by
        row). ``pred`` is unused (0), ``margins`` the sd; the prediction and the
        interval are ``extra["yhat"]``, ``extra["lower"]`` and ``extra["upper"]``."""
        from ..kernels import log_replay_regression as loop

        X, names = rows.X, rows.names
        n = X.shape[0]
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows)
        # (a label the learner cannot take has code -1 in rows.codes: its entry is unused)
        code_value = self.targets.values(rows.labels) if rows.labels else np.zeros(1)
        extra = {"yhat": np.empty(n), "lower": np.empty(n), "upper": np.empty(n)}
        loop.arow_regressor_log_loop(
            X, rows.codes, code_value, rows.learn_if_asked,
            col_slot, slot_col, changed, counters,
            space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
            space.z_max, space.evict_after,
            self._edges, self.bin_freq, self.capacity, self._feature_slots, self._feature_z,
            self.W, self.S, self.b, self.Sb, self.stats, self._present, self.lags,
            self.scores, self._sorted, self.r, self.variance_floor, self.huber, self.reject,
            1.0 - self.coverage, self.aci_gamma, self._noise_forget,
            float(self.query_power), self.rng_state, float(self.target_query_rate),
            float(self.budget_gain), self._width_forget, float(self.burst), _PRIOR_VAR,
            out.slots, out.vals, extra["yhat"], out.margins, extra["lower"], extra["upper"],
            out.asked, out.feat_k, out.feat_slots, out.feat_z,
        )
        space.take_column_map(names, slot_col, changed, counters)
        out.pred[:] = 0
        return out.result([(-1, [])], extra=extra)

    # -- merging (edgelearn.learners.mergeable) ---------------------------------------

    def _learned_anything(self) -> bool:
        return self.stats[K.N_REF] > 0

    def _precision_per_reading(self) -> float:
        # ActiveAROW's bound (a step's r is scaled up, never down, by absent channels).
        return max(self.channels.z_max, 1.0) ** 2 / self.r

    def _shared_structure(self) -> dict:
        return {"n_bins": self.n_bins, "learn_intercept": self.learn_intercept}

    @classmethod
    def _shared_columns(cls, structure: dict) -> dict:
        return belief_columns(1, structure["n_bins"])

    def _shared_by_slot(self) -> dict:
        return belief_by_slot(self.W, self.S, self.channels.count, self.bin_freq, self.capacity, self.n_bins,
                              _PRIOR_VAR)

    def _shared_model_wide(self) -> dict:
        has_offset = self.stats[K.N_REF] > 0
        offset = float(self.stats[K.OFFSET]) if has_offset else 0.0
        if self.learn_intercept:
            precision = 1.0 / self.Sb - 1.0 / _PRIOR_VAR
            precision_mean = (offset + self.b) / self.Sb
        else:
            precision = precision_mean = np.zeros(1)
        return {"intercept_precision": precision, "intercept_precision_mean": precision_mean,
                "offset_count": np.array([1.0 if has_offset else 0.0]), "offset_sum": np.array([offset])}

    def _load_shared(self, placed: list, part: dict, totals: dict) -> None:
        load_belief(self.W, self.S, self.bin_freq, placed, part, self.capacity, self.n_bins,
                    self.variance_floor, _PRIOR_VAR)
        count = float(totals["offset_count"][0])
        if count <= 0:
            return  # the group has met no reference: nothing to centre on
        offset = float(totals["offset_sum"][0]) / count
        if self.learn_intercept:
            extra = float(totals["intercept_precision"][0])
            precision = 1.0 / _PRIOR_VAR + extra
            self.b[0] = (float(totals["intercept_precision_mean"][0]) - offset * (count + extra)) / precision
            self.Sb[0] = max(1.0 / precision, self.variance_floor)
        # The group's offset is this learner's first reference (K.learn's centring).
        self.stats[K.OFFSET] = offset
        self.stats[K.Y_MEAN] = offset
        self.stats[K.N_REF] = 1.0

    # -- state ------------------------------------------------------------------------

    _LEARNED = ("W", "S", "b", "Sb", "bin_freq", "scores", "stats", "lags", "rng_state")

