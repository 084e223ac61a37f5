"""edgelearn: fixed-budget online learners for sensor streams whose channels
come and go and whose labels are scarce."""

from .channels import ChannelSpace
from .learners import LEARNERS, PA, PAACDS, Decision, Learner, from_state

__version__ = "0.1.0"

__all__ = ["ChannelSpace", "Decision", "LEARNERS", "Learner", "PA", "PAACDS", "from_state", "__version__"]
