"""One module per learner; :func:`from_state` rebuilds any of them."""

from .base import Decision, Learner
from .ensemble import OnlineEnsemble
from .kelm import MultiLabelKELM
from .pa import PA
from .paacds import PAACDS
from .pafe import PAFE
from .synthesis_nb import SynthesisNB

#: Learner classes by the ``kind`` their state carries.
LEARNERS = {cls.__name__: cls for cls in (PA, PAACDS, PAFE, SynthesisNB, MultiLabelKELM, OnlineEnsemble)}

#: Learner classes by the name a configuration file uses for them.
KINDS = {
    "paacds": PAACDS, "pa": PA, "pafe": PAFE, "synthesis_nb": SynthesisNB, "kelm_multilabel": MultiLabelKELM,
    "ensemble": OnlineEnsemble,
}


def make_learner(kind: str, params: dict | None = None) -> Learner:
    """Build a learner from a configuration's ``kind`` and parameters.

    >>> make_learner("paacds", {"target_query_rate": 0.1})
    PAACDS(C=1.0, B=0.64, lam=None, delta=1.0, variant='PAACDS', target_query_rate=0.1, capacity=256, max_weights=None, n_classes=2, seed=0, h_halflife=500.0, evict_after=1000, budget_gain=0.5, learn_intercept=False)
    >>> make_learner("svm")
    Traceback (most recent call last):
    ...
    ValueError: The 'kind' parameter of a learner configuration must be one of {'paacds', 'pa', 'pafe', 'synthesis_nb', 'kelm_multilabel', 'ensemble'}. Got 'svm'.
    """
    from .._validation import check_choice

    check_choice("kind", kind, "a learner configuration", tuple(KINDS))
    cls = KINDS[kind]
    params = dict(params or {})
    unknown = sorted(set(params) - set(cls._param_names()))
    if unknown:
        raise ValueError(
            f"{cls.__name__} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are {', '.join(cls._param_names())}."
        )
    return cls(**params)


def from_state(state: dict) -> Learner:
    """Rebuild whichever learner ``state`` (from ``to_state()``) describes."""
    kind = state.get("kind") if isinstance(state, dict) else None
    if kind not in LEARNERS:
        raise ValueError(f"Unknown learner kind {kind!r}; known: {sorted(LEARNERS)}.")
    return LEARNERS[kind].from_state(state)


__all__ = [
    "Decision", "KINDS", "Learner", "LEARNERS", "MultiLabelKELM", "OnlineEnsemble", "PA", "PAACDS", "PAFE", "SynthesisNB",
    "from_state", "make_learner",
]
