"""ActiveAROW: confidence-weighted learning with uncertainty-driven label
queries, for streams whose channels come and go and whose labels are scarce.
Beyond the seed papers; the papers it builds on are in the class docstring."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..constraints import Boolean, Interval, OneOf, Options
from ..kernels import arow as K
from ..kernels.rate_control import informed_query_state, is_informed, new_query_state, widened
from .arrays import RowsPass, RowsResult, row_buffers, run_signed
from .arow_multiclass import MulticlassAROW, state_before_multiclass_terms
from .arow_refit import FirstLabelsRefit
from .base import Decision, Learner, softmax_proba
from .belief_sharing import belief_by_slot, belief_columns, load_belief
from .budget import HeldBudget
from .mergeable import Mergeable
from .one_call import Fused, OneCallBinary, compiled_entry

#: Variance of a weight never learned.  Only its ratio to ``r`` matters (AROW's
#: steps are unchanged when both are scaled alike), so ``r`` alone is the knob.
_PRIOR_VAR = 1.0


class ActiveAROW(FirstLabelsRefit, MulticlassAROW, Mergeable, HeldBudget, OneCallBinary, Learner):
    """Diagonal AROW on a channel-wise additive model, with a label budget held as a rate.

    The model is a Gaussian belief over the weights, ``w ~ N(W, diag(S))``,
    on the channel space's standardized values, plus an intercept (a
    constant feature of value 1 with its own mean and variance).

    * **Learning** is AROW (Crammer, Kulesza & Dredze, "Adaptive
      regularization of weight vectors", NIPS 2009) with a diagonal
      covariance, the form its authors and Confidence-Weighted learning
      (Dredze, Crammer & Pereira, ICML 2008) use for high-dimensional data:
      on a margin below 1, ``beta = 1 / (v + r)``, ``w += (1 - y m) beta y S z``,
      ``S -= beta S^2 z^2``, where ``m`` is the margin and ``v = sum S z^2``
      its variance.  Each channel moves in proportion to the model's
      uncertainty about it.  That is what a capricious stream needs: a
      channel that appears starts at variance 1 and learns fast; a
      channel that vanishes keeps its weight and its (small) variance, so it
      is trusted again when it returns; a channel recycled by the channel
      space starts over.  A missing channel adds nothing to ``m`` or ``v``.
    * **Queries** follow the model's own uncertainty.  With ``u = |m| / sqrt(v)``,
      the margin measured in standard deviations of the belief (Dredze &
      Crammer, "Active learning with confidence", ACL 2008, query CW models by
      this quantity), the label is asked for with probability
      ``1 / (1 + (u / threshold)^p)``, ``p = query_power``.  With ``p = 1``
      this is the randomized selective-sampling rule of Cesa-Bianchi, Gentile
      & Zaniboni ("Worst-case analysis of selective sampling for linear
      classification", JMLR 2006), ``b / (b + |m|)``, on ``u`` instead of the
      raw margin; a larger ``p`` makes it a soft threshold (probability 1/2
      at ``u = threshold``).  An instance with new or rarely learned
      channels has a large ``v`` and is asked for; one the model is sure of
      is not.  ``threshold`` adapts after every instance, as PAACDS's
      ``delta`` does, so that the rule wants about ``target_query_rate`` of
      the labels, whatever ``p``; a bucket of label credit
      (:mod:`edgelearn.kernels.rate_control`) turns that into a guarantee:
      the labels asked stay within 5% of the target over any 1,000 readings
      or more (``query_rate`` is the realized rate).
    * **Bins** (``n_bins``, 8 by default) make the model additive instead of
      linear in each channel: besides its standardized value ``z``, each
      channel contributes a one-hot code of the bin ``z`` falls in, among
      ``n_bins`` bins cut at the standard normal's quantiles (so a
      standardized channel fills them about evenly: unsupervised
      equal-frequency discretization, Dougherty, Kohavi & Sahami,
      "Supervised and unsupervised discretization of continuous features",
      ICML 1995), with a weight per bin.  The sum over channels of a linear
      term and a piecewise-constant one is a generalized additive model
      (Hastie & Tibshirani 1990) that is still linear in its weights, so
      AROW learns it unchanged, each bin weight with its own variance.  It
      fits what a linear score cannot: a categorical channel coded as
      numbers (a nucleotide 1-4 gets a weight per value) and a channel whose
      effect is not monotone.  The code is centered on the channel's bin
      frequencies (``1[bin = b] - p_b``, ``p`` learned from every instance at
      the rate of the channel's standardization), for the reason values are
      standardized: a channel that stays in one bin then adds nothing, where
      an uncentered code would be a second intercept per channel.  The
      frequencies cost ``n_bins`` numbers per channel and the weights
      ``1 + n_bins`` per channel; ``n_bins = 0`` is the plain linear model.
      On the 13 binary tasks of ``tools/results_label_budget.py --tune``
      (seeds 1000-1002) 8 bins raise mean accuracy from 81.0 / 80.7 to 82.3 /
      82.3 (PAACDS / haphazard protocols, ``r = 50``); splice gains about
      12 points, arrhythmia (279 channels, 452 instances) loses about 1.
    * **Drift**: AROW's variances only shrink, so a model that learned long
      enough stops moving.  Each moved variance is kept at ``variance_floor``
      or above, the lower bound on the covariance of ARCOR (Vaits &
      Crammer, "Re-adapting the regularization of weights for
      non-stationary regression", ALT 2011): a well-known channel then still
      moves a bounded step when the concept drifts.
    * **Merging**: learners of one group share what they learned
      (:mod:`edgelearn.learners.mergeable`).  Each weight's belief is a
      Gaussian; a contribution is the change in each weight's precision
      ``1 / S`` and precision x mean ``W / S`` since the last one, and the group
      model adds them to the prior's, which is the precision-weighted
      combination of Dredze, Kulesza & Crammer ("Multi-domain learning by
      confidence-weighted parameter combination", Machine Learning 2010): each
      weight's mean is ``sum H / sum P``, the learners that are surer of a weight
      count more in it.  A learner starting from the group takes its means and
      variances ``max(1 / P, variance_floor)``; bin frequencies are merged
      weighted by the channels' counts.  Its label budget is an informed
      start's (:mod:`edgelearn.kernels.rate_control`): it is not a new model,
      so it takes no start-up loan, and over its first 250 readings it asks
      only for the labels its rule wants (a model that is sure of a reading,
      by its margin in standard deviations of the merged belief, does not
      want its label) instead of spending a full bucket.  A multiclass model shares one belief
      row per class, put in the group's order by the class's label (a label
      the group has not met takes the next free row, at most ``n_classes``).
    * **Multiclass** is one-vs-rest: one belief per class, the predicted
      class has the largest margin; the margin of a decision is the gap to the
      runner-up, measured against the sum of the two rows' variances.  The
      prediction adds to each class's margin ``class_mean_weight`` times a
      nearest-class-mean score, ``(mu_c . z - |mu_c|^2 / 2) / sqrt(k)`` over the
      ``k`` present channels, ``mu_c`` the mean standardized channels of the
      labels of class ``c`` learned: a generative score, which needs fewer
      labels per class than a discriminative one (Ng & Jordan, "On
      discriminative vs. generative classifiers", NIPS 2001; Mensink et al.,
      "Distance-based image classification", TPAMI 2013), for the tasks where a
      tenth of the labels is two or three per class.  The query still reads
      AROW's own margin in standard deviations.  On the tuning seeds at a 10%
      budget it lifts mean multiclass accuracy and macro F1 by 0.5-1.8 points
      (``docs/learners.md``).  The class means are the learner's own: a merge
      does not share them (a learner started from a group predicts by AROW's
      rows until it learns labels itself).
    * **Refit of the first labels** (``refit_until``, 160 by default): the first labels are
      learned on ``z`` from a few readings' statistics (a channel's first reading
      standardizes to 0, its second to plus or minus 1) and young bin frequencies, and
      under a 10% budget they are most of what a short stream ever learns. With
      ``refit_until > 0`` the learner keeps its first ``refit_labels`` labels (by default
      as many as its label budget can ask for by reading ``refit_until``; the raw
      values ``mean + z sqrt(var + eps)`` their ``z`` stands for when learned) and, before
      readings 10, 20, 40, ... up to ``refit_until``, puts the belief and the class sums
      back at the prior and learns the kept labels again, in order, under the channels'
      standardization and bins as they are then; refits end after the last point, or at
      a label beyond ``refit_labels``. On the tuning seeds at a 10% budget
      (``refit_until = 160``, ``docs/learners.md``) binary accuracy +0.3 to +1.1.
      Every path runs it alike, to the bit: the per-message ones (``decide_one``,
      ``learn_one``, ``decide_and_learn``) and the jitted row loops of :meth:`run_rows`
      (``"log_loop"``, ``"batch_pass"``). A learner does not merge while refits are
      pending (a refit resets the belief, which a contribution cannot carry). A learner
      started from a group makes no refits; a state saved before it loads with it off.
      ``refit_passes`` learns the kept labels that many times over, in order (class sums
      and counts each time): ``None`` is 2 for a multiclass learner, 1 for a binary one.
    * **Multiclass macro F1** (issue 26; each term multiclass only, measured as ``B'`` of
      ``tools/label_budget_multiclass_variants.py``, ``docs/learners.md``: on top of the
      refit at a 10% budget, macro F1 +2.8 / +1.9 on seeds 1000-1002, +2.4 / +2.0 on
      1003-1007, with ``refit_passes`` 2). *Novelty*: while some class of ``n_classes`` has
      no label learned, the query's ``u`` is divided by ``max(1, d / d_ref)^novelty``, ``d``
      the reading's mean squared standardized distance to the nearest class mean (classes
      with a label), ``d_ref`` its running mean over every reading decided: a reading far
      from every known class may be of a class not met yet, so it is asked for (rare-
      category discovery: Pelleg & Moore, "Active learning for anomaly and rare-category
      detection", NIPS 2004; He & Carbonell, "Nearest-neighbor-based active learning for
      rare category detection", NIPS 2007). A learner built with more classes than its
      stream has keeps the term on. *Logit adjustment*: the prediction's margins (with the
      class means) minus ``logit_adjustment * log(prior_c)``, ``prior_c`` the class's share
      of the labels learned with one pseudo-label each (Menon et al., "Long-tail learning
      via logit adjustment", ICLR 2021): a majority class takes fewer of the rare
      classes' readings. The query reads AROW's own ``u``, not the adjusted margins (as
      measured); the probabilities are the softmax of the adjusted margins. Class counts
      and the novelty statistics are the learner's own: a merge shares neither, and a
      learner started from a group has the term off until it learns a label itself.

    Parameters
    ----------
    r
        AROW's regularization, against a weight variance of 1 for a channel
        never learned: the larger, the smaller and more cautious each step
        (the loss is weighed ``1 / (2 r)`` against the belief's KL term).
    query_power
        Sharpness ``p`` of the query rule ``1 / (1 + (u / threshold)^p)``: 1
        is Cesa-Bianchi et al.'s, larger is nearer a hard threshold.
    target_query_rate
        About this fraction of labels is asked for (``threshold`` adapts
        after every instance); ``None`` keeps ``threshold`` fixed.
    threshold
        Initial query threshold, in standard deviations of the margin: the
        larger, the more labels are asked for.
    budget_gain
        Speed of the ``target_query_rate`` control.
    learn_intercept
        Learn an intercept (a constant feature, starting at variance 1).
    variance_floor
        No learned variance falls below this (of the prior variance 1): 0 is
        plain AROW; larger follows drift faster and forgets faster.
    n_bins
        Bins per channel of the additive part (see **Bins**): 0 is a linear
        model; 1 adds nothing (its centered code is 0).
    class_mean_weight
        Multiclass only: weight of the nearest-class-mean score added to each
        class's margin for the prediction (see **Multiclass**); 0 is
        one-vs-rest AROW alone.
    n_classes
        2 for a binary learner (labels True/1/+1 and False/0/-1, predictions
        True/False); more for a multiclass one (labels any hashable, at most
        ``n_classes`` distinct, indexed in order of first appearance).
    capacity
        Channel slots (the fixed size of every array).
    evict_after
        A channel absent for this many instances may give its slot away.
    seed
        Seed of the learner's own generator for query decisions.
    refit_until
        Refit the first labels before readings 10, 20, 40, ... up to this one (see
        **Refit of the first labels**); 0 is off (the default until the refit ran on every
        path), and 1 to 9 are refused (no refit point).
    refit_labels
        Labels kept for the refits; a label beyond them ends the refits. ``None`` sizes
        the buffer from the label budget: the most labels the rate control lets a new
        model ask for over its first ``refit_until`` readings,
        ``min(refit_until, floor(q * refit_until + room + loan))`` with ``q =
        target_query_rate`` and the budget's room and start-up loan at that reading
        (:func:`~edgelearn.kernels.rate_control.most_asks`; ``refit_until`` with no
        budget), so no label asked for is cut before the last refit: 26 at ``q = 0.1``,
        52 at 0.2, with ``refit_until = 160``. Labels learned beyond the asks (a
        pipeline's ``label_policy = "all"``) can still outrun it.
    refit_passes
        Times each refit learns the kept labels; ``None``: 2 multiclass, 1 binary.
    novelty
        Multiclass only: the exponent of the novelty term of the query (see **Multiclass
        macro F1**); 0 is off.
    logit_adjustment
        Multiclass only: the weight of ``log(prior_c)`` taken from each class's margin (see
        **Multiclass macro F1**); 0 is off.

    Calibration: :meth:`predict_proba_one` gives ``Phi(m / sqrt(1 + v))``
    for a binary learner, the predictive probability of a probit model whose
    weights follow the belief.  The belief is AROW's, which is not a
    posterior fit to the data's noise, so these numbers rank instances well
    but are not calibrated frequencies.  A multiclass learner gives the
    softmax of its one-vs-rest margins (the predicted class is the most
    probable; not calibrated either).

    The defaults ``r = 80``, ``n_bins = 8``, ``query_power = 5``,
    ``variance_floor = 0.3`` were chosen on the project's 13 binary tasks with
    seeds 1000-1002, which no results page reports (``python
    tools/results_label_budget.py --tune --jobs 2`` runs the final grid, over
    ``r`` in 50, 80, 120 and ``n_bins`` in 0, 8, 12; ``query_power`` and the
    floor come from an earlier grid over 5, 8 and 0, 0.3); the floor comes from the bundled
    occupancy demo's drift (accuracy 0.9569 without it, 0.9671 with it, before the refit
    was on by default; ``edgelearn replay --set variance_floor=0.0 --set refit_until=0``) and changed those tasks by
    less than 0.1 point.  A rehearsal buffer replaying
    labelled instances, and random exploration mixed into the query rule,
    were tried on the same seeds and lost accuracy (``docs/learners.md``).

    Memory bound: with ``F = capacity * (1 + n_bins)`` features,
    ``16 * rows * (F + 2) + 24 + 12 * F + 8 * capacity * n_bins + 8 *
    max(n_bins - 1, 0)`` bytes for the model (``rows = 1`` if binary, else
    ``n_classes``: mean and variance of each weight and intercept, score
    scratch, the query state (generator and budget counts), an instance's features as scratch, the bin
    frequencies and edges), plus ``8 * n_classes * (capacity + 1)`` for a
    multiclass learner's class means and 16 for its novelty statistics, plus 64 bytes per label it may hold (2 if
    binary), plus its ChannelSpace.  Binary, ``capacity = 256``, 8 bins: 81
    kB without refits (``refit_until = 0``).  With refits (``refit_until >= 10``), ``8 * L * (capacity + 1) + 8 + 12 *
    capacity`` bytes more, ``L`` the labels kept (``refit_labels``, or as the budget sizes
    it): the kept values and labels, their count, a reading's scratch; 68,872 at
    ``capacity = 256`` and 32 labels, 109,992 at 52 (the defaults: ``target_query_rate =
    0.2``, ``refit_until = 160``, sized), 14,296 at the gateway's ``capacity = 64`` and 10%
    budget (26 labels).  The buffer lives only until the last refit: once the refits are
    over (after reading ``refit_until``'s refit point, or at a label beyond the buffer) the
    learner frees it, and :meth:`memory_bytes` falls back to 8 bytes (the count) above the
    learner without refits; a state saved after that holds no buffer.

    Examples
    --------
    >>> import random
    >>> from edgelearn import ActiveAROW
    >>> rng = random.Random(1)
    >>> model = ActiveAROW(target_query_rate=0.2, seed=42)
    >>> correct = asked = 0
    >>> for i in range(2000):
    ...     a, b = rng.gauss(0, 1), rng.gauss(0, 1)
    ...     x = {"a": a, "b": b} if rng.random() > 0.3 else {"b": b}
    ...     y = a + b > 0
    ...     d = model.decide_one(x)
    ...     correct += d.label == y
    ...     if d.ask:
    ...         asked += 1
    ...         model.learn(d.slots, d.z, y)
    >>> print(f"accuracy {correct / 2000:.2f} with {asked / 2000:.0%} of the labels")
    accuracy 0.89 with 20% of the labels
    """

    tasks = frozenset({"binary", "multiclass"})
    capabilities = frozenset({"decide_learn", "log_loop", "batch_pass", "label_rate", "merge"})
    asks_selectively = True
    zero_margin_positive = False  # _score: margin > 0 (one_call.py)
    _shared_summed = ("intercept_precision", "intercept_precision_mean")
    _shared_flip = ("precision_mean", "intercept_precision_mean")
    _shared_by_class = ("precision", "precision_mean", "intercept_precision", "intercept_precision_mean")
    _parameter_constraints = {
        "r": Interval(float, 0, None, closed="right"),
        "query_power": Interval(float, 0, None, closed="right"),
        "target_query_rate": OneOf(Options(None), Interval(float, 0, 1, closed="right")),
        "threshold": Interval(float, K.THRESHOLD_MIN, K.THRESHOLD_MAX),
        "budget_gain": Interval(float, 0, None, closed="right"),
        "learn_intercept": Boolean(),
        "variance_floor": Interval(float, 0, _PRIOR_VAR, closed="left"),
        "n_bins": Interval(int, 0, None),
        "class_mean_weight": Interval(float, 0, None, closed="left"),
        "n_classes": Interval(int, 2, None),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "seed": Interval(int, 0, 2**64 - 1),
        "refit_until": OneOf(Options(0), Interval(int, 10, None)),  # the first refit point is 10
        "refit_labels": OneOf(Options(None), Interval(int, 1, None)),  # None: sized from the budget
        "refit_passes": OneOf(Options(None), Interval(int, 1, None)),  # None: 2 multiclass, 1 binary
        "novelty": Interval(float, 0, None, closed="left"),
        "logit_adjustment": Interval(float, 0, None, closed="left"),
    }
    _prior_var = _PRIOR_VAR

    def __init__(
        self,
        r: float = 80.0,
        query_power: float = 5.0,
        target_query_rate: float | None = 0.2,
        threshold: float = 1.0,
        budget_gain: float = 0.5,
        learn_intercept: bool = True,
        variance_floor: float = 0.3,
        n_bins: int = 8,
        class_mean_weight: float = 0.3,
        n_classes: int = 2,
        capacity: int = 256,
        evict_after: int = 1000,
        seed: int = 0,
        refit_until: int = 160,
        refit_labels: int | None = None,
        refit_passes: int | None = None,
        novelty: float = 5.0,
        logit_adjustment: float = 0.1,
    ):
        self._set_params(locals())
        self._init_channels(capacity, evict_after)
        rows = 1 if n_classes == 2 else n_classes
        features = capacity * (1 + n_bins)
        self.W = np.zeros((rows, features), dtype=np.float64)
        self.S = np.full((rows, features), _PRIOR_VAR, dtype=np.float64)
        self._edges = bin_edges(n_bins)
        self.bin_freq = np.zeros((capacity, n_bins), dtype=np.float64)
        # scratch for an instance's features: at most every channel, expanded
        self._feature_slots = np.zeros(features, dtype=np.int32)
        self._feature_z = np.zeros(features, dtype=np.float64)
        self.b = np.zeros(rows, dtype=np.float64)
        # multiclass: each class's sum of the standardized channels of its learned labels, and their count
        self.class_sums = np.zeros((0 if n_classes == 2 else n_classes, capacity), dtype=np.float64)
        self.class_counts = np.zeros(0 if n_classes == 2 else n_classes, dtype=np.float64)
        # Sb = 0 is "no intercept": the kernels never move b then.
        self.Sb = np.full(rows, _PRIOR_VAR if learn_intercept else 0.0, dtype=np.float64)
        self.rng_state = new_query_state(seed)  # the generator word, then the budget's counts
        self._m = np.zeros(rows, dtype=np.float64)
        self._v = np.zeros(rows, dtype=np.float64)
        self._current_threshold = float(threshold)
        self._init_targets(n_classes)
        self._r = float(r)
        self._floor = float(variance_floor)
        self._u = 0.0  # the last scored instance's |margin| / sd, for _ask
        self._fused = Fused()  # see decide_learn_claimed
        self._init_refit()
        self._init_multiclass_terms()

    @property
    def current_threshold(self) -> float:
        """``threshold`` as the budget control has left it."""
        return self._current_threshold

    # -- protocol hooks -------------------------------------------------------

    def decide_one(self, x: dict) -> Decision:
        slots, z = self._observe_refitting(x) if self._refitting else self.channels.observe(x, True)
        self._observe(slots, z)
        label, margin = self._predict(slots, z)
        return Decision(label, margin, self._ask(margin), slots, z)

    def decide_learn_claimed(self, slots, z, sign: float, only_if_asked: bool):
        """The binary kernel of :meth:`decide_and_learn` on claimed ``(slots, z)`` (z
        standardized in place) and the known label's ``sign`` (+1.0 or -1.0; 0.0:
        decide only): ``(margin, asked, learned)``, the same bits as ``decide_one``
        then ``learn`` (:func:`~edgelearn.kernels.arow.decide_learn_binary`)."""
        space = self.channels
        if self._refitting:  # the refit before the kernel (the label is kept after it)
            self._refit_if_due()
        fused = self._fused
        if fused.space is not space:  # built once per channel space (from_state swaps it)
            fused.space, fused.model = space, self._binary_model()
            fused.kernel = compiled_entry(K.decide_learn_model, (
                slots, z, len(slots), space.t, self._current_threshold, sign, only_if_asked,
                fused.model))
        margin, asked, self._current_threshold, learned = fused.kernel(
            slots, z, len(slots), space.t, self._current_threshold, sign, only_if_asked,
            fused.model)
        space.advance()
        if learned and self._refitting:  # kept under the statistics learn saw, as in learn
            self._keep(slots, z, sign)
        return margin, asked, learned

    def run_rows(self, rows: RowsPass) -> RowsResult:
        """A stream's rows through one jitted loop (the ``"log_loop"`` and
        ``"batch_pass"`` capabilities), with the predictions, queries, learning and final state of
        :meth:`decide_one` and :meth:`learn` reading by reading
        (``kernels/log_replay.py``'s ``arow_binary_log_loop``, or
        ``arow_multiclass_log_loop`` for a multiclass learner, which run the
        per-message path's kernels row by row). A label the learner meets for the
        first time stops the loop; it is registered with the targets, as
        :meth:`learn` would, and the loop goes on from that row."""
        from ..kernels import log_replay as loop

        why_not = self.why_not("log_loop")
        if why_not is not None:  # never a silent divergence from decide_one
            raise ValueError(f"ActiveAROW.run_rows: {why_not}.")
        if not self.binary:
            return self._run_rows_multiclass(rows)
        X, names = rows.X, rows.names
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows)
        target = self.target_query_rate

        def run(code_sign, start, resume_n, threshold):
            row, status, threshold, n_features = loop.arow_binary_log_loop(
                X, rows.codes, code_sign, start, resume_n, rows.learn_if_asked,
                col_slot, slot_col, changed, counters,
                space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
                space.z_max, space.evict_after,
                self._edges, self.bin_freq, self.capacity, self._feature_slots, self._feature_z,
                self.W, self.S, self.b, self.Sb, self._m, self._v, self._r, self._floor,
                float(self.query_power), _PRIOR_VAR, self.rng_state, threshold, target is not None,
                0.0 if target is None else float(target), float(self.budget_gain),
                *out, *self._refit_arrays(), self.class_sums, self.class_counts,
            )
            return row, status == loop.DONE, threshold, n_features

        threshold, states = run_signed(self.targets, rows, self._current_threshold, run)
        self._current_threshold = float(threshold)
        space.take_column_map(names, slot_col, changed, counters)
        self._sync_refitting()
        return out.result(states)

    def _binary_model(self) -> K.BinaryModel:
        # The arrays never change identity (states load into them), nor do the
        # parameters after construction: one BinaryModel holds them for every call.
        space = self.channels
        target = self.target_query_rate
        return K.new_binary_model(
            space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
            space.z_max, self._edges, self.bin_freq, self.capacity, self._feature_slots,
            self._feature_z, self.W, self.S, self.b, self.Sb, self._m, self._v, self._r,
            self._floor, float(self.query_power), self.rng_state, target is not None,
            0.0 if target is None else float(target), float(self.budget_gain),
        )

    def _observe(self, slots, z) -> None:
        # Every observed instance, labelled or not, moves its channels' bin
        # frequencies (as it moves their standardization).
        K.count_bins(slots, z, len(slots), self._edges, self.bin_freq, self.channels.count,
                     self.channels._forget)

    def _features(self, slots, z):
        """The model's features of a channel-space instance (views of scratch)."""
        n = K.expand(slots, z, len(slots), self._edges, self.bin_freq, self.capacity,
                     self._feature_slots, self._feature_z)
        return self._feature_slots[:n], self._feature_z[:n]

    def _score(self, slots, z):
        """The prediction's code (binary: margin > 0, a zero margin predicts the
        negative label as River does; multiclass: the best known row, -1 for
        none) and its margin; leaves every row's margin and variance in
        scratch and the normalized margin in ``_u``."""
        slots, z = self._features(slots, z)
        K.scores(slots, z, len(slots), self.W, self.S, self.b, self.Sb, self._m, self._v)
        n_known = len(self.targets.labels)
        margin, self._u = K.confidence(self._m, self._v, n_known, self.binary)
        if self.binary:
            return margin > 0.0, margin
        # the query keeps AROW's own normalized margin (novelty aside); the prediction adds the
        # class means and the logit adjustment
        return self._multiclass_score(slots, z, margin)

    def _ask(self, margin: float) -> bool:
        # The rule reads the normalized margin _score left, not the raw one.
        target = self.target_query_rate
        u = self._u if self.binary else self._novelty_u(self._u)
        asked, threshold = K.query(u, self._current_threshold, float(self.query_power),
                                   self.rng_state, 0.0 if target is None else float(target),
                                   float(self.budget_gain))
        self._current_threshold = float(threshold)
        return bool(asked)

    def _proba(self, margin: float):
        """Binary: P(positive) = ``Phi(m / sqrt(1 + v))``; multiclass: the
        softmax of the known rows' margins (see "Calibration" above)."""
        if self.binary:
            return _probit(self._m[0], self._v[0])
        return softmax_proba(self._m, len(self.targets.labels))

    def learn(self, slots, z, y) -> None:
        """Learn label ``y`` of the instance whose features are ``(slots, z)``
        (from :meth:`decide_one`), with the model as it is now (with ``refit_until``,
        kept for the refits first)."""
        code = self.targets.sign(y) if self.binary else self.targets.index(y)
        if self._refitting:
            self._keep(slots, z, code)
        slots, z = self._features(slots, z)
        k = len(slots)
        if self.binary:
            K.learn_row(slots, z, k, code, self.W, self.S, self.b, self.Sb, 0, self._r, self._floor)
        else:
            c = code
            K.learn_multiclass(slots, z, k, c, len(self.targets.labels), self.W, self.S, self.b, self.Sb, self._r,
                               self._floor)
            K.count_class_mean(slots, z, k, self.capacity, c, self.class_sums, self.class_counts)

    def _forget_slot(self, slot: int) -> None:
        K.forget_slot(slot, self.W, self.S, _PRIOR_VAR)
        K.forget_bins(slot, self.bin_freq, self.capacity, self.W, self.S, _PRIOR_VAR)
        K.forget_class_sums(slot, self.class_sums)
        self.refit_values[:, slot] = np.nan  # the kept labels lose the channel that left

    # -- merging (edgelearn.learners.mergeable) ---------------------------------

    def _precision_per_reading(self) -> float:
        # A step adds z^2 / (v + r - S z^2) <= z^2 / r to a weight's precision (v >= S z^2);
        # a linear feature's |z| is at most z_max, a centred bin code's at most 1.
        return max(self.channels.z_max, 1.0) ** 2 / self._r

    def _shared_structure(self) -> dict:
        structure = {"n_bins": self.n_bins, "learn_intercept": self.learn_intercept}
        if not self.binary:  # one belief row per class
            structure["n_classes"] = self.n_classes
        return structure

    @classmethod
    def _shared_columns(cls, structure: dict) -> dict:
        return belief_columns(structure.get("n_classes", 1), structure["n_bins"])

    def _shared_by_slot(self) -> dict:
        return belief_by_slot(self.W, self.S, self.channels.count, self.bin_freq, self.capacity, self.n_bins,
                              _PRIOR_VAR)

    def _shared_model_wide(self) -> dict:
        if not self.learn_intercept:
            return {"intercept_precision": np.zeros(len(self.b)), "intercept_precision_mean": np.zeros(len(self.b))}
        return {"intercept_precision": 1.0 / self.Sb - 1.0 / _PRIOR_VAR,
                "intercept_precision_mean": self.b / self.Sb}

    def _load_shared(self, placed: list, part: dict, totals: dict) -> None:
        floor = self._floor
        load_belief(self.W, self.S, self.bin_freq, placed, part, self.capacity, self.n_bins, floor, _PRIOR_VAR)
        if self.learn_intercept:
            precision = 1.0 / _PRIOR_VAR + np.asarray(totals["intercept_precision"], dtype=np.float64)
            self.b[:] = np.asarray(totals["intercept_precision_mean"], dtype=np.float64) / precision
            self.Sb[:] = np.maximum(1.0 / precision, floor)

    def _started_from_group(self) -> None:
        self._stop_refits()  # the group's belief is not the kept labels': no refit resets it
        self.rng_state = informed_query_state(self.rng_state)
        self._fused = Fused()  # the fused model holds the query state's array

    # -- state ----------------------------------------------------------------

    _LEARNED = ("W", "S", "b", "Sb", "bin_freq", "class_sums", "class_counts", "rng_state",
                "refit_values", "refit_targets", "refit_count", "novelty_stats")

    @classmethod
    def from_state(cls, state: dict):
        """Rebuild from :meth:`to_state`'s output.  A state saved before bins
        existed (no ``n_bins`` among its parameters) was a linear model: it
        loads as ``n_bins=0``, with no bin frequencies.  One saved before the class
        means (no ``class_mean_weight``) loads with ``class_mean_weight=0.0``, so it
        predicts as it did."""
        params = state.get("params", {})
        if "n_bins" not in params:
            state = {**state, "params": {**state["params"], "n_bins": 0},
                     "learned": {**state["learned"], "bin_freq": np.zeros((params["capacity"], 0))}}
        if "class_mean_weight" not in params:
            rows = 0 if params.get("n_classes", 2) == 2 else params["n_classes"]
            state = {**state, "params": {**state["params"], "class_mean_weight": 0.0},
                     "learned": {**state["learned"], "class_sums": np.zeros((rows, params["capacity"])),
                                 "class_counts": np.zeros(rows)}}
        if "refit_until" not in params:  # saved before the refit: off, as it was
            state = {**state, "params": {**state["params"], "refit_until": 0, "refit_labels": 32},
                     "learned": {**state["learned"], "refit_values": np.zeros((0, params["capacity"])),
                                 "refit_targets": np.zeros(0), "refit_count": np.zeros(0, dtype=np.int64)}}
        return super().from_state(state_before_multiclass_terms(state))

    def _learned_state(self) -> dict:
        state = super()._learned_state()
        state["threshold"] = self._current_threshold
        return state

    def _load_learned(self, learned: dict) -> None:
        # States saved before the budget counted hold the generator's word alone.
        saved = widened(learned["rng_state"])
        if is_informed(saved) != is_informed(self.rng_state):  # an informed start's has a word more
            self.rng_state = informed_query_state(self.rng_state) if is_informed(saved) else new_query_state(0)
            self._fused = Fused()
        learned = self._refit_buffer_for(learned)
        super()._load_learned({**learned, "rng_state": saved})
        self._current_threshold = float(learned["threshold"])
        self._sync_refitting()


def _probit(m: float, v: float) -> float:
    return 0.5 * math.erfc(-float(m) / math.sqrt(2.0 * (1.0 + float(v))))


def bin_edges(n_bins: int) -> np.ndarray:
    """The ``n_bins - 1`` edges cutting the standard normal into ``n_bins``
    equally likely bins (none for ``n_bins = 0``): standardized values fill
    them about evenly, so each bin weight learns from about ``1 / n_bins`` of
    the channel's instances."""
    normal = NormalDist()
    return np.array([normal.inv_cdf(i / n_bins) for i in range(1, n_bins)], dtype=np.float64)
