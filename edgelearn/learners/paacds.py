"""PAACDS and PAACDS-I: passive-aggressive active learning for capricious
data streams (seed 000), as docs/learners.md reads it."""

from __future__ import annotations

import numpy as np

from ..constraints import Boolean, Interval, OneOf, Options
from ..kernels import paacds as K
from ..kernels.rate_control import new_query_state, widened
from .arrays import (
    ArrayReplay,
    RowsPass,
    RowsResult,
    array_labels,
    row_buffers,
    run_columns,
    run_indexed,
    run_signed,
    user_predictions,
)
from .budget import HeldBudget
from .mergeable import Mergeable
from .base import Decision, Learner, load_arrays, logistic_proba, softmax_proba
from .one_call import Fused, OneCallBinary, compiled_entry

_VARIANTS = ("PAACDS", "PAACDS-I")
#: Weight of the prior "information 1" in a slot's information (docs/learners.md).
_K0 = 5.0


class PAACDS(Mergeable, HeldBudget, OneCallBinary, Learner):
    """Passive-aggressive active learner for streams whose channels come and go.

    Each instance splits into *shared* channels (already in the model) and
    *new* ones.  Their shares of the instance's information, ``p_s`` and
    ``p_n``, weigh the prediction ``q = p_s * w_s . z_s`` and the update; the
    label is asked for with probability ``delta / (delta + |q|)``, so the
    learner asks when it is unsure.  After each update the weights are scaled
    to an information-weighted L1 budget ``lam`` and truncated to the
    ``ceil(B * n_active)`` most informative channels.

    Parameters
    ----------
    C
        Aggressiveness: the largest step ``tau`` of an update.
    B
        Fraction of the active channels kept after each update, in (0, 1].
    lam
        Budget of ``sum_i |w_i| h_i``; ``None`` turns the scaling off.
    delta
        Query parameter: the larger, the more labels are asked for.
    variant
        ``"PAACDS"`` (``tau = min(C, l / ...)``) or ``"PAACDS-I"`` (adds
        ``1 / (2C)`` to the denominator, a softer step).
    target_query_rate
        If set, the label budget: ``delta`` adapts after every instance so
        that the rule wants about this fraction of labels, ``delta *=
        exp(budget_gain * (target - wanted))``, clipped to [1e-3, 1e6], and a
        bucket of label credit (:mod:`edgelearn.kernels.rate_control`) holds
        the labels asked within 5% of the target over any 1,000 readings or
        more (``query_rate`` is the realized rate).
    capacity
        Channel slots (the fixed size of every array).
    max_weights
        At most this many channels in the model (``None``: ``capacity``).
    n_classes
        2 for a binary learner (any two labels, predictions in those labels);
        more for a multiclass one (labels any hashable, at most ``n_classes``
        distinct, indexed in order of first appearance).
    seed
        Seed of the learner's own generator for query decisions.
    h_halflife
        Half-life, in observations, of the short-horizon variance behind
        each channel's information ``h``.
    evict_after
        A channel absent for this many instances may give its slot away.
    budget_gain
        Speed of the ``target_query_rate`` control.
    learn_intercept
        Learn a bias ``b`` (one per class row): ``q = p_s * w_s . z_s + b``.
        On by default: without it a task whose positive class is the
        majority loses every instance whose shared channels say nothing.
        ``learn_intercept=False`` is the paper's model, which has none.

    Merging (:mod:`edgelearn.learners.mergeable`; a multiclass model's rows are
    matched by their classes' labels) averages, as PA's does:
    each channel's weight weighted by the readings each learner saw of it, the
    intercept by all its readings; a channel is in the group's model if its
    averaged weight is not 0. Each channel's information statistics (``h``'s
    count, mean and variance, exponentially weighted) are combined by their
    counts with Chan et al.'s formula, which is exact for plain statistics and
    an approximation for weighted ones; ``h`` follows from them.

    Decisions this page makes beyond docs/learners.md: prediction uses each
    channel's information *before* the instance is folded in (a new channel
    has h = 1); a binary margin of exactly 0 predicts the negative label in
    every path (``decide_one``, ``predict_one``, ``decide_and_learn``, the
    jitted replays), as River's classifiers do; with an intercept the margin
    is 0 only before any label has moved it.  Multiclass: the
    runner-up class and the class pushed away by an update are chosen among
    the known classes plus one unused row that stands for "a class not seen
    yet", so a learner that has seen one class still learns and asks less;
    the budget ``lam`` applies to the weights of all rows.

    The intercept (``learn_intercept=True``) is also beyond docs/learners.md.
    The bias is a constant feature of value 1 that every instance shares:
    it is not scaled by ``p_s``, it moves by ``tau * y`` on a binary update
    (``b[y] += tau``, ``b[r] -= tau`` on a multiclass one), and it adds 1 to
    the step's denominator (2 in multiclass, where it is in both rows).
    That is the exact passive-aggressive step for the augmented vector
    ``(w, b)``; River's ``PAClassifier`` leaves the 1 out, which makes its
    step larger than the projection asks for when ``||z||`` is small, and
    takes no step at all on an instance whose z is all 0 (the first
    observations of every channel), where ours still moves the bias by a
    bounded step.  The bias is never sparsified, scaled by ``lam`` or
    forgotten with a slot.

    Memory bound: ``8 * capacity * (rows + 9) + capacity + 16 * rows + 24``
    bytes for the model (``rows = 1`` if binary, else ``n_classes``: weights,
    biases and scores per row; information, its statistics and the
    sparsity scratch per slot; the query state: generator and budget
    counts, 24 bytes), 64 bytes per label
    (``n_classes``, two when binary), plus its ChannelSpace.

    Examples
    --------
    >>> import random
    >>> from edgelearn import PAACDS
    >>> rng = random.Random(1)
    >>> model = PAACDS(target_query_rate=0.2, seed=42)
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
    accuracy 0.86 with 20% of the labels
    """

    tasks = frozenset({"binary", "multiclass"})
    capabilities = frozenset({"decide_learn", "array_loop", "log_loop", "batch_pass", "label_rate", "merge"})
    _shared_summed = ("intercept_weighted", "intercept_count")
    _shared_flip = ("weighted_weight", "intercept_weighted")
    _shared_by_class = ("weighted_weight", "intercept_weighted")
    asks_selectively = True
    zero_margin_positive = False  # every path: margin > 0 (one_call.py)
    _parameter_constraints = {
        "C": Interval(float, 0, None, closed="right"),
        "B": Interval(float, 0, 1, closed="right"),
        "lam": OneOf(Options(None), Interval(float, 0, None, closed="right")),
        "delta": Interval(float, 1, None),
        "variant": Options(*_VARIANTS),
        "target_query_rate": OneOf(Options(None), Interval(float, 0, 1, closed="right")),
        "capacity": Interval(int, 1, None),
        "max_weights": OneOf(Options(None), Interval(int, 1, None)),
        "n_classes": Interval(int, 2, None),
        "seed": Interval(int, 0, 2**64 - 1),
        "h_halflife": Interval(float, 0, None, closed="right"),
        "evict_after": Interval(int, 1, None),
        "budget_gain": Interval(float, 0, None, closed="right"),
        "learn_intercept": Boolean(),
    }

    def __init__(
        self,
        C: float = 1.0,
        B: float = 0.64,
        lam: float | None = None,
        delta: float = 1.0,
        variant: str = "PAACDS",
        target_query_rate: float | None = None,
        capacity: int = 256,
        max_weights: int | None = None,
        n_classes: int = 2,
        seed: int = 0,
        h_halflife: float = 500.0,
        evict_after: int = 1000,
        budget_gain: float = 0.5,
        learn_intercept: bool = True,
    ):
        self._set_params(locals())
        self._init_channels(capacity, evict_after)
        rows = 1 if n_classes == 2 else n_classes
        self.W = np.zeros((rows, capacity), dtype=np.float64)
        self.b = np.zeros(rows, dtype=np.float64)  # stays 0 without learn_intercept
        self.active = np.zeros(capacity, dtype=np.bool_)
        self.h = np.ones(capacity, dtype=np.float64)
        self.h_n = np.zeros(capacity, dtype=np.int64)
        self.h_mean = np.zeros(capacity, dtype=np.float64)
        self.h_var = np.zeros(capacity, dtype=np.float64)
        self.rng_state = new_query_state(seed)  # the generator word, then the budget's counts
        self._scores = np.zeros(rows, dtype=np.float64)
        self._idx_buf, self._score_buf = K.allocate_scratch(capacity)
        self._current_delta = float(delta)
        self._init_targets(n_classes)
        # Derived constants the kernels take as scalars.
        self._variant_i = variant == "PAACDS-I"
        self._h_forget = 1.0 - 2.0 ** (-1.0 / h_halflife)
        self._lam = 0.0 if lam is None else float(lam)
        self._max_weights = capacity if max_weights is None else max_weights
        self._fused = Fused()  # see decide_learn_claimed

    @property
    def current_delta(self) -> float:
        """``delta`` as the budget control has left it."""
        return self._current_delta

    def weights(self) -> dict:
        """The model's weights by channel name (binary) or by channel name
        and class (multiclass); for inspection, not for the hot path."""
        names = self.channels
        out = {}
        for slot in np.flatnonzero(self.active):
            name = names.name_of(int(slot))
            if self.binary:
                out[name] = float(self.W[0, slot])
            else:
                out[name] = {c: float(self.W[i, slot]) for i, c in enumerate(self.targets.labels)}
        return out

    # -- protocol hooks -------------------------------------------------------

    def decide_one(self, x: dict) -> Decision:
        # One fused kernel does what the base class does in three calls
        # (observe, score, fold in information): the gateway's per-message path.
        space = self.channels
        slots, z = space.claim(x)
        target = self.target_query_rate
        binary = self.binary
        best, margin, asked, self._current_delta = K.decide(
            slots, z, len(slots), space.count, space.mean, space.var, space.last_seen, space.t,
            space.forget, space.eps, space.z_max, self.W, self.b, self.active, self.h, self.h_n,
            self.h_mean, self.h_var, self._h_forget, _K0, self._scores,
            0 if binary else len(self.targets.labels), self._current_delta, self.rng_state,
            target is not None,
            0.0 if target is None else target, self.budget_gain,
        )
        space.advance()
        code = margin > 0.0 if binary else best  # a zero margin predicts the negative label
        return Decision(self._label_of(code), margin, asked, slots, z)

    def decide_learn_claimed(self, slots, z, sign: float, only_if_asked: bool):
        """The binary kernel of :meth:`decide_and_learn` on claimed ``(slots, z)`` (z
        standardized in place) and the known label's ``sign`` (+1.0 or -1.0; 0.0:
        decide only): ``(margin, asked, learned)``."""
        space = self.channels
        fused = self._fused
        if fused.space is not space:  # built once per channel space (from_state swaps it)
            fused.space, fused.model = space, self._binary_model()
            fused.kernel = compiled_entry(K.decide_learn_model, (
                slots, z, len(slots), space.t, space.n_assigned, self._current_delta, sign,
                only_if_asked, fused.model))
        margin, asked, self._current_delta, learned = fused.kernel(
            slots, z, len(slots), space.t, space.n_assigned, self._current_delta, sign,
            only_if_asked, fused.model)
        space.advance()
        return margin, asked, learned

    def replay_arrays(self, X: np.ndarray, y, active: bool = True,
                      feature_names: list | None = None) -> ArrayReplay:
        """The prequential loop over the rows of ``X`` (NaN: missing) and their
        labels ``y`` in one jitted kernel (``edgelearn.replay`` checks the
        arguments): the predictions, queries and final state of
        :func:`edgelearn.prequential` over the same rows as dicts, with the same
        seed. A label is learned when asked for (every label with ``active=False``)."""
        from ..channels import name_key
        from ..kernels import replay as loops

        space = self.channels
        n = X.shape[0]
        pred = np.empty(n, dtype=np.int64)
        margins = np.empty(n, dtype=np.float64)
        asked = np.empty(n, dtype=np.bool_)
        knew_labels = self.targets.learned_any
        labels = array_labels(self, y)
        target = 0.0 if self.target_query_rate is None else float(self.target_query_rate)
        col_key = np.array([name_key(name) for name in feature_names], dtype=np.float64)
        found = {}

        def loop(column_map):
            found["delta"], found["known"] = loops.paacds_loop(
                X, labels.values, active, *column_map, space.count, space.mean, space.var,
                space.last_seen, space.forget, space.eps, space.z_max, space.evict_after,
                self.W, self.b, self.active, self.h, self.h_n, self.h_mean, self.h_var,
                self._h_forget, _K0, self.rng_state, self._current_delta, target,
                float(self.budget_gain), float(self.C), self._variant_i, self.learn_intercept,
                self._lam, float(self.B), self._max_weights, labels.code_class, labels.class_code,
                len(self.targets.labels), self._scores, self._idx_buf, self._score_buf,
                col_key, space.name_key, pred, margins, asked,
            )

        seconds = run_columns(self, feature_names, loop)
        self._current_delta = float(found["delta"])
        for c in range(len(self.targets.labels), found["known"]):  # classes the loop met
            self.targets.index(labels.uniques[labels.class_code[c]])
        return ArrayReplay(user_predictions(self, pred, asked, active, knew_labels), asked, seconds)

    def run_rows(self, rows: RowsPass) -> RowsResult:
        """A stream's rows through one jitted loop (the ``"log_loop"`` and
        ``"batch_pass"`` capabilities), with the predictions, queries, learning and
        final state of :meth:`decide_one` and :meth:`learn` reading by reading
        (``kernels/log_replay.py``). A label the learner meets for the first time
        stops the loop; it is registered with the targets, as :meth:`learn` would,
        and the loop goes on from that row."""
        from ..channels import name_key
        from ..kernels import log_replay as loop

        if not self.binary:
            return self._run_rows_multiclass(rows)
        X, names = rows.X, rows.names
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows)
        cap = space.capacity
        xs, zs, hs = np.empty(cap), np.empty(cap), np.empty(cap)
        col_key = np.array([name_key(c) for c in names], dtype=np.float64)
        target = 0.0 if self.target_query_rate is None else float(self.target_query_rate)

        def run(code_sign, start, resume_k, delta):
            row, status, delta, k = loop.paacds_binary_log_loop(
                X, rows.codes, code_sign, start, resume_k, rows.learn_if_asked,
                col_slot, slot_col, changed, counters,
                space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
                space.z_max, space.evict_after,
                self.W, self.b, self.active, self.h, self.h_n, self.h_mean, self.h_var,
                self._h_forget, _K0, self.rng_state, delta, target, float(self.budget_gain),
                float(self.C), self._variant_i, self.learn_intercept, self._lam, float(self.B),
                self._max_weights, self._idx_buf, self._score_buf, col_key, space.name_key,
                self._scores, out.slots, out.vals, xs, zs, hs, out.pred, out.margins, out.asked,
                out.feat_k, out.feat_slots, out.feat_z,
            )
            return row, status == loop.DONE, delta, k

        delta, states = run_signed(self.targets, rows, self._current_delta, run)
        self._current_delta = float(delta)
        space.take_column_map(names, slot_col, changed, counters)
        return out.result(states)

    def _run_rows_multiclass(self, rows: RowsPass) -> RowsResult:
        # run_rows of a multiclass learner: kernels/log_replay.paacds_multiclass_log_loop.
        from ..channels import name_key
        from ..kernels import log_replay as loop

        X, names = rows.X, rows.names
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows)
        usable = np.zeros(X.shape[0], dtype=np.bool_)
        col_key = np.array([name_key(c) for c in names], dtype=np.float64)
        target = 0.0 if self.target_query_rate is None else float(self.target_query_rate)

        def run(code_class, n_known, start, resume_k, delta):
            row, status, delta, k = loop.paacds_multiclass_log_loop(
                X, rows.codes, code_class, start, resume_k, rows.learn_if_asked, n_known,
                col_slot, slot_col, changed, counters,
                space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
                space.z_max, space.evict_after,
                self.W, self.b, self.active, self.h, self.h_n, self.h_mean, self.h_var,
                self._h_forget, _K0, self.rng_state, delta, target, float(self.budget_gain),
                float(self.C), self._variant_i, self.learn_intercept, self._lam, float(self.B),
                self._max_weights, self._idx_buf, self._score_buf, col_key, space.name_key,
                self._scores, out.slots, out.vals, out.pred, out.margins, out.asked, usable,
                out.feat_k, out.feat_slots, out.feat_z,
            )
            return row, status == loop.DONE, delta, k

        delta, states = run_indexed(self.targets, rows, self._current_delta, run)
        self._current_delta = float(delta)
        space.take_column_map(names, slot_col, changed, counters)
        return out.result(states, usable)

    def _binary_model(self) -> K.BinaryModel:
        # The arrays never change identity (states load into them), nor do the
        # parameters after construction: one BinaryModel holds them for every call.
        space = self.channels
        target = self.target_query_rate
        return K.new_binary_model(
            space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
            space.z_max, self.W, self.b, self.active, self.h, self.h_n, self.h_mean,
            self.h_var, self._h_forget, _K0, self._scores, self.rng_state, target is not None,
            0.0 if target is None else target, self.budget_gain, self.C, self._variant_i,
            self.learn_intercept, space.name_key, self._lam, self.B, self._max_weights,
            self._idx_buf, self._score_buf,
        )

    def _score(self, slots, z):
        K.scores(slots, z, len(slots), self.W, self.b, self.active, self.h, self._scores)
        return self._label_and_margin()

    def _label_and_margin(self):
        if self.binary:
            q = float(self._scores[0])
            return q > 0.0, q
        n_known = len(self.targets.labels)
        best, runner = K.top_two(self._scores, n_known, self.W.shape[0])
        margin = 0.0 if runner < 0 else float(self._scores[best] - self._scores[runner])
        return (best if n_known else -1), margin

    def _proba(self, margin: float):
        """Binary: P(positive) is the logistic of the margin ``q`` (monotone in
        ``q``, not calibrated: ``q`` is a passive-aggressive score; a margin of
        exactly 0 predicts the negative label). Multiclass: the softmax of the known
        classes' scores ``w_c . z + b_c`` (same caveat)."""
        if self.binary:
            return logistic_proba(margin)
        return softmax_proba(self._scores, len(self.targets.labels))

    def _observe(self, slots, z):
        K.update_information(slots, z, len(slots), self.h, self.h_n, self.h_mean, self.h_var, self._h_forget, _K0)

    def _ask(self, score: float) -> bool:
        target = self.target_query_rate
        asked, self._current_delta = K.query(score, self._current_delta, self.rng_state,
                                             0.0 if target is None else float(target), float(self.budget_gain))
        return bool(asked)

    def learn(self, slots, z, y) -> None:
        """Learn label ``y`` of the instance whose features are ``(slots, z)``
        (from :meth:`decide_one`), with the model as it is now."""
        k = len(slots)
        if self.binary:
            changed = K.learn_binary(
                slots, z, k, self.targets.sign(y), self.W, self.b, self.active, self.h,
                self.C, self._variant_i, self.learn_intercept,
            )
        else:
            index = self.targets.index(y)
            changed = K.learn_multiclass(
                slots, z, k, index, len(self.targets.labels), self.W, self.b, self.active, self.h,
                self.C, self._variant_i, self.learn_intercept, self._scores,
            )
        if changed:
            K.sparsify(
                self.W, self.active, self.h, self.channels.name_key, self.channels.n_assigned, self._lam, self.B,
                self._max_weights, self._idx_buf, self._score_buf,
            )

    def _forget_slot(self, slot: int) -> None:
        K.forget_slot(slot, self.W, self.active, self.h, self.h_n, self.h_mean, self.h_var)

    # -- state ----------------------------------------------------------------

    _LEARNED = ("W", "b", "active", "h", "h_n", "h_mean", "h_var", "rng_state")

    def _learned_state(self) -> dict:
        state = {name: getattr(self, name).copy() for name in self._LEARNED}
        state["delta"] = self._current_delta
        state["targets"] = self.targets.to_state()
        return state

    def _load_learned(self, learned: dict) -> None:
        # States saved before the intercept existed have no "b": their bias is 0.
        # States saved before the budget counted hold the generator's word alone.
        learned = {**learned, "rng_state": widened(learned["rng_state"])}
        load_arrays(self, learned, [n for n in self._LEARNED if n != "b" or "b" in learned])
        self._current_delta = float(learned["delta"])
        self._load_targets(learned)

    # -- merging (edgelearn.learners.mergeable) ---------------------------------

    def _shared_structure(self) -> dict:
        structure = {"learn_intercept": self.learn_intercept}
        if not self.binary:  # one weight row per class
            structure["n_classes"] = self.n_classes
        return structure

    @classmethod
    def _shared_columns(cls, structure: dict) -> dict:
        # h's statistics as sums: count, count x mean, count x (variance + mean^2)
        return {"weighted_weight": structure.get("n_classes", 1), "h_count": 1, "h_sum": 1, "h_sum_squares": 1}

    def _shared_by_slot(self) -> dict:
        n = self.h_n.astype(np.float64)
        return {"weighted_weight": self.channels.count[:, None] * self.W.T,
                "h_count": n[:, None], "h_sum": (n * self.h_mean)[:, None],
                "h_sum_squares": (n * (self.h_var + self.h_mean ** 2))[:, None]}

    def _shared_model_wide(self) -> dict:
        t = float(self.channels.t)
        return {"intercept_weighted": t * self.b, "intercept_count": np.array([t])}

    def _load_shared(self, placed: list, part: dict, totals: dict) -> None:
        for i, s in placed:
            n = float(part["n"][i])
            weighted = np.asarray(part["weighted_weight"][i], dtype=np.float64).reshape(-1)
            self.W[:, s] = weighted / n if n > 0 else 0.0
            self.active[s] = bool(np.any(self.W[:, s] != 0.0))
            h_count = float(part["h_count"][i])
            if h_count > 0:
                mean = float(part["h_sum"][i]) / h_count
                var = max(float(part["h_sum_squares"][i]) / h_count - mean * mean, 0.0)
                self.h_n[s] = int(round(h_count))
                self.h_mean[s], self.h_var[s] = mean, var
                self.h[s] = (_K0 + self.h_n[s] * var) / (_K0 + self.h_n[s])
        count = float(totals["intercept_count"][0])
        self.b[:] = np.asarray(totals["intercept_weighted"], dtype=np.float64) / count if count > 0 else 0.0
        # The intercept's count (the readings observed) goes on where the group's
        # left off; the group's channels count as seen now.
        self.channels.t = int(round(count))
        for _, s in placed:
            self.channels.last_seen[s] = self.channels.t

