"""edgelearn: fixed-budget online learners for sensor streams whose channels
come and go and whose labels are scarce."""

import sys

from .channels import ChannelSpace
from .checks import check_learner
from .evaluate import prequential, replay
from .learners import (
    DEFAULT_KIND, ActiveAROW, KINDS, LEARNERS, PA, PAACDS, PAFE, Decision, Learner, MultiLabelKELM, OnlineEnsemble, SynthesisNB, from_state,
    make_learner,
)

__version__ = "0.1.0"

if "river" in sys.modules:
    # River is in use: let it recognize the learners as its classifiers
    # (edgelearn.river; River is never imported here otherwise).
    from . import river as _river  # noqa: F401

__all__ = [
    "ActiveAROW", "ChannelSpace", "DEFAULT_KIND", "Decision", "check_learner", "KINDS", "LEARNERS", "Learner",
    "MultiLabelKELM", "PA", "PAACDS", "PAFE",
    "OnlineEnsemble", "SynthesisNB", "from_state", "make_learner", "prequential", "replay", "__version__",
]
