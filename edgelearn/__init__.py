"""edgelearn: fixed-budget online learners for sensor streams whose channels
come and go and whose labels are scarce.

The learner classes and the evaluation helpers (:func:`prequential`,
:func:`replay`, :func:`check_learner`, and the modules ``evaluate``,
``metrics``, ``datasets``, ``streams``, ``bench``) are imported on first use:
a gateway that runs one learner kind loads that kind's kernels and nothing of
the evaluation stack.
"""

import importlib

from . import _post_import
from .channels import ChannelSpace
from .learners import (
    CAPABILITIES, DEFAULT_KIND, KINDS, LEARNERS, TASKS, Decision, Learner, from_state, make_learner,
)

__version__ = "0.1.0"

# Names this package gives on first use, and where they live.
_LAZY = {
    "PA": ".learners", "PAACDS": ".learners", "PAFE": ".learners", "SynthesisNB": ".learners",
    "MultiLabelKELM": ".learners", "OnlineEnsemble": ".learners", "ActiveAROW": ".learners",
    "AROWRegressor": ".learners", "SurpriseDetector": ".learners",
    "prequential": ".evaluate", "replay": ".evaluate", "check_learner": ".checks",
}
_SUBMODULES = ("bench", "checks", "datasets", "evaluate", "metrics", "state", "streams")


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


# When River is in use, whether imported before edgelearn or after, let it recognize
# the learners as its classifiers (edgelearn.river); River is never imported here.
_post_import.when_imported("river.base", lambda: importlib.import_module(".river", __name__))

__all__ = [
    "ActiveAROW", "AROWRegressor", "CAPABILITIES", "ChannelSpace", "DEFAULT_KIND", "TASKS", "Decision", "check_learner", "KINDS", "LEARNERS", "Learner",
    "MultiLabelKELM", "PA", "PAACDS", "PAFE",
    "OnlineEnsemble", "SurpriseDetector", "SynthesisNB", "from_state", "make_learner", "prequential", "replay", "__version__",
]
