"""How ActiveAROW's belief learns, varied: the switches of ``tools/label_budget_variants.py``
that change the belief's update or what the first labels are learned on (session of
2026-11-27, issue 26's 10% aim).  ``label_budget_variants.Variant`` inherits them; the
docstring of that tool lists every switch, and ``docs/learners.md`` gives their numbers.

* ``probit_v``: AdPredictor's ``v`` function, for the ``"adf"`` mode and ``ep``;
* ``ep``: expectation propagation of the probit over the last ``ep`` asked labels;
* ``hedge``: more beliefs at other ``r`` (or learning by the probit's moment matching),
  the prediction by the one with the fewest mistakes on the asked labels so far;
* ``refit``: at the readings named, the belief goes back to its prior and learns every
  label asked so far again, with the channels' standardization and bins as they are
  then (``refit_z``: from raw values rebuilt from ``z`` when ``learn`` met it, which is
  what a learner that is given ``(slots, z)`` can keep; ``refit_cap``: at most that many
  labels kept, after which refits stop); ``refit_epochs``: passes over the kept labels
  at each refit (the first in order, the others each in a new random order from a
  generator seeded by ``refit_seed``, default 0); ``refit_r``: ``r`` times this in the refit's
  first pass (the stream keeps ``r``), ``refit_r_later`` in the later passes;
  ``refit_order: "reverse"``: the later passes alternate reversed and in order instead of
  random orders; ``refit_floor``: the variances' floor in the refit (the stream keeps
  ``variance_floor``: with it a pass never stops moving); ``refit_ipw``: in the refit
  only, each kept label learned with ``r / w``, ``w`` the inverse of the probability
  the rule asked it with over the kept labels' mean of that inverse, at most
  ``refit_ipw`` (the asked labels are a biased sample, piled up near the boundary);
  ``refit_ncm``: with ``ncm`` (``bncm``) the refit also counts the class means again,
  under the standardization it learns on (without it they keep the ``z`` of their labels).
"""

from __future__ import annotations

import math

import numpy as np

from edgelearn.kernels import arow as K
from edgelearn.kernels import channels as channel_kernels
from edgelearn.learners.arow import ActiveAROW  # the learner itself: the tool stands a subclass in for edgelearn's


def probit_v(t: float) -> float:
    """``N(t) / Phi(t)``, AdPredictor's ``v`` (its ``-t``-asymptote far below 0)."""
    if t < -30.0:
        return -t
    return math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi) / (0.5 * math.erfc(-t / math.sqrt(2.0)))


class BeliefVariants:
    """The ``ep``, ``hedge`` and ``refit`` switches, for a subclass of ActiveAROW that
    keeps its switches in ``self._variant`` and calls :meth:`_init_beliefs` in its
    ``__init__``, :meth:`_keep_early` and then :meth:`_ep_learn` or :meth:`_hedge_learn`
    in its ``learn``."""

    def _init_beliefs(self, v):
        if "ep" in v:  # the belief's natural parameters: the prior's and absorbed sites', and the posterior's
            width = self.W.shape[1] + 1  # the intercept last
            self._ep_base = [np.ones((self.W.shape[0], width)), np.zeros((self.W.shape[0], width))]
            self._ep_post = [self._ep_base[0].copy(), self._ep_base[1].copy()]
            self._ep_sites = []  # (features, values, row signs, site precisions, site precision-means)
        if "hedge" in v:  # more beliefs at their own r (at the prior), learned on the same asked labels
            self._models = [(self.W, self.S, self.b, self.Sb, self._r)] + [
                (np.zeros_like(self.W), self.S.copy(), self.b.copy(), self.Sb.copy(), float(r)) for r in v["hedge"]]
            self._hedge_err = np.zeros(len(self._models))
            self._leader = 0
        self._early = [] if v.get("refit") else None  # refit: the labels asked so far, as (values, label, p)
        self._refit_order = np.random.default_rng(int(v.get("refit_seed", 0)) + 7919)  # refit_epochs' orders
        self._refit_one_pass = False  # the multiclass switches' passes, already in self._early

    # -- refit: the first labels learned again once the channels' scales are known --

    def decide_one(self, x):
        points = self._variant.get("refit")
        if points:
            if self.channels.t in points and self._early:
                self._refit()
            self._x_last = x
        return super().decide_one(x)

    def _keep_early(self, slots, z, y):
        """Keep an asked label for the refits (its reading's raw values, or with ``refit_z``
        the values ``z`` stands for under the channels' statistics as they are now)."""
        v = self._variant
        if self._early is None:
            return
        x = self._x_last
        if v.get("refit_z"):
            space, ok = self.channels, slots >= 0
            s = slots[ok]
            x = (s.copy(), space.mean[s] + z[ok] * np.sqrt(space.var[s] + space.eps))
        self._early.append((x, y, float(getattr(self, "_p_last", 1.0))))
        if len(self._early) > int(v.get("refit_cap", 10**9)):  # the buffer is full: no more refits
            self._early = None

    def _refit(self):
        """The belief back at its prior, then every label asked so far learned again in
        order, with the channels' standardization and bins as they are now (and, with
        ``refit_epochs``, again in random orders)."""
        v = self._variant
        self.W[:] = 0.0
        self.S[:] = 1.0
        self.b[:] = 0.0
        self.Sb[:] = 1.0 if self.learn_intercept else 0.0
        self.class_sums[:] = 0.0
        self.class_counts[:] = 0.0
        recount_means = v.get("refit_ncm") and "ncm" in v and hasattr(self, "_ncm_s")
        if recount_means:
            self._ncm_s[:] = 0.0
            self._ncm_n[:] = 0.0
        space = self.channels
        rebuilt = []
        for x, y, p in self._early:
            if isinstance(x, dict):
                slots, z = space.transform(x)
            else:  # refit_z: raw values rebuilt from z as learn met it
                slots, z = x[0].copy(), x[1].copy()
                channel_kernels.standardize(slots, z, len(slots), space.count, space.mean, space.var, space.eps,
                                            space.z_max)
            rebuilt.append((slots, z, y, p))
            if recount_means:
                ok = slots >= 0
                c = (1 if self.targets.sign(y) > 0 else 0) if self.binary else self.targets.index(y)
                self._ncm_s[c, slots[ok]] += z[ok]
                self._ncm_n[c] += 1.0
        weights = self._refit_weights(rebuilt)
        r, floor = self._r, self._floor
        self._floor = float(v.get("refit_floor", floor))
        try:
            passes = 1 if self._refit_one_pass else int(v.get("refit_epochs", 1))
            for epoch in range(passes):
                if epoch == 0:
                    order = np.arange(len(rebuilt))
                elif v.get("refit_order") == "reverse":
                    order = np.arange(len(rebuilt))[::-1] if epoch % 2 else np.arange(len(rebuilt))
                else:
                    order = self._refit_order.permutation(len(rebuilt))
                scale = float(v.get("refit_r", 1.0)) if epoch == 0 else float(v.get("refit_r_later", 1.0))
                for i in order:
                    slots, z, y, _ = rebuilt[i]
                    self._r = r * scale / weights[i]
                    ActiveAROW.learn(self, slots.copy(), z.copy(), y)
        finally:
            self._r, self._floor = r, floor
        if self.channels.t >= max(v["refit"]):
            self._early = None

    def _refit_weights(self, rebuilt):
        """Each kept label's weight in the refit (its step ``r / w``): 1, or ``refit_ipw``'s."""
        v = self._variant
        if not v.get("refit_ipw"):
            return np.ones(len(rebuilt))
        inverse = np.array([1.0 / max(p, 1e-3) for *_, p in rebuilt])
        return np.minimum(inverse / inverse.mean(), float(v["refit_ipw"]))

    # -- hedge: several beliefs, the prediction by the one with the fewest mistakes --

    def _use(self, j):
        """Belief ``j`` of the hedge as the learner's own arrays and r."""
        self.W, self.S, self.b, self.Sb, self._r = self._models[j]

    def _hedge_learn(self, slots, z, y):
        """Each belief's mistake on this label before learning it, then each learns it
        (AROW, or the probit's moment matching for the added ones with ``hedge_adf``)."""
        v = self._variant
        truth = (self.targets.sign(y) > 0) if self.binary else self.targets.index(y)
        for j in range(len(self._models)):
            self._use(j)
            code, _ = ActiveAROW._score(self, slots, z)
            wrong = bool(code) != truth if self.binary else int(code) != truth
            self._hedge_err[j] = float(v.get("hedge_decay", 1.0)) * self._hedge_err[j] + wrong
        for j in range(len(self._models)):
            self._use(j)
            fs, fz = self._features(slots, z)
            if j and v.get("hedge_adf"):
                fs, fz = fs.copy(), fz.copy()
                if self.binary:
                    self._learn_row(fs, fz, self.targets.sign(y), 0, "adf")
                else:
                    n_known = len(self.targets.labels)
                    K.start_new_row(truth, n_known, self.W, self.b)
                    for row in range(n_known):
                        self._learn_row(fs, fz, 1.0 if row == truth else -1.0, row, "adf")
            elif self.binary:
                K.learn_row(fs, fz, len(fs), self.targets.sign(y), self.W, self.S, self.b, self.Sb, 0, self._r,
                            self._floor)
            else:
                K.learn_multiclass(fs, fz, len(fs), truth, len(self.targets.labels), self.W, self.S, self.b,
                                   self.Sb, self._r, self._floor)
        if not self.binary:
            self._count_class_mean(slots, z, truth)
        self._leader = int(np.argmin(self._hedge_err))
        self._use(self._leader)

    # -- ep: expectation propagation of the probit over the last asked labels ---------

    def _ep_learn(self, slots, z, y):
        """Expectation propagation (Minka, UAI 2001) of the probit on the last ``ep`` asked
        labels: each site's Gaussian factor is taken out of the belief, the probit moment-
        matched on the rest (AdPredictor's step, noise ``ep_b2``), and put back; older
        sites stay in the belief as they were (assumed density filtering)."""
        v = self._variant
        fs, fz = self._features(slots, z)
        idx = np.append(fs[fs >= 0], self.W.shape[1])
        x = np.append(fz[fs >= 0], 1.0 if self.learn_intercept else 0.0)
        rows = self.W.shape[0]
        if self.binary:
            signs = np.array([self.targets.sign(y)], dtype=np.float64)
        else:  # rows start at 0 (no start_row), rows of classes not met yet learn nothing
            c = self.targets.index(y)
            signs = np.where(np.arange(rows) == c, 1.0, -1.0)
            signs[len(self.targets.labels):] = 0.0
            self._count_class_mean(slots, z, c)
        self._ep_sites.append((idx, x, signs, np.zeros((rows, len(idx))), np.zeros((rows, len(idx)))))
        if len(self._ep_sites) > int(v["ep"]):  # the oldest site is frozen into the base
            old = self._ep_sites.pop(0)
            self._ep_base[0][:, old[0]] += old[3]
            self._ep_base[1][:, old[0]] += old[4]
        P, H = self._ep_post
        b2 = float(v.get("ep_b2", self._r))
        for _ in range(int(v.get("ep_sweeps", 1))):
            for idx, x, signs, tau, nu in reversed(self._ep_sites):
                for row in range(rows):
                    if signs[row] == 0.0:
                        continue
                    pc = P[row, idx] - tau[row]
                    hc = H[row, idx] - nu[row]
                    mc, sc = hc / pc, 1.0 / pc
                    s2 = b2 + float(sc @ (x * x))
                    t = signs[row] * float(mc @ x) / math.sqrt(s2)
                    vt = probit_v(t)
                    mn = mc + signs[row] * sc * x * vt / math.sqrt(s2)
                    sn = sc - sc * sc * x * x * vt * (vt + t) / s2
                    new_tau, new_nu = 1.0 / sn - pc, mn / sn - hc
                    P[row, idx] += new_tau - tau[row]
                    H[row, idx] += new_nu - nu[row]
                    tau[row], nu[row] = new_tau, new_nu
        width = self.W.shape[1]
        self.W[:] = H[:, :width] / P[:, :width]
        self.S[:] = 1.0 / P[:, :width]
        if self.learn_intercept:
            self.b[:] = H[:, width] / P[:, width]
            self.Sb[:] = 1.0 / P[:, width]
