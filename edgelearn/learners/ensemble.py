"""OnlineEnsemble: AC_OE, the online ensemble with decayed weights and a
global learner (seed 003), as docs/learners.md reads it, and the online
members beyond the paper that are its defaults (docs/results-drift.md)."""

from __future__ import annotations

import numpy as np

from ..constraints import Interval, OneOf, Options
from ..kernels import ensemble as E
from ..kernels import naive_bayes as NB
from ..kernels.rng import new_state
from .base import Learner

#: A slot enters a naive Bayes likelihood once every class has seen it this often.
_MIN_COUNT = 2

BASES = ("kelm", "pa", "nb")


class OnlineEnsemble(Learner):
    """Online ensemble for concept drift: AC_OE (Guo et al.) and, by default,
    online members beyond the paper.

    **The defaults are not the paper's model.**  They are two *online
    members*, which learn every labelled instance, voting under AC_OE's
    decayed weights, with no chunk-trained member and no global learner
    (``n_members=0, alpha=0``).  The paper's AC_OE is
    ``OnlineEnsemble(n_members=10, alpha=1.0, forgetting=None, online_C=None,
    label_lags=0)`` (tools/results_ensemble.py runs it so).  Why the online
    members, from the literature:

    * Chunk members see a drift only at the next chunk's end and then from
      ``chunk_size`` rows; a learner that updates on every instance tracks it
      at once.  The first online member is exponentially weighted recursive
      least squares (forgetting factor ``forgetting``; Haykin, *Adaptive
      Filter Theory*, ch. 10) on one-vs-rest +-1 targets: second-order, so
      it settles fast after a change, and its forgetting makes its window
      about ``1 / (1 - forgetting)`` instances (1,000 at 0.999).  Its inverse
      covariance ``P`` is bounded (diagonal at most its start, 1), the
      classic cure for covariance wind-up of forgetting RLS in directions the
      rows stop exciting (Salgado, Goodwin & Middleton, Int. J. Control 47(2),
      1988).
    * The second is one-vs-rest PA-I with step bound ``online_C`` (Crammer
      et al., JMLR 2006): first-order and aggressive at C = 1, it follows the
      last few instances, which wins where the concept moves from hour to
      hour.
    * Both read ``[1, lag block, x]``: an intercept and the last
      ``label_lags`` labels learned.  Feeding the previous labels to the
      classifier is Zliobaite, Bifet, Read, Pfahringer & Holmes's
      *temporally augmented classifier* (Machine Learning 98, 2015), their
      answer to streams with temporal dependence such as Electricity, where
      "the next label is the last one" alone is right 85% of the time.
    * The vote is AC_OE's: a member's weight is multiplied by ``beta`` at
      each mistake and the weights renormalized, so the member with fewer
      recent mistakes leads (weighting by recent accuracy, as in Kolter &
      Maloof's DWM, JMLR 2007).  Chunk members may still join
      (``n_members > 0``); on the drift streams of docs/results-drift.md they
      cost accuracy, because each new one enters with half the vote.

    AC_OE itself: chunk-trained base learners whose weights decay with every
    mistake, plus a global learner retrained on each chunk and a reservoir of
    past instances the ensemble got right.

    For each labelled instance: every member predicts; each wrong member's
    weight is multiplied by ``beta`` and the weights are renormalized to sum
    1; the instance joins the current chunk.  The ensemble predicts
    ``argmax_c sum_i w_i [h_i(x) = c] + alpha [I(x) = c]``.  When the chunk
    holds ``chunk_size`` instances: a new member is trained on it, replacing
    the member with most errors on the chunk once there are ``n_members``
    (the oldest of equals), with weight 1 before renormalization; the global
    learner ``I`` is retrained on the chunk plus the reservoir; the chunk's
    instances that the ensemble classified correctly are offered to the
    reservoir (uniform reservoir sampling, ``reservoir_size`` rows).

    Parameters
    ----------
    base
        The base learners' kind, also the global learner's: ``"kelm"``
        (kernel ridge regression with an RBF kernel on one-vs-rest +-1
        targets, closed form; the edge-sized stand-in for the paper's RBF
        SVM), ``"pa"`` (one-vs-rest PA-I, one pass over the chunk) or
        ``"nb"`` (Gaussian naive Bayes).
    chunk_size
        Instances per chunk (the paper's n).
    n_members
        Chunk-trained members (the paper's k, 10); 0 (the default): none.
    beta
        Weight decay factor for a wrong member, in (0, 1).
    alpha
        Weight of the global learner's vote (the paper's 1); 0 (the default):
        no global learner, which is then neither trained nor kept.
    reservoir_size
        Past correctly classified instances kept for the global learner (m).
    C
        Regularization: the ridge is ``I / C`` (kelm); PA-I's step bound (pa).
    gamma
        RBF width of kelm, ``exp(-gamma ||x - x'||^2)`` on standardized
        values; ``None``: 1 / the number of channels the training rows carry
        (the paper's LIBSVM default 1/d).
    var_floor
        Smallest class-conditional variance of nb (z units).
    n_classes
        2 for a binary learner (labels True/1/+1 and False/0/-1, predictions
        True/False); more for a multiclass one (any hashable labels, at most
        ``n_classes`` distinct, indexed in order of first appearance).
    capacity
        Channel slots (the fixed width of every array).
    evict_after
        A channel absent for this many instances may give its slot away.
    seed
        Seed of the reservoir's generator.
    forgetting
        Forgetting factor of the online RLS member, in (0, 1] (1: no
        forgetting); ``None``: no RLS member.  Default 0.999.
    online_C
        Step bound of the online PA-I member; ``None``: no PA-I member.
        Default 1.
    label_lags
        Last labels learned that the online members read (one value each for
        two classes, a one-hot block of ``n_classes`` otherwise).  Default 1.

    Decisions beyond docs/learners.md's reading of the paper: instances are standardized (z) and an
    absent channel is its running mean (z = 0) for kelm and pa, left out by
    nb; a member that has no model yet has no vote; until the first chunk
    ends the ensemble predicts the most frequent label of the chunk so far
    (False, or None for multiclass, before any label); the score is the
    vote margin (binary: votes for True minus votes for False; multiclass:
    the winner's over the runner-up's).  It wants every label:
    ``decide_one`` always asks.

    Memory bound, fixed at construction (``memory_bytes()``), with
    ``d = capacity``, ``n = chunk_size``, ``m = reservoir_size``,
    ``k = n_members``, ``K = n_classes``: ``9 d (2n + 2m) + 17 (n + m)`` bytes
    for the chunk, the reservoir and the training rows, plus the models:
    kelm ``8 (k n + n + m)(d + K) + 8 (n + m)(n + m + K)`` (supports,
    coefficients, the Gram and target work matrices); pa ``8 (k + 1) K d``;
    nb ``8 (k + 1) K (3 d + 1)``; plus ``O(k + d + K)`` scratch and the
    ChannelSpace.  The online members add, with ``D = 1 + L + d`` (``L``
    the lag block's length): RLS ``8 D^2 + 8 K D``, PA-I ``8 K D``, and
    ``8 L + 16 D`` for the lags and scratch rows.

    Examples
    --------
    >>> import random
    >>> from edgelearn import OnlineEnsemble
    >>> def accuracy(model):
    ...     rng, correct = random.Random(0), 0
    ...     for i in range(3000):
    ...         x = {"a": rng.uniform(0, 10), "b": rng.uniform(0, 10), "c": rng.uniform(0, 10)}
    ...         threshold = 8.0 if i < 1500 else 10.0  # the concept changes half-way
    ...         y = x["a"] + x["b"] > threshold
    ...         correct += model.predict_one(x) == y
    ...         model.learn_one(x, y)
    ...     return round(correct / 3000, 3)
    >>> accuracy(OnlineEnsemble())
    0.962
    >>> accuracy(OnlineEnsemble(chunk_size=50, n_members=5, alpha=1.0,  # AC_OE
    ...                         forgetting=None, online_C=None, label_lags=0))
    0.92
    """

    tasks = frozenset({"binary", "multiclass"})
    _parameter_constraints = {
        "base": Options(*BASES),
        "chunk_size": Interval(int, 1, None),
        "n_members": Interval(int, 0, None),
        "beta": Interval(float, 0, 1, closed="neither"),
        "alpha": Interval(float, 0, None),
        "reservoir_size": Interval(int, 0, None),
        "C": Interval(float, 0, None, closed="neither"),
        "gamma": OneOf(Options(None), Interval(float, 0, None, closed="neither")),
        "var_floor": Interval(float, 0, None, closed="right"),
        "n_classes": Interval(int, 2, None),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "seed": Interval(int, 0, 2**64 - 1),
        "forgetting": OneOf(Options(None), Interval(float, 0, 1, closed="right")),
        "online_C": OneOf(Options(None), Interval(float, 0, None, closed="neither")),
        "label_lags": Interval(int, 0, None),
    }

    def __init__(
        self,
        base: str = "kelm",
        chunk_size: int = 100,
        n_members: int = 0,
        beta: float = 0.9,
        alpha: float = 0.0,
        reservoir_size: int = 200,
        C: float = 1.0,
        gamma: float | None = None,
        var_floor: float = 0.01,
        n_classes: int = 2,
        capacity: int = 64,
        evict_after: int = 1000,
        seed: int = 0,
        forgetting: float | None = 0.999,
        online_C: float | None = 1.0,
        label_lags: int = 1,
    ):
        self._set_params(locals())
        self._init_channels(capacity, evict_after)
        d, n, m, k, K = capacity, chunk_size, reservoir_size, n_members, n_classes
        #: The online members' kinds, in the order of their vote slots after the k chunk members.
        self._online = tuple(kind for kind, on in (("rls", forgetting is not None), ("pa", online_C is not None))
                             if on)
        n_vote = k + len(self._online)
        self.weights = np.zeros(n_vote)
        self.weights[k:] = 1.0 / max(1, len(self._online))
        self.errors = np.zeros(n_vote, dtype=np.int64)
        self.born = np.zeros(k, dtype=np.int64)
        #: members filled, rows in the current chunk, chunks completed
        self.progress = np.zeros(3, dtype=np.int64)
        self.chunk_X = np.zeros((n, d))
        self.chunk_present = np.zeros((n, d), dtype=np.bool_)
        self.chunk_labels = np.zeros(n, dtype=np.int64)
        self.chunk_correct = np.zeros(n, dtype=np.bool_)
        self.reservoir_X = np.zeros((m, d))
        self.reservoir_present = np.zeros((m, d), dtype=np.bool_)
        self.reservoir_labels = np.zeros(m, dtype=np.int64)
        #: rows held, correctly classified rows offered so far
        self.reservoir_counts = np.zeros(2, dtype=np.int64)
        self.rng_state = new_state(seed)
        self._train_X = np.zeros((n + m, d))
        self._train_present = np.zeros((n + m, d), dtype=np.bool_)
        self._train_labels = np.zeros(n + m, dtype=np.int64)
        learned = [
            "weights", "errors", "born", "progress", "chunk_X", "chunk_present", "chunk_labels",
            "chunk_correct", "reservoir_X", "reservoir_present", "reservoir_labels",
            "reservoir_counts", "rng_state",
        ]
        #: The members' and the global learner's arrays by name (the same arrays as the
        #: ``member_*`` and ``global_*`` attributes, which a checkpoint loads in place).
        self._banks = {"member": self._bank(k, n), "global": self._bank(1, n + m)}
        for prefix, bank in self._banks.items():
            for name, array in bank.items():
                setattr(self, f"{prefix}_{name}", array)
                learned.append(f"{prefix}_{name}")
        self._LEARNED = tuple(learned)
        self._gram = np.zeros((n + m, n + m)) if base == "kelm" else np.zeros((0, 0))
        self._target = np.zeros((n + m, K)) if base == "kelm" else np.zeros((0, K))
        self._x = np.zeros(d)
        self._present = np.zeros(d, dtype=np.bool_)
        self._slots = np.zeros(d, dtype=np.int32)
        self._values = np.zeros(d)
        self._scores = np.zeros(K)
        self._votes = np.zeros(K)
        self._member_labels = np.full(n_vote, -1, dtype=np.int64)
        # The online members' row [1, lag block, x]: its length and the arrays.
        self._n_lag = label_lags * (1 if K == 2 else K) if self._online else 0
        width = 1 + self._n_lag + d
        self.lags = np.zeros(self._n_lag)
        self.rls_P = np.eye(width) if "rls" in self._online else np.zeros((0, 0))
        self.rls_W = np.zeros((K, width) if "rls" in self._online else (0, 0))
        self.pa_W = np.zeros((K, width) if "pa" in self._online else (0, 0))
        self._v = np.zeros(width if self._online else 0)
        self._Pv = np.zeros(width if "rls" in self._online else 0)
        self._LEARNED += ("lags", "rls_P", "rls_W", "pa_W")
        self._global_label = np.full(1, -1, dtype=np.int64)
        self._init_targets(n_classes)

    def _bank(self, models: int, rows: int) -> dict[str, np.ndarray]:
        d, K = self.capacity, self.n_classes
        if self.base == "kelm":
            return {
                "support": np.zeros((models, rows, d)),
                "coef": np.zeros((models, rows, K)),
                "n_support": np.zeros(models, dtype=np.int64),
                "gamma": np.zeros(models),
            }
        if self.base == "pa":
            return {"w": np.zeros((models, K, d)), "trained": np.zeros(models, dtype=np.bool_)}
        return {
            "class_count": np.zeros((models, K)),
            "count": np.zeros((models, K, d), dtype=np.int64),
            "mean": np.zeros((models, K, d)),
            "var": np.zeros((models, K, d)),
        }

    @property
    def members(self) -> int:
        """Members trained so far (at most ``n_members``)."""
        return int(self.progress[0])

    # -- prediction -------------------------------------------------------------

    def _labels_of(self, prefix: str, models: int, slots, z, out) -> None:
        """Each of a bank's first ``models`` models' class for the instance into ``out``."""
        if models == 0:
            return
        bank = self._banks[prefix]
        if self.base == "kelm":
            E.kelm_labels(models, self._x, self.channels.n_assigned, bank["support"], bank["coef"], bank["n_support"],
                          bank["gamma"], self.n_classes, self._scores, out)
        elif self.base == "pa":
            E.pa_labels(models, self._x, self.channels.n_assigned, bank["w"], bank["trained"], self.n_classes,
                        self._scores, out)
        else:
            E.nb_labels(models, slots, z, len(slots), bank["class_count"], bank["count"],
                        bank["mean"], bank["var"], self.var_floor, _MIN_COUNT, self._scores, out)

    def _vote(self, slots, z) -> tuple[int, float]:
        E.scatter(slots, z, len(slots), self._x, self._present)
        members = int(self.progress[0])
        self._labels_of("member", members, slots, z, self._member_labels)
        self._online_labels()
        # With alpha 0 the global learner has no say, so it is neither trained nor asked.
        trained = int(self.progress[2]) > 0 and self.alpha > 0.0
        self._global_label[0] = -1
        if trained:
            self._labels_of("global", 1, slots, z, self._global_label)
        best, margin = E.weighted_vote(self._member_labels, self.weights, len(self.weights),
                                       self._global_label[0], self.alpha, self.n_classes, self._votes)
        if best < 0:  # no model yet: the chunk's most frequent label
            return E.majority(self.chunk_labels, int(self.progress[1]), self.n_classes, self._votes), 0.0
        if self.binary:
            return best, float(self._votes[1] - self._votes[0])
        return best, float(margin)

    def _online_labels(self) -> None:
        """The online members' classes for the dense row ``self._x``, into their vote slots."""
        if not self._online:
            return
        a = E.online_row(self._x, self.channels.n_assigned, self.lags, self._n_lag, self._v)
        for i, kind in enumerate(self._online):
            W = self.rls_W if kind == "rls" else self.pa_W
            self._member_labels[self.n_members + i] = E.linear_label(W, self._v, a, self.n_classes, self._scores)

    def _score(self, slots, z):
        index, score = self._vote(slots, z)
        return (index == 1 if self.binary else index), score

    #: Vote mass added to every class before the shares are taken (add-k smoothing):
    #: with few voters (the defaults' two online members) a unanimous vote would read
    #: as certainty, 1.0, and one mistake as an infinite log loss; with it a unanimous
    #: vote of two full-weight members reads 0.94.
    VOTE_PRIOR = 0.125

    def _proba(self, margin: float):
        """Each class's share of the weighted vote of the members and the
        global model (or of the current chunk's labels before any model), each
        class given :attr:`VOTE_PRIOR` more: a smoothed vote share, not a
        calibrated probability; uniform if nobody votes."""
        n = 2 if self.binary else len(self.targets.labels)
        votes = np.maximum(self._votes[:n], 0.0)
        total = float(votes.sum())
        shares = ((votes + self.VOTE_PRIOR) / (total + n * self.VOTE_PRIOR) if total > 0.0
                  else np.full(n, 1.0 / n))
        return float(shares[1]) if self.binary else shares

    # -- learning ---------------------------------------------------------------

    def learn(self, slots, z, y) -> None:
        """Learn label ``y`` of the instance ``(slots, z)`` (from :meth:`decide_one`)."""
        c = int(self.targets.sign(y) > 0) if self.binary else self.targets.index(y)
        predicted, _ = self._vote(slots, z)
        E.decay_weights(self._member_labels, c, self.weights, self.errors, len(self.weights), self.beta)
        self._learn_online(c)
        row = int(self.progress[1])
        self.chunk_X[row] = self._x
        self.chunk_present[row] = self._present
        self.chunk_labels[row] = c
        self.chunk_correct[row] = predicted == c
        self.progress[1] = row + 1
        if row + 1 == self.chunk_size:
            self._end_chunk()

    def _learn_online(self, c: int) -> None:
        """Each online member learns class ``c`` of the row ``_vote`` built; then ``c``
        joins the lag block."""
        if not self._online:
            return
        a = 1 + self._n_lag + self.channels.n_assigned
        if "rls" in self._online:
            E.rls_learn(self.rls_P, self.rls_W, self._v, a, c, self.n_classes, float(self.forgetting), self._Pv)
        if "pa" in self._online:
            E.pa_learn(self.pa_W, self._v, a, c, self.n_classes, float(self.online_C))
        E.push_label(self.lags, self._n_lag, c, self.n_classes)

    def _end_chunk(self) -> None:
        members, rows, chunks = (int(v) for v in self.progress)
        if self.n_members > 0:  # none: the online members (and the global learner) only
            if members < self.n_members:
                slot = members
                members += 1
            else:
                slot = E.worst_member(self.errors, self.born, members)
            self._fit("member", slot, self.chunk_X, self.chunk_present, self.chunk_labels, rows)
            self.born[slot] = chunks
            self.weights[slot] = 1.0
            self.weights /= self.weights.sum()  # slots not filled yet hold 0
        self.errors[:] = 0
        self.progress[:] = (members, 0, chunks + 1)
        if self.alpha == 0.0:
            return
        held = int(self.reservoir_counts[0])
        m = E.stack_rows(self.chunk_X, self.chunk_present, self.chunk_labels, rows,
                         self.reservoir_X, self.reservoir_present, self.reservoir_labels, held,
                         self._train_X, self._train_present, self._train_labels)
        self._fit("global", 0, self._train_X, self._train_present, self._train_labels, m)
        E.reservoir_add(self.chunk_X, self.chunk_present, self.chunk_labels, self.chunk_correct, rows,
                        self.reservoir_X, self.reservoir_present, self.reservoir_labels,
                        self.reservoir_counts, self.rng_state)

    def _fit(self, prefix: str, model: int, X, present, labels, rows: int) -> None:
        bank = self._banks[prefix]
        if self.base == "kelm":
            gamma = self.gamma
            if gamma is None:
                gamma = 1.0 / max(1, int(present[:rows].any(axis=0).sum()))
            support, coef = bank["support"][model], bank["coef"][model]
            gram, target = self._gram[:rows, :rows], self._target[:rows]
            E.kelm_system(X, labels, rows, self.channels.n_assigned, self.n_classes, float(gamma), float(self.C), support, gram, target)
            # Once per chunk, so LAPACK's solve is worth its allocation; K + I/C is
            # positive definite, so it does not fail.
            coef[:rows] = np.linalg.solve(gram, target)
            bank["n_support"][model] = rows
            bank["gamma"][model] = gamma
        elif self.base == "pa":
            E.pa_fit(model, X, labels, rows, self.channels.n_assigned, self.n_classes, float(self.C), bank["w"])
            bank["trained"][model] = True
        else:
            E.nb_fit(model, X, present, labels, rows, bank["class_count"], bank["count"],
                     bank["mean"], bank["var"], self._slots, self._values)

    def _forget_slot(self, slot: int) -> None:
        for X, present in ((self.chunk_X, self.chunk_present), (self.reservoir_X, self.reservoir_present)):
            X[:, slot] = 0.0
            present[:, slot] = False
        for bank in self._banks.values():
            if self.base == "kelm":
                bank["support"][:, :, slot] = 0.0
            elif self.base == "pa":
                bank["w"][:, :, slot] = 0.0
            else:
                for model in range(bank["count"].shape[0]):
                    NB.forget_slot(slot, bank["count"][model], bank["mean"][model], bank["var"][model])
        j = 1 + self._n_lag + slot  # the slot's column of the online row
        if "rls" in self._online:
            self.rls_P[j, :] = 0.0
            self.rls_P[:, j] = 0.0
            self.rls_P[j, j] = 1.0
            self.rls_W[:, j] = 0.0
        if "pa" in self._online:
            self.pa_W[:, j] = 0.0

    # -- state --------------------------------------------------------------------
