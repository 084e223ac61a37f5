"""The one-call path of a binary stream whose two labels are settled: a reading is
observed, predicted, scored and learned in one kernel call of its learner
(``decide_learn_claimed``, the ``"decide_learn"`` capability)."""

from __future__ import annotations

import numpy as np

from .streams import StreamState

__all__ = ["LeanBinary", "UNLABELLED"]

# One entry of a settled binary stream's slot table beyond its names: the tuple and
# array headers and the dict slot (sys.getsizeof, rounded up).
_SLOT_ORDER_BYTES = 56 + 112 + 104

#: An unlabelled reading on the one-call path: no type, no verdict, nothing to learn.
UNLABELLED = (None, None, 0.0)


class LeanBinary:
    """What a binary stream whose two labels are settled (the stream's and its
    learner's) needs to predict, score and learn a reading in one kernel call
    (``decide_learn_claimed``: PAACDS, ActiveAROW), all looked up once: the label a margin
    predicts and whether it is the stream's positive one, and per settled label its
    verdict and the learner's sign for it. Nothing here can change once both sides
    are settled."""

    __slots__ = ("decide_learn", "space", "predicted", "zero_positive", "guess", "labels",
                 "slots_of", "layout", "learn_if_asked")

    #: Name orders whose slots are kept (a stream's sensors send one or a few, and
    #: channels that drop out make a few more), of readings of at most SLOT_NAMES
    #: channels; others are claimed name by name.
    SLOT_ORDERS = 16
    SLOT_NAMES = 8

    @classmethod
    def memory_bytes(cls, max_name_bytes: int) -> int:
        """The most the slot table can hold: per order a tuple of names (kept alive
        with it), a slots array and the dict entry."""
        per_name = 8 + 4 + 49 + max_name_bytes  # tuple entry, slot, the str itself
        return cls.SLOT_ORDERS * (_SLOT_ORDER_BYTES + cls.SLOT_NAMES * per_name)

    def __init__(self, stream: StreamState, label_policy: str):
        # "from_data" replays learn a recorded label only when the learner asked.
        self.learn_if_asked = label_policy == "from_data"
        learner = stream.learner
        targets = learner.targets
        settled = stream.settled_sides
        self.decide_learn = learner.decide_learn_claimed
        self.space = learner.channels
        # The slots of the channel names in a reading's order, while no slot changes
        # hands (the space's counts of assigned and evicted slots stay as they were).
        self.slots_of: dict[tuple, np.ndarray] = {}
        self.layout = (-1, -1)
        # Index: the margin's side (what decide_one's label is made of); a margin of
        # exactly 0 is the learner's call (PAACDS: positive, ActiveAROW: negative).
        self.predicted = (targets.decode(False), targets.decode(True))
        self.zero_positive = learner.zero_margin_positive
        self.guess = tuple(settled[p][1] for p in self.predicted)
        # label -> (its type, truth for the metrics, the learner's sign of it)
        self.labels = {
            label: (kind, truth, targets.known_sign(label))
            for label, (kind, truth) in settled.items()
            if targets.known_sign(label)
        }

    def claim(self, channels: dict) -> tuple[np.ndarray, np.ndarray]:
        """``space.claim(channels)``, the slots of a known name order looked up once:
        the same arrays (every channel dict the pipeline passes holds finite floats,
        which claim takes as they are). A cached slots array is shared by the readings
        of its order; nothing writes to one (kernels, the label table and the journal
        only read slots)."""
        space = self.space
        if (space.n_assigned, space.n_evicted) != self.layout:
            self.slots_of.clear()
            self.layout = (space.n_assigned, space.n_evicted)
        names = tuple(channels)
        slots = self.slots_of.get(names)
        if slots is None:
            slots, z = space.claim(channels)
            if (len(slots) == len(names) <= self.SLOT_NAMES
                    and len(self.slots_of) < self.SLOT_ORDERS):
                self.slots_of[names] = slots  # cleared above if this claimed a slot
            return slots, z
        return slots, np.fromiter(channels.values(), np.float64, len(names))

    @staticmethod
    def fits(stream: StreamState) -> bool:
        """Whether ``stream`` can take the one-call path now."""
        learner = stream.learner
        if not (stream.binary and learner.can("decide_learn")
                and len(learner.targets.labels) == 2):
            return False
        settled = stream.settled_sides
        for code in (False, True):
            known = settled.get(learner.targets.decode(code))
            if known is None or known[0] is not learner.targets.decode(code).__class__:
                return False
        return True
