"""What a learner that holds a label budget (:mod:`edgelearn.kernels.rate_control`)
tells its users: how many readings it decided on, how many labels it asked for,
and the rate that makes (the gateway's status and a replay's summary report it
per stream)."""

from __future__ import annotations

from ..kernels import rate_control


class HeldBudget:
    """Mixin of a learner whose query state (``[generator, readings, asks]``) is
    the array named by ``_QUERY_STATE``."""

    _QUERY_STATE = "rng_state"

    @property
    def readings_decided(self) -> int:
        """Readings this learner decided whether to ask for (since it was made,
        across checkpoints)."""
        return int(getattr(self, self._QUERY_STATE)[rate_control.READINGS])

    @property
    def labels_asked(self) -> int:
        """Labels this learner asked for over those readings."""
        return int(getattr(self, self._QUERY_STATE)[rate_control.ASKS])

    @property
    def query_rate(self) -> float:
        """The realized label rate, ``labels_asked / readings_decided`` (0 before any
        reading); with ``target_query_rate`` set it stays within the budget's
        bounds (:mod:`edgelearn.kernels.rate_control`)."""
        return rate_control.realized_rate(getattr(self, self._QUERY_STATE))

    def report(self) -> dict:
        """What a stream's status adds: the realized label rate against the budget, over
        the learner's whole life (its counts survive checkpoints, unlike the gateway's
        per-run counters)."""
        return {"label_budget": getattr(self, "target_query_rate", None),
                "label_rate": self.query_rate, "labels_asked_total": self.labels_asked}
