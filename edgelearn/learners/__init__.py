"""One module per learner; :func:`from_state` rebuilds any of them."""

from .base import Decision, Learner
from .pa import PA
from .paacds import PAACDS

#: Learner classes by the ``kind`` their state carries.
LEARNERS = {cls.__name__: cls for cls in (PA, PAACDS)}


def from_state(state: dict) -> Learner:
    """Rebuild whichever learner ``state`` (from ``to_state()``) describes."""
    kind = state.get("kind") if isinstance(state, dict) else None
    if kind not in LEARNERS:
        raise ValueError(f"Unknown learner kind {kind!r}; known: {sorted(LEARNERS)}.")
    return LEARNERS[kind].from_state(state)


__all__ = ["Decision", "Learner", "LEARNERS", "PA", "PAACDS", "from_state"]
