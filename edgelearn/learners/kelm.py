"""Multi-label semi-supervised online KELM with a bounded window (seed 002),
as docs/learners.md reads it."""

from __future__ import annotations

import math
import numpy as np

from ..constraints import Boolean, Interval, OneOf, Options, check
from ..kernels import kelm as K
from ..kernels.rate_control import budgeted_query, new_query_state
from .base import Decision, Learner, MultiLabelTargets, load_arrays, logistic_proba
from .budget import HeldBudget

_OWNER = "MultiLabelKELM"
# Bounds of the query threshold under target_query_rate.
_THRESHOLD_MIN, _THRESHOLD_MAX = 1e-12, 1e12


class MultiLabelKELM(HeldBudget, Learner):
    """Semi-supervised multi-label kernel extreme learning machine over a
    bounded window of the stream.

    A label set ``y`` is a dict of label name to bool (River's multi-output
    convention); a label absent from the dict (or given as ``None``) is
    *missing*.  Predictions are dicts over every label name seen so far.

    The model is the paper's ``f(x) = k(x, window)^T Omega^-1 C T`` with
    ``Omega = I + (C + lam Lx + gam Ly) K`` over a window of at most
    ``window`` instances: RBF kernel ``K``, targets ``T`` in {-1, 0, +1}
    (0 missing), penalties ``C = diag(c)`` (``c_i = J0 / N_i`` for a
    labelled instance, 0 for an unlabelled one), and per-block feature and
    label Laplacians ``Lx``, ``Ly`` that let the unlabelled instances shape
    the function.  A label is predicted present when ``f_j(x) > cut``: the
    paper's cut is 0; the default learns it (below).

    Instances are gathered in a *pending block* of ``block_size``; a full
    block enters the window just before the next instance is observed (so
    the paper's protocol, blocks predicted before they are learned, is
    ``decide_one`` then ``learn`` on every instance).  Entering a block:

    1. make room: drop the oldest unlabelled instances while the window and
       the block together hold more than ``max_unlabelled`` unlabelled ones,
       then the oldest instances while they hold more than ``window``;
    2. predict the block with the model as it is now, and build its graphs:
       ``Lx`` links each instance to its ``n_neighbors`` nearest in the
       block (kernel-weighted, symmetrized), ``Ly`` weighs each pair by the
       cosine of their label vectors floored at 0, a missing label filled
       with its predicted sign; no edges between blocks;
    3. grow ``Omega^-1`` by the block inverse (Schur complement), O(W^2 b).

    A removed instance first leaves its block's graphs (the block's
    remaining instances get the Laplacian of the graph among themselves, a
    Woodbury update of rank <= b), then the inverse (the downdate
    ``E - F H^-1 G``), O(W^2 b) per block of removals.  Every
    ``refactor_every`` updates ``Omega^-1`` is rebuilt from the stored
    window, O(W^3), to bound round-off.

    Decisions beyond docs/learners.md's reading of the paper:

    * The cut (PCut first; the default, ``threshold="pcut-f1"``, below).
      Micro-F1 is decided by how scores become label sets, and ``f_j > 0`` is a poor rule here: the
      targets are +-1 and most labels are absent, so a kernel ridge pulls
      scores towards -1 and predicts too few labels (the paper's rule left
      micro-F1 below River's classifier chain on yeast and emotions).  A
      threshold chosen on held-out scores is the standard cure: Yang ("A
      study of thresholding strategies for text categorization", SIGIR 2001)
      compares RCut (a rank cut), PCut (predict each category for as many
      instances as its share in the training data) and SCut (a per-category
      cut tuned on a validation set); SCut overfits rare categories, PCut is
      the stable one.  Lipton, Elkan and Naryanaswamy ("Thresholding
      classifiers to maximize F1 score", ECML PKDD 2014) show that micro-F1's
      optimum is one cut shared by all labels on comparable scores.  So the
      cut is one for all labels, set by PCut pooled over them: as many of
      the window's held-out scores lie above it as the window's known
      targets hold positives (so the predicted label cardinality matches the
      labelled one, and Hamming loss stays near the rule of 0's).  The
      held-out scores are *exact* leave-one-out scores, free for a kernel
      ridge (Cawley and Talbot, "Fast exact leave-one-out cross-validation
      of sparse least-squares support vector machines", Neural Networks
      2004): with ``H = K Omega^-1 C`` and ``h = H_aa``, the model refit
      without instance a's label set (graphs kept) scores it
      ``(f(x_a) - h t_a) / (1 - h)``, O(W d) per labelled instance.  The
      cut is refit whenever a block enters, O(W^2 d); until the window
      holds a positive and a negative target it stays 0.  On tuning runs of
      docs/results-kelm.md's protocol (seeds 1000-1002 on emotions,
      1000-1001 on yeast, never the reported ones; 20% labelled, W = 512,
      blocks of 100; J0 = 30, no graphs) the pooled PCut gave micro-F1 0.625 against 0.549
      for the cut at 0 on yeast and 0.626 against 0.599 on emotions; a
      per-label PCut or SCut lost 0.07 of micro-F1 on yeast (rare labels),
      and the F1-optimal pooled cut matched PCut's micro-F1 at a Hamming
      loss 0.02-0.04 higher.  ``threshold`` a float fixes the cut (0.0: the
      paper).
    * The default cut is midway between that PCut and the F1-optimal pooled
      cut on the same leave-one-out scores (``threshold="pcut-f1"``).  PCut
      matches the labelled cardinality, but micro-F1's optimum predicts
      more positives than the base rate (Lipton et al. above: on calibrated
      scores the F1-optimal threshold is F*/2, below 1/2), and PCut's loss is
      largest while the window holds few labels (the first blocks of a run,
      where River's classifier chain, predicting more labels an instance than
      are true, is ahead).  The F1-optimal cut alone maximizes a noisy
      estimate and raises Hamming loss; the midpoint keeps most of its gain.
      ``threshold="pcut"`` keeps PCut alone.
    * ``clamp_label_count=True`` (the default): the number of labels
      predicted is clamped to the range of label counts of the window's
      labelled instances.  Fewer labels above the cut than the fewest any
      of them has: the top-scored ones are predicted up to that number; more
      than the most any has: only that many top-scored ones (Yang's RCut
      as a floor and a ceiling under the cut).  A label set outside that
      range is likely wrong where, as in emotions (1 to 3 labels of 6), the
      window has seen no such instance, and a pooled cut estimated from few
      labels does predict such sets.  The margin ``score`` stays that of
      the cut.
    * Measured on the tuning runs of docs/results-kelm.md (its "Tuning
      runs" tables, ``python tools/results_kelm.py``: seeds 1000-1002, never
      the reported ones; W = 512, blocks of 100, the defaults otherwise),
      micro-F1 for PCut / the midway cut, each without / with the clamp:
      emotions at 20% labelled 0.626 / 0.629 (PCut), 0.627 / 0.634
      (midway); at 10% labelled 0.562 / 0.558, 0.569 / 0.574; yeast at 20%
      0.623 / 0.623, 0.626 / 0.626 (yeast's 1 to 11 labels of 14 leave the
      clamp idle).  Hamming loss on emotions at 20%: 0.236 (PCut), 0.243
      (the defaults).  Ranking metrics do not depend on the cut.
    * No graphs by default (``lam = gam = 0``; the paper's 0.1 stays one
      argument away).  On the tuning runs of the page before the cut
      (seeds 1000-1002, both rates, cut at 0) the label graph cost 0.03
      (yeast) and 0.18 (emotions) of micro-F1 and every ranking metric on
      emotions, the feature graph nothing measurable on yeast and 0.025 of
      micro-F1 on emotions; the page's "KELM, graphs" row measures them
      with the cut: with 10-20% of the labels, filling the missing
      ones with the model's own signs in ``Ly`` feeds its errors back.
      Without graphs the model is a kernel ridge over the window's labelled
      instances with penalties ``J0 / N_i`` (and the unlabelled instances
      only wait for late labels).
    * ``J0`` defaults to 30 (the paper's 1e-3 makes the penalties ~1e-5 and
      the model a nearly flat kernel vote): among 10, 30 and 100 on the
      tuning runs above, with the pooled cut, 30 had the best micro-F1 on
      both data sets (tools/results_kelm.py's tuning table repeats this on both rates).  ``gamma=None`` stays ``1/d`` on
      standardized channels: the median heuristic gives ``1/(2d)`` on both
      data sets, and halving or doubling gamma did not help both at once.
    * ``N_i`` counts the labelled instances of the window (the entering
      block included) whose labels include instance i's most frequent
      positive label; for an instance with no positive label, those with
      none.  It is fixed when i enters the window or is labelled there.
    * Room is made *before* a block enters (the paper discards after), so
      the arrays never hold more than ``window`` instances.
    * Late labels: ``learn(slots, z, y)`` finds the instance by its
      features (the newest identical one, an unlabelled one first) in the
      pending block or the window and sets its targets in place (they
      replace any it had).  In the window this changes only its penalty:
      a Sherman-Morrison update, O(W^2); its block's ``Ly`` keeps the label
      vectors the block entered with (the paper builds ``Ly`` once per
      block).  An instance no longer held enters the pending block as a new
      labelled instance.  ``learn_one(x, y)`` observes x and labels it.
    * ``gamma=None`` fixes ``gamma = 1 / d`` when the first block enters,
      d the channels seen by then (scikit-learn's ``"scale"`` for
      standardized features).
    * A recycled channel slot is zeroed in every stored instance (the
      imputation of a missing channel), and ``Omega^-1`` is rebuilt before
      the next prediction.
    * The score of a prediction is ``min_j |f_j(x) - cut|`` (0 before any
      label is known), the margin of the least certain label.  Without
      ``target_query_rate`` every label is asked for; with it, the label is
      wanted when the score is below a threshold that adapts after every
      instance, ``theta *= exp(budget_gain * (target - wanted))`` (starting
      at 1, clipped to [1e-12, 1e12]; a wish the budget refused leaves it
      be), and asked for as a bucket of label credit allows
      (:mod:`edgelearn.kernels.rate_control`): within 5% of the target over
      any 1,000 instances or more (``query_rate`` is the realized rate).

    Parameters
    ----------
    window
        W, the most instances the model holds (the fixed budget).
    block_size
        b, instances per block (1 allowed).
    max_unlabelled
        Most unlabelled instances held; ``None``: ``max(block_size, window // 2)``.
    gamma
        RBF width; ``None``: ``1 / d`` (see above).
    J0
        Penalty scale of labelled instances (30; the paper's is 1e-3, see above).
    lam, gam
        Weights of the feature and label Laplacians (0: none; the paper's 0.1).
    n_neighbors
        Neighbours per instance in the feature graph.
    max_labels
        m, the most distinct label names (indexed in order of first appearance).
    refactor_every
        Low-rank updates between two rebuilds of ``Omega^-1``.
    threshold
        ``"pcut-f1"``: the cut learned from the window, midway between PCut
        and the F1-optimal cut (above); ``"pcut"``: PCut alone; a float:
        that fixed cut (0.0 is the paper's rule).
    clamp_label_count
        Keep the number of labels predicted within the range of label
        counts of the window's labelled instances (above).
    target_query_rate, budget_gain
        The label budget and the speed of its control (see above).
    capacity, evict_after
        Channel slots and the absence after which a slot may be recycled.

    Memory bound: ``8 * (W * (W + d + 3m + 6b + 6) + b * (d + 2m + 2b + 2)
    + d + 3m + 4) + W (m + 1) + b^2 + 64 m`` bytes, with W = ``window``, b =
    ``block_size``, m = ``max_labels``, d = ``capacity`` (the inverse; window
    and pending features, targets, penalties, Laplacians, block ids,
    coefficients; the leave-one-out scores of the cut; the scratch of the
    updates; the budget's counts; label names at 64 bytes each), plus its ChannelSpace.  The
    defaults (W = 256, b = 20, m = 16, d = 256): 1.47 MB.

    Examples
    --------
    >>> import random
    >>> from edgelearn import MultiLabelKELM
    >>> rng = random.Random(0)
    >>> model = MultiLabelKELM(window=64, block_size=8)
    >>> wrong = total = 0
    >>> for i in range(600):
    ...     a, b = rng.gauss(0, 1), rng.gauss(0, 1)
    ...     y = {"a>0": a > 0, "b>0": b > 0}
    ...     d = model.decide_one({"a": a, "b": b})
    ...     if i >= 300:
    ...         wrong += sum(d.label.get(k) != v for k, v in y.items())
    ...         total += len(y)
    ...     if i % 4 == 0:  # a quarter of the labels
    ...         model.learn(d.slots, d.z, y)
    >>> print(f"Hamming loss {wrong / total:.2f}, window {model.n_window}")
    Hamming loss 0.05, window 64
    """

    tasks = frozenset({"multilabel"})
    capabilities = frozenset({"label_rate"})
    asks_selectively = True
    _parameter_constraints = {
        "window": Interval(int, 1, None),
        "block_size": Interval(int, 1, None),  # and at most window
        "max_unlabelled": OneOf(Options(None), Interval(int, 1, None)),  # in [block_size, window]
        "gamma": OneOf(Options(None), Interval(float, 0, None, closed="neither")),
        "J0": Interval(float, 0, None, closed="neither"),
        "lam": Interval(float, 0, None, closed="left"),
        "gam": Interval(float, 0, None, closed="left"),
        "n_neighbors": Interval(int, 1, None),
        "max_labels": Interval(int, 1, None),
        "refactor_every": Interval(int, 1, None),
        "threshold": OneOf(Options("pcut-f1", "pcut"), Interval(float, None, None, closed="neither")),
        "clamp_label_count": Boolean(),
        "target_query_rate": OneOf(Options(None), Interval(float, 0, 1, closed="right")),
        "budget_gain": Interval(float, 0, None, closed="neither"),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
    }

    def __init__(
        self,
        window: int = 256,
        block_size: int = 20,
        max_unlabelled: int | None = None,
        gamma: float | None = None,
        J0: float = 30.0,
        lam: float = 0.0,
        gam: float = 0.0,
        n_neighbors: int = 5,
        max_labels: int = 16,
        refactor_every: int = 100,
        threshold: str | float = "pcut-f1",
        clamp_label_count: bool = True,
        target_query_rate: float | None = None,
        budget_gain: float = 0.5,
        capacity: int = 256,
        evict_after: int = 1000,
    ):
        self._set_params(locals())
        # Bounds that depend on other parameters.
        check(_OWNER, "block_size", block_size, Interval(int, 1, window))
        if max_unlabelled is not None:
            check(_OWNER, "max_unlabelled", max_unlabelled, Interval(int, block_size, window))

        self._init_channels(capacity, evict_after)
        W, b, m, d = window, block_size, max_labels, capacity
        # The window (see edgelearn.kernels.kelm for the layout).
        self.Xt = np.zeros((d, W))
        self.T = np.zeros((W, m))
        self.c = np.zeros(W)
        self.Lx = np.zeros((W, b))
        self.Ly = np.zeros((W, b))
        self.block = np.full(W, -1, dtype=np.int64)
        self.Q = np.zeros((W, W))
        self.A = np.zeros((W, m))
        # The pending block, and the labelled instances of the window per
        # positive label (the last entry: those with no positive label).
        self.Xp = np.zeros((b, d))
        self.Tp = np.zeros((b, m))
        self.n_positive = np.zeros(m + 1, dtype=np.int64)
        # Scratch.
        self._u = np.zeros(d)
        self._t = np.zeros(m)
        self._f = np.zeros(m)
        self._k = np.zeros(W)
        self._w = np.zeros(W)
        self._w2 = np.zeros(W)
        self._Kbw = np.zeros((b, W))
        self._G = np.zeros((b, W))
        self._R0 = np.zeros((W, b))
        self._D = np.zeros((W, b))
        self._Kbb = np.zeros((b, b))
        self._S = np.zeros((b, b))
        self._Fp = np.zeros((b, m))
        self._tmp = np.zeros(b)
        self._loo = np.zeros(W * m)  # leave-one-out scores of the window's known targets
        self._loo_positive = np.zeros(W * m, dtype=np.bool_)
        self._picked = np.zeros((b, b), dtype=np.bool_)
        self._remove = np.zeros(W, dtype=np.bool_)
        self._piv = np.zeros(W, dtype=np.int64)
        self._jidx = np.zeros(b, dtype=np.int64)
        self._n = 0
        self._n_pending = 0
        self.targets = MultiLabelTargets(_OWNER, max_labels)  # label names
        self._gamma = gamma
        self._threshold = 1.0
        # The budget's counts (rate_control; the rule draws nothing: word 0 stays 0).
        self.query_state = new_query_state(0)
        self._cut = 0.0 if isinstance(threshold, str) else float(threshold)
        self._fewest, self._most = 0, max_labels  # of the window's labelled instances (no bound yet)
        self._updates = 0
        self._next_block = 0
        self._stale = False
        self._max_unlabelled = max(block_size, window // 2) if max_unlabelled is None else max_unlabelled
        self._lam = float(lam)
        self._gam = float(gam)

    # -- inspection -----------------------------------------------------------

    @property
    def labels(self) -> list:
        """Label names seen so far, in index order."""
        return list(self.targets.labels)

    @property
    def n_window(self) -> int:
        """Instances in the window (the model)."""
        return self._n

    @property
    def n_pending(self) -> int:
        """Instances in the pending block (not in the model yet)."""
        return self._n_pending

    @property
    def n_unlabelled(self) -> int:
        """Unlabelled instances in the window."""
        return int(np.count_nonzero(self.c[: self._n] == 0.0))

    @property
    def cut(self) -> float:
        """The cut in use: a label is predicted present when ``f_j(x) > cut``."""
        return self._cut

    @property
    def kernel_width(self) -> float | None:
        """The RBF width in use (``gamma``, or the one fixed by ``gamma=None``)."""
        return self._gamma

    def inverse(self) -> np.ndarray:
        """A copy of the maintained ``Omega^-1`` over the window."""
        n = self._n
        return self.Q[:n, :n].copy()

    # -- predictions ----------------------------------------------------------

    def scores(self, slots, z) -> np.ndarray:
        """The scores ``f_j`` of the instance ``(slots, z)``, one per label
        name in :attr:`labels` order (a copy)."""
        K.dense(slots, z, len(slots), self._u)
        self._margin_u()
        return self._f[: len(self.targets.labels)].copy()

    def scores_one(self, x: dict) -> dict:
        """The scores ``f_j(x)`` by label name, without learning anything."""
        slots, z = self.channels.transform(x, self._scale)
        return dict(zip(self.targets.labels, self.scores(slots, z).tolist()))

    def _margin_u(self) -> float:
        """Score the dense features in ``_u`` into ``_f``; return the margin."""
        m = len(self.targets.labels)
        if self._stale:
            self._refactor()
        if self._n == 0:
            self._f[:m] = 0.0
            return 0.0
        return K.scores(self.Xt, self._n, self.channels.n_assigned, self._u, self._gamma, self.A, m, self._k, self._f,
                        self._cut)

    def _score(self, slots, z):
        K.dense(slots, z, len(slots), self._u)
        margin = self._margin_u()
        names = self.targets.labels
        f = self._f[: len(names)]
        above = f > self._cut
        count = int(np.count_nonzero(above))
        if self.clamp_label_count and not self._fewest <= count <= self._most:
            # The top-scored labels, as many as the nearest end of the range.
            keep = self._fewest if count < self._fewest else self._most
            above[:] = False
            above[np.argsort(-f, kind="stable")[:keep]] = True
        return dict(zip(names, above.tolist())), margin

    def _count_range(self) -> None:
        """The fewest and most positive labels of a labelled instance in
        the window (0 and ``max_labels`` while it holds none)."""
        n = self._n
        counts = np.count_nonzero(self.T[:n][self.c[:n] > 0.0] > 0.0, axis=1)
        self._fewest, self._most = (int(counts.min()), int(counts.max())) if counts.size else (0, self.max_labels)

    def _proba(self, margin: float) -> np.ndarray:
        """P(True) of each label is the logistic of ``f_j - cut`` (so 1/2 at
        the boundary): monotone in the score, not calibrated."""
        m = len(self.targets.labels)
        return np.array([logistic_proba(f - self._cut) for f in self._f[:m].tolist()])

    # -- protocol hooks -------------------------------------------------------

    def decide_one(self, x: dict) -> Decision:
        # A full block enters before anything else: this instance is
        # predicted by a model that has learned every earlier block.
        self._flush_if_full()
        slots, z = self.channels.observe(x, self._scale)
        code, score = self._score(slots, z)
        self._append_pending()  # _score left the dense features in _u
        return Decision(self._label_of(code), score, self._ask(score), slots, z)

    def _observe(self, slots, z) -> None:
        self._flush_if_full()
        K.dense(slots, z, len(slots), self._u)
        self._append_pending()

    def _ask(self, score: float) -> bool:
        if self.target_query_rate is None:
            return True
        asked, threshold = budgeted_query(score < self._threshold, self._threshold, self.query_state,
                                          float(self.target_query_rate), float(self.budget_gain),
                                          _THRESHOLD_MIN, _THRESHOLD_MAX)
        self._threshold = float(threshold)
        return bool(asked)

    def learn(self, slots, z, y) -> None:
        """Learn the label set ``y`` of the instance ``(slots, z)`` (from
        :meth:`decide_one`): in place if the learner still holds it, else
        as a new labelled instance."""
        if not self._targets(y):
            return
        K.dense(slots, z, len(slots), self._u)
        where, i = K.find_instance(self._u, self.capacity, self.Xt, self._n, self.c, self.Xp, self._n_pending, self.Tp)
        if where == 1:
            self.Tp[i] = self._t
        elif where == 2:
            self._label_in_window(i)
        else:
            self._flush_if_full()
            self._append_pending()
            self.Tp[self._n_pending - 1] = self._t

    def _targets(self, y) -> bool:
        """Write y's targets into ``_t``; False if y names no label."""
        return self.targets.read(y, self._t)

    # -- the window -----------------------------------------------------------

    def _append_pending(self) -> None:
        self.Xp[self._n_pending] = self._u
        self.Tp[self._n_pending] = 0.0
        self._n_pending += 1

    def _flush_if_full(self) -> None:
        if self._n_pending == self.block_size:
            self._flush()

    def _flush(self) -> None:
        """Add the pending block to the window (see the class docstring)."""
        nb = self._n_pending
        if self._stale:
            self._refactor()
        d = self.channels.n_assigned
        if self._gamma is None:
            self._gamma = 1.0 / max(1, d)
        if K.plan_room(self.c, self.T, self._n, self.Tp, nb, self._max_unlabelled, self.window, self.n_positive,
                       self._remove):
            self._n, ok = K.remove_rows(
                self.Q, self._n, self._remove, self.Xt, d, self._gamma, self.c, self.T, self.Lx, self.Ly,
                self.block, self._lam, self._gam, self._Kbw, self._G, self._D, self._D, self._S, self._tmp,
                self._jidx, self._piv,
            )
            self._updated(ok)  # the block is predicted by the model without them
        n = self._n
        m = len(self.targets.labels)
        K.rbf_rows_window(self.Xp, nb, self.Xt, n, d, self._gamma, self._Kbw)
        K.block_scores(self._Kbw, nb, n, self.A, m, self._Fp)
        K.rbf_pairs(self.Xp, nb, d, self._gamma, self._Kbb)
        K.enter_block(self.Xp, self.Tp, nb, d, self.Xt, self.T, self.c, self.block, n, self._next_block,
                      self.n_positive, self.J0)
        self._next_block += 1
        K.block_laplacians(self._Kbb, nb, self.Tp, self._Fp, m, self.n_neighbors, self._picked, self.Lx, self.Ly, n)
        ok = K.add_block(
            self.Q, n, nb, self._Kbw, self._Kbb, self.c, self.Lx, self.Ly, self.block, self._lam,
            self._gam, self._R0, self._D, self._G, self._S, self._tmp, self._piv,
        )
        self._n = n + nb
        self._n_pending = 0
        self._updated(ok)
        self._recut()

    def _recut(self) -> None:
        """Refit the cut from the window's leave-one-out scores (a learned
        ``threshold``: ``"pcut-f1"`` or ``"pcut"``)."""
        if not isinstance(self.threshold, str):
            return
        count = K.loo_scores(
            self.Q, self._n, self.Xt, self.channels.n_assigned, self._gamma, self.c, self.T,
            len(self.targets.labels), self.A, self._k, self._f, self._loo, self._loo_positive,
        )
        cut = K.count_cut(self._loo, self._loo_positive, count)
        if self.threshold == "pcut-f1":
            cut = 0.5 * (cut + K.f1_cut(self._loo, self._loo_positive, count))
        if not math.isnan(cut):
            self._cut = float(cut)

    def _label_in_window(self, a: int) -> None:
        if self._stale:
            self._refactor()
        if self.c[a] > 0.0:
            K.count_targets(self.T[a], self.n_positive, -1)
        self.T[a] = self._t
        K.count_targets(self._t, self.n_positive, 1)
        c_new = K.penalty(self._t, self.n_positive, self.J0)
        change = c_new - self.c[a]
        self.c[a] = c_new
        ok = True
        if change != 0.0:
            n = self._n
            K.rbf_window_row(self.Xt, n, self.channels.n_assigned, self.Xt[:, a], self._gamma, self._k)
            ok = K.set_penalty(self.Q, n, a, change, self._k, self._w, self._w2)
        self._updated(ok)

    def _updated(self, ok: bool) -> None:
        """After a low-rank update: rebuild when it failed or a rebuild is
        due, else refresh the coefficients ``A = Q C T``."""
        self._updates += 1
        self._count_range()
        if not ok or self._updates >= self.refactor_every:
            self._refactor()
        else:
            # Columns of labels not seen yet stay 0 in T and so in A.
            K.alpha(self.Q, self._n, self.c, self.T, len(self.targets.labels), self.A)

    def _refactor(self) -> None:
        n = self._n
        if n and not K.refactor(
            self.Q, n, self.Xt, self.channels.n_assigned, self._gamma, self.c, self.Lx, self.Ly, self.block,
            self._lam, self._gam, self._Kbw, self._piv,
        ):
            raise FloatingPointError(f"{_OWNER}: Omega is singular (a zero pivot); this is a bug.")
        K.alpha(self.Q, n, self.c, self.T, len(self.targets.labels), self.A)
        self._updates = 0
        self._stale = False

    def _forget_slot(self, slot: int) -> None:
        self.Xp[:, slot] = 0.0
        # Usually the channel left with the instances that had it: nothing to rebuild.
        if self.Xt[slot, : self._n].any():
            self.Xt[slot] = 0.0
            self._stale = True

    # -- state ----------------------------------------------------------------

    _LEARNED = ("Xt", "T", "c", "Lx", "Ly", "block", "Q", "A", "Xp", "Tp", "n_positive", "query_state")
    _QUERY_STATE = "query_state"

    def _learned_state(self) -> dict:
        state = {name: getattr(self, name).copy() for name in self._LEARNED}
        state.update(
            n=self._n,
            n_pending=self._n_pending,
            targets=self.targets.to_state(),
            gamma=self._gamma,
            threshold=self._threshold,
            cut=self._cut,
            updates=self._updates,
            next_block=self._next_block,
            stale=self._stale,
        )
        return state

    def _load_learned(self, learned: dict) -> None:
        # States saved before the budget counted have no query state: a fresh bucket.
        load_arrays(self, {"query_state": new_query_state(0), **learned}, self._LEARNED)
        self._n = int(learned["n"])
        self._n_pending = int(learned["n_pending"])
        self._load_targets(learned)
        self._gamma = None if learned["gamma"] is None else float(learned["gamma"])
        self._threshold = float(learned["threshold"])
        self._cut = float(learned.get("cut", 0.0))  # checkpoints before the cut: the paper's 0
        self._updates = int(learned["updates"])
        self._next_block = int(learned["next_block"])
        self._stale = bool(learned["stale"])
        self._count_range()  # of T and c: derived, not stored
