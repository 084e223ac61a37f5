"""edgelearn: fixed-budget online learners for sensor streams whose channels
come and go and whose labels are scarce."""

from .channels import ChannelSpace
from .evaluate import prequential, replay
from .learners import (
    DEFAULT_KIND, ActiveAROW, KINDS, LEARNERS, PA, PAACDS, PAFE, Decision, Learner, MultiLabelKELM, OnlineEnsemble, SynthesisNB, from_state,
    make_learner,
)

__version__ = "0.1.0"

__all__ = [
    "ActiveAROW", "ChannelSpace", "DEFAULT_KIND", "Decision", "KINDS", "LEARNERS", "Learner", "MultiLabelKELM", "PA", "PAACDS", "PAFE",
    "OnlineEnsemble", "SynthesisNB", "from_state", "make_learner", "prequential", "replay", "__version__",
]
