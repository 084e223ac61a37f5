"""Which labels to ask: query-rule switches of ``tools/label_budget_variants.py`` for issue 26's
binary accuracy gap at a 10% budget (session of 2026-11-27, branch querybin).

``label_budget_variants.Variant`` inherits :class:`QueryVariants`.  Each switch rescales the
normalized margin ``u`` the rule reads (``1 / (1 + (u / threshold)^p)``; a smaller ``u`` is
asked more) before the budget's level control, which is left as it is (``threshold *=
exp(budget_gain (target - wanted))``), so the labels used stay at the budget.  Distances are
over the channels two readings share (standardized values, each reading as ``decide_one``
standardized it): ``d = mean (z_a - z_b)^2``, a similarity ``exp(-d / 2)`` (2 is ``d``'s mean
for two independent standardized readings).

* ``dens`` (readings), ``dens_beta``, ``dens_width`` (default 1; the similarity
  ``exp(-d / (2 dens_width))``): information density (Settles & Craven, "An analysis of
  active learning strategies for sequence labeling tasks", EMNLP 2008): ``u / (D / D_ref)^beta``,
  ``D`` the reading's mean similarity to the last ``dens`` readings (a ring buffer of every
  reading, labelled or not), ``D_ref`` the running mean of ``D`` over the stream: uncertainty
  sampling on a stream tends to ask outliers, density asks where the readings' mass is;
* ``emc`` (exponent), ``emc_n`` (readings, default 32), ``emc_u`` (0: drop ``u``): expected
  model change, scored on the predictions (Settles, Craven & Ray, "Multiple-instance active
  learning", NIPS 2008, expected gradient length; Roy & McCallum, ICML 2001, read on a
  reservoir): for each label ``y``, AROW's step on it (``alpha_y = max(0, 1 - y m) / (v + r)``,
  ``W += alpha_y y S x``) moves the margins of the last ``emc_n`` readings' features, and the
  score ``E`` is the mean change of their probit ``Phi(m_j / sqrt(1 + v_j))`` weighted by the
  model's own ``P(y)`` (``Phi(m / sqrt(1 + v))``); the rule reads ``u^emc_u (E_ref / E)^emc``,
  ``E_ref`` the running mean of ``E`` (binary learners only); ``emc_kind: "error"``: ``E`` is
  instead the expected reduction of the reservoir's error ``mean min(p_j, 1 - p_j)`` (Roy &
  McCallum's expected error reduction, the model's own probabilities standing in for the
  truth; a reading whose step would raise it is scored at ``1e-12``, so almost never asked);
* ``div`` (exponent), ``div_n`` (labels, default 64): diversity: ``u max(1, d_ref / d_min)^div``
  (the ratio at most 10), ``d_min`` the reading's smallest distance to the last ``div_n`` asked
  readings, ``d_ref`` the running mean of ``d_min``: a reading close to a label already asked
  is asked less.
"""

from __future__ import annotations

import math

import numpy as np

_EPS = 1e-12


def _similar_distance(store, filled, s, x):
    """Mean squared difference over the shared channels of reading ``(s, x)`` and each of
    the first ``filled`` rows of ``store`` (NaN where a row lacks the channel); NaN where
    none is shared."""
    diff = store[:filled][:, s] - x[None, :]
    present = ~np.isnan(diff)
    shared = present.sum(axis=1)
    total = np.where(present, diff * diff, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shared > 0, total / np.maximum(shared, 1), np.nan)


class QueryVariants:
    """The ``dens``, ``emc`` and ``div`` switches, for a subclass of ActiveAROW that keeps its
    switches in ``self._variant`` and calls :meth:`_init_query` in its ``__init__``."""

    def _init_query(self, v):
        self._q_on = any(k in v for k in ("dens", "emc", "div"))
        if not self._q_on:
            return
        if v.get("emc_kind", "change") not in ("change", "error"):
            raise ValueError(f"variant emc_kind must be 'change' or 'error'; got {v['emc_kind']!r}")
        for key in ("dens", "emc_n", "div_n"):
            if key in v and (not isinstance(v[key], int) or v[key] < 1):
                raise ValueError(f"variant {key} must be an int of 1 or more; got {v[key]!r}")
        c = self.capacity
        self._q_reading = (np.zeros(0, dtype=np.int64), np.zeros(0))
        if "dens" in v:  # the last readings' standardized channels, NaN where absent
            self._dens_store = np.full((int(v["dens"]), c), np.nan)
            self._dens_n = 0
            self._dens_ref = [0.0, 0.0]
        if "div" in v:  # the last asked readings' standardized channels
            self._div_store = np.full((int(v.get("div_n", 64)), c), np.nan)
            self._div_n = 0
            self._div_ref = [0.0, 0.0]
        if "emc" in v:  # the last readings' model features (dense, 0 where absent)
            n, width = int(v.get("emc_n", 32)), self.W.shape[1]
            self._emc_f = np.zeros((n, width))
            self._emc_n = 0
            self._emc_ref = [0.0, 0.0]

    def _observe(self, slots, z):
        super()._observe(slots, z)
        if self._q_on:
            ok = (slots >= 0) & (slots < self.capacity)
            self._q_reading = (slots[ok].astype(np.int64), z[ok].astype(np.float64))

    def _ask(self, margin):
        if self._q_on:
            self._u *= self._query_factor()
        asked = super()._ask(margin)
        if self._q_on and asked and "div" in self._variant:
            self._push(self._div_store, self._div_n)
            self._div_n += 1
        return asked

    def _push(self, store, n):
        s, x = self._q_reading
        row = store[n % len(store)]
        row[:] = np.nan
        row[s] = x

    def _query_factor(self) -> float:
        """What multiplies ``u`` for this reading; updates the buffers and running means."""
        v = self._variant
        s, x = self._q_reading
        factor = 1.0
        if "dens" in v:
            filled = min(self._dens_n, len(self._dens_store))
            if filled and len(s):
                d = _similar_distance(self._dens_store, filled, s, x)
                d = d[~np.isnan(d)]
                if len(d):
                    density = float(np.mean(np.exp(-0.5 * d / float(v.get("dens_width", 1.0)))))
                    ref = self._dens_ref
                    ref[0] += density
                    ref[1] += 1.0
                    mean = ref[0] / ref[1]
                    factor /= max(density / max(mean, _EPS), 1e-3) ** float(v.get("dens_beta", 1.0))
            self._push(self._dens_store, self._dens_n)
            self._dens_n += 1
        if "div" in v:
            filled = min(self._div_n, len(self._div_store))
            if filled and len(s):
                d = _similar_distance(self._div_store, filled, s, x)
                d = d[~np.isnan(d)]
                if len(d):
                    d_min = float(np.min(d))
                    ref = self._div_ref
                    ref[0] += d_min
                    ref[1] += 1.0
                    ratio = min(max((ref[0] / ref[1]) / max(d_min, _EPS), 1.0), 10.0)
                    factor *= ratio ** float(v["div"])
        if "emc" in v and self.binary:
            factor *= self._emc_factor()
        return factor

    def _emc_factor(self) -> float:
        v = self._variant
        s, x = self._q_reading
        fs, fz = self._features(s.astype(np.int32), x.copy())
        ok = fs >= 0
        fs, fz = fs[ok].astype(np.int64), fz[ok].copy()
        m, var = float(self._m[0]), float(self._v[0])
        factor = 1.0
        filled = min(self._emc_n, len(self._emc_f))
        if filled:
            F = self._emc_f[:filled]
            W, S, b, Sb = self.W[0], self.S[0], float(self.b[0]), float(self.Sb[0])
            m_j = F @ W + b
            sd_j = np.sqrt(1.0 + (F * F) @ S + Sb)
            direction = F[:, fs] @ (S[fs] * fz) + Sb  # each reservoir margin's move per unit step
            p_pos = 0.5 * math.erfc(-m / math.sqrt(2.0 * (1.0 + var)))
            before = _phi(m_j / sd_j)
            error = v.get("emc_kind", "change") == "error"
            change = float(np.mean(np.minimum(before, 1.0 - before))) if error else 0.0
            for y, p_y in ((1.0, p_pos), (-1.0, 1.0 - p_pos)):
                alpha = max(0.0, 1.0 - y * m) / (var + self._r)
                after = _phi((m_j + alpha * y * direction) / sd_j)
                if error:  # the expected error's reduction: the model's own probabilities as the truth
                    change -= p_y * float(np.mean(np.minimum(after, 1.0 - after)))
                else:
                    change += p_y * float(np.mean(np.abs(after - before)))
            change = max(change, _EPS)
            ref = self._emc_ref
            ref[0] += change
            ref[1] += 1.0
            factor = (ref[0] / ref[1] / change) ** float(v["emc"])
            factor = min(max(factor, 1e-3), 1e3)
            if not v.get("emc_u", 1):
                factor /= max(self._u, _EPS)
        row = self._emc_f[self._emc_n % len(self._emc_f)]
        row[:] = 0.0
        row[fs] = fz
        self._emc_n += 1
        return factor


def _phi(t):
    """The standard normal's distribution function, elementwise."""
    from scipy.special import ndtr

    return ndtr(t)
