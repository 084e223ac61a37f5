"""The refit of the first labels of :class:`edgelearn.ActiveAROW` (a mixin it inherits,
``refit_until``): the buffer of the labels kept, the refit at each refit point, the keep of
a learned label, and the buffer's release once the refits are over. The jitted row loops run
the same kernels (``kernels/log_replay.py``); the learner's class docstring says what the
refit does and what it measured."""

from __future__ import annotations

import numpy as np

from ..kernels import arow as K
from ..kernels.rate_control import most_asks


class FirstLabelsRefit:
    """ActiveAROW's refit of its first labels (see the module docstring)."""

    def _init_refit(self) -> None:
        # The readings before which a refit runs (none when refit_until is 0); the labels kept
        # (raw values by slot, NaN: absent; the sign or class index) and their count (-1: no
        # more refits; nothing when refit_until is 0).
        self._refit_points = frozenset(K.refit_points(self.refit_until))
        kept = self._refit_size() if self._refit_points else 0
        self._hold_refit_buffer(kept)
        self.refit_count = np.zeros(1 if kept else 0, dtype=np.int64)
        self._refit_last = max(self._refit_points, default=-1)
        self._refitting = bool(kept)  # refit_count >= 0, read on every reading
        passes = self.refit_passes
        self._refit_passes = passes if passes is not None else (1 if self.n_classes == 2 else 2)

    def _hold_refit_buffer(self, kept: int) -> None:
        # The kept labels' raw values by slot and their labels, and a reading's channels as the
        # refit rebuilds them (scratch). Zero rows once the refits are over: empty arrays of the
        # same dtypes and ranks, which the kernels take (the same numba types) and never index.
        capacity = self.capacity
        self.refit_values = np.zeros((kept, capacity), dtype=np.float64)
        self.refit_targets = np.zeros(kept, dtype=np.float64)
        self._refit_slots = np.zeros(capacity if kept else 0, dtype=np.int32)
        self._refit_z = np.zeros(capacity if kept else 0, dtype=np.float64)

    def _refit_size(self) -> int:
        """Labels the refit buffer holds: ``refit_labels``, or sized from the budget (None)."""
        if self.refit_labels is not None:
            return self.refit_labels
        return max(most_asks(self.refit_until, self.target_query_rate), 1)

    def _refit_arrays(self) -> tuple:
        # The row loops' refit arguments (kernels/log_replay.py): the kept labels, their count
        # (none, or -1 once the refits are over: the loops then neither refit nor keep), scratch.
        return (self.refit_until, self.refit_values, self.refit_targets,
                self.refit_count, self._refit_slots, self._refit_z,
                self._prior_var if self.learn_intercept else 0.0, self._refit_passes)

    def learn_one(self, x: dict, y) -> None:
        if not self._refitting:
            return super().learn_one(x, y)
        slots, z = self._observe_refitting(x)
        self._observe(slots, z)
        self.learn(slots, z, y)

    def why_not(self, capability: str) -> str | None:
        if capability == "merge" and self._refitting:
            # a contribution is a change of precision, never negative; a refit resets the belief
            return "refits pending (refit_until > 0): it contributes once they are over"
        return super().why_not(capability)

    def contribution(self) -> dict:
        if self._refitting:
            raise ValueError(f"ActiveAROW.contribution: {self.why_not('merge')}.")
        return super().contribution()

    def _observe_refitting(self, x: dict):
        # ChannelSpace.observe with the refit between its claim (which may recycle a slot,
        # as the pipeline's claim does before decide_learn_claimed) and the observation.
        space = self.channels
        slots, z = space.claim(x)
        self._refit_if_due()
        space.observe_claimed(slots, z, True)
        return slots, z

    def _refit_if_due(self) -> None:
        """Before reading ``t`` is observed: at a refit point, the refit of the labels kept;
        after the last one, no more."""
        t = self.channels.t
        n = int(self.refit_count[0])
        if n > 0 and t in self._refit_points:
            space = self.channels
            prior = self._prior_var
            K.refit(self.refit_values, self.refit_targets, n, space.count, space.mean, space.var,
                    space.eps, space.z_max, self._edges, self.bin_freq, self.capacity,
                    self._refit_slots, self._refit_z, self._feature_slots, self._feature_z,
                    self.W, self.S, self.b, self.Sb, prior, prior if self.learn_intercept else 0.0,
                    self._r, self._floor, self.binary, len(self.targets.labels),
                    self.class_sums, self.class_counts, self._refit_passes)
        if t >= self._refit_last:
            self._stop_refits()

    def _keep(self, slots, z, code: float) -> None:
        space = self.channels
        K.keep_for_refit(slots, z, len(slots), float(code), space.mean, space.var, space.eps,
                         self.refit_values, self.refit_targets, self.refit_count)
        if self.refit_count[0] < 0:  # a label beyond the buffer: the refits are over
            self._refits_over()

    def _stop_refits(self) -> None:
        self.refit_count[:] = -1  # (refit_until 0: nothing to stop)
        self._refits_over()

    def _sync_refitting(self) -> None:
        """``_refitting`` from the count a jitted loop or a loaded state left (-1: over); the
        buffer goes when the refits have just ended (a learner not refitting holds none)."""
        if self.refit_count.size and self.refit_count[0] >= 0:
            self._refitting = True
        elif self._refitting:
            self._refits_over()

    def _refits_over(self) -> None:
        """No refit reads the kept labels again: the buffer and its scratch go (the count
        stays, -1), and :meth:`memory_bytes` falls by them."""
        self._refitting = False
        if self.refit_targets.size or self._refit_slots.size:
            self._hold_refit_buffer(0)

    def _refit_buffer_for(self, learned: dict) -> dict:
        """Before a state's arrays load: the buffer as its count needs it, none once the
        refits are over, also for a state saved with the dead buffer (before it was freed),
        whose kept values are then dropped; returns the state to load."""
        count = np.asarray(learned["refit_count"])
        over = not (count.size and count[0] >= 0)
        self._hold_refit_buffer(0 if over or not self._refit_points else self._refit_size())
        if over:
            learned = {**learned, "refit_values": self.refit_values, "refit_targets": self.refit_targets}
        return learned
