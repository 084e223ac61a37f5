"""SurpriseDetector: calibrated per-channel surprise, the anomaly task's detector."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..constraints import Constraint, Interval, OneOf, Options
from ..kernels import anomaly as K
from .arrays import RowsPass, RowsResult, row_buffers
from .base import Decision, Learner

#: Histogram of surprises per (channel, kind): bins of this width in log2(1 + a).
_HIST_BINS = 32
_HIST_BIN_WIDTH = 0.5
#: Weight of the prior tail exp(-a) in each tail probability.
_PRIOR = 1.0
#: Confirmed anomalies remembered per channel.
_CONFIRMED = 4


def _rate(half_life: float) -> float:
    """Per-observation forgetting rate of a half-life in observations."""
    return 1.0 - 2.0 ** (-1.0 / half_life)


class Evidence(Constraint):
    """A non-empty tuple of distinct evidence kinds, each one of :data:`KINDS`."""

    def describe(self) -> str:
        return "a non-empty tuple of distinct names among " + ", ".join(map(repr, K.KINDS))

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (tuple, list))

    def convert(self, value: Any) -> tuple:
        if not isinstance(value, (tuple, list)):
            self._reject(TypeError, value)
        names = tuple(value)
        if not names or len(set(names)) != len(names) or not set(names) <= set(K.KINDS):
            self._reject(ValueError, value)
        return names

    def invalid_values(self) -> list:
        return [(), ("level", "level"), ("nope",), "level", 3]

    def valid_value(self) -> tuple:
        return ("change",)


class SurpriseDetector(Learner):
    """Streaming anomaly detection by calibrated per-channel surprise.

    **Evidence.** Each channel of a reading is tested by a few kinds of evidence,
    each giving a *surprise* ``a >= 0`` in nats (``edgelearn/kernels/anomaly.py``
    has the formulas):

    * ``"change"``: the step from the channel's previous value, against its typical
      step (a spike, a jump, a sensor that starts to chatter);
    * ``"range"``: how far the value falls outside every value the channel has had,
      in units of that range (the spatial-novelty test Numenta's HTM detector adds
      to its temporal one on NAB: Ahmad, Lavin, Purdy and Agha, "Unsupervised
      real-time anomaly detection for streaming data", Neurocomputing 2017);
    * ``"level"``: distance from a slowly forgetting mean in units of the slowly
      forgetting mean absolute deviation (robust statistics with forgetting);
    * ``"shift"``: a fast-forgetting mean against the slow one, in units of the fast
      mean's own spread (a level shift or a slow drift: the exponentially weighted
      moving average chart of Roberts, Technometrics 1959);
    * ``"context"``: ``-log P(bin | previous bin)`` over the channel's value bins, a
      first-order Markov model with forgetting of which value follows which (the
      contexts CAD OSE learns, reduced to the previous bin);
    * ``"stuck"``: the current run of identical values against the channel's
      typical run (a frozen sensor);
    * ``"season"``: the change from the channel's value ``season`` of its readings
      ago, against the typical change at that lag: a pattern that breaks its cycle
      (the default 288 is a day of 5-minute readings, NAB's most common rate; set it
      to a stream's period in readings, or 0 to keep no ring of past values).

    **Calibration.** A surprise means little by itself: a noisy channel is always
    surprising. Each (channel, kind) keeps an exponentially weighted histogram of
    the surprises it has produced (``calibration_half_life`` readings, 32 bins on
    ``log2(1 + a)``), and a surprise becomes the tail probability of being at
    least that surprising, ``p = (H(>= a) + exp(-a)) / (N + 1)`` (a prior of one
    observation whose tail is ``exp(-a)`` extends the histogram past anything it
    has seen, so extreme readings keep their order). A channel's p-value combines
    its kinds' by Fisher's method (Fisher 1932: ``-2 sum ln p`` is chi-squared with
    twice as many degrees of freedom as p-values; a reading a little surprising in
    level, step and range at once is more surprising than any one says); the
    reading's p-value is the smallest of its channels', times the number of
    channels tested (Bonferroni: the more channels are tested, the less one small
    p means), and its *evidence* ``E = -log10 p``. The score is
    ``E / (E + score_scale)``: with the default ``score_scale = 5``, 0.5 means a
    reading as surprising as one in 100,000, whatever the stream, so a threshold
    means the same on every stream. Testing each channel on its own and combining
    p-values is what makes channels free to come and go: a missing channel makes
    no test, neither raising an alarm nor hiding one in the others; a new channel
    makes none until it has ``warmup`` readings, then is judged against its own
    history (learned, not alarmed on forever). This is the p-value calibration of
    conformal anomaly detection (Laxhammar and Falkman, "Inductive conformal
    anomaly detection for sequential detection of anomalous sub-trajectories",
    Annals of Mathematics and Artificial Intelligence 2015), per channel, with
    forgetting.

    **Alarms.** A reading alarms when its evidence is at least the threshold
    (``alarm_threshold``, a score) *and* above the current episode's evidence, a
    maximum that halves every ``episode_half_life`` readings: a sustained anomaly
    alarms once, then again only if it grows (CAD OSE's rest period, on evidence
    rather than on time alone). With ``target_alarm_rate`` the threshold moves
    after every reading, ``t *= exp(gain (alarm - target))``, to hold that rate, within
    the scores 0.001 and 0.999 (a stream that cannot reach the rate, such as a stuck
    sensor that never alarms, would drive it to 0 or without bound).

    **Feedback** (active anomaly discovery: Das, Wong, Dietterich, Fern and Emmott,
    "Incorporating expert feedback into active anomaly discovery", ICDM 2016, who
    reweight an ensemble's members from the analyst's answers). Each (channel,
    kind) has a weight, 1 at first, on its evidence. An alarm asks the operator
    when the label budget allows (``target_query_rate``: tokens accrue at that rate per
    reading, at most ``max_tokens`` held; an alarm with a token asks). The answer
    is learned from the evidence kept with the decision, however late: a false
    alarm scales down every (channel, kind) weight whose evidence alone would
    alarm, to ``false_alarm_shrink`` of the weight at which it would not, so the
    same pattern stops alarming while stronger evidence of the same kind still
    does, and it forgets the confirmed anomalies the reading matched. A confirmed
    anomaly raises the weight of its strongest (channel, kind) to at least 1 and is
    remembered (each channel keeps its 4 strongest confirmed values): a later value
    within ``confirm_tolerance`` spreads of it gets at least the evidence that
    alarms, so the same pattern keeps alarming after the statistics have absorbed
    it. (Das et al. raise a confirmed anomaly's score through the weights alone; a
    forgetting detector needs the memory, or a repeat is soon ordinary.)

    **Memory** (fixed at construction): per channel slot ``8 * (12 + 7 (1 + 32) +
    n_bins^2 + 4 * 2 + max(season, 1))`` bytes (statistics, per-kind weights and
    histograms, the context table, the confirmed anomalies, the ring of past values),
    plus 31 numbers, the label table and the channel space; 64 slots, 8 bins and a
    season of 288: 308,736 + 248 + 128 + the space's (309,112 + 7,168).

    Defaults were chosen on NAB (``docs/results-nab.md`` says what was tuned on what
    and shows the variants tried): the evidence kinds level, change, range and
    season (288), combined by Fisher's method.

    Parameters
    ----------
    evidence
        The kinds of evidence each channel is tested by, among "level", "change",
        "shift", "context", "stuck", "range" and "season".
    half_life
        Readings over which a channel's slow mean, deviation and typical step halve
        their weight.
    fast_half_life
        The same for the fast mean the shift kind compares with the slow one.
    calibration_half_life
        Readings over which the histograms that calibrate each kind's surprises forget.
    context_half_life
        Readings over which the context kind's table of value transitions forgets.
    warmup
        Readings a channel needs before it is tested (a new channel is learned first).
    range_scale
        Surprise, in nats, of a value one whole range beyond every value seen.
    season
        The season kind's lag, in readings of the channel (a period: 288 is a day of
        5-minute readings); 0 keeps no ring of past values.
    n_bins
        Value bins of the context kind.
    score_scale
        The evidence (-log10 of the p-value) at which the score is 0.5.
    alarm_threshold
        The score at which a reading alarms (0.5: a p-value of 1e-5).
    target_alarm_rate
        None for a fixed threshold; else the share of readings that alarm, which the
        threshold follows.
    alarm_gain
        How fast the threshold follows the target alarm rate.
    episode_half_life
        Readings over which an episode's evidence halves: within an episode only
        stronger evidence alarms again.
    target_query_rate
        The label budget: the most alarms per reading the operator is asked about.
    max_tokens
        The most label requests that may be saved up for a burst of alarms.
    false_alarm_shrink
        After a false alarm, the share of the alarm limit the same evidence combines to.
    confirm_tolerance
        How near a value must be to a confirmed anomaly, in the channel's spreads, to
        alarm again as it did.
    n_top
        The most channels named behind an alarm.
    capacity
        Channel slots, fixed for the learner's life.
    evict_after
        Readings a channel must be absent before its slot may go to a new channel.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> det = SurpriseDetector()
    >>> for t in range(2000):
    ...     d = det.decide_one({"temp": 20 + rng.normal(), "hum": 40 + rng.normal()})
    >>> d = det.decide_one({"temp": 20.0, "hum": 95.0})   # humidity jumps
    >>> d.label, d.score > 0.9, d.extra["top"]
    (True, True, ('hum',))
    >>> det.learn(d.slots, d.z, False)                      # "not a real anomaly"
    >>> det.score_one({"temp": 20.0, "hum": 95.0}) < det.alarm_threshold
    True
    """

    tasks = frozenset({"anomaly"})
    capabilities = frozenset({"label_rate", "log_loop", "batch_pass"})
    asks_selectively = True
    #: The channel space hands this learner raw values; it keeps its own statistics.
    _scale = False

    _parameter_constraints = {
        "evidence": Evidence(),
        "half_life": Interval(float, 1, None),
        "fast_half_life": Interval(float, 0, None, closed="neither"),
        "calibration_half_life": Interval(float, 1, None),
        "context_half_life": Interval(float, 1, None),
        "warmup": Interval(int, 2, None),
        "range_scale": Interval(float, 0, None, closed="neither"),
        "season": Interval(int, 0, None),
        "n_bins": Interval(int, 2, 32),
        "score_scale": Interval(float, 0, None, closed="neither"),
        "alarm_threshold": Interval(float, 0, 1, closed="neither"),
        "target_alarm_rate": OneOf(Options(None), Interval(float, 0, 1, closed="neither")),
        "alarm_gain": Interval(float, 0, None, closed="neither"),
        "episode_half_life": Interval(float, 0, None, closed="neither"),
        "target_query_rate": Interval(float, 0, 1),
        "max_tokens": Interval(float, 1, None),
        "false_alarm_shrink": Interval(float, 0, 1, closed="neither"),
        "confirm_tolerance": Interval(float, 0, None),
        "n_top": Interval(int, 1, None),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
    }

    def __init__(
        self,
        evidence: tuple = ("level", "change", "range", "season"),
        half_life: float = 1386.0,
        fast_half_life: float = 13.5,
        calibration_half_life: float = 1386.0,
        context_half_life: float = 346.0,
        warmup: int = 30,
        range_scale: float = 50.0,
        season: int = 288,
        n_bins: int = 8,
        score_scale: float = 5.0,
        alarm_threshold: float = 0.5,
        target_alarm_rate: float | None = None,
        alarm_gain: float = 0.5,
        episode_half_life: float = 69.0,
        target_query_rate: float = 0.01,
        max_tokens: float = 3.0,
        false_alarm_shrink: float = 0.9,
        confirm_tolerance: float = 0.5,
        n_top: int = 3,
        capacity: int = 64,
        evict_after: int = 1000,
    ):
        self._set_params(locals())
        self._init_channels(self.capacity, self.evict_after)
        self._init_targets(task="anomaly")
        cap = self.capacity
        self.st = np.zeros((cap, K.N_STATS))
        self.hist = np.zeros((cap, K.N_KINDS, _HIST_BINS))
        self.trans = np.zeros((cap, self.n_bins, self.n_bins))
        self.ring = np.zeros((cap, max(self.season, 1)))
        self.weight = np.ones((cap, K.N_KINDS))
        self.conf = np.zeros((cap, _CONFIRMED, 2))
        self.ctl = np.zeros(K.N_CONTROL)
        self.ctl[K.C_THRESHOLD] = self._evidence_of(self.alarm_threshold)
        self.ctl[K.C_TOKENS] = 1.0
        self._params = np.zeros(K.N_PARAMS)
        self._params[[K.P_SLOW, K.P_FASTR, K.P_HIST, K.P_WARMUP, K.P_PRIOR, K.P_BINW, K.P_TRANS,
                      K.P_NBINS, K.P_KINDS, K.P_RANGE, K.P_CONFTOL, K.P_SEASON]] = [
            _rate(self.half_life), _rate(self.fast_half_life), _rate(self.calibration_half_life),
            self.warmup, _PRIOR, _HIST_BIN_WIDTH, _rate(self.context_half_life), self.n_bins,
            sum(1 << K.KINDS.index(name) for name in self.evidence), self.range_scale,
            self.confirm_tolerance, self.season,
        ]
        self._q = np.zeros(K.N_QPARAMS)
        self._q[[K.Q_SCALE, K.Q_EPISODE, K.Q_TARGET, K.Q_GAIN, K.Q_LABELS, K.Q_TOKENS]] = [
            self.score_scale, 1.0 - _rate(self.episode_half_life), self.target_alarm_rate or 0.0,
            self.alarm_gain, self.target_query_rate, self.max_tokens,
        ]
        self._a = np.zeros(K.N_KINDS)

    _LEARNED = ("st", "hist", "trans", "ring", "weight", "conf", "ctl")

    def _evidence_of(self, score: float) -> float:
        return self.score_scale * score / (1.0 - score)

    @property
    def threshold(self) -> float:
        """The alarm threshold now, as a score (it moves with ``target_alarm_rate``)."""
        e = float(self.ctl[K.C_THRESHOLD])
        return e / (e + self.score_scale)

    @property
    def alarm_rate(self) -> float:
        """Alarms per reading decided so far."""
        return float(self.ctl[K.C_ALARMS] / max(self.ctl[K.C_READINGS], 1.0))

    @property
    def ask_rate(self) -> float:
        """Label requests per reading decided so far."""
        return float(self.ctl[K.C_ASKED] / max(self.ctl[K.C_READINGS], 1.0))

    # -- scoring ------------------------------------------------------------------------

    def _evidence(self, slots, values, learn: bool) -> tuple[float, int, np.ndarray]:
        ev = np.empty(len(slots) * K.EV_ROW)
        e, top = K.reading_evidence(self.st, self.hist, self.trans, self.ring, self.weight, self.conf,
                                    slots, values, len(slots), self._params, self._a, ev, learn)
        return float(e), int(top), ev

    def _top(self, slots, ev) -> tuple:
        """Names of the channels whose evidence is largest (at least 1: a p-value of
        one in ten), strongest first."""
        strength = ev[K.EV_STRENGTH::K.EV_ROW]
        if not len(strength) or strength.max() < 1.0:
            return ()
        order = np.argsort(-strength, kind="stable")[: self.n_top]
        return tuple(self.channels.name_of(int(slots[i])) for i in order if strength[i] >= 1.0)

    def score_one(self, x: dict) -> float:
        """The calibrated anomaly score of ``x`` in [0, 1), learning nothing."""
        slots, values = self.channels.transform(x, scale=False)
        e, _, _ = self._evidence(slots, values, learn=False)
        return float(K.score_of(e, self.score_scale))

    def decide_one(self, x: dict) -> Decision:
        """Score ``x``, decide its alarm and whether to ask about it, then learn it.

        The decision's ``label`` is the alarm, ``score`` the calibrated score, ``ask``
        whether to ask the operator, ``(slots, z)`` what :meth:`learn` needs for the
        answer (``z`` holds per channel a row of ``EV_ROW`` numbers: its evidence per
        kind, of a confirmed anomaly, its value, its combined evidence), and
        ``extra["top"]`` the names of the channels that contributed most, strongest
        first."""
        slots, values = self.channels.observe(x, scale=False)
        ev = np.empty(len(slots) * K.EV_ROW)
        score, alarm, ask = K.decide_step(self.st, self.hist, self.trans, self.ring, self.weight, self.conf,
                                          self.ctl, slots, values, len(slots), self._params, self._q,
                                          self._a, ev)
        return Decision(alarm, score, ask, slots, ev, {"top": self._top(slots, ev)})

    def learn_one(self, x: dict, y=None) -> None:
        """Learn ``x`` as a reading of the stream; with ``y`` (True: a real anomaly,
        False: a false alarm) also learn that answer about it."""
        slots, values = self.channels.observe(x, scale=False)
        _, _, ev = self._evidence(slots, values, learn=True)
        if y is not None:
            self.learn(slots, ev, y)

    def learn(self, slots, z, y) -> None:
        """Learn the operator's answer ``y`` (True: real, False: a false alarm) about
        the reading a decision kept as ``(slots, z)``."""
        real = self.targets.sign(y) > 0.0
        # The reading's channels tested, at most: its known channels.
        tested = int(np.sum(np.asarray(slots) >= 0))
        K.feedback(self.weight, self.conf, self.st, np.asarray(slots, dtype=np.int32),
                   np.asarray(z, dtype=np.float64), len(slots), real, float(self.ctl[K.C_THRESHOLD]),
                   math.log10(tested) if tested > 1 else 0.0, self.false_alarm_shrink,
                   self.confirm_tolerance, len(self.evidence))

    # -- the Learner hooks ----------------------------------------------------------------

    def _score(self, slots, z):
        """The alarm this reading would raise now (ignoring the episode rule) and its
        score; ``predict_one`` and ``predict_proba_one`` (``{False: 1 - s, True: s}``)
        come from it, learning nothing."""
        e, _, _ = self._evidence(slots, z, learn=False)
        return bool(e >= self.ctl[K.C_THRESHOLD]), float(K.score_of(e, self.score_scale))

    def _proba(self, margin: float) -> float:
        """P(anomalous) is the calibrated score itself (``margin`` here)."""
        return margin

    def _forget_slot(self, slot: int) -> None:
        self.st[slot] = 0.0
        self.hist[slot] = 0.0
        self.trans[slot] = 0.0
        self.ring[slot] = 0.0
        self.weight[slot] = 1.0
        self.conf[slot] = 0.0

    # -- arrays -------------------------------------------------------------------------------

    def decide_array(self, X, columns=None) -> dict:
        """:meth:`decide_one` over every row of ``X`` (n x d, NaN = missing) in one
        jitted loop, exactly as over the rows as dicts (``columns`` names the
        channels, default ``"0"``, ``"1"``, ...). Returns arrays ``score``, ``alarm``,
        ``ask`` and ``top`` (the slot that gave the most evidence, -1: none)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"The 'X' parameter of SurpriseDetector.decide_array must be a 2-D "
                             f"array (readings x channels). Got shape {X.shape}.")
        columns = [str(j) for j in range(X.shape[1])] if columns is None else list(columns)
        if len(columns) != X.shape[1]:
            raise ValueError(f"The 'columns' parameter of SurpriseDetector.decide_array must name "
                             f"the {X.shape[1]} columns of X. Got {len(columns)} names.")
        space = self.channels
        missing = [c for c in columns if space.slot_of(c) < 0]
        if missing:
            space.claim({c: 0.0 for c in missing})
        col_slot, slot_col, changed, counters = space.column_map(columns)
        if np.any(col_slot < 0):
            raise ValueError(f"SurpriseDetector has room for {self.capacity} channels; "
                             f"{int(np.sum(col_slot < 0))} of the columns found no slot.")
        n = X.shape[0]
        out = {"score": np.empty(n), "alarm": np.empty(n, np.bool_),
               "ask": np.empty(n, np.bool_), "top": np.empty(n, np.int64)}
        # top: the slot of the channel with the most evidence (-1: none had any)
        K.run_rows(X, col_slot, space.count, space.mean, space.var, space.last_seen, counters,
                   space.forget, space.eps, space.z_max, self.st, self.hist, self.trans,
                   self.ring, self.weight, self.conf, self.ctl, self._params, self._q,
                   out["score"], out["alarm"], out["ask"], out["top"])
        space.take_column_map(columns, slot_col, changed, counters)
        return out

    def run_rows(self, rows: RowsPass) -> RowsResult:
        """A stream's rows through one jitted loop (the ``"log_loop"`` and
        ``"batch_pass"`` capabilities), with the scores, alarms, label requests,
        learning and final state of :meth:`decide_one` and :meth:`learn` reading by
        reading (``kernels/log_replay_anomaly.py``'s ``surprise_log_loop``, which runs
        the per-message path's kernels row by row). ``pred`` is the alarm (1 or 0),
        ``margins`` the score; ``extra["top"]`` per row the columns of the channels
        behind it (:meth:`_top`, -1 padded); each decision keeps ``EV_ROW`` numbers
        per channel (``z_width``)."""
        from ..kernels import log_replay_anomaly as loop

        X, names = rows.X, rows.names
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows, K.EV_ROW)
        # (a label the learner cannot take has code -1 in rows.codes: its entry is unused)
        code_real = np.array([self.targets.known_sign(y) for y in rows.labels] or [0.0])
        alarm = np.zeros(X.shape[0], dtype=np.bool_)
        top = np.empty((X.shape[0], self.n_top), dtype=np.int64)
        loop.surprise_log_loop(
            X, rows.codes, code_real, rows.learn_if_asked,
            col_slot, slot_col, changed, counters,
            space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
            space.z_max, space.evict_after,
            self.st, self.hist, self.trans, self.ring, self.weight, self.conf, self.ctl,
            self._params, self._q, self._a, np.empty(max(len(names), 1) * K.EV_ROW),
            float(self.false_alarm_shrink), float(self.confirm_tolerance), len(self.evidence),
            out.slots, out.vals, out.margins, alarm, out.asked, top,
            out.feat_k, out.feat_slots, out.feat_z,
        )
        space.take_column_map(names, slot_col, changed, counters)
        out.pred[:] = alarm
        return out.result([(-1, [])], extra={"top": top}, z_width=K.EV_ROW)
