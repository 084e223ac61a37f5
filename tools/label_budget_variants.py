"""The variants of ActiveAROW tried for issue 26's 10% aim, each on the tuning seeds.

``tools/results_label_budget.py --tune-budget 0.1 --set NAME=VALUE`` measures a
setting of the learner's parameters; a variant of its *code* (a second kind of
update, a buffer, a prediction rule) needs code.  This tool keeps that code, as
a subclass of :class:`edgelearn.ActiveAROW` whose extra behaviour a ``variant``
(a JSON object) switches on, so every number that ``docs/learners.md`` gives for
such a variant has a command behind it.  Every variant runs at a 10% budget on
seeds 1000-1002 (which no page reports), on the 13 binary and 4 multiclass tasks
under both protocols, beside River given every label, through
``results_label_budget``'s own runner (its streams, scores and cache format).

Variants (keys of the JSON object; any of ActiveAROW's parameters may be given too).
The base is ActiveAROW with ``refit_until = 0``, the learner every variant here was
measured against before the wired refit became its default (``{"refit_until": 160}``
gives the wired one; the ``refit`` switch below is the code that measured it):

* ``mode``: ``"hinge"`` AROW's update written in NumPy (a check: the same
  numbers as the kernels), ``"var"`` the variance also shrinks on a label the
  model already gets right by a margin of 1 (a Bayesian belief narrows with every
  observation), ``"ls"`` the squared loss on every label (diagonal recursive
  least squares: a margin above 1 is pulled back);
* ``bin_prior``: the bin weights' prior variance (the linear ones keep 1): a
  smaller one trusts the linear part first, the shape later;
* ``b_prior``: the intercept's prior variance;
* ``replay`` (buffer size), ``steps``, ``w``: a bounded buffer of the asked
  labels' features; after each asked label ``steps`` of them, drawn at random,
  are learned again with weight ``w`` (AROW's ``r / w``);
* ``nb``: a Gaussian naive-Bayes score over the standardized channels (class
  means and a pooled variance per channel from the asked labels, ``nb_k``
  pseudo-readings of mean 0 and variance 1) as one more AROW feature, its
  weight starting at ``nb_w0``; ``nb_norm`` divides it by the square root of the
  present channels (binary only: Ng & Jordan, NIPS 2001, a generative model
  reaches its asymptote with fewer labels);
* ``probit_mc``: multiclass prediction by the largest ``m_c / sqrt(probit_mc +
  v_c)`` instead of the largest margin; ``probit_u`` also queries on that gap;
* ``r_ramp``: AROW's ``r`` grows from ``r / r_ramp`` at the first label to ``r`` at
  the ``r_ramp``-th (a young model's zero weights are no knowledge worth keeping:
  larger steps while few labels have come);
* ``rare_q``: the query rule reads ``u * ((n_c + 1) / (mean n + 1))^rare_q``, ``n_c``
  the labels learned of the predicted class and ``mean n`` over the known classes,
  so a reading predicted to be of a class with few labels is asked for more
  (macro F1 counts a rare class as much as a common one);
* ``pairs`` (hashed slots), ``pair_top``, ``pair_clip``, ``extra_prior``: a
  second-order term within a memory bound: the products ``z_i z_j`` (clipped at
  ``pair_clip``) of every pair among the ``pair_top`` present channels with the
  largest ``|W|`` (the most informative so far), hashed into ``pairs`` extra
  weights of prior variance ``extra_prior``;
* ``pca`` (components), ``pca_every``, ``pca_shrink``, ``pca_start``,
  ``pca_scale``, ``extra_prior``: a low-rank term learned from every reading,
  labelled or not: the channels' pairwise covariance (over the readings where
  both are present) is decomposed every ``pca_every`` readings, and the
  projections of the present channels on its top ``pca`` eigenvectors, each
  over its eigenvalue's square root, are extra features (a prior wider along the
  data's main directions: the semi-supervised cluster assumption);
* ``mc_cs``: multiclass learning on one constraint, the true row against the
  best-scoring other row, on their gap (Crammer, Dredze & Kulesza, "Multi-class
  confidence weighted algorithms", EMNLP 2009) instead of one-vs-rest;
* ``ncm`` (weight), ``ncm_k`` (pseudo-readings at 0): multiclass prediction by
  ``m_c + ncm * g_c``, ``g_c = (mu_c . z - |mu_c|^2 / 2) / sqrt(channels
  present)`` over the present channels, ``mu_c`` the mean standardized channels
  of the asked labels of class ``c`` (``sum / (n_c + ncm_k)``): a nearest-class-
  mean score, a generative model that needs fewer labels per class (Ng & Jordan,
  NIPS 2001; Mensink et al., "Distance-based image classification", TPAMI 2013);
  the query still reads AROW's own margin.  Binary: the margin plus ``ncm (g_+ - g_-)``
  once both classes have a label.  ``ncm`` 0.3 with ``ncm_k`` 0 is what
  ActiveAROW's ``class_mean_weight`` (default 0.3) does, so the variants run on
  top of the learner as it was before it (``"class_mean_weight": 0.0``);
* ``prior_shift``: after that many labels, the binary prediction's odds
  ``Phi(m / sqrt(1 + v))`` are moved from the asked labels' class share to the
  stream's, estimated with weights ``1 / max(p, target)`` (Saerens et al.,
  Neural Computation 2002);
* ``mode: "adf"``: the probit's assumed density filtering instead of AROW's step
  (AdPredictor: Graepel et al., ICML 2010), its noise variance ``adf_b2``
  (default ``r``): ``t = y m / sqrt(adf_b2 + v)``, ``W += y S z v(t) / sqrt(adf_b2 + v)``,
  ``S -= S^2 z^2 v(t) (v(t) + t) / (adf_b2 + v)``, on every asked label;
* ``ep`` (window), ``ep_b2``, ``ep_sweeps``: expectation propagation of that probit
  over the last ``ep`` asked labels (``ep: 1`` is the ``adf`` mode without the floor);
* ``hedge`` (a list of ``r``), ``hedge_adf``, ``hedge_decay``: beliefs at those ``r``
  (or, with ``hedge_adf``, learning by the ``adf`` mode) beside the learner's own,
  each learning every asked label; the prediction and the query read the one with
  the fewest mistakes on the asked labels so far (each counted before learning it);
* ``gd``: a binary learner predicts by the naive-Bayes score of ``nb`` instead of
  AROW's margin while the score has made fewer mistakes (by more than ``gd``) on the
  asked labels (Ng & Jordan's regime, detected online); ``gd_decay`` forgets them;
* ``u_pow``: the binary query reads ``|m| / sd^u_pow`` (1 is the learner's rule);
* ``r_v``: AROW's ``r`` plus ``r_v v``, so no label moves its margin by more than
  ``1 / (1 + r_v)`` of the way (needs ``mode``);
* ``quiet``: no label is asked for the first ``quiet`` readings;
* ``logit_adj``: multiclass prediction by the margins (with the class means) minus
  ``logit_adj log(prior_c)``, ``prior_c`` the share of class ``c`` among the labels
  learned (one pseudo-label each): the logit adjustment of Menon et al. ("Long-tail
  learning via logit adjustment", ICLR 2021), for macro F1;
* ``bb_prior``, ``bncm``: ``b_prior`` and ``ncm`` for a binary learner only;
* ``refit`` (readings), ``refit_z``, ``refit_cap``: at each reading named, the belief
  goes back to its prior and learns every label asked so far again, in order, with
  the channels' standardization and bins as they are then (the first labels were
  learned on ``z`` from a few readings' statistics); ``refit_z`` keeps, instead of
  the reading, the raw values its ``z`` stands for under the statistics ``learn``
  sees (all a learner given ``(slots, z)`` can keep); refits stop after the last
  reading named, or once more than ``refit_cap`` labels are kept.
* ``refit_epochs``, ``refit_seed``, ``refit_order``, ``refit_r``, ``refit_r_later``,
  ``refit_floor``, ``refit_ipw``, ``refit_ncm``: more passes over the kept labels at each
  refit (in random orders from that seed, or alternately reversed), another ``r`` in its
  first or later passes, another variance floor in it, inverse-probability weights on the
  kept labels in it, the binary class means counted again in it (see the sibling's
  docstring).

``ep``, ``hedge`` and ``refit`` live in ``tools/label_budget_belief_variants.py``; ``dens``
(information density), ``emc`` (expected model change) and ``div`` (diversity), which rescale
the query rule's ``u``, in ``tools/label_budget_query_variants.py``.

Run from the repository root (``base`` is the learner as it is)::

    .venv/bin/python tools/label_budget_variants.py base '{"bin_prior": 0.5}' --jobs 2

One line per variant: mean accuracy and F1 per protocol and family, the gap to
River with every label in parentheses, the labels used and the balanced accuracy;
``--per-task`` adds a line per protocol, task and variant (and River) with its mean
accuracy, F1 and balanced accuracy; ``--family binary`` runs the binary tasks only.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np

import edgelearn
from edgelearn.kernels import arow as K

BUDGET = 0.1


def sibling(name: str):
    """A module of tools/ by file name, registered so worker processes unpickle its functions."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


Base = edgelearn.ActiveAROW
_BELIEFS = sibling("label_budget_belief_variants")  # the ep, hedge and refit switches, and probit_v
BeliefVariants, probit_v = _BELIEFS.BeliefVariants, _BELIEFS.probit_v
_MULTICLASS = sibling("label_budget_multiclass_variants")  # novelty, cmw_k, refit_order/epochs, pos_w
_QUERY = sibling("label_budget_query_variants")  # dens, emc, div: which labels the rule asks


#: The learner's terms of issue 26 (the refit, the multiclass terms) that came from these switches, off in the base a
#: variant runs on (pass one to the learner by giving it as a keyword), so every number measured
#: before them reproduces; ``novelty`` names the tool's switch, not the learner's parameter.
TERMS_OFF = {"refit_until": 0, "novelty": 0.0, "logit_adjustment": 0.0, "refit_passes": 1}
_TOOL_SWITCHES = ("novelty",)


class Variant(_QUERY.QueryVariants, _MULTICLASS.MulticlassVariants, BeliefVariants, Base):
    """ActiveAROW with the variant named by ``variant`` (pairs or a dict; see the module docstring)."""

    @classmethod
    def _param_names(cls):
        return Base._param_names()

    def __init__(self, variant=(), **kw):
        v = dict(variant)
        v.pop("code", None)  # the tool's digest, for the cache key only
        kw.update({k: value for k, value in v.items() if k in Base._param_names() and k not in _TOOL_SWITCHES})
        for name, off in TERMS_OFF.items():  # the variants were measured on the learner before these terms
            kw.setdefault(name, off)
        super().__init__(**kw)
        if "bncm" in v and self.binary:  # ncm for a binary learner only (a multiclass one has class_mean_weight)
            v["ncm"] = v["bncm"]
        self._variant = v
        if "bin_prior" in v:
            self.S[:, self.capacity:] = v["bin_prior"]
        if "bb_prior" in v and self.binary:  # b_prior for a binary learner only
            v["b_prior"] = v["bb_prior"]
        if "b_prior" in v and self.learn_intercept:
            self.Sb[:] = v["b_prior"]
        if "replay" in v:
            n, width = v["replay"], self.W.shape[1]
            self._buf_slots = np.zeros((n, width), dtype=np.int32)
            self._buf_z = np.zeros((n, width), dtype=np.float64)
            self._buf_k = np.zeros(n, dtype=np.int64)
            self._buf_y = np.zeros(n, dtype=np.int64)
            self._buf_n = 0
            self._draws = np.random.default_rng(kw.get("seed", 0) + 77)
        if "gd" in v:  # mistakes on the asked labels, before learning them: AROW's, the naive Bayes score's
            self._gd_err = [0.0, 0.0]
        if "nb" in v or "gd" in v:
            self._nb_n = np.zeros((2, self.capacity))
            self._nb_s = np.zeros((2, self.capacity))
            self._nb_q = np.zeros((2, self.capacity))
            self._nb_W, self._nb_S = float(v.get("nb_w0", 0.0)), 1.0
        extra = int(v["pairs"]) if "pairs" in v else int(v["pca"]) if "pca" in v else 0
        if extra:
            # extra columns after the channel-wise ones, for the pair or principal-component features
            self._base_width = self.W.shape[1]
            self.W = np.concatenate([self.W, np.zeros((self.W.shape[0], extra))], axis=1)
            self.S = np.concatenate([self.S, np.full((self.S.shape[0], extra), v.get("extra_prior", 1.0))], axis=1)
            self._feature_slots = np.zeros(self.W.shape[1], dtype=np.int32)
            self._feature_z = np.zeros(self.W.shape[1], dtype=np.float64)
        if "pca" in v:
            c = self.capacity
            self._cov = np.zeros((c, c))
            self._cov_n = np.zeros((c, c))
            self._pc = np.zeros((int(v["pca"]), c))
            self._pc_sd = np.ones(int(v["pca"]))
            self._seen = 0
        if "ncm" in v:  # class sums of the standardized channels of the asked labels, and counts
            self._ncm_s = np.zeros((max(self.n_classes, 2), self.capacity))
            self._ncm_n = np.zeros(max(self.n_classes, 2))
        self._init_beliefs(v)
        self._init_multiclass(v)
        self._init_query(v)
        self._shares = [0.0, 0.0, 0.0, 0.0]  # prior_shift: asked positives, negatives, and 1/p-weighted
        self._p_last = 1.0
        self._class_labels = np.zeros(max(self.n_classes, 2)) if "rare_q" in v else None
        self._predicted = 0

    # -- prediction -------------------------------------------------------------

    def _score(self, slots, z):
        code, margin = self._score_variant(slots, z)
        if self._class_labels is not None:
            self._predicted = (1 if code else 0) if self.binary else max(int(code), 0)
        return code, margin

    def _score_variant(self, slots, z):
        v = self._variant
        if "hedge" in v:
            self._use(self._leader)
            return Base._score(self, slots, z)
        if "ncm" in v and self.binary:
            code, margin = super()._score(slots, z)
            if min(self._ncm_n[:2]) == 0:
                return code, margin
            ok = slots >= 0
            s, x = slots[ok], z[ok]
            mu = self._ncm_s[:2][:, s] / (self._ncm_n[:2, None] + float(v.get("ncm_k", 1.0)))
            g = (mu @ x - 0.5 * np.sum(mu * mu, axis=1)) / math.sqrt(max(len(s), 1))
            margin = margin + float(v["ncm"]) * float(g[1] - g[0])
            return margin > 0.0, margin
        if "ncm" in v and not self.binary:
            code, margin = super()._score(slots, z)
            n_known = len(self.targets.labels)
            if n_known < 2:
                return code, margin
            ok = slots >= 0
            s, x = slots[ok], z[ok]
            k0 = float(v.get("ncm_k", 1.0))
            mu = self._ncm_s[:n_known][:, s] / (self._ncm_n[:n_known, None] + k0)
            g = (mu @ x - 0.5 * np.sum(mu * mu, axis=1)) / math.sqrt(max(len(s), 1))
            total = self._m[:n_known] + float(v["ncm"]) * g
            order = np.argsort(-total, kind="stable")
            best, runner = int(order[0]), int(order[1])
            return best, float(total[best] - total[runner])
        if "logit_adj" in v and not self.binary:
            code, margin = super()._score(slots, z)
            n_known = len(self.targets.labels)
            if n_known < 2:
                return code, margin
            counts = self.class_counts[:n_known] + 1.0
            total = self._m[:n_known] - float(v["logit_adj"]) * np.log(counts / counts.sum())
            order = np.argsort(-total, kind="stable")
            return int(order[0]), float(total[order[0]] - total[order[1]])
        if "probit_mc" in v and not self.binary:
            code, margin = super()._score(slots, z)
            n_known = len(self.targets.labels)
            if n_known < 2:
                return code, margin
            pm = self._m[:n_known] / np.sqrt(v["probit_mc"] + self._v[:n_known])
            best, runner = (int(i) for i in np.argsort(-pm)[:2])
            if v.get("probit_u"):
                self._u = abs(pm[best] - pm[runner]) / math.sqrt(2.0)
            return best, float(self._m[best] - self._m[runner])
        if "prior_shift" in v and self.binary:
            code, margin = super()._score(slots, z)
            pos, neg, wpos, wneg = self._shares
            if pos + neg < v["prior_shift"]:
                return code, margin
            asked_share = (pos + 1.0) / (pos + neg + 2.0)
            stream_share = (wpos + 1.0) / (wpos + wneg + 2.0)
            p = 0.5 * math.erfc(-float(self._m[0]) / math.sqrt(2.0 * (1.0 + float(self._v[0]))))
            p = min(max(p, 1e-9), 1.0 - 1e-9)
            odds = p / (1 - p) * (stream_share / (1 - stream_share)) / (asked_share / (1 - asked_share))
            return odds > 1.0, margin
        if "gd" in v and self.binary:
            code, margin = super()._score(slots, z)
            if self._gd_err[1] + float(v["gd"]) < self._gd_err[0]:
                return self._nb_score(slots, z) > 0.0, margin
            return code, margin
        if "nb" in v and self.binary:
            f = self._nb_score(slots, z)
            fs, fz = self._features(slots, z)
            K.scores(fs, fz, len(fs), self.W, self.S, self.b, self.Sb, self._m, self._v)
            self._m[0] += self._nb_W * f
            self._v[0] += self._nb_S * f * f
            margin, self._u = K.confidence(self._m, self._v, 1, True)
            return margin > 0.0, margin
        return super()._score(slots, z)

    def _ask(self, margin):
        if self.channels.t <= int(self._variant.get("quiet", 0)):  # no label asked for the first readings
            return False
        if "u_pow" in self._variant and self.binary:  # |m| / sd^u_pow: 1 is the learner's, 0 the raw margin
            self._u = abs(float(self._m[0])) / max(float(self._v[0]), 1e-300) ** (0.5 * float(self._variant["u_pow"]))
        a = self._variant.get("rare_q")
        if a and self._class_labels is not None and self._class_labels.sum() > 0:
            n_known = max(len(self.targets.labels), 2)
            counts = self._class_labels[:n_known]
            self._u *= ((counts[self._predicted] + 1.0) / (counts.mean() + 1.0)) ** a
        self._p_last = 1.0 / (1.0 + (self._u / self._current_threshold) ** float(self.query_power))
        return super()._ask(margin)

    # -- second-order features: channel pairs, or principal components ----------

    def _observe(self, slots, z):
        super()._observe(slots, z)
        if "pca" in self._variant:
            ok = slots >= 0
            s, x = slots[ok], z[ok]
            self._cov[np.ix_(s, s)] += np.outer(x, x)
            self._cov_n[np.ix_(s, s)] += 1.0
            self._seen += 1
            every = int(self._variant.get("pca_every", 25))
            if self._seen % every == 0:
                used = max(int(s.max()) + 1 if len(s) else 0, getattr(self, "_pc_used", 0))
                self._pc_used = used
                shrink = float(self._variant.get("pca_shrink", 5.0))
                cov = self._cov[:used, :used] / (self._cov_n[:used, :used] + shrink)
                values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
                k = self._pc.shape[0]
                for j in range(min(k, used)):
                    u = vectors[:, -1 - j]
                    if self._pc[j, :used] @ u < 0 or (not self._pc[j].any() and u[np.argmax(np.abs(u))] < 0):
                        u = -u
                    self._pc[j, :] = 0.0
                    self._pc[j, :used] = u
                    self._pc_sd[j] = math.sqrt(max(values[-1 - j], 1e-6))

    def _features(self, slots, z):
        fs, fz = super()._features(slots, z)
        v = self._variant
        if "pairs" not in v and "pca" not in v:
            return fs, fz
        n = len(fs)
        ok = slots >= 0
        s, x = slots[ok], z[ok]
        out_s, out_z = self._feature_slots, self._feature_z
        e = 0
        if "pairs" in v and len(s) > 1:
            top = int(v.get("pair_top", 6))
            importance = np.abs(self.W[:, s]).max(axis=0)
            order = np.argsort(-importance, kind="stable")[:top]
            hs = int(v["pairs"])
            clip = float(v.get("pair_clip", 4.0))
            for a in range(len(order)):
                for b_ in range(a + 1, len(order)):
                    i, j = int(s[order[a]]), int(s[order[b_]])
                    i, j = min(i, j), max(i, j)
                    out_s[n + e] = self._base_width + (i * 1000003 + j * 7919) % hs
                    out_z[n + e] = min(max(float(x[order[a]] * x[order[b_]]), -clip), clip)
                    e += 1
        if "pca" in v and self._seen >= int(v.get("pca_start", 50)) and len(s):
            for j in range(self._pc.shape[0]):
                u = self._pc[j, s]
                norm = math.sqrt(float(u @ u))
                if norm > 1e-9:
                    out_s[n + e] = self._base_width + j
                    out_z[n + e] = float(u @ x) / norm / self._pc_sd[j] * float(v.get("pca_scale", 1.0))
                    e += 1
        return out_s[:n + e], out_z[:n + e]

    def _nb_score(self, slots, z):
        ok = slots >= 0
        s, x = slots[ok], z[ok]
        if len(s) == 0:
            return 0.0
        k0 = self._variant.get("nb_k", 1.0)
        n = self._nb_n[:, s]
        mu = self._nb_s[:, s] / (n + k0)
        within = self._nb_q[:, s] - self._nb_s[:, s] ** 2 / np.maximum(n, 1e-12)
        var = (within.sum(0) + k0) / (n.sum(0) + k0)
        score = float(np.sum((mu[1] - mu[0]) / var * (x - 0.5 * (mu[1] + mu[0]))))
        return score / math.sqrt(len(s)) if self._variant.get("nb_norm") else score

    # -- learning ---------------------------------------------------------------

    def _learn_row(self, fs, fz, y, row, mode, extra=None):
        """AROW's step on ``row`` in NumPy (``mode`` as in the module docstring);
        ``extra``: one more feature ``(value, [mean], [variance])`` learned with it."""
        W, S, b, Sb, r, floor = self.W, self.S, self.b, self.Sb, self._r, self._floor
        ok = fs >= 0
        fs, fz = fs[ok], fz[ok]
        m = float(W[row, fs] @ fz) + b[row]
        var = float(S[row, fs] @ (fz * fz)) + Sb[row]
        if extra is not None:
            m += extra[1][0] * extra[0]
            var += extra[2][0] * extra[0] ** 2
        if mode == "adf":  # probit moment matching (AdPredictor), its noise variance adf_b2
            s2 = float(self._variant.get("adf_b2", r)) + var
            t = y * m / math.sqrt(s2)
            vt = probit_v(t)
            alpha, beta = vt / math.sqrt(s2), vt * (vt + t) / s2
            self._step(row, fs, fz, y, alpha, beta)
            return
        r = r + float(self._variant.get("r_v", 0.0)) * var  # r_v: no label moves its margin past 1 / (1 + r_v)
        loss = 1.0 - y * m
        if loss <= 0.0:
            if mode == "var":
                loss = 0.0
            elif mode != "ls":
                return
        beta = 1.0 / (var + r)
        alpha = loss * beta
        self._step(row, fs, fz, y, alpha, beta)
        if extra is not None:
            sf = extra[2][0] * extra[0]
            extra[1][0] += alpha * y * sf
            extra[2][0] = max(extra[2][0] - beta * sf * sf, floor)

    def learn(self, slots, z, y):
        v = self._variant
        if v.get("refit"):
            self._keep_early(slots, z, y)
        if "ep" in v:
            return self._ep_learn(slots, z, y)
        if "hedge" in v:
            return self._hedge_learn(slots, z, y)
        if "r_ramp" in v:
            self._labels_learned = getattr(self, "_labels_learned", 0) + 1
            self._r = float(self.r) * min(1.0, self._labels_learned / v["r_ramp"])
        if self._class_labels is not None:
            if self.binary:
                self._class_labels[1 if self.targets.sign(y) > 0 else 0] += 1.0
            else:
                self._class_labels[self.targets.index(y)] += 1.0
        if self.binary and "prior_shift" in v:
            w = 1.0 / max(self._p_last, BUDGET)
            side = 0 if self.targets.sign(y) > 0 else 1
            self._shares[side] += 1.0
            self._shares[2 + side] += w
        if "gd" in v and self.binary:
            sign = self.targets.sign(y)
            f = self._nb_score(slots, z)
            fs, fz = self._features(slots, z)
            m = K.margin_variance(fs, fz, len(fs), self.W, self.S, self.b, self.Sb, 0)[0]
            decay = float(v.get("gd_decay", 1.0))
            self._gd_err = [decay * self._gd_err[0] + (sign * m <= 0.0), decay * self._gd_err[1] + (sign * f <= 0.0)]
            ok = slots >= 0
            c = 1 if sign > 0 else 0
            self._nb_n[c, slots[ok]] += 1.0
            self._nb_s[c, slots[ok]] += z[ok]
            self._nb_q[c, slots[ok]] += z[ok] ** 2
        if "nb" in v and self.binary:
            sign = self.targets.sign(y)
            f = self._nb_score(slots, z)
            fs, fz = self._features(slots, z)
            mean, variance = [self._nb_W], [self._nb_S]
            self._learn_row(fs.copy(), fz.copy(), sign, 0, "hinge", (f, mean, variance))
            self._nb_W, self._nb_S = mean[0], variance[0]
            ok = slots >= 0
            c = 1 if sign > 0 else 0
            self._nb_n[c, slots[ok]] += 1.0
            self._nb_s[c, slots[ok]] += z[ok]
            self._nb_q[c, slots[ok]] += z[ok] ** 2
            return
        if "ncm" in v:
            ok = slots >= 0
            c = (1 if self.targets.sign(y) > 0 else 0) if self.binary else self.targets.index(y)
            self._ncm_s[c, slots[ok]] += z[ok]
            self._ncm_n[c] += 1.0
        if v.get("mc_cs") and not self.binary and len(self.targets.labels) > 1:
            self._learn_two_rows(slots, z, self.targets.index(y))
            self._count_class_mean(slots, z, self.targets.index(y))
            return
        if "mode" in v:
            fs, fz = self._features(slots, z)
            fs, fz = fs.copy(), fz.copy()
            if self.binary:
                self._learn_row(fs, fz, self.targets.sign(y), 0, v["mode"])
                return
            c = self.targets.index(y)
            n_known = len(self.targets.labels)
            if c > 0 and c == n_known - 1 and K.fresh_row(c, self.W, self.b):
                K.start_row(c, self.W, self.b)
            for row in range(n_known):
                self._learn_row(fs, fz, 1.0 if row == c else -1.0, row, v["mode"])
            self._count_class_mean(slots, z, c)
            return
        if "replay" in v:
            self._replay_then_keep(slots, z)
        super().learn(slots, z, y)
        if "replay" in v:
            j = (self._buf_n - 1) % len(self._buf_k)
            self._buf_y[j] = self.targets.sign(y) if self.binary else self.targets.index(y)

    def _count_class_mean(self, slots, z, c):
        # the learner's class means (class_mean_weight), as its own learn counts them
        fs, fz = self._features(slots, z)
        K.count_class_mean(fs, fz, len(fs), self.capacity, c, self.class_sums, self.class_counts)

    def _learn_two_rows(self, slots, z, c):
        """Multi-class AROW with one constraint (Crammer, Dredze & Kulesza, EMNLP 2009):
        the true row against the best other known row, on their gap."""
        n_known = len(self.targets.labels)
        W, S, b, Sb = self.W, self.S, self.b, self.Sb
        if c > 0 and c == n_known - 1 and K.fresh_row(c, W, b):
            K.start_row(c, W, b)
        fs, fz = self._features(slots, z)
        ok = fs >= 0
        fs, fz = fs[ok].copy(), fz[ok].copy()
        m = W[:n_known, fs] @ fz + b[:n_known]
        m[c] = -np.inf
        o = int(np.argmax(m))
        gap = float(W[c, fs] @ fz + b[c]) - float(W[o, fs] @ fz + b[o])
        loss = 1.0 - gap
        if loss <= 0.0:
            return
        var = float(S[c, fs] @ (fz * fz)) + Sb[c] + float(S[o, fs] @ (fz * fz)) + Sb[o]
        beta = 1.0 / (var + self._r)
        alpha = loss * beta
        self._step(c, fs, fz, 1.0, alpha, beta)
        self._step(o, fs, fz, -1.0, alpha, beta)

    def _step(self, row, fs, fz, y, alpha, beta):
        """AROW's move of ``row`` toward label ``y`` (+1 or -1), its variances narrowed."""
        W, S, b, Sb, floor = self.W, self.S, self.b, self.Sb, self._floor
        sz = S[row, fs] * fz
        W[row, fs] += alpha * y * sz
        S[row, fs] = np.maximum(S[row, fs] - beta * sz * sz, floor)
        if Sb[row] > 0.0:
            b[row] += alpha * y * Sb[row]
            Sb[row] = max(Sb[row] - beta * Sb[row] * Sb[row], floor)

    def _replay_then_keep(self, slots, z):
        v = self._variant
        r = self._r / v.get("w", 1.0)
        if self._buf_n:
            for _ in range(v.get("steps", 1)):
                i = self._draws.integers(min(self._buf_n, len(self._buf_k)))
                k = self._buf_k[i]
                if self.binary:
                    K.learn_row(self._buf_slots[i, :k], self._buf_z[i, :k], k, float(self._buf_y[i]),
                                self.W, self.S, self.b, self.Sb, 0, r, self._floor)
                else:
                    K.learn_multiclass(self._buf_slots[i, :k], self._buf_z[i, :k], k, int(self._buf_y[i]),
                                       len(self.targets.labels), self.W, self.S, self.b, self.Sb, r, self._floor)
        fs, fz = self._features(slots, z)
        j = self._buf_n % len(self._buf_k)
        self._buf_slots[j, :len(fs)] = fs
        self._buf_z[j, :len(fz)] = fz
        self._buf_k[j] = len(fs)
        self._buf_n += 1


def measure(variants, jobs: int, cache: Path | None, seeds=None, binary_tasks=None, multiclass_tasks=None,
            per_task: dict | None = None, family: str | None = None):
    """``{variant name: {(protocol, family): (accuracy, F1, accuracy gap, F1 gap, labels %,
    balanced accuracy)}}``; ``per_task``, if given, is filled with ``{(protocol, task, name):
    (accuracy, F1, balanced accuracy)}``, means over the seeds (River's run with every label
    under its own name); ``family`` (``"binary"`` or ``"multiclass"``): that family's tasks only."""
    tool = sibling("results_label_budget")
    families_module = tool._families()
    seeds = tuple(seeds or tool.TUNE_SEEDS)
    families = {
        "binary": (list(binary_tasks or tool.TASKS), tool.RIVER_LR),
        "multiclass": ([families_module.multiclass_task(t) for t in (multiclass_tasks or families_module.MULTICLASS_TASKS)],
                       families_module.RIVER_SOFTMAX),
    }
    if family is not None:
        families = {family: families[family]}
    # run_one builds edgelearn.ActiveAROW: the variant class stands in for it, in this
    # process and the workers it forks, and is put back after.

    # A cached run is keyed by edgelearn's code (results_label_budget.code_version) and
    # by its parameters; a variant's also by this file's code and its sibling's, which make it.
    code = hashlib.sha256(Path(__file__).read_bytes() + Path(_BELIEFS.__file__).read_bytes()
                          + Path(_MULTICLASS.__file__).read_bytes() + Path(_QUERY.__file__).read_bytes()
                          ).hexdigest()[:16]

    def params_of(variant):
        params = {"target_query_rate": BUDGET}
        if variant:
            params["variant"] = tuple(sorted({**variant, "code": code}.items()))
        return params

    units = [(p, t, s, m, tool.frozen(pr)) for v in variants for p in tool.PROTOCOLS
             for tasks, rival in families.values() for t in tasks for s in seeds
             for m, pr in ((tool.OURS, params_of(v)), (rival, {}))]
    edgelearn.ActiveAROW = Variant
    try:
        results = tool.run(units, jobs, cache, label="variants ")
    finally:
        edgelearn.ActiveAROW = Base
    table = {}
    for v in variants:
        rows = {}
        for p in tool.PROTOCOLS:
            for family, (tasks, rival) in families.items():
                def mean(method, pr, metric):
                    return 100 * float(np.mean([results[(p, t, s, method, tool.frozen(pr))][metric]
                                                for t in tasks for s in seeds]))
                acc, f1, rate, balanced = (mean(tool.OURS, params_of(v), m)
                                           for m in ("accuracy", "f1", "query_rate", "balanced_accuracy"))
                rows[(p, family)] = (acc, f1, acc - mean(rival, {}, "accuracy"), f1 - mean(rival, {}, "f1"), rate,
                                     balanced)
                for t in tasks if per_task is not None else ():
                    for name, method, pr in ((rival, rival, {}), (json.dumps(v) if v else "base", tool.OURS,
                                                                  params_of(v))):
                        per_task[(p, t, name)] = tuple(
                            100 * float(np.mean([results[(p, t, s, method, tool.frozen(pr))][m] for s in seeds]))
                            for m in ("accuracy", "f1", "balanced_accuracy"))
        table[json.dumps(v) if v else "base"] = rows
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/label_budget_variants.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", help="'base', or a JSON object of a variant")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, in processes (default: 1)")
    parser.add_argument("--cache", default=".cache/label-budget-variants.json",
                        help="JSON file of finished runs (default: %(default)s); '' for none")
    parser.add_argument("--seeds", default=None,
                        help="comma-separated tuning seeds (default: results_label_budget's 1000,1001,1002; "
                             "never the reported 0-9)")
    parser.add_argument("--per-task", action="store_true",
                        help="also each task's mean accuracy, per protocol, beside River's with every label")
    parser.add_argument("--family", choices=("binary", "multiclass"), default=None,
                        help="that family's tasks only (default: both)")
    args = parser.parse_args(argv)
    variants = [{} if v == "base" else {k: tuple(x) if isinstance(x, list) else x for k, x in json.loads(v).items()}
                for v in args.variants]  # a list (hedge's r values) as a tuple: units are hashable
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    if seeds and min(seeds) < 1000:
        parser.error(f"--seeds must be tuning seeds (1000 or more): the pages report seeds 0-9; got {args.seeds}")
    per_task = {} if args.per_task else None
    table = measure(variants, args.jobs, Path(args.cache) if args.cache else None, seeds=seeds, per_task=per_task,
                    family=args.family)
    for name, rows in table.items():
        cells = [f"{p} {family}: accuracy {acc:.1f} ({dacc:+.1f}), F1 {f1:.1f} ({df1:+.1f}), labels {rate:.1f}%, "
                 f"balanced accuracy {balanced:.1f}"
                 for (p, family), (acc, f1, dacc, df1, rate, balanced) in rows.items()]
        print(name, "|", " | ".join(cells), flush=True)
    for (p, t, name), (acc, f1, balanced) in (per_task or {}).items():
        print(f"per task | {p} | {t} | {name} | accuracy {acc:.1f}, F1 {f1:.1f}, balanced accuracy {balanced:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
