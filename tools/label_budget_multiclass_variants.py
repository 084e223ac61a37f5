"""Multiclass switches of ``tools/label_budget_variants.py`` for issue 26's macro-F1 gap
at a 10% budget (session of 2026-11-27, branch macrof1).

``label_budget_variants.Variant`` inherits :class:`MulticlassVariants`; each switch is
a key of the variant's JSON object and does nothing to a binary learner:

* ``novelty`` (exponent), ``novelty_until`` (``m``: only while a class has fewer than ``m``
  labels, a class not met yet counting 0; 1: while a class has no label yet):
  the query rule reads ``u / max(1, d / d_ref)^novelty``, ``d`` the reading's mean
  squared distance (per present channel, standardized) to the nearest known class
  mean, ``d_ref`` the running mean of that distance for the asked labels to their own
  class mean (before they join it): a reading far from every known class may be of a
  class with no label yet (``novelty_ref: "stream"``: ``d_ref`` the running mean of ``d``
  over every reading instead): asking for outlying readings to discover rare classes
  (Pelleg & Moore, "Active learning for anomaly and rare-category detection", NIPS
  2004; He & Carbonell, "Nearest-neighbor-based active learning for rare category
  detection", NIPS 2007);
* ``unclaimed`` (factor): while a class has no label yet, a reading that no known
  class claims (every known row's score, with the class means, below 0: each
  one-vs-rest row says "not mine") has its ``u`` divided by ``1 + unclaimed`` (one-vs-rest
  scores as an open-set test: Scheirer et al., "Toward Open Set Recognition", TPAMI 2013);
* ``cmw_k``: the class-mean weight of class ``c`` is ``class_mean_weight * (1 +
  cmw_k / n_c)``, ``n_c`` its labels learned (the generative score counts for more
  where a row has learned from few positives);
* ``refit_order``: ``"interleave"`` the refit learns the kept labels class by class in
  turn (round robin over the classes, each class's labels in their order), not in the
  order they came; ``refit_epochs``: the refit learns them that many times;
* ``pos_w`` (exponent): a one-vs-rest row learns its own class's label with
  ``r / ((mean n + 1) / (n_c + 1))^pos_w`` (a rare class's positive moves its row
  further: class-balanced steps, the cost-sensitive form of the logit adjustment).

Added for the coverage and balance round (session of 2026-11-27, branch mccover):

* ``novelty_nn`` (1): the novelty term's ``d`` is the distance (the same mean squared
  distance over the channels present in both) to the nearest asked reading, each kept
  as its standardized channels when it was asked, instead of to the nearest class mean
  (He & Carbonell's nearest-neighbour form of rare-category discovery: a class mean
  sits between its readings, so a reading near one asked reading of a spread-out class
  can still be far from its mean);
* ``novelty_patience`` (``m``): the novelty term stops once ``m`` labels in a row have
  brought no new class (it starts again with the next new class): a stream whose missing
  classes are not outlying (libras) stops spending labels on far readings;
* ``novelty_scale`` (``s``): the novelty term reads ``d / (s d_ref)``: below 1 more
  readings count as far (a wider push), above 1 fewer;
* ``rare_bias`` (``b``): multiclass prediction by the margins (with the class means)
  plus ``b / sqrt(n_c)`` for each class with ``n_c > 0`` labels learned (a per-class
  term that favours the classes with few labels, falling slower than the logit
  adjustment's ``log``; it adds to ``logit_adj``);
* ``pred_balance`` (``a``): multiclass prediction by the margins (with the class means)
  minus ``a log(pred_c / share_c)``, ``pred_c`` the class's share of the predictions made
  so far and ``share_c`` its share of the labels learned (one pseudo-count each): a class
  predicted more often than its labels say is pushed down, one predicted less often up
  (an online prior correction toward the labelled class shares, as a majority class that
  takes the rare classes' readings would need; it adds to ``logit_adj``);
* ``lda_k`` (pseudo-labels): the class-mean score with a diagonal pooled within-class
  variance (linear discriminant analysis with a diagonal covariance):
  ``sum_j (mu_cj z_j - mu_cj^2 / 2) / s_j^2 / sqrt(present)`` at ``class_mean_weight``
  (``lda_w`` instead, if given), ``s_j^2`` the asked labels' within-class variance of
  channel ``j`` (each label's ``z`` as it was asked) shrunk toward the stream's 1 by
  ``lda_k`` pseudo-labels: a channel that separates the classes (small spread within
  them) counts for more than the identity metric gives it;
* ``cmw_pow`` (exponent, default 1): ``cmw_k``'s class-mean weight is ``class_mean_weight
  * (1 + cmw_k / n_c^cmw_pow)`` (0.5: a weight that grows as ``1 / sqrt(n_c)``);
* ``refit_balance`` (cap): a class-balanced refit: each kept label of class ``c`` is
  learned in the refit with weight ``w_c = min(cap, max(1, mean n / n_c))``, ``n_c`` the
  kept labels of its class and ``mean n`` their mean over the kept classes (inverse class
  frequency, capped; the common classes keep 1); ``refit_balance_mode``: ``"weight"``
  (default) the step ``r / w_c``, ``"inverse"`` the same with ``w_c`` also below 1 (at
  least ``1 / cap``: a common class's labels take smaller steps), ``"repeat"`` each pass
  learns the kept labels in order and then ``round(w_c) - 1`` more copies of each rare
  one (in order, after the pass).

``tools/label_budget_multiclass_diagnosis.py`` diagnoses the gap and measures these
switches on the multiclass tasks alone.
"""

from __future__ import annotations

import numpy as np

from edgelearn.kernels import arow as K


class MulticlassVariants:
    """The ``novelty`` (with ``novelty_nn``, ``novelty_scale``), ``unclaimed``, ``cmw_k`` (``cmw_pow``),
    ``rare_bias``, ``pred_balance``, ``lda_k``, ``refit_order``/``refit_epochs``, ``refit_balance`` and
    ``pos_w`` switches, for a subclass of ActiveAROW that keeps its switches in ``self._variant`` and calls
    :meth:`_init_multiclass` in its ``__init__``."""

    def _init_multiclass(self, v):
        for key, allowed in (("refit_order", ("interleave", "reverse")), ("novelty_ref", ("asked", "stream"))):
            if key in v and v[key] not in allowed:
                raise ValueError(f"variant {key} must be one of {', '.join(map(repr, allowed))}; got {v[key]!r}")
        if v.get("refit_balance_mode", "weight") not in ("weight", "inverse", "repeat"):
            raise ValueError("variant refit_balance_mode must be 'weight', 'inverse' or 'repeat'; "
                             f"got {v['refit_balance_mode']!r}")
        self._mc_on = not self.binary and any(k in v for k in ("novelty", "cmw_k", "pos_w", "unclaimed", "rare_bias",
                                                                 "pred_balance", "lda_k"))
        self._since_new = 0  # novelty_patience: labels learned since the last new class
        self._asked_y = []  # lda_k: the asked labels' class indices, beside _asked_z
        self._lda_s2 = None  # lda_k: the pooled within-class variance per channel, after the last label
        self._pred_counts = np.zeros(max(self.n_classes, 2))  # pred_balance: predictions per class
        self._asked_z = []  # novelty_nn: the asked readings' standardized channels (NaN where absent)
        self._d_ref = [0.0, 0.0]  # novelty: sum and count of the asked labels' distances to their class mean
        self._d_min = 0.0
        self._d_all = [0.0, 0.0]  # novelty_ref "stream": sum and count of every reading's nearest distance
        self._claimed = True  # unclaimed: some known row scored the last reading above 0

    # -- the class means' distance (novelty) and per-class weight (cmw_k) --------

    def _class_mean_distance(self, slots, z, n_known):
        """Mean squared distance over the present channels to each known class's mean."""
        ok = (slots >= 0) & (slots < self.capacity)
        s, x = slots[ok], z[ok]
        if len(s) == 0 or n_known == 0:
            return None
        counts = self.class_counts[:n_known]
        mu = self.class_sums[:n_known][:, s] / np.maximum(counts, 1.0)[:, None]
        d = np.mean((mu - x[None, :]) ** 2, axis=1)
        d[counts <= 0] = np.inf
        return d

    def _asked_distance(self, slots, z):
        """``novelty_nn``: the mean squared distance over the channels present in both to each
        asked reading (None before the first)."""
        ok = (slots >= 0) & (slots < self.capacity)
        if not self._asked_z or not ok.any():
            return None
        kept = np.asarray(self._asked_z)[:, slots[ok]]
        squared = (kept - z[ok][None, :]) ** 2
        present = np.sum(~np.isnan(squared), axis=1)
        d = np.nansum(squared, axis=1) / np.maximum(present, 1)
        d[present == 0] = np.inf
        return d

    def _within_class_variance(self):
        """``lda_k``: per channel, ``(sum_c sum_i (z_i - mean_c)^2 + k) / (n - classes + k)`` over
        the asked labels with the channel present."""
        if self._lda_s2 is None:
            k = float(self._variant["lda_k"])
            zs, ys = np.asarray(self._asked_z), np.asarray(self._asked_y)
            squares = np.zeros(self.capacity)
            dof = np.zeros(self.capacity)
            for c in np.unique(ys):
                block = zs[ys == c]
                present = np.sum(~np.isnan(block), axis=0)
                mean = np.nansum(block, axis=0) / np.maximum(present, 1)
                squares += np.nansum((block - mean) ** 2, axis=0)
                dof += np.maximum(present - 1, 0)
            self._lda_s2 = (squares + k) / (dof + k)
        return self._lda_s2

    def _add_lda_means(self, slots, z, n_known, weight):
        """``lda_k``: each known class's diagonal-LDA class-mean score, added to ``self._m``."""
        ok = (slots >= 0) & (slots < self.capacity)
        s, x = slots[ok], z[ok]
        if len(s) == 0 or not self._asked_z:
            return
        s2 = self._within_class_variance()[s]
        counts = self.class_counts[:n_known]
        for c in range(n_known):
            if counts[c] > 0:
                mu = self.class_sums[c, s] / counts[c]
                self._m[c] += weight / np.sqrt(len(s)) * float(np.sum((mu * x - 0.5 * mu * mu) / s2))

    def _refitting_now(self):
        """True inside a refit (its labels are kept already)."""
        return bool(getattr(self, "_in_refit", False))

    def _score_without_class_means(self, slots, z):
        # the learner's own score with its class-mean term off (the switches add their own)
        weight = self.class_mean_weight
        self.class_mean_weight = 0.0
        try:
            return super()._score(slots, z)
        finally:
            self.class_mean_weight = weight

    def _score(self, slots, z):
        v = self._variant
        if not self._mc_on:
            return super()._score(slots, z)
        n_known = len(self.targets.labels)
        if "lda_k" in v and n_known:
            weight = self.class_mean_weight
            code, margin = self._score_without_class_means(slots, z)
            fs, fz = self._features(slots, z)
            self._add_lda_means(fs, fz, n_known, float(v.get("lda_w", weight)))
            best, runner = K.best_two(self._m, n_known)
            code, margin = best, (self._m[best] - self._m[runner] if runner >= 0 else self._m[best])
        elif "cmw_k" in v and n_known:
            weight = self.class_mean_weight
            code, margin = self._score_without_class_means(slots, z)
            fs, fz = self._features(slots, z)
            counts = self.class_counts[:n_known]
            for c in range(n_known):  # one class at a time: the kernel adds to every known row
                if counts[c] <= 0:
                    continue
                w_c = weight * (1.0 + float(v["cmw_k"]) / counts[c] ** float(v.get("cmw_pow", 1.0)))
                one = np.zeros_like(self._m)
                sums = np.zeros_like(self.class_sums)
                sums[c] = self.class_sums[c]
                K.add_class_means(fs, fz, len(fs) // (1 + self.n_bins), self.capacity, sums, self.class_counts,
                                  n_known, w_c, one)
                self._m[c] += one[c]
            best, runner = K.best_two(self._m, n_known)
            code, margin = best, (self._m[best] - self._m[runner] if runner >= 0 else self._m[best])
        else:
            code, margin = super()._score(slots, z)
        if "rare_bias" in v and n_known > 1:
            counts = self.class_counts[:n_known]
            seen = counts > 0
            self._m[:n_known][seen] += float(v["rare_bias"]) / np.sqrt(counts[seen])
            best, runner = K.best_two(self._m, n_known)
            code, margin = best, (self._m[best] - self._m[runner] if runner >= 0 else self._m[best])
        if "pred_balance" in v and n_known > 1:
            k = float(n_known)
            predicted = (self._pred_counts[:n_known] + 1.0) / (self._pred_counts[:n_known].sum() + k)
            share = (self.class_counts[:n_known] + 1.0) / (self.class_counts[:n_known].sum() + k)
            self._m[:n_known] -= float(v["pred_balance"]) * np.log(predicted / share)
            best, runner = K.best_two(self._m, n_known)
            code, margin = best, (self._m[best] - self._m[runner] if runner >= 0 else self._m[best])
        if "unclaimed" in v:
            self._claimed = n_known == 0 or float(np.max(self._m[:n_known])) >= 0.0
        if "novelty" in v:
            fs, fz = self._features(slots, z)
            d = self._asked_distance(fs, fz) if v.get("novelty_nn") else self._class_mean_distance(fs, fz, n_known)
            self._d_min = float(np.min(d)) if d is not None else 0.0
            if d is not None and np.isfinite(self._d_min):
                self._d_all[0] += self._d_min
                self._d_all[1] += 1.0
        return code, margin

    def _predict(self, slots, z):
        code, margin = self._score(slots, z)  # the whole chain's code (with logit_adj)
        if not self.binary and "pred_balance" in self._variant and self.targets.learned_any and int(code) >= 0:
            self._pred_counts[int(code)] += 1.0
        return self._label_of(code), margin

    def _ask(self, margin):
        v = self._variant
        ref = self._d_all if v.get("novelty_ref") == "stream" else self._d_ref
        if self._mc_on and "novelty" in v and ref[1] > 0:
            n_known = len(self.targets.labels)
            few = n_known < self.n_classes or float(np.min(self.class_counts[:n_known])) < float(v["novelty_until"]) \
                if v.get("novelty_until") else True
            if "novelty_patience" in v and self._since_new >= int(v["novelty_patience"]):
                few = False
            if few:
                ratio = self._d_min / (float(v.get("novelty_scale", 1.0)) * ref[0] / ref[1])
                if ratio > 1.0:
                    self._u /= ratio ** float(v["novelty"])
        if self._mc_on and "unclaimed" in v and not self._claimed and len(self.targets.labels) < self.n_classes:
            self._u /= 1.0 + float(v["unclaimed"])
        return super()._ask(margin)

    def learn(self, slots, z, y):
        v = self._variant
        if not self._mc_on or self.binary:
            return super().learn(slots, z, y)
        if "novelty" in v or "lda_k" in v:
            fs, fz = self._features(slots, z)
            known = len(self.targets.labels)
            c = self.targets.index(y)  # (registers a new class, as the learner's learn would)
            self._since_new = 0 if len(self.targets.labels) > known else self._since_new + 1
            if (v.get("novelty_nn") or "lda_k" in v) and not self._refitting_now():
                ok = (fs >= 0) & (fs < self.capacity)
                kept = np.full(self.capacity, np.nan)
                kept[fs[ok]] = fz[ok]
                self._asked_z.append(kept)
                self._asked_y.append(c)
                self._lda_s2 = None
            if "novelty" in v and self.class_counts[c] > 0:
                d = self._class_mean_distance(fs, fz, len(self.targets.labels))
                if d is not None:
                    self._d_ref[0] += float(d[c])
                    self._d_ref[1] += 1.0
        if "pos_w" in v:
            return self._learn_weighted(slots, z, y)
        return super().learn(slots, z, y)

    def _learn_weighted(self, slots, z, y):
        """One-vs-rest with the true row's step at ``r / w_c`` (``pos_w``), the others' at ``r``."""
        c = self.targets.index(y)
        if self._refitting:  # the learner's own refit (refit_until), as its learn keeps
            self._keep(slots, z, c)
        n_known = len(self.targets.labels)
        counts = self.class_counts[:n_known]
        w = ((counts.mean() + 1.0) / (counts[c] + 1.0)) ** float(self._variant["pos_w"]) if n_known > 1 else 1.0
        fs, fz = self._features(slots, z)
        k = len(fs)
        K.start_new_row(c, n_known, self.W, self.b)
        for row in range(n_known):
            r = self._r / w if row == c else self._r
            K.learn_row(fs, fz, k, 1.0 if row == c else -1.0, self.W, self.S, self.b, self.Sb, row, r, self._floor)
        K.count_class_mean(fs, fz, k, self.capacity, c, self.class_sums, self.class_counts)

    # -- the refit's order and passes ----------------------------------------------

    def _class_balance(self, labels):
        """``refit_balance``: ``{label: w_c}`` over the kept labels' classes."""
        names, counts = np.unique(np.asarray(labels), return_counts=True)
        cap = float(self._variant["refit_balance"])
        low = 1.0 / cap if self._variant.get("refit_balance_mode") == "inverse" else 1.0
        w = np.clip(counts.mean() / counts, low, cap)
        return dict(zip(names.tolist(), w.tolist()))

    def _refit_weights(self, rebuilt):
        weights = super()._refit_weights(rebuilt)
        v = self._variant
        if self.binary or not v.get("refit_balance") or v.get("refit_balance_mode") == "repeat":
            return weights
        w = self._class_balance([y for _, _, y, _ in rebuilt])
        return weights * np.array([w[y] for _, _, y, _ in rebuilt])

    def _refit(self):
        self._in_refit = True
        try:
            self._refit_multiclass()
        finally:
            self._in_refit = False

    def _refit_multiclass(self):
        v = self._variant
        order = v.get("refit_order")
        epochs = int(v.get("refit_epochs", 1))
        repeat = not self.binary and v.get("refit_balance") and v.get("refit_balance_mode") == "repeat"
        # a binary learner, and "reverse", take label_budget_belief_variants' passes (later
        # ones in random or reversed order); a multiclass learner's passes here repeat the order
        if self.binary or order == "reverse" or (not order and epochs == 1 and not repeat):
            return super()._refit()
        early = self._early
        if order == "interleave":
            by_class = {}
            for kept in early:  # (values, label, ...)
                by_class.setdefault(kept[1], []).append(kept)
            queues = list(by_class.values())
            early = []
            while any(queues):
                for q in queues:
                    if q:
                        early.append(q.pop(0))
        if repeat:  # the rare classes' copies after the pass, in order
            w = self._class_balance([k[1] for k in early])
            early = early + [k for n in range(1, int(round(max(w.values())))) for k in early if round(w[k[1]]) > n]
        kept = self._early
        self._early = early * epochs
        self._refit_one_pass = True  # the passes are in the list already
        try:
            super()._refit()
        finally:
            self._refit_one_pass = False
            if self._early is not None:
                self._early = kept
