"""The multiclass parts of :class:`edgelearn.ActiveAROW` (a mixin it inherits): the
prediction's class means, nearest-class-mean distance and logit adjustment, the query's
novelty term, and the multiclass row loop of :meth:`~edgelearn.ActiveAROW.run_rows`.
Each calls the kernels of :mod:`edgelearn.kernels.arow_multiclass` that the jitted loop
(``log_replay.arow_multiclass_log_loop``) calls, so every path gives the same bits."""

from __future__ import annotations

import numpy as np

from ..kernels import arow_multiclass as MK
from .arrays import RowsPass, RowsResult, row_buffers, run_indexed


class MulticlassAROW:
    """ActiveAROW's multiclass prediction, novelty query and row loop (see the module docstring)."""

    def _init_multiclass_terms(self) -> None:
        # novelty: the sum and count of every decided reading's distance to its nearest class mean
        self.novelty_stats = np.zeros(0 if self.binary else 2, dtype=np.float64)
        self._distance = -1.0  # the last scored reading's (-1: none), for _ask

    def _multiclass_score(self, slots, z, margin: float):
        """The code and margin of a multiclass prediction, from the rows' margins
        :func:`~edgelearn.kernels.arow.scores` left (the first features are the channels' own:
        the class means read no bin); keeps the nearest class mean's distance for the query."""
        best, margin, self._distance = MK.multiclass_prediction(
            slots, z, len(slots) // (1 + self.n_bins), self.capacity, self.class_sums, self.class_counts,
            len(self.targets.labels), float(self.class_mean_weight), float(self.novelty),
            float(self.logit_adjustment), self._m, margin)
        return best, margin

    def _novelty_u(self, u: float) -> float:
        """The query's ``u`` after the novelty term, the reading's distance counted (decide only)."""
        return MK.novelty_query(u, self._distance, self.novelty_stats, float(self.novelty),
                                len(self.targets.labels), self.n_classes, self.class_counts)

    def _run_rows_multiclass(self, rows: RowsPass) -> RowsResult:
        # run_rows of a multiclass learner: kernels/log_replay.arow_multiclass_log_loop.
        from ..kernels import log_replay as loop

        X, names = rows.X, rows.names
        space = self.channels
        col_slot, slot_col, changed, counters = space.column_map(names)
        out = row_buffers(rows)
        usable = np.zeros(X.shape[0], dtype=np.bool_)
        target = 0.0 if self.target_query_rate is None else float(self.target_query_rate)

        def run(code_class, n_known, start, resume_n, threshold):
            row, status, threshold, n_features = loop.arow_multiclass_log_loop(
                X, rows.codes, code_class, start, resume_n, rows.learn_if_asked, n_known,
                col_slot, slot_col, changed, counters,
                space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
                space.z_max, space.evict_after,
                self._edges, self.bin_freq, self.capacity, self._feature_slots, self._feature_z,
                self.W, self.S, self.b, self.Sb, self._m, self._v, self._r, self._floor,
                float(self.query_power), self._prior_var, self.rng_state, threshold, target,
                float(self.budget_gain), out.slots, out.vals, out.pred, out.margins, out.asked,
                usable, out.feat_k, out.feat_slots, out.feat_z,
                self.class_sums, self.class_counts, float(self.class_mean_weight), *self._refit_arrays(),
                float(self.novelty), self.novelty_stats, float(self.logit_adjustment),
            )
            return row, status == loop.DONE, threshold, n_features

        threshold, states = run_indexed(self.targets, rows, self._current_threshold, run)
        self._current_threshold = float(threshold)
        space.take_column_map(names, slot_col, changed, counters)
        self._sync_refitting()
        return out.result(states, usable)


def state_before_multiclass_terms(state: dict) -> dict:
    """A state saved before ``novelty``, ``logit_adjustment`` and ``refit_passes`` loads
    with them off (one refit pass), so it predicts and asks as it did."""
    params = state["params"]
    if "novelty" in params:
        return state
    rows = 0 if params.get("n_classes", 2) == 2 else 2
    return {**state, "params": {**params, "novelty": 0.0, "logit_adjustment": 0.0, "refit_passes": 1},
            "learned": {**state["learned"], "novelty_stats": np.zeros(rows)}}
